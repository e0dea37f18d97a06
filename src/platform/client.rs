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
//! Jurisdictions (`TENANT_JURISDICTIONS`): [`LedgerClient::for_object_in`]
//! reaches the object through [`namespace_in`] (`platform::namespace`).
//!
//! The request and its answer travel through `platform::transport` (the
//! raw stub, one `arrayBuffer()`).

use std::cell::Cell;
use std::rc::Rc;

use wasm_bindgen::JsValue;
use worker::{Env, Headers, Stub};

use crate::config::Jurisdiction;
use crate::fields;
use crate::ledger::{
    ClaimOutcome, CompleteOutcome, EvictOutcome, ExecuteOutcome, ListPage, ReleaseOutcome, Stats,
};
use crate::platform::log;
use crate::platform::namespace::namespace_in;
use crate::platform::transport::{exchange, fetch, Sent};
use crate::rpc::{
    Call, ClaimCall, CompleteCall, EvictCall, ExecuteCall, ExecuteCallRef, ListCall, LookupAnswer,
    LookupCall, ReleaseCall, ReplayedCall, ReplayedOutcome, StatsCall, LOST_ANSWER_RETRY_DELAYS_MS,
};

pub use crate::platform::env::new_attempt;
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
    /// Every keyed call says it already asked the key's object in the
    /// previous layout of this many objects (see
    /// [`LedgerClient::after_asking_previous`]).
    previous_asked: Option<u32>,
    /// Every call names this attempt ([`LedgerClient::naming_attempt`]).
    attempt: Option<String>,
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
            previous_asked: None,
            attempt: None,
        }
    }

    /// This client, naming `attempt` with every call
    /// ([`crate::rpc::ATTEMPT_HEADER`]): an execute whose answer is lost
    /// and is sent again is then answered the run's own response even
    /// where the ledger kept none (a tombstone), while its object holds it
    /// in memory. A fresh random id per request ([`new_attempt`]).
    pub fn naming_attempt(&self, attempt: Option<String>) -> LedgerClient {
        LedgerClient {
            attempt,
            ..self.clone()
        }
    }

    /// This client, telling the object with every call that the caller
    /// already asked the key's object in the tenant's previous layout of
    /// `previous` objects (it answered `421`): a current-layout object
    /// then does not ask it again ([`crate::rpc::PREVIOUS_ASKED_HEADER`]). Send only
    /// after that `421`: any other call is checked there by the object.
    pub fn after_asking_previous(&self, previous: u32) -> LedgerClient {
        LedgerClient {
            previous_asked: Some(previous),
            ..self.clone()
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

    /// Sends any RPC v1 call and decodes its answer; for a call that may
    /// wait (`wait_ms > 0`) also how long the object kept it parked
    /// (`ledger-waited-ms`), `None` if it never parked. The one typed path
    /// every call takes (kept small: it is instantiated once per call type).
    pub async fn call<C: Call>(&self, call: &C) -> Result<Waited<C::Answer>, LedgerError> {
        self.call_sent(call, false).await
    }

    /// [`LedgerClient::call`], sent again while its answer is lost when
    /// `repeating` (see [`LedgerClient::exchange_repeating`]).
    async fn call_sent<C: Call>(
        &self,
        call: &C,
        repeating: bool,
    ) -> Result<Waited<C::Answer>, LedgerError> {
        let body =
            serde_json::to_string(call).map_err(|e| LedgerError::NotReached(e.to_string()))?;
        let sent = Sent {
            route: C::ROUTE,
            read_waited: call.wait_ms().is_some_and(|ms| ms > 0),
            previous_asked: self.previous_asked,
            attempt: self.attempt.as_deref(),
        };
        let (bytes, waited_ms) = if repeating {
            self.exchange_repeating(sent, body).await?
        } else {
            exchange(&self.stub, self.meter.as_deref(), sent, body).await?
        };
        let outcome =
            serde_json::from_slice(&bytes).map_err(|e| LedgerError::Undecodable(e.to_string()))?;
        Ok(Waited { outcome, waited_ms })
    }

    /// [`LedgerClient::call`]'s answer alone.
    async fn answer<C: Call>(&self, call: &C) -> Result<C::Answer, LedgerError> {
        Ok(self.call(call).await?.outcome)
    }

    /// One call's exchange, sent again while its answer is lost (twice at
    /// most, after `LOST_ANSWER_RETRY_DELAYS_MS`): only for calls whose
    /// repeat the object answers as the first (a claim under its attempt,
    /// an execute). A repeat's failure is never "not reached" (see
    /// `LedgerError::after_lost_answer`). Logged
    /// `idempotency.ledger_answer_lost` per repeat. Not generic: one copy
    /// in the bundle, whatever the call.
    async fn exchange_repeating(
        &self,
        sent: Sent<'_>,
        body: String,
    ) -> Result<(Vec<u8>, Option<u64>), LedgerError> {
        let mut tries = 0;
        loop {
            let meter = self.meter.as_deref();
            let error = match exchange(&self.stub, meter, sent, body.clone()).await {
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
                fields! {"call" => sent.route.path(), "error" => error.to_string(), "retry" => tries + 1},
            );
            worker::Delay::from(std::time::Duration::from_millis(*delay)).await;
            tries += 1;
        }
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
        self.send(call).await
    }

    /// Sends `call` as this client sends its own calls: again while its
    /// answer is lost when [`Call::repeatable`] (a claim under its attempt,
    /// an execute, neither waiting). What an object passing a call on to
    /// another (`object::home::ask_previous`) sends it with.
    pub async fn send<C: Call>(&self, call: &C) -> Result<Waited<C::Answer>, LedgerError> {
        self.call_sent(call, call.repeatable()).await
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
        Ok(fetch(&self.stub, request.inner()).await?.into())
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
        self.send(call).await
    }
}
