//! The typed Rust client for a deployed `TenantLedger` (RPC v1, SPEC §3).
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
//! decided in `contract::answer`.

use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::JsValue;
use worker::{Env, Headers, Method, ObjectNamespace, Request, RequestInit, Stub};

use crate::ledger::{ClaimOutcome, CompleteOutcome, ExecuteOutcome, ReleaseOutcome, Stats};
use crate::rpc::{
    ClaimCall, CompleteCall, ExecuteCall, LookupAnswer, LookupCall, ReleaseCall, ReplayedCall,
    ReplayedOutcome, Route,
};

pub use crate::rpc::LedgerError;

/// A client for one tenant's `TenantLedger`.
pub struct LedgerClient {
    stub: Stub,
}

impl LedgerClient {
    /// The object for `tenant` in the namespace bound as `binding`.
    pub fn for_tenant(env: &Env, binding: &str, tenant: &str) -> Result<LedgerClient, LedgerError> {
        let namespace: ObjectNamespace = env
            .durable_object(binding)
            .map_err(|e| LedgerError::Unreachable(format!("binding {binding}: {e}")))?;
        let stub = namespace
            .id_from_name(tenant)
            .and_then(|id| id.get_stub())
            .map_err(|e| LedgerError::Unreachable(e.to_string()))?;
        Ok(LedgerClient { stub })
    }

    /// A client over a stub you already hold.
    pub fn from_stub(stub: Stub) -> LedgerClient {
        LedgerClient { stub }
    }

    /// One call: the typed shell around [`LedgerClient::exchange`], kept
    /// small because it is instantiated once per route.
    async fn call<C: Serialize, A: DeserializeOwned>(
        &self,
        route: Route,
        call: &C,
    ) -> Result<A, LedgerError> {
        let body =
            serde_json::to_string(call).map_err(|e| LedgerError::Unreachable(e.to_string()))?;
        let bytes = self.exchange(route, body).await?;
        serde_json::from_slice(&bytes).map_err(|e| LedgerError::Undecodable(e.to_string()))
    }

    /// Sends one JSON call and returns the body of a `200` answer. Not
    /// generic, so the request plumbing exists once in the bundle.
    async fn exchange(&self, route: Route, body: String) -> Result<Vec<u8>, LedgerError> {
        let headers = Headers::new();
        let _ = headers.set("content-type", "application/json");
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_headers(headers)
            .with_body(Some(JsValue::from_str(&body)));
        let url = format!("https://tenant-ledger{}", route.path());
        let request = Request::new_with_init(&url, &init)
            .map_err(|e| LedgerError::Unreachable(e.to_string()))?;
        let mut response = self
            .stub
            .fetch_with_request(request)
            .await
            .map_err(|e| LedgerError::Unreachable(e.to_string()))?;
        let status = response.status_code();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| LedgerError::Unreachable(e.to_string()))?;
        if status != 200 {
            let problem = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
            return Err(LedgerError::Refused { status, problem });
        }
        Ok(bytes)
    }

    pub async fn claim(&self, call: &ClaimCall) -> Result<ClaimOutcome, LedgerError> {
        self.call(Route::Claim, call).await
    }

    pub async fn complete(&self, call: &CompleteCall) -> Result<CompleteOutcome, LedgerError> {
        self.call(Route::Complete, call).await
    }

    pub async fn release(&self, call: &ReleaseCall) -> Result<ReleaseOutcome, LedgerError> {
        self.call(Route::Release, call).await
    }

    pub async fn lookup(&self, call: &LookupCall) -> Result<LookupAnswer, LedgerError> {
        self.call(Route::Lookup, call).await
    }

    pub async fn stats(&self) -> Result<Stats, LedgerError> {
        self.call(Route::Stats, &serde_json::json!({})).await
    }

    /// Runs a request on the embedded application without the ledger
    /// (`/app{target}`), for requests that are not protected.
    pub async fn app(
        &self,
        method: &str,
        target: &str,
        body: &[u8],
    ) -> Result<worker::Response, LedgerError> {
        let url = format!("https://tenant-ledger/app{target}");
        let request = crate::platform::http::outbound_request(&url, method, Headers::new(), body)
            .map_err(|e| LedgerError::Unreachable(e.to_string()))?;
        self.stub
            .fetch_with_request(request)
            .await
            .map_err(|e| LedgerError::Unreachable(e.to_string()))
    }

    /// Counts replays answered from a caller's own cache.
    pub async fn replayed(&self, call: &ReplayedCall) -> Result<ReplayedOutcome, LedgerError> {
        self.call(Route::Replayed, call).await
    }

    pub async fn execute(&self, call: &ExecuteCall) -> Result<ExecuteOutcome, LedgerError> {
        self.call(Route::Execute, call).await
    }
}
