//! Settle: the owner of a claim records its response (`complete`) or gives
//! the key back (`release`).
//!
//! Role: the two moves out of `in_flight`, each one guarded statement in
//! its own transaction; `execute` completes through the same
//! [`Ledger::store_completion`].
//!
//! What must stay true here:
//! - Both succeed only while the record is in flight at the caller's
//!   generation and, when the caller presents one, under its grant's lease
//!   token (the guard is in the `WHERE`): a grant of the same generation
//!   by another object, or after an eviction, is never settled by this
//!   caller. Otherwise the caller is fenced out, counted in memory, and
//!   told the current state — unless its token shows the very settlement
//!   already landed (a repeat after a lost answer): then it is told so
//!   again, writing and counting nothing.
//! - A completed record's response is never replaced; a release never
//!   deletes the record nor resets its generation.
//! - A completion's `sweep_at` never stays after its `expires_at`.
//! - A completion's expiry more than `HORIZON_GAP_MS` past its record's
//!   `sweep_at` raises the horizon in its transaction (`Ledger::horizon`
//!   reads only the latest `sweep_at`); the usual one writes one row.
//! - While an upgrade from schema 1 is under way, both move their own key's
//!   record out of the set-aside table first (that key alone, in the same
//!   transaction): settling a granted claim never waits for the upgrade.
//! - A completion keeps its body only while the byte quota has room for
//!   the row's growth bound; past it the record still completes — as a
//!   tombstone, counted in `quota_tombstones` — so the caller keeps its
//!   answer and the request never runs again (docs/contract.md §4).

use super::clock::Millis;
use super::horizon::HORIZON_GAP_MS;
use super::lease::Grant;
use super::machine::Ledger;
use super::outcome::{CompleteOutcome, Counter, KeyState, RecordState, ReleaseOutcome};
use super::store::{SqlStore, SqlValue, StoreError};
use crate::protocol::StoredResponse;

/// What a completion kept of its response (see [`Ledger::fit_to_quota`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kept {
    /// Its body, as sent.
    Body,
    /// No body: it came as a tombstone (over `MAX_STORED_BODY_BYTES`).
    Tombstone,
    /// No body: the byte quota had no room for it.
    OverQuota,
}

