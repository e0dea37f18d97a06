//! The `TenantLedger` class: what one object holds, its entry points, and
//! its one request path.
//!
//! Role: build the object (its ledger over its own SQLite, its schema, its
//! configuration, its waiters, its place in the tenant's shard layout);
//! carry each request down one path read top to bottom — `fetch` (or
//! `serveRead`, worker/entry.mjs's class, with the body already read) →
//! [`LedgerObject::serve`] (ready? the embedded application's unprotected
//! `/app` requests, or an RPC v1 call) → [`LedgerObject::route`] (the
//! route list, written once in `rpc`) → [`LedgerObject::call`] (parse,
//! validate) → the call's apply in `calls/<call>.rs`; hand each `alarm` to
//! [`super::alarm`].
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

use std::cell::{Cell, OnceCell};
use std::rc::Rc;

use serde::de::DeserializeOwned;
use worker::wasm_bindgen::prelude::wasm_bindgen;
use worker::wasm_bindgen::JsValue;
use worker::wasm_bindgen_futures::JsFuture;
use worker::worker_sys::web_sys;
use worker::{durable_object, DurableObject, Env, Request, Response, State};

use super::alarm::AlarmBelief;
use super::calls::{bad_call, store_unavailable, Apply};
use super::do_store::DoSqlStore;
use super::meter::rows_written_by;
use super::place::Place;
use super::waiting::Waiters;
use crate::config::{Config, ConfigError};
use crate::fields;
use crate::ledger::{Ledger, SqlStore};
use crate::orders;
use crate::platform::analytics::ROWS_WRITTEN_HEADER;
use crate::platform::{eager, http, load_config, log, misconfigured, now_ms};
use crate::protocol::{path_of, target_of, Problem, ProblemKind};
use crate::rpc::{rpc_v1_calls, Call, Route, APP_PATH, APP_TARGET_HEADER, WAITED_HEADER};

/// Upgrade steps (each at most 2,000 records or 8 MiB of bodies) an
/// instance takes as it starts, by each request while an upgrade from
/// schema 1 is under way, and by each alarm (bounded CPU each).
const UPGRADE_STEPS_ON_START: u32 = 16;
const UPGRADE_STEPS_PER_REQUEST: u32 = 4;
const UPGRADE_STEPS_PER_ALARM: u32 = 64;

/// The Durable Object class: its one object behind an `Rc`, so a request
/// served without a promise ([`TenantLedger::serve_read`]) can still hand
/// what it has not finished to the runtime (a `'static` future). Only the
/// fetch and alarm handlers are exported (`#[durable_object(alarm)]`: no
/// WebSocket or socket handlers, which it never had a use for).
#[durable_object(alarm)]
pub struct TenantLedger {
    object: Rc<LedgerObject>,
}

/// What one `TenantLedger` holds, and its request path.
pub struct LedgerObject {
    pub(super) state: State,
    /// Shared with the flush timer (see [`super::alarm`]).
    pub(super) ledger: Rc<Ledger<DoSqlStore>>,
    /// Parsed once per object instance; an invalid variable refuses every call.
    pub(super) config: Result<Config, ConfigError>,
    /// Schema creation outcome; a failure refuses every call.
    pub(super) ready: Result<(), String>,
    /// An upgrade from schema 1 is still moving records (see
    /// `Ledger::continue_upgrade`): calls are answered `503` with
    /// `Retry-After` while each request and alarm takes a few more steps.
    pub(super) upgrading: Cell<bool>,
    /// The alarm as this instance last read or set it (see [`AlarmBelief`]).
    pub(super) alarm_at: Cell<AlarmBelief>,
    /// A flush of the pending counts is scheduled on a timer.
    pub(super) flush_armed: Rc<Cell<bool>>,
    /// False until this instance's first request has checked the alarm: a
    /// restarted workerd may have lost an overdue alarm (workerd #3138, #3566).
    pub(super) started: Cell<bool>,
    /// Requests parked on in-flight keys (in memory: gone with the instance).
    pub(super) waiters: Waiters,
    /// Its place in its tenant's layout, once known (see [`super::place`]).
    pub(super) place: OnceCell<Place>,
    /// The tenant's registry accepted the configured layout (see
    /// [`super::reshard`]); checked once per instance.
    pub(super) layout_accepted: Cell<bool>,
    /// The previous layout (its shard count) the tenant's registry keeps in
    /// force although the configuration dropped `"previous"` too early:
    /// keyed calls ask it first (see `reshard`).
    pub(super) previous_in_force: Cell<Option<u32>>,
    /// The object's bindings (to verify its name against its id).
    pub(super) env: Env,
    /// The script has an `ANALYTICS` dataset: each RPC answer says the rows
    /// its call wrote (`ledger-rows-written`, for the gateway's data point).
    pub(super) metered: bool,
}

