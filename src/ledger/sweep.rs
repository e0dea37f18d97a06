//! The bounded sweep (docs/contract.md §4): deleting records past their
//! window, a batch at a time.
//!
//! What must stay true here: the sweep deletes at most `batch` records,
//! only with `expires_at <= now` and no live lease, through the
//! `expires_at` index, and keeps the record counter (the quota's count) in
//! step in the same transaction.

use serde::{Deserialize, Serialize};

use super::outcome::Counter;
use super::store::{RowExt, SqlStore, StoreError};
use super::{Ledger, Millis};

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
