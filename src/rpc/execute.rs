//! `execute`: claim, run the embedded application and complete, in one
//! transaction (a single hop).
//!
//! Answer: [`ExecuteOutcome`] — `ran {generation, takeover, retained,
//! response}` or a refusal, as `claim`'s. The borrowed form
//! [`ExecuteCallRef`] serialises to the same JSON without copying the body.

use serde::{Deserialize, Serialize};

use super::call::{check_fingerprint, check_key, check_wait, Call, Route};
use crate::ledger::ExecuteOutcome;
use crate::protocol::response::base64_bytes;
use crate::protocol::Fingerprint;

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

impl Call for ExecuteCall {
    const ROUTE: Route = Route::Execute;
    type Answer = ExecuteOutcome;

    fn validate(&self) -> Result<(), String> {
        validate_parts(
            &self.key,
            &self.fingerprint,
            &self.request.target,
            self.wait_ms,
        )
    }

    fn wait_ms(&self) -> Option<u64> {
        self.wait_ms
    }

    fn repeatable(&self) -> bool {
        self.wait_ms.unwrap_or(0) == 0
    }
}

impl Call for ExecuteCallRef<'_> {
    const ROUTE: Route = Route::Execute;
    type Answer = ExecuteOutcome;

    fn validate(&self) -> Result<(), String> {
        validate_parts(
            self.key,
            self.fingerprint,
            self.request.target,
            self.wait_ms,
        )
    }

    fn wait_ms(&self) -> Option<u64> {
        self.wait_ms
    }

    fn repeatable(&self) -> bool {
        self.wait_ms.unwrap_or(0) == 0
    }
}

fn validate_parts(
    key: &str,
    fingerprint: &Fingerprint,
    target: &str,
    wait_ms: Option<u64>,
) -> Result<(), String> {
    check_key(key)?;
    check_fingerprint(fingerprint)?;
    if !target.starts_with('/') {
        return Err("request.target must start with /".into());
    }
    check_wait(wait_ms)
}
