//! Counters: what the ledger counts, and when the counts are written.
//!
//! Role: grants and settlements bump their counters in their own
//! transaction; refusals (replays, 409s, 422s) are read-only in SQLite, so
//! they are counted in memory ([`super::pending`]) and written once due.
//!
//! What must stay true here:
//! - Counters are named by [`Counter`], never by a string literal, so a
//!   typo cannot silently lose a count.
//! - A pending count is written once: taken before its write, merged back
//!   only if the write failed.

use super::outcome::Counter;
use super::pending::Pending;
use super::store::{RowExt, SqlStore, SqlValue, StoreError};
use super::{Ledger, Millis};

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
}