impl<S: SqlStore> Ledger<S> {
    /// Records the response of the owner of `grant` (a generation, and the
    /// lease token its claim answered): it is kept for the
    /// retention from now. Its `sweep_at` (the claim time + the claim's
    /// retention) is left as it is — one row written — unless this
    /// completion's retention is shorter than the claim's. No byte quota:
    /// [`Ledger::complete_within`] holds one.
    pub fn complete<'a>(
        &self,
        key: &str,
        grant: impl Into<Grant<'a>>,
        response: &StoredResponse,
        retention_ms: Millis,
        now: Millis,
    ) -> Result<CompleteOutcome, StoreError> {
        self.complete_within(key, grant, response, retention_ms, u64::MAX, now)
            .map(|(out, _)| out)
    }

    /// [`Ledger::complete`] under the byte quota `max_db_bytes`
    /// (`MAX_DB_BYTES_PER_OBJECT`): a body the database has no room for is
    /// not stored — the record completes as a tombstone, counted in
    /// `quota_tombstones` (see [`Ledger::fit_to_quota`]). With the outcome:
    /// whether the quota made it a tombstone (for the object's log line).
    pub fn complete_within<'a>(
        &self,
        key: &str,
        grant: impl Into<Grant<'a>>,
        response: &StoredResponse,
        retention_ms: Millis,
        max_db_bytes: u64,
        now: Millis,
    ) -> Result<(CompleteOutcome, bool), StoreError> {
        let grant = grant.into();
        let generation = grant.generation;
        let expires_at = now.saturating_add(retention_ms);
        let out = self.transaction(|| {
            self.upgrade_key_first(key)?;
            let stored =
                self.store_completion(key, grant, response, expires_at, max_db_bytes, now)?;
            let Some(kept) = stored else {
                return Ok(
                    match self.not_settled(key, grant, KeyState::Completed, now)? {
                        None => (CompleteOutcome::Stored, false),
                        Some(current) => (CompleteOutcome::FencedOut { current }, false),
                    },
                );
            };
            // Guard: the record this owner just completed, if its claim's
            // retention was longer than this completion's (rare: a caller
            // chose both). Keeps sweep_at <= expires_at, so the sweep is
            // never late; otherwise it matches nothing and writes nothing.
            self.store.execute(
                "UPDATE idempotency_records SET sweep_at = ?
                 WHERE key = ? AND generation = ? AND sweep_at > ?",
                &[
                    expires_at.into(),
                    key.into(),
                    generation.into(),
                    expires_at.into(),
                ],
            )?;
            Ok((CompleteOutcome::Stored, kept == Kept::OverQuota))
        })?;
        self.flush_after_commit(now);
        Ok(out)
    }

    /// Stores `response` as the answer of the owner of `grant`, if the
    /// record is still in flight under that grant (`None`: it is not, the
    /// owner was fenced out), and counts the move; `Some`: stored, and
    /// what of it was kept.
    pub(super) fn store_completion(
        &self,
        key: &str,
        grant: Grant<'_>,
        response: &StoredResponse,
        expires_at: Millis,
        max_db_bytes: u64,
        now: Millis,
    ) -> Result<Option<Kept>, StoreError> {
        let headers = serde_json::to_string(&response.headers)
            .map_err(|e| StoreError::Decode(e.to_string()))?;
        const SET: &str = "UPDATE idempotency_records
             SET state = 'completed', lease_expires_at = NULL, completed_at = ?,
                 expires_at = ?, response_status = ?, response_headers = ?,
                 response_body = ?, retained = ?
             WHERE key = ? AND state = 'in_flight' AND generation = ?
               AND (? IS NULL OR lease_token = ?)";
        let mut params: Vec<SqlValue> = vec![
            now.into(),
            expires_at.into(),
            i64::from(response.status).into(),
            headers.into(),
            response.body.clone().into(),
            i64::from(response.retained()).into(),
            key.into(),
            grant.generation.into(),
            grant.lease.into(),
            grant.lease.into(),
        ];
        // One row: the completion moves no index entry.
        let kept = self.fit_to_quota(&mut params, 3, 1, max_db_bytes);
        // Guard: in flight under the caller's grant (its generation, and
        // its lease token when it presents one), and this expiry
        // within HORIZON_GAP_MS of the record's sweep_at (a completion soon
        // after its claim, with the claim's retention: the usual one), so
        // the latest sweep_at bounds it without a row of its own.
        params.push(expires_at.saturating_sub(HORIZON_GAP_MS).into());
        let within_gap = self
            .store
            .update(&format!("{SET} AND sweep_at >= ?"), &params)?;
        params.pop();
        // Guard: in flight under the caller's grant — a late completion,
        // or a longer retention than the claim's: the horizon is raised
        // with it. A late completion with no takeover since is still
        // accepted: nobody else ran.
        let changed = within_gap || self.store.update(SET, &params)?;
        if !changed {
            return Ok(None);
        }
        let mut tally = self.tally();
        tally.moved(Some(Counter::InFlight), Counter::Completed, now);
        if kept == Kept::OverQuota {
            tally.count(Counter::QuotaTombstones, None, now);
        }
        drop(tally);
        // Beyond the gap: noted as if its sweep_at were 0.
        let sweep_at = if within_gap { expires_at } else { 0 };
        self.note_expiry(expires_at, sweep_at, now)?;
        Ok(Some(kept))
    }

    /// Holds a completion to the byte quota: `params` bind a write of
    /// `rows` rows, its response headers at `at`, body at `at + 1` and
    /// `retained` at `at + 2`. A body kept only if the database, grown by the most that
    /// write may add ([`Ledger::room_for`]), stays below `max_db_bytes`;
    /// otherwise the write becomes a tombstone's — no body and no headers
    /// (a tombstone's replay names only its status), so it grows the
    /// database by its few fixed columns at most.
    pub(super) fn fit_to_quota(
        &self,
        params: &mut [SqlValue],
        at: usize,
        rows: u64,
        max_db_bytes: u64,
    ) -> Kept {
        if params[at + 1] == SqlValue::Null {
            return Kept::Tombstone;
        }
        if self.room_for(params, rows, max_db_bytes) {
            return Kept::Body;
        }
        params[at] = "[]".into();
        params[at + 1] = SqlValue::Null;
        params[at + 2] = SqlValue::Integer(0);
        Kept::OverQuota
    }

    /// Gives the key back so the next claim runs again (at generation+1),
    /// as the owner of `grant`. Never deletes the record and never resets
    /// its generation.
    pub fn release<'a>(
        &self,
        key: &str,
        grant: impl Into<Grant<'a>>,
        now: Millis,
    ) -> Result<ReleaseOutcome, StoreError> {
        let grant = grant.into();
        let out = self.transaction(|| {
            self.upgrade_key_first(key)?;
            // Guard: in flight under the caller's grant — its generation,
            // and its lease token when it presents one.
            let changed = self.store.update(
                "UPDATE idempotency_records
                 SET state = 'released', lease_expires_at = NULL
                 WHERE key = ? AND state = 'in_flight' AND generation = ?
                   AND (? IS NULL OR lease_token = ?)",
                &[
                    key.into(),
                    grant.generation.into(),
                    grant.lease.into(),
                    grant.lease.into(),
                ],
            )?;
            if changed {
                self.tally()
                    .moved(Some(Counter::InFlight), Counter::Released, now);
                return Ok(ReleaseOutcome::Released);
            }
            Ok(
                match self.not_settled(key, grant, KeyState::Released, now)? {
                    None => ReleaseOutcome::Released,
                    Some(current) => ReleaseOutcome::FencedOut { current },
                },
            )
        })?;
        self.flush_after_commit(now);
        Ok(out)
    }

    /// A settlement whose guard matched nothing: `None` when `grant` itself
    /// already settled `key` into `state` (a repeat after a lost answer,
    /// which only a grant presenting its lease token can tell: a bare
    /// generation could be another object's grant); otherwise fenced out —
    /// counted — with the record's current state. One read of the record,
    /// in the settlement's transaction.
    fn not_settled(
        &self,
        key: &str,
        grant: Grant<'_>,
        state: KeyState,
        now: Millis,
    ) -> Result<Option<Option<RecordState>>, StoreError> {
        let record = self.read(key)?;
        let landed = record.as_ref().is_some_and(|r| {
            grant.lease.is_some()
                && r.state == state
                && r.generation == grant.generation
                && r.lease_token.as_deref() == grant.lease
        });
        if landed {
            return Ok(None);
        }
        self.tally().count(Counter::FencedOut, None, now);
        Ok(Some(record.map(|r| RecordState {
            state: r.state,
            generation: r.generation,
        })))
    }
}
