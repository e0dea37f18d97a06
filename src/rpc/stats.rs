//! `stats`: the object's counts (docs/contract.md §2.7).
//!
//! Answer: [`Stats`]. The call carries nothing; its body is not read, so
//! callers that send `{}` or nothing are both answered.

use serde::{Deserialize, Serialize};

use super::call::{Call, Route};
use crate::ledger::Stats;

/// `stats`: no parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatsCall {}

impl Call for StatsCall {
    const ROUTE: Route = Route::Stats;
    type Answer = Stats;

    fn validate(&self) -> Result<(), String> {
        Ok(())
    }

    fn parse(_body: &[u8]) -> Result<StatsCall, String> {
        Ok(StatsCall {})
    }
}
