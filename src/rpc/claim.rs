//! `claim`: take the key for a request, or learn why not.
//!
//! Answer: [`ClaimOutcome`] — `claimed {generation, takeover}` or a
//! refusal (`in_flight`, `completed`, `mismatch`, `ledger_full`). With
//! `wait_ms`, a claim that meets a live lease may be parked until the key
//! settles (the answer then carries the `ledger-waited-ms` header).

use serde::{Deserialize, Serialize};

use super::{check_fingerprint, check_key, check_wait, check_window, Call, Route};
use crate::ledger::ClaimOutcome;
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
}

impl Call for ClaimCall {
    const ROUTE: Route = Route::Claim;
    type Answer = ClaimOutcome;

    fn validate(&self) -> Result<(), String> {
        check_key(&self.key)?;
        check_fingerprint(&self.fingerprint)?;
        check_window("lease_seconds", self.lease_seconds)?;
        check_window("retention_seconds", self.retention_seconds)?;
        check_wait(self.wait_ms)
    }

    fn wait_ms(&self) -> Option<u64> {
        self.wait_ms
    }
}

/// The one rule for a lease and a retention (a claim's effective windows —
/// the call's, else the object's defaults — and `RETENTION_SECONDS`
/// against `LEASE_SECONDS` alike): a record must outlive its lease, so the
/// retention may not be shorter than the lease (equal is enough: the record
/// expires no earlier than its lease ends); a shorter one is refused
/// (`400 invalid-rpc`, or the configuration's `500 misconfigured`) rather
/// than silently stretched. The JS middleware holds `retentionSeconds`
/// and `leaseSeconds` to the same rule (tests/fixtures/limits.json
/// `windows` pins both).
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
