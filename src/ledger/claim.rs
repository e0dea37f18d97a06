//! Claim: who may run a request under a key, and at which generation.
//!
//! Role: the one decision every request makes first — a new key, a record
//! past its window (reborn), a released record (reclaimed), a live lease
//! (refused as in flight), an ended lease (taken over), a completed record
//! (replayed), another request under the same key (mismatch), a full
//! ledger — each as one guarded statement.
//!
//! What must stay true here:
//! - Every grant is one statement whose `WHERE` (or primary key) carries
//!   its guard, inside the claim's transaction; a guard that does not match
//!   inside that transaction is an error, never a silent grant.
//! - No statement has a `RETURNING` clause: the generation a grant takes is
//!   known from the record read in the same transaction, and the platform
//!   bills every returned row as a row read.
//! - A grant always takes a generation above every one the record had, and
//!   a new record starts above the object's generation floor (every
//!   generation the sweep deleted).
//! - A record whose owner's lease is live is never reborn or taken over.
//! - Refusals write nothing: they are counted in memory.
//! - Every grant that leads to a completion is checked against the byte
//!   quota first: a new key, a rebirth, a reclaim and a takeover are all
//!   refused `ledger_full` once the database has reached
//!   `MAX_DB_BYTES_PER_OBJECT` (docs/contract.md §4).
//! - Every grant writes a fresh lease token (`ledger::lease`) with its
//!   lease, in the same statement: the token names this grant across every
//!   object, and is what its settlement presents.
//! - Every grant writes its attempt's name (or NULL) with its lease, so a
//!   repeated attempt is answered only the grant it was given; a repeat
//!   writes and counts nothing (it is the same grant).

use super::clock::Millis;
use super::lease;
use super::machine::Ledger;
use super::outcome::{Claim, ClaimOutcome, Counter, KeyState, Refusal};
use super::policy::ClaimPolicy;
use super::record::Record;
use super::store::{SqlStore, StoreError};
use crate::protocol::Fingerprint;

impl<S: SqlStore> Ledger<S> {
    /// Claims `key` for the request with fingerprint `fp` (an unnamed
    /// attempt: see [`Ledger::claim_as`]).
    pub fn claim(
        &self,
        key: &str,
        fp: &Fingerprint,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        Ok(self.claim_as(key, fp, None, policy, now)?.outcome)
    }

