//! `release`: give the key back after a run that produced no response.
//!
//! Answer: [`ReleaseOutcome`] — `released` (the next claim runs again at
//! generation+1), or `fenced_out {current}`.

use serde::{Deserialize, Serialize};

use super::call::{check_generation, check_key, Call, Route};
use crate::ledger::ReleaseOutcome;

/// `release`: give the key back after a run that produced no response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseCall {
    pub key: String,
    pub generation: i64,
}

impl Call for ReleaseCall {
    const ROUTE: Route = Route::Release;
    type Answer = ReleaseOutcome;

    fn validate(&self) -> Result<(), String> {
        check_key(&self.key)?;
        check_generation(self.generation)
    }
}
