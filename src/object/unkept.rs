//! Runs whose response the ledger did not keep, held in memory for a lost
//! answer's repeat.
//!
//! Role: an `execute` whose response the ledger stored only as a
//! tombstone (over the byte quota, `MAX_DB_BYTES_PER_OBJECT`, or the stored
//! body ceiling) answers its caller with the response all the same; but if
//! that answer is lost on the way back and the caller sends the same
//! attempt again (`rpc::ATTEMPT_HEADER`), the ledger has only the
//! tombstone to replay — the caller's `201` would become a `500` although
//! its order committed. So the object keeps the last few such responses,
//! by key, attempt and generation, for a few seconds, and answers the
//! same attempt's repeat with its run's own response.
//!
//! What must stay true here:
//! - Only the same attempt of the same key at the same generation is
//!   answered from memory (a client's own retry, another attempt, is
//!   answered the tombstone's replay, as before).
//! - Memory is bounded: at most [`HELD_RUNS`] runs, each at most
//!   [`HELD_BODY_BYTES`] of body, each for at most [`HELD_MS`]. Gone with
//!   the instance: a repeat that reaches a restarted object gets the
//!   tombstone's replay (docs/contract.md §3).

use std::cell::RefCell;
use std::collections::VecDeque;

use crate::ledger::Millis;
use crate::protocol::AppResponse;

/// How many runs are held at once (the oldest goes first).
pub const HELD_RUNS: usize = 4;
/// The largest body held (a larger one is not held).
pub const HELD_BODY_BYTES: usize = 1 << 20;
/// How long a run is held: far longer than a lost answer's repeats take
/// (`rpc::LOST_ANSWER_RETRY_DELAYS_MS`), far shorter than a lease.
pub const HELD_MS: Millis = 10_000;

struct Run {
    key: String,
    attempt: String,
    generation: i64,
    response: AppResponse,
    at: Millis,
}

/// The held runs.
#[derive(Default)]
pub struct Unkept {
    runs: RefCell<VecDeque<Run>>,
}

impl Unkept {
    /// Holds `response`, the run of `attempt` on `key` at `generation`
    /// that the ledger kept only as a tombstone.
    pub fn remember(
        &self,
        (key, attempt, generation): (&str, &str, i64),
        response: &AppResponse,
        now: Millis,
    ) {
        if response.body.len() > HELD_BODY_BYTES {
            return;
        }
        let mut runs = self.runs.borrow_mut();
        runs.retain(|r| now.saturating_sub(r.at) < HELD_MS);
        while runs.len() >= HELD_RUNS {
            runs.pop_front();
        }
        runs.push_back(Run {
            key: key.to_string(),
            attempt: attempt.to_string(),
            generation,
            response: response.clone(),
            at: now,
        });
    }

    /// The response held for `attempt` on `key` at `generation`, if any.
    pub fn answer(
        &self,
        (key, attempt, generation): (&str, &str, i64),
        now: Millis,
    ) -> Option<AppResponse> {
        self.runs
            .borrow()
            .iter()
            .find(|r| {
                r.key == key
                    && r.attempt == attempt
                    && r.generation == generation
                    && now.saturating_sub(r.at) < HELD_MS
            })
            .map(|r| r.response.clone())
    }
}
