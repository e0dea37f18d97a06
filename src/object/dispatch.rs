//! The object's one request path: the embedded application's unprotected
//! requests (`/app`, its target in the `x-ledger-app-target` header, never
//! in the URL), and every RPC v1 call (`POST /rpc/v1/...`) parsed →
//! validated → applied.
//!
//! Role: [`TenantLedger::serve`] routes; [`TenantLedger::call`] is the one
//! generic path every call takes; each [`Apply`] impl below is what one
//! call does to this object (its wire shape lives in its `rpc/` file).
//!
//! What must stay true here:
//! - Nothing is written before the call is parsed and validated.
//! - A `claim` or `execute` with `wait_ms` that meets a live lease parks
//!   (see [`super::waiting`]); `complete`, `release` and a finished
//!   `execute` wake that key's waiters.
//! - A retired shard answers only for the keys it holds: every keyed call
//!   for another key is `421 idempotency-key-moved` and changes nothing.

use serde::de::DeserializeOwned;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{Request, Response};

use super::do_store::DoSqlStore;
use super::waiting::{attempt_waiting, WaitReport};
use super::TenantLedger;
use crate::config::Config;
use crate::fields;
use crate::ledger::{ClaimOutcome, ClaimPolicy, CompleteOutcome, Counter, ExecuteOutcome};
use crate::ledger::{Millis, Refusal, ReleaseOutcome, StoreError};
use crate::orders;
use crate::platform::{http, log, misconfigured, now_ms};
use crate::protocol::{path_of, target_of, Problem, ProblemKind};
use crate::rpc::{
    check_claim_windows, Call, ClaimCall, CompleteCall, ExecuteCall, HorizonAnswer, HorizonCall,
    LayoutCall, LayoutOutcome, LookupAnswer, LookupCall, ReleaseCall, ReplayedCall,
    ReplayedOutcome, Route, StatsCall, APP_PATH, APP_TARGET_HEADER, WAITED_HEADER,
};

fn bad_call(detail: impl Into<String>) -> Problem {
    Problem::new(ProblemKind::InvalidRpc, detail)
}

/// A ledger operation failed in SQLite: logged, and answered as the one
/// store failure clients know (`503 idempotency-store-unavailable`).
pub(super) fn store_unavailable(e: &impl std::fmt::Display) -> Problem {
    log::error(
        "idempotency.store_unavailable",
        fields! {"error" => e.to_string()},
    );
    Problem::of(ProblemKind::StoreUnavailable)
}

