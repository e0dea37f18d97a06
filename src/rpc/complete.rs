//! `complete`: record the response of the owner at `generation`.
//!
//! Answer: [`CompleteOutcome`] — `stored`, or `fenced_out {current}` when
//! the record is no longer in flight at that generation.

use serde::{Deserialize, Serialize};

use super::call::{check_generation, check_key, check_lease, Call, Route};
use crate::ledger::{CompleteOutcome, Grant, STORED_BODY_CEILING};
use crate::protocol::limits::check_window;
use crate::protocol::StoredResponse;

/// `complete`: record the response of the owner at `generation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompleteCall {
    pub key: String,
    pub generation: i64,
    /// The lease token the claim answered (`claimed.lease`): the
    /// settlement is then guarded by it, so it never settles another
    /// object's grant of the same generation (docs/rpc-v1.md). Absent: the
    /// generation alone guards it (callers older than tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<String>,
    pub response: StoredResponse,
    /// Defaults to the object's `RETENTION_SECONDS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_seconds: Option<u64>,
}

impl CompleteCall {
    /// The grant this settles: its generation, under its lease token.
    pub fn grant(&self) -> Grant<'_> {
        Grant::new(self.generation, self.lease.as_deref())
    }
}

impl Call for CompleteCall {
    const ROUTE: Route = Route::Complete;
    type Answer = CompleteOutcome;

    fn validate(&self) -> Result<(), String> {
        check_key(&self.key)?;
        check_generation(self.generation)?;
        check_lease(self.lease.as_deref())?;
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
