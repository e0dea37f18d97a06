//! Answers: what the gateway (or any edge) sends back for each ledger
//! outcome (docs/contract.md §2.5).
//!
//! Role: the one mapping from the ledger's closed outcomes to HTTP answers —
//! replay, `409` with `Retry-After`, `422` naming what differed, `429` with
//! `Retry-After`, the tombstone's `500` — and from a failed ledger call to
//! `503` (or, with `FAILURE_POLICY=open`, to running unprotected).
//!
//! What must stay true here:
//! - Every replay, tombstones included, carries `Idempotent-Replayed: true`
//!   and `X-Should-Retry: false` (a retry gets the same answer again).
//! - `Retry-After` is whole seconds, at least 1.
//! - Only a ledger that was certainly not reached may let a request run
//!   unprotected (`FAILURE_POLICY=open`): a fetch that threw, or an answer
//!   that could not be decoded, may mean the call was applied, so those are
//!   `503` whatever the policy.

use super::disposition::Disposition;
use crate::config::FailurePolicy;
use crate::ledger::{EvictOutcome, ExecuteOutcome, Refusal};
use crate::protocol::{
    AppResponse, Problem, ProblemKind, StoredResponse, PROBLEM_CONTENT_TYPE, SHOULD_RETRY_HEADER,
};
use crate::rpc::LedgerError;

/// The header every replay carries.
pub const REPLAYED_HEADER: &str = "Idempotent-Replayed";

/// Whole seconds to wait, rounded up, at least 1.
pub fn retry_after_seconds(ms: i64) -> i64 {
    (ms.max(0) + 999) / 1000
}

/// A replay of a stored response: its status, stored headers and exact body
/// bytes plus `Idempotent-Replayed: true` and `X-Should-Retry: false`. A
/// tombstone replays as a loud `500 idempotency-response-not-retained`
/// naming the original status (final too: the catalog says so).
pub fn replay(stored: StoredResponse) -> AppResponse {
    match stored.body {
        Some(body) => {
            let mut headers = stored.headers;
            headers.push((REPLAYED_HEADER.to_string(), "true".to_string()));
            headers.push((SHOULD_RETRY_HEADER.to_string(), "false".to_string()));
            AppResponse {
                status: stored.status,
                headers,
                body,
            }
        }
        None => AppResponse::from(
            &Problem::of(ProblemKind::ResponseNotRetained)
                .with("original_status", stored.status)
                .with_header(REPLAYED_HEADER, "true"),
        ),
    }
}

/// The answer to a claim that did not let the request run, and the outcome
/// its log line names.
pub fn refusal_answer(refusal: Refusal) -> (AppResponse, Disposition) {
    match refusal {
        Refusal::Completed { response, .. } => (replay(response), Disposition::Replayed),
        Refusal::InFlight { retry_after_ms, .. } => (
            Problem::of(ProblemKind::KeyInUse)
                .with("lease_remaining_ms", retry_after_ms)
                // A short poll hint: most runs finish long before the lease ends.
                .with_header("Retry-After", "1")
                .into(),
            Disposition::InUse,
        ),
        Refusal::Mismatch { differs } => (
            Problem::of(ProblemKind::KeyReused)
                .arg("differs", differs.join(", "))
                .with("differs", differs)
                .into(),
            Disposition::Reused,
        ),
        Refusal::LedgerFull { retry_after_ms } => (
            Problem::of(ProblemKind::LedgerFull)
                .with_header(
                    "Retry-After",
                    retry_after_seconds(retry_after_ms).max(1).to_string(),
                )
                .into(),
            Disposition::LedgerFull,
        ),
    }
}

/// The answer to an embedded `execute`: the application's own response when
/// it ran, else the refusal's answer.
pub fn execute_answer(outcome: ExecuteOutcome) -> (AppResponse, Disposition) {
    match outcome {
        ExecuteOutcome::Ran {
            response, takeover, ..
        } => (response, Disposition::ran(takeover)),
        ExecuteOutcome::Refused(refusal) => refusal_answer(refusal),
    }
}

/// The ledger could not be used: nothing was run.
pub fn store_unavailable() -> Problem {
    Problem::of(ProblemKind::StoreUnavailable)
}

/// What to do after a ledger call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum LedgerFailure {
    /// `FAILURE_POLICY=open` and the ledger was certainly not reached: run
    /// the request without the ledger (and log it).
    RunUnprotected,
    /// Answer this (the outcome is always `store_unavailable`).
    Answer(AppResponse),
    /// A call that was allowed to wait got no answer (the object was
    /// evicted or restarted while the request was parked): `409`, as if the
    /// key were still in flight, so the client retries (outcome `in_use`).
    WaitInterrupted(AppResponse),
}

