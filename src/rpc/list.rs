//! `list`: one page of the object's keys (docs/rpc-v1.md#list).
//!
//! Answer: [`ListPage`] — the keys (each `lookup`'s record view plus its
//! `sweep_at`) and `next`, where this object's walk stopped (pass it back
//! as `after`), or `null` once nothing is left.

use serde::{Deserialize, Serialize};

use super::call::{check_key, Call, Route};
use crate::ledger::list::{DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, MAX_POSITION_MS};
use crate::ledger::{KeyState, ListPage, ListQuery, Position};

/// `list`: a page of at most `limit` keys (default 20, at most 100), of
/// one state or all, after a position of the walk (or from its start).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<KeyState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Position>,
}

impl ListCall {
    /// The ledger's query for this (validated) call.
    pub fn query(&self) -> ListQuery {
        ListQuery {
            state: self.state,
            limit: self.limit.unwrap_or(DEFAULT_LIST_LIMIT),
            after: self.after.clone(),
        }
    }
}

impl Call for ListCall {
    const ROUTE: Route = Route::List;
    type Answer = ListPage;

    fn validate(&self) -> Result<(), String> {
        if let Some(limit) = self.limit {
            if !(1..=MAX_LIST_LIMIT).contains(&limit) {
                return Err(format!("limit must be between 1 and {MAX_LIST_LIMIT}"));
            }
        }
        if let Some(after) = &self.after {
            check_key(&after.key).map_err(|e| format!("after.key: {e}"))?;
            if after.sweep_at.abs() > MAX_POSITION_MS {
                return Err(format!(
                    "after.sweep_at must be between -{MAX_POSITION_MS} and {MAX_POSITION_MS}"
                ));
            }
        }
        Ok(())
    }
}
