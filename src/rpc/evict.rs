//! `evict`: remove one key's record so the next request with the key runs
//! again (docs/contract.md §2.11, §3).
//!
//! Answer: [`EvictOutcome`] — `evicted {record}` (the record as it stood),
//! `in_flight {generation, retry_after_ms}` (a live lease: nothing changed),
//! or `not_found`.

use serde::{Deserialize, Serialize};

use super::call::{check_key, Call, Route};
use crate::ledger::EvictOutcome;

/// `evict`: remove one key's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvictCall {
    pub key: String,
}

impl Call for EvictCall {
    const ROUTE: Route = Route::Evict;
    type Answer = EvictOutcome;

    fn validate(&self) -> Result<(), String> {
        check_key(&self.key)
    }
}
