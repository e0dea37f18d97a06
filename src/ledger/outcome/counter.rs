//! The counters of the `ledger_state` row: their closed list, stored
//! names (columns; renaming one is a schema migration) and the trend's
//! slots.

use super::key_state::KeyState;

/// build.rs's `Counter::TRENDED`, from src/ledger/outcome/trended.json.
mod generated {
    use super::Counter;
    include!(concat!(env!("OUT_DIR"), "/trended.rs"));
}

/// The counters kept in the `ledger_state` row, by column name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Counter {
    /// Records held in each state (their sum is the quota's count).
    InFlight,
    Completed,
    Released,
    Claims,
    Replays,
    InUse,
    Reused,
    Takeovers,
    FencedOut,
    Swept,
    /// Completions a gateway could not store after its retries.
    CompleteFailed,
    /// Claims that met a live lease and waited for its outcome.
    Waited,
    /// Waiters answered with the replay of the run they waited for.
    WaitedReplayed,
    /// Waiters whose budget ran out while the key was still in flight (`409`).
    WaitedTimedOut,
    /// Completions stored as tombstones because the byte quota
    /// (`MAX_DB_BYTES_PER_OBJECT`) had no room for their body (schema 5).
    QuotaTombstones,
    /// Records an operator evicted (`DELETE /v1/idempotency-keys/{key}`,
    /// RPC `evict`; schema 9).
    Evicted,
}

impl Counter {
    pub const ALL: [Counter; 16] = [
        Counter::InFlight,
        Counter::Completed,
        Counter::Released,
        Counter::Claims,
        Counter::Replays,
        Counter::InUse,
        Counter::Reused,
        Counter::Takeovers,
        Counter::FencedOut,
        Counter::Swept,
        Counter::CompleteFailed,
        Counter::Waited,
        Counter::WaitedReplayed,
        Counter::WaitedTimedOut,
        Counter::QuotaTombstones,
        Counter::Evicted,
    ];

    /// The outcomes the per-minute trend follows (`ledger::trend`), in the
    /// order its stored rows hold them: src/ledger/outcome/trended.json,
    /// compiled in by build.rs (the JS package's copy is generated from it;
    /// `evicted`, the eighth, since schema 9: a stored row of seven reads as
    /// none evicted).
    pub const TRENDED: [Counter; generated::TRENDED.len()] = generated::TRENDED;

    /// This counter's place in a trend row, if the trend follows it.
    pub fn trend_slot(self) -> Option<usize> {
        Counter::TRENDED.iter().position(|c| *c == self)
    }

    /// The stored name (a column of `ledger_state`; the v1 counter name).
    pub fn name(self) -> &'static str {
        match self {
            Counter::InFlight => "in_flight",
            Counter::Completed => "completed",
            Counter::Released => "released",
            Counter::Claims => "claims",
            Counter::Replays => "replays",
            Counter::InUse => "in_use",
            Counter::Reused => "reused",
            Counter::Takeovers => "takeovers",
            Counter::FencedOut => "fenced_out",
            Counter::Swept => "swept",
            Counter::CompleteFailed => "complete_failed",
            Counter::Waited => "waited",
            Counter::WaitedReplayed => "waited_replayed",
            Counter::WaitedTimedOut => "waited_timed_out",
            Counter::QuotaTombstones => "quota_tombstones",
            Counter::Evicted => "evicted",
        }
    }

    /// The counter of records in `state`.
    pub fn of_state(state: KeyState) -> Counter {
        match state {
            KeyState::InFlight => Counter::InFlight,
            KeyState::Completed => Counter::Completed,
            KeyState::Released => Counter::Released,
        }
    }
}
