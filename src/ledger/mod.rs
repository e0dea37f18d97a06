//! The ledger state machine: claim, complete, release, lookup, stats, sweep.
//!
//! Role: the product's heart. Runs on any [`SqlStore`] (Durable Object SQLite
//! in workerd, rusqlite on the host) and knows nothing of HTTP or workers-rs.
//!
//! What must stay true here:
//! - Each transition runs inside one `atomically` call, and the statement
//!   that changes state carries its guard in its `WHERE` clause
//!   (`generation = ?`, `state = 'in_flight'`, `lease_expires_at <= ?`), so a
//!   reader sees the fence in the SQL itself.
//! - A record's generation only grows while the record exists: takeover,
//!   reclaim after release and rebirth after expiry all take generation+1, so
//!   an owner from an earlier generation can never complete a later claim.
//! - `complete` and `release` succeed only while the record is in flight at
//!   the caller's generation. A completed record's response is never replaced.
//! - A record is deleted only by the sweep, and only once `expires_at <= now`.
//! - Time is always the caller-supplied `now` of the *object's* clock.

pub mod outcome;
pub mod pending;
pub mod record;
pub mod schema;
pub mod stats;
pub mod store;

#[cfg(feature = "host-sqlite")]
pub mod rusqlite_store;

use std::cell::RefCell;

use crate::protocol::{AppResponse, CapturePolicy, Fingerprint, StoredResponse};
pub use outcome::{
    ClaimOutcome, CompleteOutcome, Counter, ExecuteOutcome, KeyState, RecordState, Refusal,
    ReleaseOutcome,
};
use pending::Pending;
pub use record::{rfc3339, RecordView};
use record::{Record, SELECT_RECORD};
pub use stats::{Stats, SweepOutcome};
pub use store::{Row, RowExt, SqlStore, SqlValue, StoreError};

/// Epoch milliseconds on the object's clock.
pub type Millis = i64;

/// Largest response body the ledger stores: a Durable Object SQLite row
/// holds at most 2 MB, and the record's other columns need room too.
/// `MAX_STORED_BODY_BYTES` and RPC `complete` are both bounded by it.
pub const STORED_BODY_CEILING: usize = 1_900_000;

/// The limits a claim is made under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimPolicy {
    /// How long an owner may run before a retry may take over.
    pub lease_ms: Millis,
    /// How long a record is kept after its last claim or its completion.
    pub retention_ms: Millis,
    /// Records one object may hold; a new key beyond this is refused.
    pub max_keys: u64,
    /// Bytes one object's database may reach before new keys are refused
    /// (`MAX_DB_BYTES_PER_OBJECT`), so a write never meets the platform's
    /// own limit (10 GB per object). Engines that cannot tell their size
    /// are not held to it.
    pub max_db_bytes: u64,
}

impl ClaimPolicy {
    /// When a record claimed (or taken over) at `now` leaves its retention
    /// window: never before its lease ends, so neither the sweep nor an
    /// expiry can free a key whose owner may still be running.
    pub fn in_flight_expires_at(&self, now: Millis) -> Millis {
        now.saturating_add(self.retention_ms.max(self.lease_ms))
    }
}

/// Is a record past its window, so that it may be reborn or swept? An
/// in-flight record whose lease is live never is, whatever its
/// `expires_at` says (records written before leases outlived retention).
fn is_expired(expires_at: Millis, lease_live: bool, now: Millis) -> bool {
    expires_at <= now && !lease_live
}

/// The ledger over one tenant's SQLite database.
pub struct Ledger<S> {
    store: S,
    /// Refusal counts not yet written (see [`pending`]): replays, 409s and
    /// 422s are read-only in SQLite.
    pending: RefCell<Pending>,
}

impl<S: SqlStore> Ledger<S> {
    pub fn new(store: S) -> Ledger<S> {
        Ledger {
            store,
            pending: RefCell::new(Pending::default()),
        }
    }

    /// The store underneath, for colocated application tables.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Creates the ledger's tables if they do not exist.
    pub fn migrate(&self) -> Result<(), StoreError> {
        self.store.atomically(|| {
            for statement in schema::SCHEMA {
                self.store.execute(statement, &[])?;
            }
            Ok(())
        })
    }

    fn read(&self, key: &str) -> Result<Option<Record>, StoreError> {
        let rows = self.store.query(SELECT_RECORD, &[key.into()])?;
        rows.first().map(Record::from_row).transpose()
    }

