//! One RPC v1 request and its answer over a Durable Object stub: the
//! transport under the typed client (`platform::client`).
//!
//! Role: build the request (the call's JSON, the markers it carries),
//! send it through the raw JS stub, and read the answer — its status,
//! problem and `Retry-After`, the rows it reports writing, how long it
//! waited — into bytes or a [`LedgerError`].
//!
//! Speed (measured with `npm run bench:profile`): worker 0.8.7's
//! `Stub::fetch_with_request` turns the answer into a `worker::Response`
//! (reading its headers, `cf` and websocket), and `Response::bytes()` then
//! drains the body through a `ReadableStream` reader, one wasm↔JS crossing
//! per chunk and per lock. RPC calls instead go through the raw JS stub: a
//! `web_sys::Request` built directly, `stub.fetch(request)`, the status and
//! one `arrayBuffer()`.
//!
//! What must stay true here: a failure before the request left is
//! `NotReached` (the object was certainly not reached); a failure of the
//! stub's fetch is `Unreachable` (the object may have applied the call)
//! unless the runtime marked the object `overloaded` (it refused to run
//! it); an answer other than `200` is `Refused` with its status, problem
//! and `Retry-After`.

use std::cell::Cell;

use js_sys::{Function, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::worker_sys::web_sys;

use crate::ledger::store::durable::js_message;
use crate::platform::analytics::ROWS_WRITTEN_HEADER;
use crate::rpc::{LedgerError, Route, ATTEMPT_HEADER, PREVIOUS_ASKED_HEADER, WAITED_HEADER};

/// What travels with a call besides its JSON.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sent<'a> {
    pub route: Route,
    /// Read `ledger-waited-ms` from the answer (a call that may wait).
    pub read_waited: bool,
    /// The caller already asked the previous layout (of this many objects).
    pub previous_asked: Option<u32>,
    /// The attempt the call belongs to (`ledger-attempt`).
    pub attempt: Option<&'a str>,
}

// One promise for the call and its answer's body: `stub.fetch(request)`
// then `arrayBuffer()` chained in JavaScript, so the gateway awaits one
// wasm-bindgen future per call instead of two (each costs two closures, a
// finalizer registration and a microtask; docs/development.md "CPU per
// request"). Its answer: `[response, bytes]`.
#[wasm_bindgen::prelude::wasm_bindgen(
    inline_js = "export function stub_exchange(stub, request) {\n  return stub.fetch(request).then((r) => r.arrayBuffer().then((b) => [r, new Uint8Array(b)]));\n}"
)]
extern "C" {
    #[wasm_bindgen(catch)]
    fn stub_exchange(
        stub: &JsValue,
        request: &web_sys::Request,
    ) -> Result<js_sys::Promise, JsValue>;
}

/// A failure before the request left: the object was certainly not reached.
fn not_reached(e: JsValue) -> LedgerError {
    LedgerError::NotReached(js_message(&e))
}

/// A failure of the stub's fetch. The runtime marks an object it refused
/// to run the call on as `overloaded` (Durable Object error properties);
/// any other error may come after the object ran (part of) the call.
fn unreachable(e: JsValue) -> LedgerError {
    let overloaded = Reflect::get(&e, &JsValue::from_str("overloaded"))
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    if overloaded {
        LedgerError::NotReached(js_message(&e))
    } else {
        LedgerError::Unreachable(js_message(&e))
    }
}

/// `stub.fetch(request)` on the raw stub.
pub(super) async fn fetch(
    stub: &JsValue,
    request: &web_sys::Request,
) -> Result<web_sys::Response, LedgerError> {
    let fetch: Function = Reflect::get(stub, &JsValue::from_str("fetch"))
        .map_err(not_reached)?
        .dyn_into()
        .map_err(not_reached)?;
    let promise: js_sys::Promise = fetch
        .call1(stub, request)
        .map_err(unreachable)?
        .dyn_into()
        .map_err(unreachable)?;
    JsFuture::from(promise)
        .await
        .map_err(unreachable)?
        .dyn_into()
        .map_err(unreachable)
}

/// Sends one JSON call to `stub` and returns the body of a `200`
/// answer, adding the rows it reports to `meter`. Not generic, so the
/// request plumbing exists once in the bundle.
pub(super) async fn exchange(
    stub: &JsValue,
    meter: Option<&Cell<u64>>,
    sent: Sent<'_>,
    body: String,
) -> Result<(Vec<u8>, Option<u64>), LedgerError> {
    let Sent {
        route,
        read_waited,
        previous_asked,
        attempt,
    } = sent;
    let headers = web_sys::Headers::new().map_err(not_reached)?;
    headers
        .set("content-type", "application/json")
        .map_err(not_reached)?;
    if let Some(previous) = previous_asked {
        headers
            .set(PREVIOUS_ASKED_HEADER, &previous.to_string())
            .map_err(not_reached)?;
    }
    if let Some(attempt) = attempt {
        headers.set(ATTEMPT_HEADER, attempt).map_err(not_reached)?;
    }
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_headers(&headers);
    init.set_body(&JsValue::from_str(&body));
    let url = format!("https://tenant-ledger{}", route.path());
    let request = web_sys::Request::new_with_str_and_init(&url, &init).map_err(unreachable)?;
    let answer: js_sys::Array = JsFuture::from(stub_exchange(stub, &request).map_err(unreachable)?)
        .await
        .map_err(unreachable)?
        .unchecked_into();
    let response: web_sys::Response = answer.get(0).unchecked_into();
    let bytes = answer.get(1).unchecked_into::<Uint8Array>().to_vec();
    let status = response.status();
    if status != 200 {
        let problem = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
        let retry_after = response
            .headers()
            .get("retry-after")
            .ok()
            .flatten()
            .and_then(|v| v.trim().parse().ok());
        return Err(LedgerError::Refused {
            status,
            problem,
            retry_after,
        });
    }
    if let Some(meter) = meter {
        let rows: u64 = response
            .headers()
            .get(ROWS_WRITTEN_HEADER)
            .ok()
            .flatten()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        meter.set(meter.get().saturating_add(rows));
    }
    let waited_ms = if read_waited {
        response
            .headers()
            .get(WAITED_HEADER)
            .ok()
            .flatten()
            .and_then(|v| v.parse().ok())
    } else {
        None
    };
    Ok((bytes, waited_ms))
}
