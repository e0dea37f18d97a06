//! `lookup`: introspect one key (the record, or none).

use serde::{Deserialize, Serialize};

use super::call::{check_key, Call, Route};
use crate::ledger::RecordView;

/// `lookup`: introspect one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LookupCall {
    pub key: String,
}

impl Call for LookupCall {
    const ROUTE: Route = Route::Lookup;
    type Answer = LookupAnswer;

    fn validate(&self) -> Result<(), String> {
        check_key(&self.key)
    }
}

/// The answer to `lookup`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookupAnswer {
    pub record: Option<RecordView>,
}