impl DurableObject for TenantLedger {
    fn new(state: State, env: Env) -> Self {
        TenantLedger {
            object: Rc::new(LedgerObject::new(state, env)),
        }
    }

    async fn fetch(&self, req: Request) -> worker::Result<Response> {
        let body = whole_body(&req).await;
        Ok(self.object.serve(req.inner(), body).await)
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
        eager(async move { JsValue::from(web_sys::Response::from(object.serve(&req, body).await)) })
    }
}

impl LedgerObject {
    fn new(state: State, env: Env) -> Self {
        log::install_panic_hook();
        let ledger = Rc::new(Ledger::new(DoSqlStore::new(&state)));
        // A large schema-1 database upgrades in bounded steps: as many as
        // fit here, the rest by the requests and alarms that follow.
        let upgrading = Cell::new(false);
        let ready = ledger
            .migrate_within(crate::platform::now_ms(), UPGRADE_STEPS_ON_START)
            .and_then(|(found, done)| {
                upgrading.set(!done);
                use crate::ledger::schema::{Found, SCHEMA_VERSION};
                let from = match found {
                    Found::V1 => Some(1),
                    Found::V2 => Some(2),
                    Found::V3 => Some(3),
                    Found::V4 => Some(4),
                    Found::V5 => Some(5),
                    Found::V6 => Some(6),
                    Found::V7 => Some(7),
                    Found::V8 => Some(8),
                    _ => None,
                };
                if let Some(from) = from {
                    log::warn(
                        "idempotency.schema_upgraded",
                        crate::fields! {"from" => from, "to" => SCHEMA_VERSION},
                    );
                }
                orders::migrate(ledger.store())
            })
            .map_err(|e| e.to_string());
        let config = load_config(&env);
        // A current layout's window covers what it grants with the
        // configured retention; longer expiries raise the horizon the
        // registry asks for before a reshard forgets this layout (a
        // retired object's place lowers the cover to 0).
        if let Ok(config) = &config {
            ledger.track_expiries_beyond(Some(super::reshard::window_ms(config)));
        }
        let max_waiters = config.as_ref().map_or(0, |c| c.wait.max_waiters);
        // An unusable binding is logged (once per isolate) and counts as none.
        let metered = crate::platform::analytics::configured(&env);
        LedgerObject {
            metered,
            place: OnceCell::new(),
            layout_accepted: Cell::new(false),
            previous_in_force: Cell::new(None),
            env,
            waiters: Waiters::new(max_waiters),
            state,
            ledger,
            config,
            ready,
            upgrading,
            alarm_at: Cell::new(AlarmBelief::Unknown),
            flush_armed: Rc::new(Cell::new(false)),
            started: Cell::new(false),
        }
    }

    async fn alarm(&self) -> worker::Result<Response> {
        if self.upgrading.get() && !self.continue_upgrade(UPGRADE_STEPS_PER_ALARM).await {
            return Response::ok("upgrading");
        }
        self.sweep().await
    }
}