    /// Reads the generation a guarded statement returned, if it matched.
    fn returned_generation(rows: Vec<Row>) -> Result<Option<i64>, StoreError> {
        match rows.first() {
            Some(row) => row.int(0).map(Some),
            None => Ok(None),
        }
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

    /// Does this ledger hold `key` — a record not yet past its window? (A
    /// retired shard answers only for the keys it holds.)
    pub fn holds(&self, key: &str, now: Millis) -> Result<bool, StoreError> {
        Ok(self.read(key)?.is_some_and(|record| {
            let lease_live = record.state == KeyState::InFlight
                && record.lease_expires_at.is_some_and(|end| end > now);
            !is_expired(record.expires_at, lease_live, now)
        }))
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
            let lease_live = record.state == KeyState::InFlight
                && record.lease_expires_at.is_some_and(|end| end > now);
            if is_expired(record.expires_at, lease_live, now) {
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

    fn current_state(&self, key: &str) -> Result<Option<RecordState>, StoreError> {
        Ok(self.read(key)?.map(|r| RecordState {
            state: r.state,
            generation: r.generation,
        }))
    }

    /// Records the response of the owner at `generation`.
    pub fn complete(
        &self,
        key: &str,
        generation: i64,
        response: &StoredResponse,
        retention_ms: Millis,
        now: Millis,
    ) -> Result<CompleteOutcome, StoreError> {
        let headers = serde_json::to_string(&response.headers)
            .map_err(|e| StoreError::Decode(e.to_string()))?;
        let retained = i64::from(response.retained());
        self.store.atomically(|| {
            self.flush_pending()?;
            // Guard: in flight at the caller's generation. A late completion
            // with no takeover since is still accepted: nobody else ran.
            let rows = self.store.query(
                "UPDATE idempotency_records
                 SET state = 'completed', lease_expires_at = NULL, completed_at = ?,
                     expires_at = ?, response_status = ?, response_headers = ?,
                     response_body = ?, retained = ?
                 WHERE key = ? AND state = 'in_flight' AND generation = ?
                 RETURNING generation",
                &[
                    now.into(),
                    (now + retention_ms).into(),
                    i64::from(response.status).into(),
                    headers.into(),
                    response.body.clone().into(),
                    retained.into(),
                    key.into(),
                    generation.into(),
                ],
            )?;
            if Self::returned_generation(rows)?.is_some() {
                return Ok(CompleteOutcome::Stored);
            }
            self.bump(Counter::FencedOut, 1)?;
            Ok(CompleteOutcome::FencedOut {
                current: self.current_state(key)?,
            })
        })
    }

    /// Gives the key back so the next claim runs again (at generation+1).
    /// Never deletes the record and never resets its generation.
    pub fn release(&self, key: &str, generation: i64) -> Result<ReleaseOutcome, StoreError> {
        self.store.atomically(|| {
            self.flush_pending()?;
            // Guard: in flight at the caller's generation.
            let rows = self.store.query(
                "UPDATE idempotency_records
                 SET state = 'released', lease_expires_at = NULL
                 WHERE key = ? AND state = 'in_flight' AND generation = ?
                 RETURNING generation",
                &[key.into(), generation.into()],
            )?;
            if Self::returned_generation(rows)?.is_some() {
                return Ok(ReleaseOutcome::Released);
            }
            self.bump(Counter::FencedOut, 1)?;
            Ok(ReleaseOutcome::FencedOut {
                current: self.current_state(key)?,
            })
        })
    }

    /// Claim, run `app` and complete, in one transaction: a tenant-local
    /// mutation and its ledger record commit together or not at all.
    pub fn execute<E: From<StoreError>>(
        &self,
        key: &str,
        fp: &Fingerprint,
        policy: &ClaimPolicy,
        capture: &CapturePolicy,
        now: Millis,
        app: impl FnOnce(&S) -> Result<AppResponse, E>,
    ) -> Result<ExecuteOutcome, E> {
        self.store.atomically(|| {
            let (generation, takeover) = match self.claim(key, fp, policy, now)? {
                ClaimOutcome::Claimed {
                    generation,
                    takeover,
                } => (generation, takeover),
                ClaimOutcome::Refused(refusal) => return Ok(ExecuteOutcome::Refused(refusal)),
            };
            let response = app(&self.store)?;
            let stored = StoredResponse::capture(&response, capture);
            match self.complete(key, generation, &stored, policy.retention_ms, now)? {
                CompleteOutcome::Stored => Ok(ExecuteOutcome::Ran {
                    generation,
                    takeover,
                    retained: stored.retained(),
                    response,
                }),
                // Impossible inside one transaction; refuse loudly and roll back
                // the application's writes rather than let them stand unrecorded.
                CompleteOutcome::FencedOut { .. } => Err(StoreError::Sql(
                    "completion fenced out inside its own transaction".into(),
                )
                .into()),
            }
        })
    }

    /// The record for `key`, unless absent or past its retention window.
    pub fn lookup(&self, key: &str, now: Millis) -> Result<Option<RecordView>, StoreError> {
        self.flush_pending()?;
        Ok(self
            .read(key)?
            .filter(|r| r.expires_at > now)
            .map(|r| r.view(key)))
    }
}
