//! `release`: give the key back after a run that produced no response.
//!
//! Answer: [`ReleaseOutcome`] — `released` (the next claim runs again at
//! generation+1), or `fenced_out {current}`.

use serde::{Deserialize, Serialize};

use super::call::{check_generation, check_key, check_lease, Call, Route};
use crate::ledger::{Grant, ReleaseOutcome};

/// `release`: give the key back after a run that produced no response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseCall {
    pub key: String,
    pub generation: i64,
    /// The lease token the claim answered (`claimed.lease`): the
    /// settlement is then guarded by it, so it never settles another
    /// object's grant of the same generation (docs/rpc-v1.md). Absent: the
    /// generation alone guards it (callers older than tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<String>,
}

impl ReleaseCall {
    /// The grant this settles: its generation, under its lease token.
    pub fn grant(&self) -> Grant<'_> {
        Grant::new(self.generation, self.lease.as_deref())
    }
}

impl Call for ReleaseCall {
    const ROUTE: Route = Route::Release;
    type Answer = ReleaseOutcome;

    fn validate(&self) -> Result<(), String> {
        check_key(&self.key)?;
        check_generation(self.generation)?;
        check_lease(self.lease.as_deref())
    }
}