/// Decides what a failed ledger call comes to under `policy`. `waiting`:
/// the call carried a wait budget, so a lost answer most likely means the
/// object went away while the request was parked on an in-flight key.
pub fn ledger_failure(error: &LedgerError, policy: FailurePolicy, waiting: bool) -> LedgerFailure {
    match (error, policy) {
        (LedgerError::NotReached(_), FailurePolicy::Open) => LedgerFailure::RunUnprotected,
        (LedgerError::Unreachable(_), _) if waiting => LedgerFailure::WaitInterrupted(
            Problem::new(
                ProblemKind::KeyInUse,
                "the ledger went away while this request waited for the key's first run; retry shortly",
            )
            .with_header("Retry-After", "1")
            .into(),
        ),
        _ => LedgerFailure::Answer(read_failure(error)),
    }
}

/// The answer to a failed ledger call that runs nothing (more) either way.
/// A problem the object rendered itself (a `misconfigured` object, a
/// refused call) is passed through as it is, with the `Retry-After` it
/// came with (an upgrading object's `503`); every other failure is `503`,
/// whose detail says honestly whether the call may have acted: only a
/// ledger that was certainly not reached "did not run" the request.
pub fn read_failure(error: &LedgerError) -> AppResponse {
    match error {
        LedgerError::Refused {
            status,
            problem,
            retry_after,
        } if problem.is_object() => {
            let mut headers = vec![("content-type".into(), PROBLEM_CONTENT_TYPE.into())];
            if let Some(seconds) = retry_after {
                headers.push(("retry-after".into(), seconds.to_string()));
            }
            AppResponse {
                status: *status,
                headers,
                body: problem.to_string().into_bytes(),
            }
        }
        LedgerError::NotReached(_) => store_unavailable().into(),
        LedgerError::Unreachable(_) | LedgerError::Undecodable(_) | LedgerError::Refused { .. } => {
            Problem::new(
                ProblemKind::StoreUnavailable,
                "the idempotency ledger did not answer in full; the request may have run: retry with the same Idempotency-Key to get its outcome",
            )
            .into()
        }
    }
}

/// The answer to a key lookup: the record, or `404`.
/// The answer to `DELETE /v1/idempotency-keys/{key}` (docs/contract.md
/// §2.11): `200` with the record as it stood when it was removed; `409
/// idempotency-key-in-use` while an owner's lease is live, with
/// `Retry-After` the seconds it has left (the eviction can succeed only
/// then); `404` when no record is held for the key.
pub fn evict_answer(outcome: EvictOutcome) -> AppResponse {
    match outcome {
        EvictOutcome::Evicted { record } => AppResponse::json(200, &record),
        EvictOutcome::InFlight { retry_after_ms, .. } => Problem::new(
            ProblemKind::KeyInUse,
            "the key is in flight: it can be evicted once its lease has ended",
        )
        .with("lease_remaining_ms", retry_after_ms)
        .with_header(
            "Retry-After",
            retry_after_seconds(retry_after_ms).max(1).to_string(),
        )
        .into(),
        EvictOutcome::NotFound => lookup_answer(None),
    }
}

pub fn lookup_answer(record: Option<crate::ledger::RecordView>) -> AppResponse {
    match record {
        Some(record) => AppResponse::json(200, &record),
        None => Problem::new(ProblemKind::NotFound, "no record for this key").into(),
    }
}

/// The quotas a tenant is held to, beside its stats, so a reader can show
/// what it uses against them: `MAX_KEYS_PER_TENANT` (the tenant's, however
/// many objects hold its keys) and `MAX_DB_BYTES_PER_OBJECT` (each
/// object's; a sharded tenant's `db_bytes` is the sum over its objects).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Limits {
    pub max_keys: u64,
    pub max_db_bytes: u64,
}

impl Limits {
    pub fn of(config: &crate::config::Config) -> Limits {
        Limits {
            max_keys: config.max_keys_per_tenant,
            max_db_bytes: config.max_db_bytes_per_object,
        }
    }
}

/// The gateway's stats answer: the tenant's counts and its limits.
#[derive(serde::Serialize)]
struct StatsAnswer<'a> {
    #[serde(flatten)]
    stats: &'a crate::ledger::Stats,
    limits: Limits,
}

/// `200` with a tenant's stats (docs/contract.md §2.7).
pub fn stats_answer(stats: &crate::ledger::Stats, limits: Limits) -> AppResponse {
    AppResponse::json(200, &StatsAnswer { stats, limits })
}