    /// Claims `key` for the request with fingerprint `fp`, as the claim
    /// attempt its caller named `attempt` (docs/contract.md §3, "A claim's
    /// lost answer"): a grant keeps the name with the lease, and the same
    /// attempt claiming again — same key, same fingerprint — while that
    /// lease is live is answered the same grant (its generation and
    /// takeover; the lease is not extended), writing and counting nothing:
    /// the caller lost the first answer and asks again. Any other claim
    /// meets the lease as today (`in_flight`, then a takeover), and a
    /// takeover, reclaim or rebirth keeps its own attempt (or none), so an
    /// earlier one's name never answers for a later grant.
    pub fn claim_as(
        &self,
        key: &str,
        fp: &Fingerprint,
        attempt: Option<&str>,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<Claim, StoreError> {
        let out = self.transaction(|| {
            let record = self.read(key)?;
            if let Some(grant) = record.as_ref().and_then(|r| r.granted_to(attempt, fp, now)) {
                return Ok(Claim {
                    outcome: grant,
                    repeated: true,
                });
            }
            let outcome = self.claim_record(record, key, fp, attempt, policy, now)?;
            Ok(Claim {
                outcome,
                repeated: false,
            })
        })?;
        self.flush_after_commit(now);
        Ok(out)
    }

    /// The claim's decision on the record as read (inside its transaction).
    pub(super) fn claim_record(
        &self,
        record: Option<Record>,
        key: &str,
        fp: &Fingerprint,
        attempt: Option<&str>,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        let Some(record) = record else {
            return self.claim_new(key, fp, attempt, policy, now);
        };
        if record.is_expired(now) {
            return self.claim_expired(&record, key, fp, attempt, policy, now);
        }
        if record.fingerprint != fp.digest {
            self.tally().count(Counter::Reused, None, now);
            let differs = record.fingerprint()?.differs_from(fp);
            return Ok(ClaimOutcome::Refused(Refusal::Mismatch { differs }));
        }
        match record.state {
            KeyState::Completed => {
                let replayed = Some((key, record.generation));
                self.tally().count(Counter::Replays, replayed, now);
                let (generation, expires_at) = (record.generation, record.expires_at);
                Ok(ClaimOutcome::Refused(Refusal::Completed {
                    generation,
                    response: record.into_stored_response()?,
                    expires_at: Some(expires_at),
                }))
            }
            KeyState::Released => {
                self.reclaim_released(key, record.generation, attempt, policy, now)
            }
            KeyState::InFlight => match record.lease_expires_at {
                Some(lease_end) if lease_end > now => {
                    self.tally().count(Counter::InUse, None, now);
                    Ok(ClaimOutcome::Refused(Refusal::InFlight {
                        generation: record.generation,
                        retry_after_ms: lease_end - now,
                    }))
                }
                _ => self.take_over(key, record.generation, attempt, policy, now),
            },
        }
    }

    /// A key never seen (or already swept): in flight at the generation
    /// above the floor, if the quota allows.
    fn claim_new(
        &self,
        key: &str,
        fp: &Fingerprint,
        attempt: Option<&str>,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        if let Some(full) = self.ledger_full(policy, now)? {
            return Ok(ClaimOutcome::Refused(full));
        }
        let components = components(fp)?;
        let generation = self.generation_floor()? + 1;
        let lease = lease::mint()?;
        // Guard: the primary key — the key was read absent in this
        // transaction, so exactly one claimant inserts; a row that exists
        // after all fails the insert, and the transaction, loudly.
        self.store.execute(
            "INSERT INTO idempotency_records
                (key, state, generation, fingerprint, components, created_at, claimed_at,
                 lease_expires_at, expires_at, sweep_at, lease_attempt, lease_took_over,
                 lease_token)
             VALUES (?, 'in_flight', ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
            &[
                key.into(),
                generation.into(),
                fp.digest.as_str().into(),
                components.into(),
                now.into(),
                now.into(),
                (now + policy.lease_ms).into(),
                policy.in_flight_expires_at(now).into(),
                policy.sweep_at(now).into(),
                attempt.into(),
                lease.as_str().into(),
            ],
        )?;
        self.note_expiry(policy.in_flight_expires_at(now), policy.sweep_at(now), now)?;
        let grant = (generation, Some(lease));
        self.granted(true, grant, None, false, now, "a new key")
    }

    /// A record past its retention window that the sweep has not reached yet
    /// is a new operation: it is reborn in flight at generation+1 (never 1, so
    /// a zombie owner of the old record stays fenced out).
    fn claim_expired(
        &self,
        record: &Record,
        key: &str,
        fp: &Fingerprint,
        attempt: Option<&str>,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        if let Some(full) = self.bytes_full(policy, now)? {
            return Ok(ClaimOutcome::Refused(full));
        }
        let components = components(fp)?;
        let lease = lease::mint()?;
        // Guard: expires_at <= now and no live lease — a record inside its
        // window, or whose owner may still be running, is never reborn.
        let changed = self.store.update(
            "UPDATE idempotency_records
             SET state = 'in_flight', generation = generation + 1, fingerprint = ?,
                 components = ?, created_at = ?, claimed_at = ?, lease_expires_at = ?,
                 completed_at = NULL, expires_at = ?, sweep_at = ?, response_status = NULL,
                 response_headers = NULL, response_body = NULL, retained = NULL, replays = 0,
                 lease_attempt = ?, lease_took_over = 0, lease_token = ?
             WHERE key = ? AND expires_at <= ?
               AND NOT (state = 'in_flight' AND lease_expires_at > ?)",
            &[
                fp.digest.as_str().into(),
                components.into(),
                now.into(),
                now.into(),
                (now + policy.lease_ms).into(),
                policy.in_flight_expires_at(now).into(),
                policy.sweep_at(now).into(),
                attempt.into(),
                lease.as_str().into(),
                key.into(),
                now.into(),
                now.into(),
            ],
        )?;
        if changed {
            self.note_expiry(policy.in_flight_expires_at(now), policy.sweep_at(now), now)?;
        }
        let from = Counter::of_state(record.state);
        let grant = (record.generation + 1, Some(lease));
        self.granted(changed, grant, Some(from), false, now, "an expired record")
    }

    /// A released record is claimed again at generation+1.
    fn reclaim_released(
        &self,
        key: &str,
        seen_generation: i64,
        attempt: Option<&str>,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        if let Some(full) = self.bytes_full(policy, now)? {
            return Ok(ClaimOutcome::Refused(full));
        }
        let lease = lease::mint()?;
        // Guard: released, at the generation we saw — only a released
        // record is reclaimed here.
        let changed = self.store.update(
            "UPDATE idempotency_records
             SET state = 'in_flight', generation = generation + 1, claimed_at = ?,
                 lease_expires_at = ?, expires_at = ?, sweep_at = ?,
                 lease_attempt = ?, lease_took_over = 0, lease_token = ?
             WHERE key = ? AND state = 'released' AND generation = ?",
            &[
                now.into(),
                (now + policy.lease_ms).into(),
                policy.in_flight_expires_at(now).into(),
                policy.sweep_at(now).into(),
                attempt.into(),
                lease.as_str().into(),
                key.into(),
                seen_generation.into(),
            ],
        )?;
        if changed {
            self.note_expiry(policy.in_flight_expires_at(now), policy.sweep_at(now), now)?;
        }
        let from = Some(Counter::Released);
        let grant = (seen_generation + 1, Some(lease));
        self.granted(changed, grant, from, false, now, "a released record")
    }

    /// An in-flight record whose lease has ended is taken over at generation+1.
    fn take_over(
        &self,
        key: &str,
        seen_generation: i64,
        attempt: Option<&str>,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        if let Some(full) = self.bytes_full(policy, now)? {
            return Ok(ClaimOutcome::Refused(full));
        }
        let lease = lease::mint()?;
        // Guard: still in flight, at the generation we saw, with its lease
        // over. The new owner's attempt and token replace the old one's, so
        // the old attempt's name never answers for this grant, and the old
        // owner's token settles nothing.
        let changed = self.store.update(
            "UPDATE idempotency_records
             SET generation = generation + 1, claimed_at = ?, lease_expires_at = ?,
                 expires_at = ?, sweep_at = ?, lease_attempt = ?, lease_took_over = 1,
                 lease_token = ?
             WHERE key = ? AND state = 'in_flight' AND generation = ?
               AND lease_expires_at <= ?",
            &[
                now.into(),
                (now + policy.lease_ms).into(),
                policy.in_flight_expires_at(now).into(),
                policy.sweep_at(now).into(),
                attempt.into(),
                lease.as_str().into(),
                key.into(),
                seen_generation.into(),
                now.into(),
            ],
        )?;
        if changed {
            self.note_expiry(policy.in_flight_expires_at(now), policy.sweep_at(now), now)?;
        }
        let from = Some(Counter::InFlight);
        let grant = (seen_generation + 1, Some(lease));
        self.granted(changed, grant, from, true, now, "an in-flight record")
    }

    /// Turns a guarded claim statement into `Claimed` at `grant`'s
    /// generation under its lease token,
    /// counting the claim, the takeover and the record's move from `from`
    /// (None: a new record) to in flight. A guard that did not match
    /// (`changed` false) cannot happen inside the claim's transaction:
    /// refuse loudly.
    pub(super) fn granted(
        &self,
        changed: bool,
        (generation, lease): (i64, Option<String>),
        from: Option<Counter>,
        takeover: bool,
        now: Millis,
        what: &str,
    ) -> Result<ClaimOutcome, StoreError> {
        if !changed {
            return Err(StoreError::Sql(format!("{what} changed under its claim")));
        }
        let mut tally = self.tally();
        tally.count(Counter::Claims, None, now);
        if takeover {
            tally.count(Counter::Takeovers, None, now);
        }
        tally.moved(from, Counter::InFlight, now);
        Ok(ClaimOutcome::Claimed {
            generation,
            takeover,
            lease,
        })
    }
}

/// The fingerprint's components as stored (names what differed on a 422).
pub(super) fn components(fp: &Fingerprint) -> Result<String, StoreError> {
    serde_json::to_string(&fp.components).map_err(|e| StoreError::Decode(e.to_string()))
}
