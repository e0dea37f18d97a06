//! The embedded ledger's options as client/ledger/ledger.js sends them (defaults
//! filled there), checked against the same rules as the Worker's
//! variables, and turned into the core's claim and capture policies.

use serde::Deserialize;
use wasm_bindgen::JsValue;

use super::errors::refuse;
use crate::config::SWEEP_INTERVAL_SECONDS;
use crate::ledger::{ClaimPolicy, STORED_BODY_CEILING};
use crate::protocol::limits::check_window;
use crate::protocol::CapturePolicy;

/// The limits of one embedded ledger (client/ledger/ledger.js fills the defaults).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Options {
    retention_seconds: u64,
    max_keys: u64,
    max_db_bytes: u64,
    stored_headers: Vec<String>,
    max_stored_body_bytes: usize,
    sweep_interval_seconds: u64,
}

/// The options (client/ledger/ledger.js fills the defaults), checked: the claim
/// policy, the capture policy and the sweep grid.
pub(super) fn policies(options: &str) -> Result<(ClaimPolicy, CapturePolicy, i64), JsValue> {
    let options: Options = serde_json::from_slice(options.as_bytes()).map_err(refuse)?;
    check_window("retentionSeconds", Some(options.retention_seconds)).map_err(refuse)?;
    if options.max_keys == 0 {
        return Err(refuse("maxKeys must be at least 1"));
    }
    if options.max_db_bytes == 0 {
        return Err(refuse("maxDbBytes must be at least 1"));
    }
    if options.max_stored_body_bytes > STORED_BODY_CEILING {
        return Err(refuse(format!(
            "maxStoredBodyBytes must be at most {STORED_BODY_CEILING}"
        )));
    }
    if !SWEEP_INTERVAL_SECONDS.contains(&options.sweep_interval_seconds) {
        return Err(refuse(format!(
            "sweepIntervalSeconds must be a whole number {}..{}",
            SWEEP_INTERVAL_SECONDS.start(),
            SWEEP_INTERVAL_SECONDS.end()
        )));
    }
    let retention_ms = options.retention_seconds as i64 * 1000;
    let policy = ClaimPolicy {
        // `execute` writes a record already completed, in the
        // transaction that runs the caller's function: no record
        // of this ledger is ever left in flight, so no lease is
        // configurable (one minute, within the retention, as
        // ClaimPolicy requires).
        lease_ms: retention_ms.min(60_000),
        retention_ms,
        max_keys: options.max_keys,
        settle_grace_ms: 0,
        // New keys are refused (ledger_full) once the database
        // reaches this, before the platform's own 10 GB limit
        // would fail every write of the object, yours included.
        max_db_bytes: options.max_db_bytes,
    };
    let capture = CapturePolicy {
        stored_headers: options
            .stored_headers
            .iter()
            .map(|h| h.to_ascii_lowercase())
            .collect(),
        max_stored_body_bytes: options.max_stored_body_bytes,
    };
    Ok((
        policy,
        capture,
        options.sweep_interval_seconds as i64 * 1000,
    ))
}
