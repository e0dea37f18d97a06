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

mod claim;
mod counters;
pub mod outcome;
pub mod pending;
pub mod record;
pub mod schema;
pub mod stats;
pub mod store;
mod sweep;

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
pub use stats::Stats;
pub use store::{Row, RowExt, SqlStore, SqlValue, StoreError};
pub use sweep::SweepOutcome;

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
