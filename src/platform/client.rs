//! The typed Rust client for a deployed `TenantLedger` (RPC v1, docs/contract.md §3).
//!
//! Role: let the gateway — and any other Rust Worker bound to the
//! `TenantLedger` namespace — call the ledger without writing JSON by hand.
//! Answers are the core's own closed outcome enums.
//!
//! What must stay true here: a transport failure (the object threw, the
//! isolate was reset) is `LedgerError::Unreachable`; a 200 answer that does
//! not decode is `LedgerError::Undecodable` (the call may have been
//! applied); a refusal the object rendered is `LedgerError::Refused` with
//! its status and problem document. What each means for a request is
//! decided in `contract::answer`. A claim that names its attempt, and an
//! execute, whose answer was lost are sent again (unless they wait), twice at most
//! (`rpc::LOST_ANSWER_RETRY_DELAYS_MS`): the object answers the repeat
//! with the same grant, or the replay of the run (docs/contract.md §3,
//! "A claim's lost answer").
//!
//! Jurisdictions (`TENANT_JURISDICTIONS`): worker 0.8.7's `ObjectNamespace`
//! has no `jurisdiction` method; it wraps the JS `DurableObjectNamespace`
//! (`AsRef<JsValue>`, `JsCast` checked by constructor name), so
//! [`namespace_in`] calls the JS method on that value and wraps its answer
//! back ([`LedgerClient::for_object_in`]).
//!
//! Speed (measured with `npm run bench:profile`): worker 0.8.7's
//! `Stub::fetch_with_request` turns the answer into a `worker::Response`
//! (reading its headers, `cf` and websocket), and `Response::bytes()` then
//! drains the body through a `ReadableStream` reader, one wasm↔JS crossing
//! per chunk and per lock. RPC calls instead go through the raw JS stub: a
//! `web_sys::Request` built directly, `stub.fetch(request)`, the status and
//! one `arrayBuffer()`.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Function, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::worker_sys::web_sys;
use worker::{Env, Headers, ObjectNamespace, Stub};

use crate::config::Jurisdiction;
use crate::fields;
use crate::ledger::{
    ClaimOutcome, CompleteOutcome, EvictOutcome, ExecuteOutcome, ListPage, ReleaseOutcome, Stats,
};
use crate::platform::analytics::ROWS_WRITTEN_HEADER;
use crate::platform::env::js_message;
use crate::platform::log;
use crate::rpc::{
    Call, ClaimCall, CompleteCall, EvictCall, ExecuteCall, ExecuteCallRef, ListCall, LookupAnswer,
    LookupCall, ReleaseCall, ReplayedCall, ReplayedOutcome, Route, StatsCall,
    LOST_ANSWER_RETRY_DELAYS_MS, WAITED_HEADER,
};

pub use crate::rpc::{LedgerError, APP_PATH, APP_TARGET_HEADER};

/// An answer to a call that may have waited for an in-flight key.
#[derive(Debug, Clone, PartialEq)]
pub struct Waited<T> {
    pub outcome: T,
    /// Milliseconds the object kept the call parked; `None`: it never parked.
    pub waited_ms: Option<u64>,
}

/// A client for one tenant's `TenantLedger` (cheap to clone: one JS handle).
#[derive(Clone)]
pub struct LedgerClient {
    /// The JS stub object (`stub.fetch(request)`).
    stub: JsValue,
    /// Rows the objects reported writing for this client's calls (and its
    /// clones' and [`LedgerClient::metered_like`]'s), when metered.
    meter: Option<Rc<Cell<u64>>>,
}

// One promise for the call and its answer's body: `stub.fetch(request)`
// then `arrayBuffer()` chained in JavaScript, so the gateway awaits one
// wasm-bindgen future per call instead of two (each costs two closures, a
// finalizer registration and a microtask; docs/development.md "CPU per
// request"). Its answer: `[response, bytes]`.
#[wasm_bindgen::prelude::wasm_bindgen(
    inline_js = "export function exchange(stub, request) {\n  return stub.fetch(request).then((r) => r.arrayBuffer().then((b) => [r, new Uint8Array(b)]));\n}"
)]
extern "C" {
    #[wasm_bindgen(catch)]
    fn exchange(stub: &JsValue, request: &web_sys::Request) -> Result<js_sys::Promise, JsValue>;
}

