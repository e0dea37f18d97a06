//! Translating between the core's response values and workers-rs responses.
//!
//! Role: the only place that builds `worker::Response`s. It renders
//! [`AppResponse`] values that the contract decided; it decides nothing
//! (no status, no header, no problem is chosen here).
//!
//! What must stay true here: nothing here panics; a failure to build a
//! response degrades to a plain 500 rather than an `Err` on a request path.

use serde::Serialize;
use wasm_bindgen::JsValue;
use worker::wasm_bindgen_futures::JsFuture;
use worker::worker_sys::web_sys;
use worker::{Headers, Method, Request, RequestInit, Response};

use crate::contract::answer;
pub use crate::contract::answer::REPLAYED_HEADER;
use crate::ledger::Refusal;
use crate::protocol::{is_null_body_status, AppResponse, Problem, StoredResponse};

fn build(status: u16, headers: &[(String, String)], body: Vec<u8>) -> Response {
    let h = Headers::new();
    for (name, value) in headers {
        // Invalid header values are dropped rather than failing the response.
        let _ = h.append(name, value);
    }
    let response = if is_null_body_status(status) {
        Response::empty()
    } else {
        Response::from_bytes(body)
    };
    match response {
        Ok(r) => r.with_status(status).with_headers(h),
        Err(_) => last_resort(),
    }
}

/// A 500 with no body, for a response the runtime refused to build.
fn last_resort() -> Response {
    Response::builder().with_status(500).empty()
}

/// An application response, exactly as produced. Takes the response by
/// value so its body (up to the request limits) is moved, not copied.
pub fn app(response: AppResponse) -> Response {
    build(response.status, &response.headers, response.body)
}

/// A problem document.
pub fn problem(p: &Problem) -> Response {
    app(AppResponse::from(p))
}

/// A JSON document.
pub fn json<T: Serialize>(status: u16, value: &T) -> Response {
    app(AppResponse::json(status, value))
}

/// A replay of a stored response (a tombstone replays as a loud 500); see
/// [`answer::replay`].
pub fn replay(stored: StoredResponse) -> Response {
    app(answer::replay(stored))
}

/// The answer to a refused claim or execute (replay, 409, 422, 429); see
/// [`answer::refusal_answer`].
pub fn refusal(refusal: Refusal) -> Response {
    app(answer::refusal_answer(refusal).0)
}

/// Builds an outbound request that carries `method` and, unless the method
/// is GET or HEAD (which the Fetch API forbids a body on), the exact `body`
/// bytes. workers-rs maps unknown methods to GET; workerd refuses them (501)
/// before they reach us, so only standard methods arrive here.
pub fn outbound_request(
    url: &str,
    method: &str,
    headers: Headers,
    body: &[u8],
) -> worker::Result<Request> {
    let mut init = RequestInit::new();
    init.with_method(Method::from(method.to_string()))
        .with_headers(headers);
    if method != "GET" && method != "HEAD" {
        init.with_body(Some(js_sys::Uint8Array::from(body).into()));
    }
    Request::new_with_init(url, &init)
}

/// One request header, if present and readable.
pub fn header(req: &web_sys::Request, name: &str) -> Option<String> {
    req.headers().get(name).ok().flatten()
}

/// The whole request body (one `arrayBuffer()`, one copy into wasm).
pub async fn body_of(req: &web_sys::Request) -> Result<Vec<u8>, JsValue> {
    let buffer = JsFuture::from(req.array_buffer()?).await?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// Reads a workers-rs response into an [`AppResponse`] (header names lowercased).
pub async fn read_app_response(mut response: Response) -> worker::Result<AppResponse> {
    let status = response.status_code();
    let headers = response
        .headers()
        .entries()
        .map(|(n, v)| (n.to_ascii_lowercase(), v))
        .collect();
    let body = if is_null_body_status(status) {
        Vec::new()
    } else {
        response.bytes().await?
    };
    Ok(AppResponse {
        status,
        headers,
        body,
    })
}
