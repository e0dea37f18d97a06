//! The versioned fetch RPC between Workers and a `TenantLedger` (docs/contract.md §3).
//!
//! Role: the wire shapes of `/rpc/v1/...` — every call is a `POST` with a JSON
//! body, every answer JSON (outcomes tagged by `"outcome"`), every refusal an
//! RFC 9457 problem. Pure: both the object and the typed client use these.
//!
//! What must stay true here:
//! - v1 never changes incompatibly; a v2 gets its own prefix and types.
//! - Calls are validated before anything is written: a bad call changes
//!   nothing (`400 invalid-rpc`).
//! - Outcomes are the ledger's own closed enums, serialised as they are.

use serde::{Deserialize, Serialize};

use crate::ledger::{RecordView, Stats, STORED_BODY_CEILING};
use crate::protocol::response::base64_bytes;
use crate::protocol::{validate_key, Fingerprint, StoredResponse};

/// The object's answer header naming how long a claim or execute waited.
pub const WAITED_HEADER: &str = "ledger-waited-ms";

/// The largest `wait_ms` an RPC call may carry (one hour); the object then
/// bounds it by its own `IN_FLIGHT_WAIT_MAX_SECONDS`.
pub const MAX_CALL_WAIT_MS: u64 = 3_600_000;

/// Why a ledger call did not produce an outcome, as its caller sees it.
///
/// The cases call for different answers (see `contract::answer`): only
/// `NotReached` means the object certainly did not act on the call.
#[derive(Debug, Clone, PartialEq)]
pub enum LedgerError {
    /// The call certainly never reached the object's code: no binding or
    /// stub, the request could not be built, or the runtime refused it as
    /// `overloaded` before delivering it. The only failure after which
    /// running a request without the ledger cannot run it twice.
    NotReached(String),
    /// No answer arrived (the stub's fetch threw): the object may have run
    /// the call, or part of it.
    Unreachable(String),
    /// The object answered 200 but the answer could not be decoded: the call
    /// may well have been applied.
    Undecodable(String),
    /// The object answered with a non-200 status (a problem document).
    Refused {
        status: u16,
        problem: serde_json::Value,
    },
}

impl std::fmt::Display for LedgerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LedgerError::NotReached(m) => write!(f, "ledger not reached: {m}"),
            LedgerError::Unreachable(m) => write!(f, "ledger unreachable: {m}"),
            LedgerError::Undecodable(m) => write!(f, "undecodable ledger answer: {m}"),
            LedgerError::Refused { status, problem } => {
                write!(f, "ledger refused ({status}): {problem}")
            }
        }
    }
}

impl std::error::Error for LedgerError {}

/// The object's path for the embedded application's unprotected requests.
pub const APP_PATH: &str = "/app";

/// The header that carries an application request's target (path + query)
/// to [`APP_PATH`]: the target is never part of the object's URL.
pub const APP_TARGET_HEADER: &str = "x-ledger-app-target";

/// Every v1 route lives under this prefix.
pub const RPC_V1_PREFIX: &str = "/rpc/v1/";

/// The v1 operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Claim,
    Complete,
    Release,
    Lookup,
    Stats,
    Execute,
    Replayed,
}

impl Route {
    /// Resolves a request path such as `/rpc/v1/claim`.
    pub fn from_path(path: &str) -> Option<Route> {
        match path.strip_prefix(RPC_V1_PREFIX)? {
            "claim" => Some(Route::Claim),
            "complete" => Some(Route::Complete),
            "release" => Some(Route::Release),
            "lookup" => Some(Route::Lookup),
            "stats" => Some(Route::Stats),
            "execute" => Some(Route::Execute),
            "replayed" => Some(Route::Replayed),
            _ => None,
        }
    }

    pub fn path(self) -> &'static str {
        match self {
            Route::Claim => "/rpc/v1/claim",
            Route::Complete => "/rpc/v1/complete",
            Route::Release => "/rpc/v1/release",
            Route::Lookup => "/rpc/v1/lookup",
            Route::Stats => "/rpc/v1/stats",
            Route::Execute => "/rpc/v1/execute",
            Route::Replayed => "/rpc/v1/replayed",
        }
    }
}

