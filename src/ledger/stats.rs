//! Counters, stats and the bounded sweep (docs/contract.md §2.7, §4).
//!
//! Role: everything the ledger counts and everything that deletes records.
//!
//! What must stay true here:
//! - Counters are named by [`Counter`], never by a string literal, so a
//!   typo cannot silently lose a count.
//! - The sweep deletes at most `batch` records, only with `expires_at <=
//!   now`, through the `expires_at` index, and keeps the record counter
//!   (the quota's count) in step in the same transaction.

use serde::{Deserialize, Serialize};

use super::outcome::{Counter, KeyState};
use super::pending::Pending;
use super::record::rfc3339;
use super::store::{RowExt, SqlStore, SqlValue, StoreError};
use super::{Ledger, Millis};

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
    /// Requests parked on in-flight keys right now (not a counter: filled
    /// in by the object from its memory; 0 from the ledger alone).
    #[serde(default)]
    pub waiting: i64,
    /// The object's SQLite database size in bytes (0 when the engine cannot
    /// tell); new keys are refused once it reaches `MAX_DB_BYTES_PER_OBJECT`.
    #[serde(default)]
    pub db_bytes: i64,
    pub next_sweep_at: Option<String>,
}

impl Stats {
    /// Adds another object's stats (a sharded tenant's sum): counts add up,
    /// the next sweep is the earliest.
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
            (&mut self.waiting, other.waiting),
            (&mut self.db_bytes, other.db_bytes),
        ];
        for (mine, theirs) in pairs {
            *mine += theirs;
        }
        // RFC 3339 UTC strings of one format order as their times do.
        self.next_sweep_at = match (self.next_sweep_at.take(), other.next_sweep_at.clone()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    fn slot(&mut self, counter: Counter) -> Option<&mut i64> {
        match counter {
            Counter::Records => None,
            Counter::Claims => Some(&mut self.claims),
            Counter::Replays => Some(&mut self.replays),
            Counter::InUse => Some(&mut self.in_use),
            Counter::Reused => Some(&mut self.reused),
            Counter::Takeovers => Some(&mut self.takeovers),
            Counter::FencedOut => Some(&mut self.fenced_out),
            Counter::Swept => Some(&mut self.swept),
            Counter::CompleteFailed => Some(&mut self.complete_failed),
            Counter::Waited => Some(&mut self.waited),
            Counter::WaitedReplayed => Some(&mut self.waited_replayed),
            Counter::WaitedTimedOut => Some(&mut self.waited_timed_out),
        }
    }
}

/// What one sweep batch did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepOutcome {
    pub deleted: usize,
    /// The batch was full: more expired records may remain.
    pub batch_full: bool,
    /// The earliest `expires_at` still held, if any.
    pub next_expires_at: Option<Millis>,
}

impl<S: SqlStore> Ledger<S> {
    pub(super) fn bump(&self, counter: Counter, by: i64) -> Result<(), StoreError> {
        self.bump_all(&[(counter, by)])
    }

    /// Adds to several counters in one statement (one multi-row upsert).
    pub(super) fn bump_all(&self, counters: &[(Counter, i64)]) -> Result<(), StoreError> {
        if counters.is_empty() {
            return Ok(());
        }
        let rows = vec!["(?, ?)"; counters.len()].join(", ");
        let params: Vec<SqlValue> = counters
            .iter()
            .flat_map(|(c, by)| [c.name().into(), (*by).into()])
            .collect();
        self.store.execute(
            &format!(
                "INSERT INTO ledger_counters (name, value) VALUES {rows}
                 ON CONFLICT (name) DO UPDATE SET value = value + excluded.value"
            ),
            &params,
        )
    }

    pub(super) fn counter(&self, counter: Counter) -> Result<i64, StoreError> {
        let rows = self.store.query(
            "SELECT value FROM ledger_counters WHERE name = ?",
            &[counter.name().into()],
        )?;
        match rows.first() {
            Some(row) => row.int(0),
            None => Ok(0),
        }
    }

    /// Counts a refusal in memory; writes the pending counts once they are
    /// due (see [`super::pending`]).
    pub(super) fn refused(
        &self,
        counter: Counter,
        replayed: Option<(&str, i64)>,
        now: Millis,
    ) -> Result<(), StoreError> {
        let due = {
            let mut pending = self.pending.borrow_mut();
            pending.count(counter, replayed, now);
            pending.is_due(now)
        };
        if due {
            self.flush_pending()?;
        }
        Ok(())
    }

