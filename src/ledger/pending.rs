//! Refusal counts kept in memory and written with the next write, so that a
//! replay, a `409` and a `422` are read-only in SQLite.
//!
//! Role: a replay is one lookup of an immutable record; writing two
//! counters on every replay made it cost as much as new work (every write
//! also holds the answer behind the Durable Object's output gate until it is
//! durable). The `replays`, `in_use` and `reused` counters and each record's
//! `replays` are therefore counted here and flushed:
//! - inside every ledger write (a claim that grants, `complete`, `release`,
//!   the sweep), in the same transaction;
//! - before `stats` and `lookup` read them, so those are always exact;
//! - once [`FLUSH_AFTER_EVENTS`] refusals or [`FLUSH_AFTER_MS`] have
//!   accumulated, by the refusal that crosses the bound.
//!
//! What must stay true here: no count is lost once any write has followed
//! it; only refusals since the object's last write can be lost, and only if
//! the object is evicted before its next write, read of `stats`, or bound.
//! Counts never touch the ledger's decisions, only what `stats` shows.

use std::collections::HashMap;

use super::outcome::Counter;
use super::Millis;

/// Refusals counted in memory before a flush is forced.
pub const FLUSH_AFTER_EVENTS: u32 = 64;

/// Oldest unflushed refusal, in milliseconds, before a flush is forced.
pub const FLUSH_AFTER_MS: Millis = 2_000;

/// Counts not yet written.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pending {
    /// Per counter (only `Replays`, `InUse`, `Reused` are kept here).
    pub counters: HashMap<Counter, i64>,
    /// Replays per record, by key and the generation that completed it (a
    /// record reborn at a later generation does not inherit them).
    pub replays: HashMap<(String, i64), i64>,
    events: u32,
    since: Option<Millis>,
}

impl Pending {
    /// Counts one refusal (and, for a replay, the record it replayed).
    pub fn count(&mut self, counter: Counter, replayed: Option<(&str, i64)>, now: Millis) {
        self.add(counter, 1, now);
        if let Some((key, generation)) = replayed {
            self.add_to_record(key, generation, 1);
        }
    }

    /// Adds `n` to a counter (counts reported from elsewhere).
    pub fn add(&mut self, counter: Counter, n: i64, now: Millis) {
        if n <= 0 {
            return;
        }
        *self.counters.entry(counter).or_insert(0) += n;
        self.events = self.events.saturating_add(1);
        self.since.get_or_insert(now);
    }

    /// Adds replays counted elsewhere (a gateway's replay cache).
    pub fn add_replays(&mut self, key: &str, generation: i64, n: i64, now: Millis) {
        if n <= 0 {
            return;
        }
        self.add(Counter::Replays, n, now);
        self.add_to_record(key, generation, n);
    }

    fn add_to_record(&mut self, key: &str, generation: i64, n: i64) {
        *self
            .replays
            .entry((key.to_string(), generation))
            .or_insert(0) += n;
    }

    pub fn is_empty(&self) -> bool {
        self.events == 0
    }

    /// Has enough accumulated that the next refusal should write it?
    pub fn is_due(&self, now: Millis) -> bool {
        self.events >= FLUSH_AFTER_EVENTS
            || self
                .since
                .is_some_and(|since| now - since >= FLUSH_AFTER_MS)
    }

    /// Puts counts back after a flush that did not commit.
    pub fn merge(&mut self, other: Pending) {
        for (c, n) in other.counters {
            *self.counters.entry(c).or_insert(0) += n;
        }
        for (k, n) in other.replays {
            *self.replays.entry(k).or_insert(0) += n;
        }
        self.events = self.events.saturating_add(other.events);
        self.since = match (self.since, other.since) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}