/// Longest lease or retention a caller may ask for (one year).
pub const MAX_WINDOW_SECONDS: u64 = 31_536_000;

fn check_window(name: &str, v: Option<u64>) -> Result<(), String> {
    match v {
        Some(s) if s == 0 || s > MAX_WINDOW_SECONDS => {
            Err(format!("{name} must be between 1 and {MAX_WINDOW_SECONDS}"))
        }
        _ => Ok(()),
    }
}

fn check_key(key: &str) -> Result<(), String> {
    validate_key(key).map_err(|e| e.to_string())
}

fn check_generation(generation: i64) -> Result<(), String> {
    if generation < 1 {
        return Err("generation must be at least 1".into());
    }
    Ok(())
}

/// `claim`: take the key for a request, or learn why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimCall {
    pub key: String,
    pub fingerprint: Fingerprint,
    /// Defaults to the object's `LEASE_SECONDS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_seconds: Option<u64>,
    /// Defaults to the object's `RETENTION_SECONDS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_seconds: Option<u64>,
    /// If the key is in flight under a live lease, wait up to this many ms
    /// for its outcome instead of answering `in_flight` at once (bounded by
    /// the object's `IN_FLIGHT_WAIT_MAX_SECONDS` and the lease). Absent or
    /// 0: answer at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
}

impl ClaimCall {
    pub fn validate(&self) -> Result<(), String> {
        check_key(&self.key)?;
        if !self.fingerprint.is_well_formed() {
            return Err("fingerprint is not well formed (digest must match its components)".into());
        }
        check_window("lease_seconds", self.lease_seconds)?;
        check_window("retention_seconds", self.retention_seconds)?;
        check_wait(self.wait_ms)
    }
}

fn check_wait(wait_ms: Option<u64>) -> Result<(), String> {
    match wait_ms {
        Some(ms) if ms > MAX_CALL_WAIT_MS => {
            Err(format!("wait_ms must be between 0 and {MAX_CALL_WAIT_MS}"))
        }
        _ => Ok(()),
    }
}

/// The effective windows of a claim (the call's, else the object's
/// defaults): a record must outlive its lease, so a retention shorter than
/// the lease is refused (`400 invalid-rpc`) rather than silently stretched.
pub fn check_claim_windows(lease_ms: i64, retention_ms: i64) -> Result<(), String> {
    if retention_ms < lease_ms {
        return Err(format!(
            "the retention ({} s) is shorter than the lease ({} s); a record must outlive its lease",
            retention_ms / 1000,
            lease_ms / 1000
        ));
    }
    Ok(())
}

/// `complete`: record the response of the owner at `generation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompleteCall {
    pub key: String,
    pub generation: i64,
    pub response: StoredResponse,
    /// Defaults to the object's `RETENTION_SECONDS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_seconds: Option<u64>,
}

impl CompleteCall {
    pub fn validate(&self) -> Result<(), String> {
        check_key(&self.key)?;
        check_generation(self.generation)?;
        check_window("retention_seconds", self.retention_seconds)?;
        let r = &self.response;
        // Only a final status can be replayed: a stored 1xx (or 600+) would
        // make every replay fail to build.
        if !crate::protocol::is_passable_status(r.status) {
            return Err("response.status must be 200-599".into());
        }
        for (name, _) in &r.headers {
            if name.is_empty() || name.to_ascii_lowercase() != *name {
                return Err("response header names must be lowercase and non-empty".into());
            }
            if name == "set-cookie" {
                return Err("set-cookie can never be stored".into());
            }
        }
        if r.body
            .as_ref()
            .is_some_and(|b| b.len() > STORED_BODY_CEILING)
        {
            return Err(format!(
                "response.body is over {STORED_BODY_CEILING} bytes; send null to record a tombstone"
            ));
        }
        Ok(())
    }
}

