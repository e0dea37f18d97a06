//! Stats: what the object reports (docs/contract.md §2.7).
//!
//! Role: the counts kept by the ledger (see [`super::counters`]) and the
//! record counts by state, as one [`Stats`] value; and a sharded tenant's
//! sum over its objects.
//!
//! What must stay true here: every counter has its field, and the sum adds
//! every count.

use serde::{Deserialize, Serialize};

use super::clock::Millis;
use super::machine::Ledger;
use super::outcome::Counter;
use super::record::rfc3339;
use super::store::{SqlStore, StoreError};
use super::trend::{self, TrendMinute};

/// Counts kept by the object (docs/contract.md §2.7).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    pub records: i64,
    pub in_flight: i64,
    pub completed: i64,
    pub released: i64,
    pub claims: i64,
    pub replays: i64,
    pub in_use: i64,
    pub reused: i64,
    pub takeovers: i64,
    pub fenced_out: i64,
    pub swept: i64,
    /// Completions a gateway gave up on (reported over RPC `replayed`).
    pub complete_failed: i64,
    /// Claims that met a live lease and waited (absent from older objects).
    #[serde(default)]
    pub waited: i64,
    /// Waiters answered with a replay.
    #[serde(default)]
    pub waited_replayed: i64,
    /// Waiters that gave up with `409`.
    #[serde(default)]
    pub waited_timed_out: i64,
    /// Completions stored as tombstones because the byte quota had no room
    /// for their body (docs/contract.md §4; absent from older objects).
    #[serde(default)]
    pub quota_tombstones: i64,
    /// Records removed by an operator's eviction (docs/contract.md §2.7;
    /// absent from older objects).
    #[serde(default)]
    pub evicted: i64,
    /// Requests parked on in-flight keys right now (not a counter: filled
    /// in by the object from its memory; 0 from the ledger alone).
    #[serde(default)]
    pub waiting: i64,
    /// The object's SQLite database size in bytes (0 when the engine cannot
    /// tell); new keys are refused once it reaches `MAX_DB_BYTES_PER_OBJECT`.
    #[serde(default)]
    pub db_bytes: i64,
    /// Counts kept in memory, not yet written (see `ledger::pending`): what
    /// a restart of the object right now would lose. 0 once flushed.
    #[serde(default)]
    pub unwritten_counts: i64,
    /// SQLite rows this object instance has written, as the platform bills
    /// them (since the instance started; 0 when the engine cannot tell).
    #[serde(default)]
    pub sql_rows_written: i64,
    /// SQLite rows this object instance has read (billed as rows read).
    #[serde(default)]
    pub sql_rows_read: i64,
    pub next_sweep_at: Option<String>,
    /// The last hour's outcomes minute by minute (see `ledger::trend`):
    /// 60 minutes, oldest first, the last the current one (absent from
    /// older objects).
    #[serde(default)]
    pub trend: Vec<TrendMinute>,
}

impl Stats {
    /// Adds another object's stats (a sharded tenant's sum): counts add up,
    /// the trend minute by minute, the next sweep is the earliest.
    pub fn add(&mut self, other: &Stats) {
        let pairs = [
            (&mut self.records, other.records),
            (&mut self.in_flight, other.in_flight),
            (&mut self.completed, other.completed),
            (&mut self.released, other.released),
            (&mut self.claims, other.claims),
            (&mut self.replays, other.replays),
            (&mut self.in_use, other.in_use),
            (&mut self.reused, other.reused),
            (&mut self.takeovers, other.takeovers),
            (&mut self.fenced_out, other.fenced_out),
            (&mut self.swept, other.swept),
            (&mut self.complete_failed, other.complete_failed),
            (&mut self.waited, other.waited),
            (&mut self.waited_replayed, other.waited_replayed),
            (&mut self.waited_timed_out, other.waited_timed_out),
            (&mut self.quota_tombstones, other.quota_tombstones),
            (&mut self.evicted, other.evicted),
            (&mut self.waiting, other.waiting),
            (&mut self.db_bytes, other.db_bytes),
            (&mut self.sql_rows_written, other.sql_rows_written),
            (&mut self.unwritten_counts, other.unwritten_counts),
            (&mut self.sql_rows_read, other.sql_rows_read),
        ];
        for (mine, theirs) in pairs {
            *mine += theirs;
        }
        // RFC 3339 UTC strings of one format order as their times do.
        self.next_sweep_at =
            super::clock::earliest(self.next_sweep_at.take(), other.next_sweep_at.clone());
        trend::sum(&mut self.trend, &other.trend);
    }

    fn slot(&mut self, counter: Counter) -> &mut i64 {
        match counter {
            Counter::InFlight => &mut self.in_flight,
            Counter::Completed => &mut self.completed,
            Counter::Released => &mut self.released,
            Counter::Claims => &mut self.claims,
            Counter::Replays => &mut self.replays,
            Counter::InUse => &mut self.in_use,
            Counter::Reused => &mut self.reused,
            Counter::Takeovers => &mut self.takeovers,
            Counter::FencedOut => &mut self.fenced_out,
            Counter::Swept => &mut self.swept,
            Counter::CompleteFailed => &mut self.complete_failed,
            Counter::Waited => &mut self.waited,
            Counter::WaitedReplayed => &mut self.waited_replayed,
            Counter::WaitedTimedOut => &mut self.waited_timed_out,
            Counter::QuotaTombstones => &mut self.quota_tombstones,
            Counter::Evicted => &mut self.evicted,
        }
    }
}

impl<S: SqlStore> Ledger<S> {
    /// The object's counters and record counts. Read-only and bounded: one
    /// stored row (read once per instance) plus what is pending, and the
    /// next sweep through its index — whatever the object holds.
    pub fn stats(&self, now: Millis) -> Result<Stats, StoreError> {
        if self.counts_in_transaction {
            // See `count_in_transaction`: the row, not what memory made of it.
            self.forget_stored();
        }
        let mut stats = Stats::default();
        for c in Counter::ALL {
            *stats.slot(c) = self.count_of(c)?;
        }
        // Counts an eviction lost can leave a state below zero until the
        // next recount; never show that.
        for count in [
            &mut stats.in_flight,
            &mut stats.completed,
            &mut stats.released,
        ] {
            *count = (*count).max(0);
        }
        stats.records = stats.in_flight + stats.completed + stats.released;
        stats.next_sweep_at = self.next_sweep_at(now)?.map(rfc3339);
        stats.trend = self.with_stored(|stored| {
            trend::window(
                &[
                    &stored.trend,
                    &self.pending.borrow().trend,
                    &self.tally().trend,
                ],
                now,
            )
        })?;
        stats.db_bytes = self.store.database_size().unwrap_or(0) as i64;
        stats.unwritten_counts = i64::from(self.pending.borrow().events());
        if let Some((written, read)) = self.store.billed_rows() {
            stats.sql_rows_written = written as i64;
            stats.sql_rows_read = read as i64;
        }
        Ok(stats)
    }
}
