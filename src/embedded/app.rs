//! Calling the caller's synchronous function inside the ledger's
//! transaction, and reading its answer as client/ledger/ledger.js encodes it.

use js_sys::{Array, Function, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};

use super::errors::refuse;
use crate::ledger::StoreError;
use crate::protocol::AppResponse;

/// Why an `execute` did not finish: the store, or the caller's function.
pub(super) enum Failed {
    Store(StoreError),
    /// What the caller's function threw (or a malformed answer of it).
    Thrown(JsValue),
}

impl From<StoreError> for Failed {
    fn from(e: StoreError) -> Self {
        Failed::Store(e)
    }
}

/// Calls the caller's function and reads its answer
/// (`[status, [name, value, …], body]`, made by client/ledger/ledger.js).
pub(super) fn run_app(run: &Function) -> Result<AppResponse, Failed> {
    let answer = run.call0(&JsValue::UNDEFINED).map_err(Failed::Thrown)?;
    let malformed = |what: &str| Failed::Thrown(refuse(format!("execute: {what}")));
    let parts: Array = answer
        .dyn_into()
        .map_err(|_| malformed("run() must answer [status, headers, body]"))?;
    let status = parts
        .get(0)
        .as_f64()
        .filter(|s| s.fract() == 0.0 && (200.0..=599.0).contains(s))
        .ok_or_else(|| malformed("the status must be a whole number 200..599"))?
        as u16;
    let flat: Array = parts
        .get(1)
        .dyn_into()
        .map_err(|_| malformed("headers must be an array"))?;
    let mut headers = Vec::with_capacity(flat.length() as usize / 2);
    for i in (0..flat.length()).step_by(2) {
        match (flat.get(i).as_string(), flat.get(i + 1).as_string()) {
            (Some(name), Some(value)) => headers.push((name.to_ascii_lowercase(), value)),
            _ => return Err(malformed("header names and values must be strings")),
        }
    }
    let body: Uint8Array = parts
        .get(2)
        .dyn_into()
        .map_err(|_| malformed("the body must be a Uint8Array"))?;
    Ok(AppResponse {
        status,
        headers,
        body: body.to_vec(),
    })
}
