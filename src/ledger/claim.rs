//! Claim: who may run a request under a key, and at which generation.
//!
//! Role: the one decision every request makes first — a new key, a record
//! past its window (reborn), a released record (reclaimed), a live lease
//! (refused as in flight), an ended lease (taken over), a completed record
//! (replayed), another request under the same key (mismatch), a full
//! ledger — each as one guarded statement.
//!
//! What must stay true here:
//! - Every grant is one statement whose `WHERE` (or `ON CONFLICT`) carries
//!   its guard, inside the claim's `atomically`; a guard that does not
//!   match inside that transaction is an error, never a silent grant.
//! - A grant always takes a generation above every one the record had.
//! - A record whose owner's lease is live is never reborn or taken over.

use super::outcome::{ClaimOutcome, Counter, KeyState, Refusal};
use super::store::{Row, SqlStore, StoreError};
use super::{ClaimPolicy, Ledger, Millis};
use crate::protocol::Fingerprint;

impl<S: SqlStore> Ledger<S> {
    /// Does this ledger hold `key` — a record not yet past its window? (A
    /// retired shard answers only for the keys it holds.)
    pub fn holds(&self, key: &str, now: Millis) -> Result<bool, StoreError> {
        Ok(self
            .read(key)?
            .is_some_and(|record| !record.is_expired(now)))
    }

    /// Claims `key` for the request with fingerprint `fp`.
    pub fn claim(
        &self,
        key: &str,
        fp: &Fingerprint,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        self.store.atomically(|| {
            let Some(record) = self.read(key)? else {
                return self.claim_new(key, fp, policy, now);
            };
            if record.is_expired(now) {
                return self.claim_expired(key, fp, policy, now);
            }
            if record.fingerprint != fp.digest {
                self.refused(Counter::Reused, None, now)?;
                let differs = record.fingerprint()?.differs_from(fp);
                return Ok(ClaimOutcome::Refused(Refusal::Mismatch { differs }));
            }
            match record.state {
                KeyState::Completed => {
                    // Read-only: the replay is counted in memory (see `pending`).
                    self.refused(Counter::Replays, Some((key, record.generation)), now)?;
                    let (generation, expires_at) = (record.generation, record.expires_at);
                    Ok(ClaimOutcome::Refused(Refusal::Completed {
                        generation,
                        response: record.into_stored_response()?,
                        expires_at: Some(expires_at),
                    }))
                }
                KeyState::Released => self.reclaim_released(key, policy, now),
                KeyState::InFlight => match record.lease_expires_at {
                    Some(lease_end) if lease_end > now => {
                        self.refused(Counter::InUse, None, now)?;
                        Ok(ClaimOutcome::Refused(Refusal::InFlight {
                            generation: record.generation,
                            retry_after_ms: lease_end - now,
                        }))
                    }
                    _ => self.take_over(key, record.generation, policy, now),
                },
            }
        })
    }

