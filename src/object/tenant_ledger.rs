//! The `TenantLedger` class: its entry points and its one request path.
//!
//! Role: build the object ([`LedgerObject`], `ledger_object.rs`); carry
//! each request down one path of plain function calls, read top to bottom
//! — `fetch` (or `serveRead`, worker/entry.mjs's class, with the body
//! already read) → [`serve`] (ready? the embedded application's
//! unprotected `/app` requests ([`app`]), or an RPC v1 call) → [`dispatch`]
//! (a `match` over the closed [`Route`] enum: one arm per call, each
//! [`parsed`] and validated, then the call's own function —
//! `calls::claim`, `calls::complete`, … in `calls/<call>.rs` — run
//! through [`answer`]: rows metered, `200` answered); hand each `alarm` to
//! [`LedgerObject::alarm`] (the sweep, or while an upgrade is under way a
//! few more of its steps).
//!
//! What must stay true here:
//! - A schema or configuration that cannot be used refuses every call
//!   (loudly, in the log and the answer). While an upgrade from schema 1
//!   is under way only `complete` and `release` are served (they settle
//!   claims the object already granted); every other call is `503` with
//!   `Retry-After`.
//! - Nothing is written before the call is parsed and validated; a bad
//!   call is a 400/404/405 problem and changes nothing.
//! - The application's target comes from the `x-ledger-app-target` header,
//!   never from the URL.

use std::future::Future;
use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use worker::wasm_bindgen::prelude::wasm_bindgen;
use worker::wasm_bindgen::JsValue;
use worker::wasm_bindgen_futures::JsFuture;
use worker::worker_sys::web_sys;
use worker::{durable_object, DurableObject, Env, Request, Response, State};

use super::calls;
use super::ledger_object::LedgerObject;
use super::meter::rows_written_by;
use super::problems::{bad_call, store_unavailable};
use super::waiting::WaitReport;
use crate::config::Config;
use crate::ledger::SqlStore;
use crate::orders;
use crate::platform::analytics::ROWS_WRITTEN_HEADER;
use crate::platform::{eager, http, now_ms};
use crate::protocol::{path_of, target_of, Problem, ProblemKind};
use crate::rpc::{
    check_attempt, Call, Route, APP_PATH, APP_TARGET_HEADER, ATTEMPT_HEADER, PREVIOUS_ASKED_HEADER,
    WAITED_HEADER,
};

/// The Durable Object class: its one object behind an `Rc`, so a request
/// served without a promise ([`TenantLedger::serve_read`]) can still hand
/// what it has not finished to the runtime (a `'static` future). Only the
/// fetch and alarm handlers are exported (`#[durable_object(alarm)]`: no
/// WebSocket or socket handlers, which it never had a use for).
#[durable_object(alarm)]
pub struct TenantLedger {
    object: Rc<LedgerObject>,
}

impl DurableObject for TenantLedger {
    fn new(state: State, env: Env) -> Self {
        TenantLedger {
            object: Rc::new(LedgerObject::new(state, env)),
        }
    }

    async fn fetch(&self, req: Request) -> worker::Result<Response> {
        let body = whole_body(&req).await;
        Ok(serve(&self.object, req.inner(), body).await)
    }

    async fn alarm(&self) -> worker::Result<Response> {
        self.object.alarm().await
    }
}

#[wasm_bindgen(wasm_bindgen = ::worker::wasm_bindgen)]
impl TenantLedger {
    /// `fetch` for a request whose body the caller has already read
    /// (worker/entry.mjs's class: one native `await` for the body instead
    /// of wasm-bindgen's promise plumbing). The answer itself when the
    /// request needs nothing asynchronous (the common case: a call applied
    /// in one transaction), else a promise of it
    /// ([`crate::platform::eager`]). `body` is `null` when it could not be
    /// read: answered as the Rust `fetch` answers it (a `400`).
    #[wasm_bindgen(js_name = serveRead)]
    pub fn serve_read(&self, req: web_sys::Request, body: Option<js_sys::Uint8Array>) -> JsValue {
        let object = Rc::clone(&self.object);
        let body = body.map(|b| b.to_vec()).ok_or(JsValue::NULL);
        eager(
            async move { JsValue::from(web_sys::Response::from(serve(&object, &req, body).await)) },
        )
    }
}