/// A request's whole body (callers are Workers sending one JSON call).
async fn whole_body(req: &Request) -> Result<Vec<u8>, wasm_bindgen::JsValue> {
    let buffer = JsFuture::from(req.inner().array_buffer()?).await?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// What one RPC call does to this object: its answer and, for a call that
/// may wait, how long it was parked.
trait Apply<C: Call> {
    async fn apply(&self, config: &Config, call: C) -> Result<(C::Answer, WaitReport), Problem>;
}

/// An answer that never waited.
fn answered<T>(answer: T) -> (T, WaitReport) {
    (answer, WaitReport::default())
}

impl TenantLedger {
    /// Routes one request: the embedded application, or an RPC v1 call.
    pub(super) async fn serve(&self, req: Request) -> Response {
        if let Err(e) = &self.ready {
            log::error("idempotency.schema_error", fields! {"error" => e});
            return http::problem(&Problem::of(ProblemKind::StoreUnavailable));
        }
        // A schema-1 database still being upgraded: each request takes a few
        // bounded steps; until the last, callers are told to come back.
        if self.upgrading.get()
            && !self
                .continue_upgrade(super::tenant_ledger::UPGRADE_STEPS_PER_REQUEST)
                .await
        {
            return http::problem(
                &Problem::new(
                    ProblemKind::StoreUnavailable,
                    "the ledger is upgrading its schema in place; retry in a moment",
                )
                .with_header("retry-after", "1"),
            );
        }
        let config = match &self.config {
            Ok(c) => c,
            Err(e) => return misconfigured(&e.variable, &e.message),
        };
        if !self.started.replace(true) {
            if let Err(e) = self.ledger.recount_on_start(now_ms()) {
                log::warn(
                    "idempotency.recount_failed",
                    fields! {"error" => e.to_string()},
                );
            }
            self.check_alarm().await;
        }
        // The path from the raw URL string: `Request::path()` would parse it
        // with the `url` crate, which alone adds IDNA tables to the bundle.
        let url = req.inner().url();
        let path = path_of(target_of(&url)).to_string();
        let method = req.inner().method();
        // One `arrayBuffer()` and one copy into wasm (worker 0.8.7's
        // `Request::bytes` drains a stream reader, a crossing per chunk).
        let body = match whole_body(&req).await {
            Ok(b) => b,
            Err(_) => return http::problem(&bad_call("the request body could not be read")),
        };
        if path == APP_PATH {
            return self.app(&req, &method, &body);
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
        let answer = match route {
            Route::Claim => self.call::<ClaimCall>(config, &body).await,
            Route::Complete => self.call::<CompleteCall>(config, &body).await,
            Route::Release => self.call::<ReleaseCall>(config, &body).await,
            Route::Lookup => self.call::<LookupCall>(config, &body).await,
            Route::Stats => self.call::<StatsCall>(config, &body).await,
            Route::Execute => self.call::<ExecuteCall>(config, &body).await,
            Route::Replayed => self.call::<ReplayedCall>(config, &body).await,
            Route::Layout => self.call::<LayoutCall>(config, &body).await,
            Route::Horizon => self.call::<HorizonCall>(config, &body).await,
        };
        // Counts the call left in memory are written by a timer if no
        // later call writes them first.
        self.flush_later();
        answer.unwrap_or_else(|p| http::problem(&p))
    }

    /// The embedded application's unprotected requests; the target comes
    /// from a header, never from the URL.
    fn app(&self, req: &Request, method: &str, body: &[u8]) -> Response {
        let target = req
            .headers()
            .get(APP_TARGET_HEADER)
            .ok()
            .flatten()
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

    /// The one path of every RPC call: parse, validate, apply, answer (with
    /// `ledger-waited-ms` when the call was parked).
    async fn call<C>(&self, config: &Config, body: &[u8]) -> Result<Response, Problem>
    where
        C: Call + DeserializeOwned,
        Self: Apply<C>,
    {
        let call = C::parse(body).map_err(bad_call)?;
        call.validate().map_err(bad_call)?;
        let (answer, report) = self.apply(config, call).await?;
        let response = http::json(200, &answer);
        if let Some(ms) = report.waited_ms {
            let _ = response.headers().set(WAITED_HEADER, &ms.to_string());
        }
        Ok(response)
    }

    fn policy(
        &self,
        config: &Config,
        lease_seconds: Option<u64>,
        retention_seconds: Option<u64>,
    ) -> Result<ClaimPolicy, Problem> {
        let shards = self.place(config)?.shards;
        // MAX_KEYS_PER_TENANT stays a tenant's quota: each of a sharded
        // tenant's N objects holds at most its N-th part (rounded up).
        Ok(ClaimPolicy {
            lease_ms: lease_seconds.map_or(config.lease_ms(), |s| s as i64 * 1000),
            retention_ms: retention_seconds.map_or(config.retention_ms(), |s| s as i64 * 1000),
            // A proxied owner waits up to ORIGIN_TIMEOUT_SECONDS for its origin.
            settle_grace_ms: (config.origin_timeout_seconds as i64).saturating_mul(1000),
            max_keys: config.max_keys_per_tenant.div_ceil(u64::from(shards)),
            max_db_bytes: config.max_db_bytes_per_object,
        })
    }

    /// Runs a claim or execute on `key` at the object's clock: in its home
    /// (see [`Self::check_home`]), waiting up to `wait_ms` (bounded by
    /// `IN_FLIGHT_WAIT_MAX_SECONDS`) while it is refused as in flight, and
    /// counting the wait. `refusal` names an outcome's refusal, if any.
    async fn keyed<T>(
        &self,
        config: &Config,
        key: &str,
        wait_ms: Option<u64>,
        mut attempt: impl FnMut(Millis) -> Result<T, StoreError>,
        refusal: impl Fn(&T) -> Option<&Refusal>,
    ) -> Result<(T, WaitReport), Problem> {
        let budget = config.wait.bound_ms(wait_ms.unwrap_or(0));
        let (out, report) = attempt_waiting(
            &self.waiters,
            key,
            budget,
            |now| {
                self.check_home(config, key, now)?;
                attempt(now).map_err(|e| store_unavailable(&e))
            },
            |out| refusal(out).and_then(Refusal::lease_remaining),
        )
        .await?;
        let replayed = matches!(refusal(&out), Some(Refusal::Completed { .. }));
        self.count_wait(&report, replayed);
        Ok((out, report))
    }

    /// A retired shard (the tenant is being resharded, see
    /// `config::shards`) answers only for the keys it holds: for any other
    /// key a claim, execute, complete or release is refused with `421
    /// idempotency-key-moved` and changes nothing (so every caller routes a
    /// keyed call the same way: previous layout first, on 421 the current),
    /// so no caller — not even a gateway still running the old
    /// configuration — can create a key here while another creates it in
    /// its current object.
    fn check_home(&self, config: &Config, key: &str, now: Millis) -> Result<(), Problem> {
        if !self.place(config)?.retired {
            return Ok(());
        }
        if self
            .ledger
            .holds(key, now)
            .map_err(|e| store_unavailable(&e))?
        {
            return Ok(());
        }
        self.reshard_pending();
        Err(Problem::of(ProblemKind::KeyMoved))
    }

    /// Counts one call that was allowed to wait (in memory, like refusals).
    fn count_wait(&self, report: &WaitReport, replayed: bool) {
        if report.waited_ms.is_none() {
            return;
        }
        let now = now_ms();
        self.ledger.add_count(Counter::Waited, 1, now);
        if replayed {
            self.ledger.add_count(Counter::WaitedReplayed, 1, now);
        }
        if report.timed_out {
            self.ledger.add_count(Counter::WaitedTimedOut, 1, now);
        }
    }
}

impl Apply<ClaimCall> for TenantLedger {
    async fn apply(
        &self,
        config: &Config,
        call: ClaimCall,
    ) -> Result<(ClaimOutcome, WaitReport), Problem> {
        self.check_layout(config).await?;
        let policy = self.policy(config, call.lease_seconds, call.retention_seconds)?;
        check_claim_windows(policy.lease_ms, policy.retention_ms).map_err(bad_call)?;
        let claim = |now| {
            self.ledger
                .claim(&call.key, &call.fingerprint, &policy, now)
        };
        let (out, report) = self
            .keyed(
                config,
                &call.key,
                call.wait_ms,
                claim,
                ClaimOutcome::refusal,
            )
            .await?;
        if let ClaimOutcome::Claimed { .. } = out {
            self.arm_by(policy.sweep_at(now_ms())).await;
        }
        Ok((out, report))
    }
}

impl Apply<CompleteCall> for TenantLedger {
    async fn apply(
        &self,
        config: &Config,
        call: CompleteCall,
    ) -> Result<(CompleteOutcome, WaitReport), Problem> {
        self.check_layout(config).await?;
        let now = now_ms();
        self.check_home(config, &call.key, now)?;
        let retention = self
            .policy(config, None, call.retention_seconds)?
            .retention_ms;
        let out = self
            .ledger
            .complete(&call.key, call.generation, &call.response, retention, now)
            .map_err(|e| store_unavailable(&e))?;
        match &out {
            CompleteOutcome::FencedOut { current } => {
                log::fenced_out("complete", &call.key, call.generation, current)
            }
            CompleteOutcome::Stored => {
                self.waiters.wake(&call.key);
                // A completion's retention may be shorter than its claim's:
                // the record then expires earlier than the alarm the claim
                // set (the ledger moved its `sweep_at`), so the alarm moves
                // too — never late. Nothing is read or set when the alarm is
                // known to be early enough.
                self.arm_by(now.saturating_add(retention)).await;
            }
        }
        Ok(answered(out))
    }
}

impl Apply<ReleaseCall> for TenantLedger {
    async fn apply(
        &self,
        config: &Config,
        call: ReleaseCall,
    ) -> Result<(ReleaseOutcome, WaitReport), Problem> {
        self.check_layout(config).await?;
        self.check_home(config, &call.key, now_ms())?;
        let out = self
            .ledger
            .release(&call.key, call.generation, now_ms())
            .map_err(|e| store_unavailable(&e))?;
        match &out {
            ReleaseOutcome::FencedOut { current } => {
                log::fenced_out("release", &call.key, call.generation, current)
            }
            ReleaseOutcome::Released => {
                self.waiters.wake(&call.key);
            }
        }
        Ok(answered(out))
    }
}

impl Apply<LookupCall> for TenantLedger {
    async fn apply(
        &self,
        _: &Config,
        call: LookupCall,
    ) -> Result<(LookupAnswer, WaitReport), Problem> {
        let record = self
            .ledger
            .lookup(&call.key, now_ms())
            .map_err(|e| store_unavailable(&e))?;
        Ok(answered(LookupAnswer { record }))
    }
}

impl Apply<ReplayedCall> for TenantLedger {
    async fn apply(
        &self,
        _: &Config,
        call: ReplayedCall,
    ) -> Result<(ReplayedOutcome, WaitReport), Problem> {
        let now = now_ms();
        let replays: Vec<(&str, i64, i64)> = call
            .replays
            .iter()
            .map(|r| (r.key.as_str(), r.generation, r.count))
            .collect();
        // Written now (counts that arrive here are already late), and only
        // if they are written: a 503 leaves none of them behind, so the
        // gateway's re-send is counted once.
        self.ledger
            .write_reported(&replays, call.complete_failed, now)
            .map_err(|e| store_unavailable(&e))?;
        Ok(answered(ReplayedOutcome::Counted))
    }
}

impl Apply<StatsCall> for TenantLedger {
    async fn apply(
        &self,
        _: &Config,
        _: StatsCall,
    ) -> Result<(crate::ledger::Stats, WaitReport), Problem> {
        let mut stats = self
            .ledger
            .stats(now_ms())
            .map_err(|e| store_unavailable(&e))?;
        stats.waiting = self.waiters.parked() as i64;
        Ok(answered(stats))
    }
}

impl Apply<ExecuteCall> for TenantLedger {
    async fn apply(
        &self,
        config: &Config,
        call: ExecuteCall,
    ) -> Result<(ExecuteOutcome, WaitReport), Problem> {
        self.check_layout(config).await?;
        let policy = self.policy(config, None, None)?;
        let capture = config.capture_policy();
        let request = &call.request;
        let execute = |now| {
            let app = |store: &DoSqlStore| {
                orders::handle(store, &request.method, request.path(), &request.body, now)
            };
            self.ledger
                .execute(&call.key, &call.fingerprint, &policy, &capture, now, app)
        };
        let (out, report) = self
            .keyed(
                config,
                &call.key,
                call.wait_ms,
                execute,
                ExecuteOutcome::refusal,
            )
            .await?;
        if matches!(out, ExecuteOutcome::Ran { .. }) {
            // Waiters parked on this key (behind an RPC claim) replay it.
            self.waiters.wake(&call.key);
            self.arm_by(policy.sweep_at(now_ms())).await;
        }
        Ok((out, report))
    }
}

impl Apply<LayoutCall> for TenantLedger {
    async fn apply(
        &self,
        config: &Config,
        call: LayoutCall,
    ) -> Result<(LayoutOutcome, WaitReport), Problem> {
        // Only the tenant's registry keeps its layout history.
        let place = self.place(config)?;
        if !place.tenant.as_ref().is_some_and(|(_, registry)| *registry) {
            return Err(bad_call(
                "layout goes to the tenant's registry: the object named by the tenant",
            ));
        }
        let tenant = place.tenant.clone().map(|(t, _)| t).unwrap_or_default();
        self.decide_layout(&tenant, &call).await?;
        Ok(answered(LayoutOutcome::Accepted))
    }
}

impl Apply<HorizonCall> for TenantLedger {
    async fn apply(
        &self,
        _: &Config,
        _: HorizonCall,
    ) -> Result<(HorizonAnswer, WaitReport), Problem> {
        let expires_by = self
            .ledger
            .expires_by()
            .map_err(|e| store_unavailable(&e))?;
        Ok(answered(HorizonAnswer { expires_by }))
    }
}
