//! Translating between the core's response values and workers-rs responses.
//!
//! Role: the only place that builds `worker::Response`s, so every edge
//! renders problems, replays and JSON the same way.
//!
//! What must stay true here: nothing here panics; a failure to build a
//! response degrades to a plain 500 rather than an `Err` on a request path.

use serde::Serialize;
use worker::{Headers, Method, Request, RequestInit, Response};

use crate::ledger::ClaimOutcome;
use crate::protocol::{
    is_null_body_status, AppResponse, Problem, ProblemKind, StoredResponse, PROBLEM_CONTENT_TYPE,
};

/// The header every replay carries.
pub const REPLAYED_HEADER: &str = "Idempotent-Replayed";

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
        Err(_) => fallback(),
    }
}

/// A last-resort 500 with no body.
pub fn fallback() -> Response {
    Response::builder().with_status(500).empty()
}

/// An application response, exactly as produced. Takes the response by
/// value so its body (up to the request limits) is moved, not copied.
pub fn app(response: AppResponse) -> Response {
    build(response.status, &response.headers, response.body)
}

/// A problem document.
pub fn problem(p: &Problem) -> Response {
    let mut headers = vec![("content-type".to_string(), PROBLEM_CONTENT_TYPE.to_string())];
    headers.extend(p.headers.iter().cloned());
    build(p.status(), &headers, p.to_body())
}

/// A JSON document.
pub fn json<T: Serialize>(status: u16, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => build(
            status,
            &[("content-type".into(), "application/json".into())],
            body,
        ),
        Err(_) => fallback(),
    }
}

/// A replay of a stored response: its status, stored headers and exact body
/// bytes plus `Idempotent-Replayed: true`. A tombstone replays as a loud 500.
pub fn replay(stored: StoredResponse) -> Response {
    match stored.body {
        Some(body) => {
            let mut headers = stored.headers;
            headers.push((REPLAYED_HEADER.to_string(), "true".to_string()));
            build(stored.status, &headers, body)
        }
        None => problem(
            &Problem::new(
                ProblemKind::ResponseNotRetained,
                "the original response was delivered once but was too large to store; the request will not run again under this key",
            )
            .with("original_status", stored.status)
            .with_header(REPLAYED_HEADER, "true"),
        ),
    }
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

/// Renders a claim outcome that did not let the request run (replay, 409,
/// 422, 429), with a short name for the log line.
pub fn refusal(out: ClaimOutcome) -> (Response, &'static str) {
    match out {
        ClaimOutcome::Completed { response, .. } => (replay(response), "replayed"),
        ClaimOutcome::InFlight { retry_after_ms, .. } => (
            problem(
                &Problem::new(
                    ProblemKind::KeyInUse,
                    "a request with this Idempotency-Key is still being processed; retry shortly",
                )
                .with("lease_remaining_ms", retry_after_ms)
                .with_header("Retry-After", "1"),
            ),
            "in_use",
        ),
        ClaimOutcome::Mismatch { differs } => (
            problem(
                &Problem::new(
                    ProblemKind::KeyReused,
                    format!(
                        "this Idempotency-Key was used for a different request ({} differs)",
                        differs.join(", ")
                    ),
                )
                .with("differs", differs),
            ),
            "reused",
        ),
        ClaimOutcome::LedgerFull { retry_after_ms } => (
            problem(
                &Problem::new(
                    ProblemKind::LedgerFull,
                    "this tenant holds its maximum number of idempotency records",
                )
                .with_header(
                    "Retry-After",
                    ((retry_after_ms + 999) / 1000).max(1).to_string(),
                ),
            ),
            "ledger_full",
        ),
        // A claim that succeeded is never a refusal; treat it as a ledger fault.
        ClaimOutcome::Claimed { .. } => (
            problem(&Problem::new(
                ProblemKind::StoreUnavailable,
                "unexpected claim outcome",
            )),
            "store_unavailable",
        ),
    }
}