/// A request's whole body (callers are Workers sending one JSON call): one
/// `arrayBuffer()` and one copy into wasm (worker 0.8.7's `Request::bytes`
/// drains a stream reader, a crossing per chunk).
async fn whole_body(req: &Request) -> Result<Vec<u8>, JsValue> {
    let buffer = JsFuture::from(req.inner().array_buffer()?).await?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// [`LedgerObject::route`]: one arm per call in the route list.
macro_rules! route_to_call {
    ($($route:ident => $path:literal, $call:ty;)*) => {
        impl LedgerObject {
            /// Sends the body down the one path of the routed call.
            async fn route(
                &self,
                route: Route,
                config: &Config,
                body: &[u8],
            ) -> Result<Response, Problem> {
                match route {
                    $(Route::$route => self.call::<$call>(config, body).await,)*
                }
            }
        }
    };
}
rpc_v1_calls!(route_to_call);

impl LedgerObject {
    /// Routes one request, its body already read: the embedded
    /// application, or an RPC v1 call.
    async fn serve(&self, req: &web_sys::Request, body: Result<Vec<u8>, JsValue>) -> Response {
        // The path from the raw URL string: `Request::path()` would parse it
        // with the `url` crate, which alone adds IDNA tables to the bundle.
        let url = req.url();
        let path = path_of(target_of(&url)).to_string();
        let settles = Route::from_path(&path).is_some_and(Route::settles);
        let config = match self.ready(settles).await {
            Ok(config) => config,
            Err(refused) => return refused,
        };
        let method = req.method();
        let body = match body {
            Ok(b) => b,
            Err(_) => return http::problem(&bad_call("the request body could not be read")),
        };
        if path == APP_PATH {
            return self.app(req, &method, &body);
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
        let answer = self.route(route, config, &body).await;
        // Counts the call left in memory are written by a timer if no
        // later call writes them first.
        self.flush_later();
        answer.unwrap_or_else(|p| http::problem(&p))
    }

    /// The object's configuration once it can take calls, or the refusal:
    /// a schema that failed, an upgrade from schema 1 still under way (a
    /// few more bounded steps each request) unless the call `settles` a
    /// claim (docs/contract.md §4: `complete` and `release` are served
    /// during the upgrade, every other call waits), an invalid variable.
    /// An instance's first call once the upgrade is done also recounts and
    /// checks the alarm.
    async fn ready(&self, settles: bool) -> Result<&Config, Response> {
        if let Err(e) = &self.ready {
            log::error("idempotency.schema_error", fields! {"error" => e});
            return Err(http::problem(&Problem::of(ProblemKind::StoreUnavailable)));
        }
        let upgrading =
            self.upgrading.get() && !self.continue_upgrade(UPGRADE_STEPS_PER_REQUEST).await;
        if upgrading && !settles {
            return Err(http::problem(
                &Problem::new(
                    ProblemKind::StoreUnavailable,
                    "the ledger is upgrading its schema in place; retry in a moment",
                )
                .with_header("retry-after", "1"),
            ));
        }
        // An invalid variable refuses settlements too: the object could not
        // tell its place in the tenant's layout (which key it may answer
        // for) nor keep its expiry horizon (docs/contract.md §4).
        let config = match &self.config {
            Ok(c) => c,
            Err(e) => return Err(misconfigured(&e.variable, &e.message)),
        };
        // Counting the records while some are still set aside would count
        // only those moved: the first call after the upgrade does it.
        if !upgrading && !self.started.replace(true) {
            if let Err(e) = self.ledger.recount_on_start(now_ms()) {
                log::warn(
                    "idempotency.recount_failed",
                    fields! {"error" => e.to_string()},
                );
            }
            self.check_alarm().await;
        }
        Ok(config)
    }

    /// The embedded application's unprotected requests; the target comes
    /// from a header, never from the URL.
    fn app(&self, req: &web_sys::Request, method: &str, body: &[u8]) -> Response {
        let target = http::header(req, APP_TARGET_HEADER)
            .filter(|t| t.starts_with('/'))
            .unwrap_or_default();
        match orders::handle(
            self.ledger.store(),
            method,
            path_of(&target),
            body,
            now_ms(),
        ) {
            Ok(r) => http::app(r),
            Err(e) => http::problem(&store_unavailable(&e)),
        }
    }

    /// The one path of every RPC call: parse, validate, apply (its file in
    /// `calls/`), answer (with `ledger-waited-ms` when the call was parked).
    async fn call<C>(&self, config: &Config, body: &[u8]) -> Result<Response, Problem>
    where
        C: Call + DeserializeOwned,
        Self: Apply<C>,
    {
        let call = C::parse(body).map_err(bad_call)?;
        call.validate().map_err(bad_call)?;
        // Only this call's own statements: other calls and the flush timer
        // write while it awaits (a parked `Prefer: wait` claim).
        let store = self.ledger.store();
        let written = || store.billed_rows().map(|(written, _)| written);
        let (applied, rows) = rows_written_by(written, self.apply(config, call)).await;
        let (answer, report) = applied?;
        let response = http::json(200, &answer);
        if self.metered {
            let _ = response
                .headers()
                .set(ROWS_WRITTEN_HEADER, &rows.to_string());
        }
        if let Some(ms) = report.waited_ms {
            let _ = response.headers().set(WAITED_HEADER, &ms.to_string());
        }
        Ok(response)
    }
}