/// A fresh claim attempt id (`ClaimCall::attempt`): a random UUID from
/// the runtime's `crypto.randomUUID()`, unguessable, so no other caller
/// can present it; `None` if the runtime has none (the claim is then sent
/// unnamed, and a lost answer is not retried).
pub fn new_attempt() -> Option<String> {
    let crypto = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto")).ok()?;
    let uuid: Function = Reflect::get(&crypto, &JsValue::from_str("randomUUID"))
        .ok()?
        .dyn_into()
        .ok()?;
    uuid.call0(&crypto).ok()?.as_string()
}

/// The namespace bound as `binding`, in `jurisdiction` if one is given.
///
/// worker 0.8.7's `ObjectNamespace` has no `jurisdiction` method: it is a
/// `#[repr(transparent)]` wrapper of the JS `DurableObjectNamespace`
/// (`AsRef<JsValue>`, `JsCast` by constructor name), so the JS method is
/// called on that value (`Reflect`), and its answer — another namespace —
/// wrapped back with `unchecked_into`. A runtime that refuses it (local
/// workerd throws "Jurisdiction restrictions are not implemented in
/// workerd") is a configuration it cannot serve: `500 misconfigured`
/// naming `TENANT_JURISDICTIONS`, never an object made unrestricted, and
/// never `NotReached` (which `FAILURE_POLICY=open` would run unprotected).
pub fn namespace_in(
    env: &Env,
    binding: &str,
    jurisdiction: Option<Jurisdiction>,
) -> Result<ObjectNamespace, LedgerError> {
    let namespace: ObjectNamespace = env
        .durable_object(binding)
        .map_err(|e| LedgerError::NotReached(format!("binding {binding}: {e}")))?;
    let Some(jurisdiction) = jurisdiction else {
        return Ok(namespace);
    };
    let raw: &JsValue = namespace.as_ref();
    let restricted = Reflect::get(raw, &JsValue::from_str("jurisdiction"))
        .and_then(|f| f.dyn_into::<Function>())
        .and_then(|f| f.call1(raw, &JsValue::from_str(jurisdiction.as_str())))
        .and_then(|ns| {
            if ns.is_object() {
                Ok(ns)
            } else {
                Err(JsValue::from_str("jurisdiction() answered no namespace"))
            }
        });
    match restricted {
        Ok(ns) => Ok(ns.unchecked_into::<ObjectNamespace>()),
        Err(e) => {
            let message = format!(
                "the runtime cannot create objects in jurisdiction \"{jurisdiction}\": {}",
                js_message(&e)
            );
            log::error(
                "idempotency.misconfigured",
                fields! {"variable" => "TENANT_JURISDICTIONS", "error" => message},
            );
            Err(LedgerError::Refused {
                status: 500,
                problem: crate::protocol::Problem::misconfigured("TENANT_JURISDICTIONS").to_json(),
                retry_after: None,
            })
        }
    }
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

impl LedgerClient {
    /// The object named `object` in the namespace bound as `binding`: a
    /// tenant's single object is named by `protocol::object_base(tenant)`,
    /// a shard by `config::shards::object_name` (`{base}/shard-{i}-of-{n}`).
    pub fn for_object(env: &Env, binding: &str, object: &str) -> Result<LedgerClient, LedgerError> {
        LedgerClient::for_object_in(env, binding, object, None)
    }

    /// [`LedgerClient::for_object`] in `jurisdiction` (`TENANT_JURISDICTIONS`:
    /// the jurisdiction of the object's tenant, `None`: unrestricted).
    pub fn for_object_in(
        env: &Env,
        binding: &str,
        object: &str,
        jurisdiction: Option<Jurisdiction>,
    ) -> Result<LedgerClient, LedgerError> {
        let namespace = namespace_in(env, binding, jurisdiction)?;
        let stub = namespace
            .id_from_name(object)
            .and_then(|id| id.get_stub())
            .map_err(|e| LedgerError::NotReached(e.to_string()))?;
        Ok(LedgerClient::from_stub(stub))
    }

    /// The single object of an unsharded `tenant`, named by the one rule
    /// ([`crate::protocol::object_base`]: a v1.3 tenant id names it itself,
    /// any other is escaped).
    pub fn for_tenant(env: &Env, binding: &str, tenant: &str) -> Result<LedgerClient, LedgerError> {
        LedgerClient::for_object(env, binding, &crate::protocol::object_base(tenant))
    }

    /// A client over a stub you already hold.
    pub fn from_stub(stub: Stub) -> LedgerClient {
        LedgerClient {
            stub: stub.into_rpc::<JsValue>(),
            meter: None,
        }
    }

    /// This client, adding up the rows each answer says its call wrote
    /// (`ledger-rows-written`, sent by objects with the `ANALYTICS`
    /// binding); clones share the sum.
    pub fn metered(self) -> LedgerClient {
        LedgerClient {
            meter: Some(Rc::default()),
            ..self
        }
    }

    /// This client, adding to `other`'s sum if `other` is metered.
    pub fn metered_like(self, other: &LedgerClient) -> LedgerClient {
        LedgerClient {
            meter: other.meter.clone(),
            ..self
        }
    }

    /// The rows reported so far, if metered.
    pub fn rows_written(&self) -> Option<u64> {
        self.meter.as_ref().map(|m| m.get())
    }

    /// `stub.fetch(request)` on the raw stub.
    async fn fetch(&self, request: &web_sys::Request) -> Result<web_sys::Response, LedgerError> {
        let fetch: Function = Reflect::get(&self.stub, &JsValue::from_str("fetch"))
            .map_err(not_reached)?
            .dyn_into()
            .map_err(not_reached)?;
        let promise: js_sys::Promise = fetch
            .call1(&self.stub, request)
            .map_err(unreachable)?
            .dyn_into()
            .map_err(unreachable)?;
        JsFuture::from(promise)
            .await
            .map_err(unreachable)?
            .dyn_into()
            .map_err(unreachable)
    }

    /// Sends any RPC v1 call and decodes its answer; for a call that may
    /// wait (`wait_ms > 0`) also how long the object kept it parked
    /// (`ledger-waited-ms`), `None` if it never parked. The one typed path
    /// every call takes (kept small: it is instantiated once per call type).
    pub async fn call<C: Call>(&self, call: &C) -> Result<Waited<C::Answer>, LedgerError> {
        let body =
            serde_json::to_string(call).map_err(|e| LedgerError::NotReached(e.to_string()))?;
        let may_wait = call.wait_ms().is_some_and(|ms| ms > 0);
        let (bytes, waited_ms) = self.exchange(C::ROUTE, body, may_wait).await?;
        let outcome =
            serde_json::from_slice(&bytes).map_err(|e| LedgerError::Undecodable(e.to_string()))?;
        Ok(Waited { outcome, waited_ms })
    }

    /// [`LedgerClient::call`]'s answer alone.
    async fn answer<C: Call>(&self, call: &C) -> Result<C::Answer, LedgerError> {
        Ok(self.call(call).await?.outcome)
    }

    /// [`LedgerClient::call`], sent again while its answer is lost (twice
    /// at most, after `LOST_ANSWER_RETRY_DELAYS_MS`): only for calls whose
    /// repeat the object answers as the first (a claim under its attempt,
    /// an execute). A repeat's failure is never "not reached" (see
    /// `LedgerError::after_lost_answer`). Logged
    /// `idempotency.ledger_answer_lost` per repeat.
    async fn call_repeating<C: Call>(&self, call: &C) -> Result<Waited<C::Answer>, LedgerError> {
        let mut tries = 0;
        loop {
            let error = match self.call(call).await {
                Ok(answer) => return Ok(answer),
                Err(error) if tries == 0 => error,
                Err(error) => error.after_lost_answer(),
            };
            let Some(delay) = LOST_ANSWER_RETRY_DELAYS_MS.get(tries) else {
                return Err(error);
            };
            if !error.answer_lost() {
                return Err(error);
            }
            log::warn(
                "idempotency.ledger_answer_lost",
                fields! {"call" => C::ROUTE.path(), "error" => error.to_string(), "retry" => tries + 1},
            );
            worker::Delay::from(std::time::Duration::from_millis(*delay)).await;
            tries += 1;
        }
    }

    /// Sends one JSON call and returns the body of a `200` answer. Not
    /// generic, so the request plumbing exists once in the bundle.
    async fn exchange(
        &self,
        route: Route,
        body: String,
        read_waited: bool,
    ) -> Result<(Vec<u8>, Option<u64>), LedgerError> {
        let headers = web_sys::Headers::new().map_err(not_reached)?;
        headers
            .set("content-type", "application/json")
            .map_err(not_reached)?;
        let init = web_sys::RequestInit::new();
        init.set_method("POST");
        init.set_headers(&headers);
        init.set_body(&JsValue::from_str(&body));
        let url = format!("https://tenant-ledger{}", route.path());
        let request = web_sys::Request::new_with_str_and_init(&url, &init).map_err(unreachable)?;
        let answer: js_sys::Array =
            JsFuture::from(exchange(&self.stub, &request).map_err(unreachable)?)
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
        if let Some(meter) = &self.meter {
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

    /// `claim`. One that names its attempt ([`new_attempt`]) and does not
    /// wait is sent again while its answer is lost, and answered the grant
    /// it was given. (A waiting claim is not: its object most likely went
    /// away while it was parked, which the gateway answers `409` at once.)
    pub async fn claim(&self, call: &ClaimCall) -> Result<ClaimOutcome, LedgerError> {
        Ok(self.claim_waiting(call).await?.outcome)
    }

    /// `claim` (typically with `wait_ms`), also saying whether it waited.
    pub async fn claim_waiting(
        &self,
        call: &ClaimCall,
    ) -> Result<Waited<ClaimOutcome>, LedgerError> {
        let waits = call.wait_ms.is_some_and(|ms| ms > 0);
        if call.attempt.is_some() && !waits {
            self.call_repeating(call).await
        } else {
            self.call(call).await
        }
    }

    pub async fn complete(&self, call: &CompleteCall) -> Result<CompleteOutcome, LedgerError> {
        self.answer(call).await
    }

    pub async fn release(&self, call: &ReleaseCall) -> Result<ReleaseOutcome, LedgerError> {
        self.answer(call).await
    }

    pub async fn lookup(&self, call: &LookupCall) -> Result<LookupAnswer, LedgerError> {
        self.answer(call).await
    }

    /// Removes one key's record (docs/contract.md §2.11): `evicted` with the
    /// record as it stood, `in_flight` while a lease is live, `not_found`.
    pub async fn evict(&self, call: &EvictCall) -> Result<EvictOutcome, LedgerError> {
        self.answer(call).await
    }

    /// One page of the object's keys; pass its `next` as the next call's
    /// `after` (a sharded tenant's pages are merged with
    /// `ListPage::merge`).
    pub async fn list(&self, call: &ListCall) -> Result<ListPage, LedgerError> {
        self.answer(call).await
    }

    pub async fn stats(&self) -> Result<Stats, LedgerError> {
        self.answer(&StatsCall {}).await
    }

    /// Runs a request on the embedded application without the ledger, for
    /// requests that are not protected. The target travels in a header
    /// ([`APP_TARGET_HEADER`]) to the fixed path [`APP_PATH`], never in the
    /// URL: no client-controlled path (dot segments, encoded slashes) can
    /// be normalised into an RPC route.
    pub async fn app(
        &self,
        method: &str,
        target: &str,
        body: &[u8],
    ) -> Result<worker::Response, LedgerError> {
        let url = format!("https://tenant-ledger{APP_PATH}");
        let headers = Headers::new();
        headers
            .set(APP_TARGET_HEADER, target)
            .map_err(|e| LedgerError::NotReached(e.to_string()))?;
        let request = crate::platform::http::outbound_request(&url, method, headers, body)
            .map_err(|e| LedgerError::NotReached(e.to_string()))?;
        Ok(self.fetch(request.inner()).await?.into())
    }

    /// Counts replays answered from a caller's own cache.
    pub async fn replayed(&self, call: &ReplayedCall) -> Result<ReplayedOutcome, LedgerError> {
        self.answer(call).await
    }

    /// `execute`, sent again while its answer is lost unless it waits (as
    /// a claim): a run that was committed answers the repeat with its
    /// replay, one that was not runs.
    pub async fn execute(&self, call: &ExecuteCall) -> Result<ExecuteOutcome, LedgerError> {
        Ok(self.execute_repeating(call).await?.outcome)
    }

    /// `execute` from borrowed parts (no copy of the body before encoding),
    /// also saying whether it waited; sent again as [`Self::execute`].
    pub async fn execute_ref(
        &self,
        call: &ExecuteCallRef<'_>,
    ) -> Result<Waited<ExecuteOutcome>, LedgerError> {
        self.execute_repeating(call).await
    }

    async fn execute_repeating<C: Call<Answer = ExecuteOutcome>>(
        &self,
        call: &C,
    ) -> Result<Waited<ExecuteOutcome>, LedgerError> {
        if call.wait_ms().is_some_and(|ms| ms > 0) {
            self.call(call).await
        } else {
            self.call_repeating(call).await
        }
    }
}
