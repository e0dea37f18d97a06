//! How the embedded ledger throws into JS: a `TypeError` for what the
//! caller got wrong (invalid options or input), an `Error` when the
//! object's storage failed.

use wasm_bindgen::JsValue;

use crate::ledger::StoreError;

pub(crate) fn refuse(message: impl std::fmt::Display) -> JsValue {
    js_sys::TypeError::new(&format!("idempotency-ledger: {message}")).into()
}

pub(super) fn store_failed(e: StoreError) -> JsValue {
    js_sys::Error::new(&format!(
        "idempotency-ledger: the ledger's storage failed: {e}"
    ))
    .into()
}