/// A request's whole body (callers are Workers sending one JSON call): one
/// `arrayBuffer()` and one copy into wasm (worker 0.8.7's `Request::bytes`
/// drains a stream reader, a crossing per chunk).
async fn whole_body(req: &Request) -> Result<Vec<u8>, JsValue> {
    let buffer = JsFuture::from(req.inner().array_buffer()?).await?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// Sends the body down the one path of the routed call: one arm per
/// route (the compiler checks every route of `rpc::ROUTES` has one), each
/// parsing and validating its call ([`parsed`]) before the call's own
/// function in `calls/<call>.rs` runs, metered and answered ([`answer`]).
/// The keyed calls also learn whether their caller already asked the
/// tenant's previous layout (`asked`, `rpc::PREVIOUS_ASKED_HEADER`).
#[rustfmt::skip] // one arm a line: the route table, read down
async fn dispatch(object: &LedgerObject, route: Route, config: &Config, body: &[u8], (asked, attempt): (Option<u32>, Option<String>)) -> Result<Response, Problem> {
    match route {
        Route::Claim =>        answer(object, calls::claim(object, config, parsed(body)?, asked)).await,
        Route::Complete =>     answer(object, calls::complete(object, config, parsed(body)?, asked)).await,
        Route::Release =>      answer(object, calls::release(object, config, parsed(body)?, asked)).await,
        Route::Lookup =>       answer(object, calls::lookup(object, config, parsed(body)?, asked)).await,
        Route::List =>         answer(object, calls::list(object, config, parsed(body)?)).await,
        Route::Stats =>        answer(object, calls::stats(object, config, parsed(body)?)).await,
        Route::Execute =>      answer(object, calls::execute(object, config, parsed(body)?, (asked, attempt))).await,
        Route::Replayed =>     answer(object, calls::replayed(object, config, parsed(body)?)).await,
        Route::Layout =>       answer(object, calls::layout(object, config, parsed(body)?)).await,
        Route::Horizon =>      answer(object, calls::horizon(object, config, parsed(body)?)).await,
        Route::Jurisdiction => answer(object, calls::jurisdiction(object, config, parsed(body)?)).await,
        Route::Evict =>        answer(object, calls::evict(object, config, parsed(body)?, asked)).await,
    }
}

/// Routes one request, its body already read: the embedded
/// application, or an RPC v1 call.
async fn serve(
    object: &LedgerObject,
    req: &web_sys::Request,
    body: Result<Vec<u8>, JsValue>,
) -> Response {
    // The path from the raw URL string: `Request::path()` would parse it
    // with the `url` crate, which alone adds IDNA tables to the bundle.
    let url = req.url();
    let path = path_of(target_of(&url)).to_string();
    let settles = Route::from_path(&path).is_some_and(Route::settles);
    let config = match object.ready(settles).await {
        Ok(config) => config,
        Err(refused) => return refused,
    };
    let method = req.method();
    let body = match body {
        Ok(b) => b,
        Err(_) => return http::problem(&bad_call("the request body could not be read")),
    };
    if path == APP_PATH {
        return app(object, req, &method, &body);
    }
    let Some(route) = Route::from_path(&path) else {
        return http::problem(&Problem::new(
            ProblemKind::NotFound,
            "no such ledger route; RPC v1 lives under /rpc/v1/",
        ));
    };
    if method != "POST" {
        return http::problem(
            &Problem::new(ProblemKind::MethodNotAllowed, "ledger RPC calls are POST")
                .with_header("allow", "POST"),
        );
    }
    // The previous layout its caller already asked, if it says so, and the
    // attempt it names (a malformed one names none).
    let asked = http::header(req, PREVIOUS_ASKED_HEADER).and_then(|v| v.parse::<u32>().ok());
    let attempt = http::header(req, ATTEMPT_HEADER).filter(|a| check_attempt(Some(a)).is_ok());
    let answer = dispatch(object, route, config, &body, (asked, attempt)).await;
    // Counts the call left in memory are written by a timer if no
    // later call writes them first.
    object.alarm.flush_later();
    answer.unwrap_or_else(|p| http::problem(&p))
}

/// The embedded application's unprotected requests; the target comes
/// from a header, never from the URL.
fn app(object: &LedgerObject, req: &web_sys::Request, method: &str, body: &[u8]) -> Response {
    let target = http::header(req, APP_TARGET_HEADER)
        .filter(|t| t.starts_with('/'))
        .unwrap_or_default();
    match orders::handle(
        object.ledger.store(),
        method,
        path_of(&target),
        body,
        now_ms(),
    ) {
        Ok(r) => http::app(r),
        Err(e) => http::problem(&store_unavailable(&e)),
    }
}

/// A call's answer: runs it (`applied`, its method in `calls/`),
/// counting the rows its own statements wrote, and answers `200` with
/// its outcome (with `ledger-waited-ms` when the call was parked, and
/// the rows written when the script is metered).
async fn answer<T: Serialize>(
    object: &LedgerObject,
    applied: impl Future<Output = Result<(T, WaitReport), Problem>>,
) -> Result<Response, Problem> {
    // Only this call's own statements: other calls and the flush timer
    // write while it awaits (a parked `Prefer: wait` claim).
    let store = object.ledger.store();
    let written = || store.billed_rows().map(|(written, _)| written);
    let (applied, rows) = rows_written_by(written, applied).await;
    let (answer, report) = applied?;
    let response = http::json(200, &answer);
    if object.metered {
        let _ = response
            .headers()
            .set(ROWS_WRITTEN_HEADER, &rows.to_string());
    }
    if let Some(ms) = report.waited_ms {
        let _ = response.headers().set(WAITED_HEADER, &ms.to_string());
    }
    Ok(response)
}

/// A call read from its body and validated: a bad call is refused
/// (`400 invalid-rpc`) before anything is written.
fn parsed<C: Call + DeserializeOwned>(body: &[u8]) -> Result<C, Problem> {
    let call = C::parse(body).map_err(bad_call)?;
    call.validate().map_err(bad_call)?;
    Ok(call)
}
