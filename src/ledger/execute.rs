//! Execute: claim, run the embedded application and complete, in one
//! transaction.
//!
//! Role: library mode's exactly-once — a tenant-local mutation and its
//! ledger record commit together or not at all.
//!
//! What must stay true here:
//! - The application runs only under a grant (a new key, or the claim it
//!   needs), inside the same transaction as its completion.
//! - An application error, or a completion fenced out inside its own
//!   transaction (impossible), rolls everything back.
//! - Its completion is held to the byte quota as `complete` is: an answer
//!   the database has no room for is stored as a tombstone (`retained`
//!   false), the application's own writes still commit.
//! - A key new to it is written once, already completed
//!   ([`Ledger::insert_completed`]): one row and its index entry, and no
//!   lease token (no settlement follows its grant).

use super::claim::components;
use super::clock::Millis;
use super::lease::Grant;
use super::machine::Ledger;
use super::outcome::{ClaimOutcome, Counter, ExecuteOutcome};
use super::policy::ClaimPolicy;
use super::settle::Kept;
use super::store::{SqlStore, SqlValue, StoreError};
use crate::protocol::{AppResponse, CapturePolicy, Fingerprint, StoredResponse};

impl<S: SqlStore> Ledger<S> {
    /// Claim, run `app` and complete, in one transaction: a tenant-local
    /// mutation and its ledger record commit together or not at all. A key
    /// never seen is written once, already completed (one row and its index
    /// entry); any other goes through the claim it needs.
    pub fn execute<E: From<StoreError>>(
        &self,
        key: &str,
        fp: &Fingerprint,
        policy: &ClaimPolicy,
        capture: &CapturePolicy,
        now: Millis,
        app: impl FnOnce(&S) -> Result<AppResponse, E>,
    ) -> Result<ExecuteOutcome, E> {
        let out = self.transaction(|| -> Result<ExecuteOutcome, E> {
            let record = self.read(key)?;
            if record.is_none() {
                if let Some(full) = self.ledger_full(policy, now)? {
                    return Ok(ExecuteOutcome::Refused(full));
                }
                let response = app(&self.store)?;
                let stored = StoredResponse::capture(&response, capture);
                let (generation, retained) =
                    self.insert_completed(key, fp, &stored, policy, now)?;
                return Ok(ExecuteOutcome::Ran {
                    generation,
                    takeover: false,
                    retained,
                    response,
                });
            }
            let (generation, takeover, lease) =
                match self.claim_record(record, key, fp, None, policy, now)? {
                    ClaimOutcome::Claimed {
                        generation,
                        takeover,
                        lease,
                    } => (generation, takeover, lease),
                    ClaimOutcome::Refused(refusal) => return Ok(ExecuteOutcome::Refused(refusal)),
                };
            let response = app(&self.store)?;
            let stored = StoredResponse::capture(&response, capture);
            // Completed at the claim's own `now` and retention: its sweep_at
            // already equals the expiry, so no fix-up as in `complete`.
            let expires_at = now.saturating_add(policy.retention_ms);
            let max_db_bytes = policy.max_db_bytes;
            let grant = Grant::new(generation, lease.as_deref());
            let Some(kept) =
                self.store_completion(key, grant, &stored, expires_at, max_db_bytes, now)?
            else {
                // Impossible inside one transaction; refuse loudly and roll back
                // the application's writes rather than let them stand unrecorded.
                return Err(StoreError::Sql(
                    "completion fenced out inside its own transaction".into(),
                )
                .into());
            };
            Ok(ExecuteOutcome::Ran {
                generation,
                takeover,
                retained: kept == Kept::Body,
                response,
            })
        })?;
        self.flush_after_commit(now);
        Ok(out)
    }

    /// Embedded mode's fresh key: the record written once, already
    /// completed with `stored` (the application ran in this transaction),
    /// its body kept if the byte quota has room for it (see
    /// [`Ledger::fit_to_quota`]). Its generation, and whether the body was kept.
    pub(super) fn insert_completed(
        &self,
        key: &str,
        fp: &Fingerprint,
        stored: &StoredResponse,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<(i64, bool), StoreError> {
        let components = components(fp)?;
        let headers = serde_json::to_string(&stored.headers)
            .map_err(|e| StoreError::Decode(e.to_string()))?;
        let generation = self.generation_floor()? + 1;
        let mut params: Vec<SqlValue> = vec![
            key.into(),
            generation.into(),
            fp.digest.as_str().into(),
            components.into(),
            now.into(),
            now.into(),
            now.into(),
            policy.sweep_at(now).into(),
            policy.sweep_at(now).into(),
            i64::from(stored.status).into(),
            headers.into(),
            stored.body.clone().into(),
            i64::from(stored.retained()).into(),
        ];
        // Two rows: the record and its sweep_at index entry.
        let kept = self.fit_to_quota(&mut params, 10, 2, policy.max_db_bytes);
        // Guard: the primary key — the key was read absent in this
        // transaction; a row that exists after all fails the insert loudly.
        self.store.execute(
            "INSERT INTO idempotency_records
                (key, state, generation, fingerprint, components, created_at, claimed_at,
                 completed_at, expires_at, sweep_at, response_status, response_headers,
                 response_body, retained)
             VALUES (?, 'completed', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            &params,
        )?;
        self.note_expiry(policy.sweep_at(now), policy.sweep_at(now), now)?;
        self.granted(true, (generation, None), None, false, now, "a new key")?;
        // Granted in flight, then completed: the record counts as completed.
        let mut tally = self.tally();
        tally.moved(Some(Counter::InFlight), Counter::Completed, now);
        if kept == Kept::OverQuota {
            tally.count(Counter::QuotaTombstones, None, now);
        }
        Ok((generation, kept == Kept::Body))
    }
}