/// `release`: give the key back after a run that produced no response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseCall {
    pub key: String,
    pub generation: i64,
}

impl ReleaseCall {
    pub fn validate(&self) -> Result<(), String> {
        check_key(&self.key)?;
        check_generation(self.generation)
    }
}

/// `lookup`: introspect one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LookupCall {
    pub key: String,
}

impl LookupCall {
    pub fn validate(&self) -> Result<(), String> {
        check_key(&self.key)
    }
}

/// The answer to `lookup`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookupAnswer {
    pub record: Option<RecordView>,
}

/// The answer to `stats`.
pub type StatsAnswer = Stats;

/// Most entries one `replayed` call may carry.
pub const MAX_REPLAYED_ENTRIES: usize = 1_000;

/// Most replays one entry may report.
pub const MAX_REPLAYED_COUNT: i64 = 1_000_000;

/// Replays of one completed record answered without the object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayCount {
    pub key: String,
    /// The generation whose completion was replayed.
    pub generation: i64,
    pub count: i64,
}

/// `replayed`: count replays a caller answered from its own cache (the
/// gateway's replay cache), so `stats` stays exact. Changes no record's
/// state; a record no longer completed at that generation keeps its count
/// out of the record but in the tenant's `replays`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayedCall {
    pub replays: Vec<ReplayCount>,
    /// Completions the caller could not store after its retries (added to
    /// `stats.complete_failed`). Optional; 0 when absent.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub complete_failed: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl ReplayedCall {
    pub fn validate(&self) -> Result<(), String> {
        if self.replays.len() > MAX_REPLAYED_ENTRIES {
            return Err(format!("at most {MAX_REPLAYED_ENTRIES} entries per call"));
        }
        if !(0..=MAX_REPLAYED_COUNT).contains(&self.complete_failed) {
            return Err(format!(
                "complete_failed must be between 0 and {MAX_REPLAYED_COUNT}"
            ));
        }
        for r in &self.replays {
            check_key(&r.key)?;
            check_generation(r.generation)?;
            if !(1..=MAX_REPLAYED_COUNT).contains(&r.count) {
                return Err(format!("count must be between 1 and {MAX_REPLAYED_COUNT}"));
            }
        }
        Ok(())
    }
}

/// The answer to `replayed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReplayedOutcome {
    Counted,
}

/// An `execute` call that borrows its parts: serialises to exactly the JSON
/// of [`ExecuteCall`] without copying the request body first (the gateway
/// keeps the body for a `FAILURE_POLICY=open` fallback).
#[derive(Debug, Serialize)]
pub struct ExecuteCallRef<'a> {
    pub key: &'a str,
    pub fingerprint: &'a Fingerprint,
    pub request: AppRequestRef<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
}

/// The borrowed form of [`AppRequest`].
#[derive(Debug, Serialize)]
pub struct AppRequestRef<'a> {
    pub method: &'a str,
    pub target: &'a str,
    #[serde(with = "base64_bytes")]
    pub body: &'a [u8],
}

/// The request the embedded application should run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppRequest {
    /// The method as received (uppercase).
    pub method: String,
    /// Path plus query, verbatim.
    pub target: String,
    #[serde(with = "base64_bytes")]
    pub body: Vec<u8>,
}

impl AppRequest {
    /// The path without its query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// `execute`: claim, run the embedded application and complete, in one
/// transaction (single hop).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecuteCall {
    pub key: String,
    pub fingerprint: Fingerprint,
    pub request: AppRequest,
    /// As `ClaimCall::wait_ms`: wait for an in-flight key's outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
}

impl ExecuteCall {
    pub fn validate(&self) -> Result<(), String> {
        check_key(&self.key)?;
        if !self.fingerprint.is_well_formed() {
            return Err("fingerprint is not well formed (digest must match its components)".into());
        }
        if !self.request.target.starts_with('/') {
            return Err("request.target must start with /".into());
        }
        check_wait(self.wait_ms)
    }
}
