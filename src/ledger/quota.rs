//! Quota: whether a grant or a completion has room — records held
//! (`MAX_KEYS_PER_TENANT`'s share) and the database's bytes
//! (`MAX_DB_BYTES_PER_OBJECT`), docs/contract.md §4.
//!
//! Role: the checks a claim (`claim.rs`, `execute.rs`) asks before a grant
//! and a completion (`settle.rs`) asks before keeping a body, and the
//! `ledger_full` refusal with its retry hint.
//!
//! What must stay true here: a refusal writes nothing; an engine that
//! cannot tell its size never refuses on bytes.

use super::clock::Millis;
use super::machine::Ledger;
use super::outcome::Refusal;
use super::policy::ClaimPolicy;
use super::store::{SizeEstimate, SqlStore, SqlValue, StoreError};

impl<S: SqlStore> Ledger<S> {
    /// The refusal for a new key the quota has no room for (records held,
    /// or the database's bytes), if any.
    pub(super) fn ledger_full(
        &self,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<Option<Refusal>, StoreError> {
        let too_big = self
            .store
            .database_reached(policy.max_db_bytes)
            .unwrap_or(false);
        let room = |held: i64| held < 0 || (held as u64) < policy.max_keys;
        if room(self.held_records()?) && !too_big {
            return Ok(None);
        }
        // Counts written in transactions an enclosing one rolled back may
        // still be in memory: refuse only on the row as it stands.
        if self.counts_in_transaction && !too_big {
            self.forget_stored();
            if room(self.held_records()?) {
                return Ok(None);
            }
        }
        self.full(now).map(Some)
    }

    /// The refusal for a claim on a record the ledger holds (a rebirth, a
    /// reclaim, a takeover) once the database has reached its byte quota:
    /// the run it grants would end in a completion that grows the record,
    /// so it is refused as a new key is. The record count is not asked:
    /// the record is already held.
    pub(super) fn bytes_full(
        &self,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<Option<Refusal>, StoreError> {
        let reached = self
            .store
            .database_reached(policy.max_db_bytes)
            .unwrap_or(false);
        if !reached {
            return Ok(None);
        }
        self.full(now).map(Some)
    }

    /// `ledger_full`, to retry once the next sweep may have made room.
    pub(super) fn full(&self, now: Millis) -> Result<Refusal, StoreError> {
        let next = self.next_sweep_at(now)?.unwrap_or(now + 1000);
        Ok(Refusal::LedgerFull {
            retry_after_ms: (next - now).max(1000),
        })
    }

    /// Is there room under the byte quota for a statement that binds
    /// `params` and writes `rows` rows — does the database, grown by the
    /// most that statement may add ([`SizeEstimate::growth_bound`]), stay
    /// below `max_db_bytes`? (Engines that cannot tell their size: yes.)
    pub(super) fn room_for(&self, params: &[SqlValue], rows: u64, max_db_bytes: u64) -> bool {
        let growth = SizeEstimate::growth_bound(SizeEstimate::bound_bytes(params), rows);
        !self
            .store
            .database_reached(max_db_bytes.saturating_sub(growth))
            .unwrap_or(false)
    }
}