    /// A key never seen (or already swept): generation 1, if the quota allows.
    fn claim_new(
        &self,
        key: &str,
        fp: &Fingerprint,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        let held = self.counter(Counter::Records)?;
        let too_big = self
            .store
            .database_size()
            .is_some_and(|bytes| bytes >= policy.max_db_bytes);
        if (held >= 0 && held as u64 >= policy.max_keys) || too_big {
            let next = self.next_expires_at()?.unwrap_or(now + 1000);
            return Ok(ClaimOutcome::Refused(Refusal::LedgerFull {
                retry_after_ms: (next - now).max(1000),
            }));
        }
        let components =
            serde_json::to_string(&fp.components).map_err(|e| StoreError::Decode(e.to_string()))?;
        // Guard: ON CONFLICT DO NOTHING — exactly one concurrent claimant inserts.
        let rows = self.store.query(
            "INSERT INTO idempotency_records
                (key, state, generation, fingerprint, components, created_at, claimed_at,
                 lease_expires_at, expires_at)
             VALUES (?, 'in_flight', 1, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (key) DO NOTHING
             RETURNING generation",
            &[
                key.into(),
                fp.digest.as_str().into(),
                components.into(),
                now.into(),
                now.into(),
                (now + policy.lease_ms).into(),
                policy.in_flight_expires_at(now).into(),
            ],
        )?;
        self.granted(rows, false, true, "a new key")
    }

    /// A record past its retention window that the sweep has not reached yet
    /// is a new operation: it is reborn in flight at generation+1 (never 1, so
    /// a zombie owner of the old record stays fenced out).
    fn claim_expired(
        &self,
        key: &str,
        fp: &Fingerprint,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        let components =
            serde_json::to_string(&fp.components).map_err(|e| StoreError::Decode(e.to_string()))?;
        // Guard: expires_at <= now and no live lease — a record inside its
        // window, or whose owner may still be running, is never reborn.
        let rows = self.store.query(
            "UPDATE idempotency_records
             SET state = 'in_flight', generation = generation + 1, fingerprint = ?,
                 components = ?, created_at = ?, claimed_at = ?, lease_expires_at = ?,
                 completed_at = NULL, expires_at = ?, response_status = NULL,
                 response_headers = NULL, response_body = NULL, retained = NULL, replays = 0
             WHERE key = ? AND expires_at <= ?
               AND NOT (state = 'in_flight' AND lease_expires_at > ?)
             RETURNING generation",
            &[
                fp.digest.as_str().into(),
                components.into(),
                now.into(),
                now.into(),
                (now + policy.lease_ms).into(),
                policy.in_flight_expires_at(now).into(),
                key.into(),
                now.into(),
                now.into(),
            ],
        )?;
        self.granted(rows, false, false, "an expired record")
    }

    /// A released record is claimed again at generation+1.
    fn reclaim_released(
        &self,
        key: &str,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        // Guard: state = 'released' — only a released record is reclaimed here.
        let rows = self.store.query(
            "UPDATE idempotency_records
             SET state = 'in_flight', generation = generation + 1, claimed_at = ?,
                 lease_expires_at = ?, expires_at = ?
             WHERE key = ? AND state = 'released'
             RETURNING generation",
            &[
                now.into(),
                (now + policy.lease_ms).into(),
                policy.in_flight_expires_at(now).into(),
                key.into(),
            ],
        )?;
        self.granted(rows, false, false, "a released record")
    }

    /// An in-flight record whose lease has ended is taken over at generation+1.
    fn take_over(
        &self,
        key: &str,
        seen_generation: i64,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        // Guard: still in flight, at the generation we saw, with its lease over.
        let rows = self.store.query(
            "UPDATE idempotency_records
             SET generation = generation + 1, claimed_at = ?, lease_expires_at = ?,
                 expires_at = ?
             WHERE key = ? AND state = 'in_flight' AND generation = ?
               AND lease_expires_at <= ?
             RETURNING generation",
            &[
                now.into(),
                (now + policy.lease_ms).into(),
                policy.in_flight_expires_at(now).into(),
                key.into(),
                seen_generation.into(),
                now.into(),
            ],
        )?;
        self.granted(rows, true, false, "an in-flight record")
    }

    /// Turns the rows of a guarded claim statement into `Claimed`, counting
    /// the claim (and the takeover). No row means the guard did not match,
    /// which cannot happen inside the claim's transaction: refuse loudly.
    fn granted(
        &self,
        rows: Vec<Row>,
        takeover: bool,
        new_record: bool,
        what: &str,
    ) -> Result<ClaimOutcome, StoreError> {
        let generation = Self::returned_generation(rows)?
            .ok_or_else(|| StoreError::Sql(format!("{what} changed under its claim")))?;
        self.flush_pending()?;
        // One statement for every counter the grant moves.
        let mut counters = vec![(Counter::Claims, 1)];
        if takeover {
            counters.push((Counter::Takeovers, 1));
        }
        if new_record {
            counters.push((Counter::Records, 1));
        }
        self.bump_all(&counters)?;
        Ok(ClaimOutcome::Claimed {
            generation,
            takeover,
        })
    }
}
