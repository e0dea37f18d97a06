//! `claim`: take the key for a request, or learn why not.
//!
//! Answer: [`ClaimOutcome`] — `claimed {generation, takeover}` or a
//! refusal (`in_flight`, `completed`, `mismatch`, `ledger_full`). With
//! `wait_ms`, a claim that meets a live lease may be parked until the key
//! settles (the answer then carries the `ledger-waited-ms` header). With
//! `attempt`, a claim whose answer was lost may be sent again and is
//! answered the grant it was given.

use serde::{Deserialize, Serialize};

use super::call::{check_fingerprint, check_key, check_wait, Call, Route};
use crate::ledger::ClaimOutcome;
use crate::protocol::limits::check_window;
use crate::protocol::Fingerprint;

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
    /// Names this claim attempt (docs/rpc-v1.md): a grant keeps the name
    /// with its lease, and the same call sent again — its answer lost on
    /// the way back — is answered the same grant while that lease is
    /// live, instead of `in_flight`. A fresh random id per attempt (never
    /// a client's input); 1–64 of `[A-Za-z0-9_-]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<String>,
}

impl Call for ClaimCall {
    const ROUTE: Route = Route::Claim;
    type Answer = ClaimOutcome;

    fn validate(&self) -> Result<(), String> {
        check_key(&self.key)?;
        check_fingerprint(&self.fingerprint)?;
        check_window("lease_seconds", self.lease_seconds)?;
        check_window("retention_seconds", self.retention_seconds)?;
        check_wait(self.wait_ms)?;
        check_attempt(self.attempt.as_deref())
    }

    fn wait_ms(&self) -> Option<u64> {
        self.wait_ms
    }

    fn repeatable(&self) -> bool {
        self.attempt.is_some() && self.wait_ms.unwrap_or(0) == 0
    }
}

/// Longest claim attempt id (a UUID is 36).
pub const MAX_ATTEMPT_CHARS: usize = 64;

/// A claim attempt id: 1–[`MAX_ATTEMPT_CHARS`] of `[A-Za-z0-9_-]` (it is
/// stored with the record and may appear in logs: no other byte).
pub fn check_attempt(attempt: Option<&str>) -> Result<(), String> {
    let Some(id) = attempt else {
        return Ok(());
    };
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    if id.is_empty() || id.len() > MAX_ATTEMPT_CHARS || !id.bytes().all(allowed) {
        return Err(format!(
            "attempt must be 1 to {MAX_ATTEMPT_CHARS} characters of A-Z, a-z, 0-9, - and _"
        ));
    }
    Ok(())
}