    /// Adds `n` replays of `key` (completed at `generation`) that were
    /// answered without asking the ledger (a gateway's replay cache). They
    /// are written with the next flush, like the ledger's own.
    pub fn add_replays(&self, key: &str, generation: i64, n: i64, now: Millis) {
        self.pending
            .borrow_mut()
            .add_replays(key, generation, n, now);
    }

    /// Adds `n` to `counter` with the next flush (counts reported by a
    /// caller, such as a gateway's failed completions).
    pub fn add_count(&self, counter: Counter, n: i64, now: Millis) {
        self.pending.borrow_mut().add(counter, n, now);
    }

    /// Writes the counts kept in memory, in the caller's transaction if it
    /// has one. If the write fails the counts are kept for the next flush.
    pub fn flush_pending(&self) -> Result<(), StoreError> {
        if self.pending.borrow().is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        let written = self.store.atomically(|| self.write_pending(&pending));
        if written.is_err() {
            self.pending.borrow_mut().merge(pending);
        }
        written
    }

    fn write_pending(&self, pending: &Pending) -> Result<(), StoreError> {
        let counters: Vec<(Counter, i64)> =
            pending.counters.iter().map(|(c, n)| (*c, *n)).collect();
        self.bump_all(&counters)?;
        for ((key, generation), n) in &pending.replays {
            // Guard: the record that was replayed, still completed at the
            // generation that was replayed (never a reborn record).
            self.store.execute(
                "UPDATE idempotency_records SET replays = replays + ?
                 WHERE key = ? AND generation = ? AND state = 'completed'",
                &[(*n).into(), key.as_str().into(), (*generation).into()],
            )?;
        }
        Ok(())
    }

    /// The earliest `expires_at` held, if any: when the next sweep is due.
    pub fn next_expires_at(&self) -> Result<Option<Millis>, StoreError> {
        let rows = self
            .store
            .query("SELECT MIN(expires_at) FROM idempotency_records", &[])?;
        match rows.first() {
            Some(row) => row.opt_int(0),
            None => Ok(None),
        }
    }

    /// The object's counters and record counts.
    pub fn stats(&self) -> Result<Stats, StoreError> {
        self.flush_pending()?;
        let mut stats = Stats::default();
        for row in self
            .store
            .query("SELECT name, value FROM ledger_counters", &[])?
        {
            let value = row.int(1)?;
            if let Some(slot) = Counter::parse(&row.text(0)?).and_then(|c| stats.slot(c)) {
                *slot = value;
            }
        }
        for row in self.store.query(
            "SELECT state, COUNT(*) FROM idempotency_records GROUP BY state",
            &[],
        )? {
            let count = row.int(1)?;
            match KeyState::parse(&row.text(0)?) {
                Some(KeyState::InFlight) => stats.in_flight = count,
                Some(KeyState::Completed) => stats.completed = count,
                Some(KeyState::Released) => stats.released = count,
                None => {}
            }
        }
        stats.records = stats.in_flight + stats.completed + stats.released;
        stats.next_sweep_at = self.next_expires_at()?.map(rfc3339);
        stats.db_bytes = self.store.database_size().unwrap_or(0) as i64;
        Ok(stats)
    }

    /// The number of records the quota counts (kept as a counter so a claim
    /// never scans the table).
    pub fn held_records(&self) -> Result<i64, StoreError> {
        self.counter(Counter::Records)
    }

    /// Deletes at most `batch` records with `expires_at <= now`, through the
    /// `expires_at` index, and says when the next one expires.
    pub fn sweep(&self, now: Millis, batch: usize) -> Result<SweepOutcome, StoreError> {
        self.store.atomically(|| {
            self.flush_pending()?;
            // Guard: expires_at <= now — nothing inside its window is
            // deleted — and no live lease: a running owner's record is never
            // swept (the claim keeps expires_at >= the lease's end, so this
            // only matters for records written before that rule).
            let rows = self.store.query(
                "DELETE FROM idempotency_records
                 WHERE key IN (SELECT key FROM idempotency_records
                               WHERE expires_at <= ?
                                 AND NOT (state = 'in_flight' AND lease_expires_at > ?)
                               ORDER BY expires_at LIMIT ?)
                 RETURNING key",
                &[now.into(), now.into(), (batch as i64).into()],
            )?;
            let deleted = rows.len();
            if deleted > 0 {
                self.bump_all(&[
                    (Counter::Records, -(deleted as i64)),
                    (Counter::Swept, deleted as i64),
                ])?;
            }
            Ok(SweepOutcome {
                deleted,
                batch_full: deleted >= batch,
                next_expires_at: self.next_expires_at()?,
            })
        })
    }
}
