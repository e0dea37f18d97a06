//! `TenantLedger`: one Durable Object per tenant, owning that tenant's ledger
//! and the embedded orders table in its own SQLite database.
//!
//! Role: serve RPC v1 (`POST /rpc/v1/{claim,complete,release,lookup,stats,execute}`)
//! and the unprotected embedded application (`/app`, its target in the
//! `x-ledger-app-target` header, never in the URL); sweep by alarm.
//!
//! What must stay true here:
//! - The object's own clock (`Date.now()` inside the object) sets every
//!   lease and expiry; callers never supply times.
//! - Calls are parsed and validated before anything is written; a bad call
//!   is a 400/404/405 problem and changes nothing.
//! - Requests are single-threaded per object and the ledger work between
//!   awaits is synchronous, so a claim is never interleaved with another.
//! - A `claim` or `execute` with `wait_ms` that meets a live lease parks
//!   (see [`crate::waiters`] and [`super::waiting`]); `complete`, `release`
//!   and a finished `execute` wake that key's waiters. Parked requests await
//!   no storage, so other keys are never delayed.
//! - Sweep runs only in `alarm()`, never on the request path. A claim arms
//!   the alarm only when this instance has not yet confirmed one exists.
//!
//! Learned from worker 0.8.7 `src/durable.rs`: `Storage::set_alarm(i64)`
//! treats the integer as an *offset* from now, not an epoch time, so every
//! absolute time goes through [`at_epoch_ms`].

use std::cell::Cell;

use serde::de::DeserializeOwned;
use worker::{
    durable_object, wasm_bindgen, DurableObject, Env, Request, Response, ScheduledTime, State,
};

use crate::config::shards::{parse_object_name, Role};
use crate::config::{Config, ConfigError};
use crate::contract::answer;
use crate::fields;
use crate::ledger::{
    rfc3339, ClaimOutcome, ClaimPolicy, CompleteOutcome, Counter, ExecuteOutcome, Ledger, Refusal,
    ReleaseOutcome, StoreError,
};
use crate::orders;
use crate::platform::do_store::DoSqlStore;
use crate::platform::waiting::{attempt_waiting, WaitReport};
use crate::platform::{config_lookup, http, log, misconfigured, now_ms};
use crate::protocol::{path_of, target_of};
use crate::protocol::{Problem, ProblemKind};
use crate::rpc::{
    check_claim_windows, ClaimCall, CompleteCall, ExecuteCall, LookupAnswer, LookupCall,
    ReleaseCall, ReplayedCall, ReplayedOutcome, Route, APP_PATH, APP_TARGET_HEADER, WAITED_HEADER,
};
use crate::waiters::Waiters;

/// An absolute alarm time (epoch milliseconds on the object's clock).
fn at_epoch_ms(ms: i64) -> ScheduledTime {
    ScheduledTime::new(js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(
        ms as f64,
    )))
}

/// How soon the alarm fires again after a full sweep batch.
const FULL_BATCH_REARM_MS: i64 = 500;

#[durable_object]
pub struct TenantLedger {
    state: State,
    ledger: Ledger<DoSqlStore>,
    /// Parsed once per object instance; an invalid variable refuses every call.
    config: Result<Config, ConfigError>,
    /// Schema creation outcome; a failure refuses every call.
    ready: Result<(), String>,
    /// True once this instance knows an alarm is set (avoids a set_alarm per request).
    alarm_known: Cell<bool>,
    /// False until this instance's first request has checked the alarm: a
    /// restarted workerd may have lost an overdue alarm (workerd #3138, #3566).
    started: Cell<bool>,
    /// Requests parked on in-flight keys (in memory: gone with the instance).
    waiters: Waiters,
    /// How many objects this one's layout has (from its `idFromName` name,
    /// see `contract::shards`; 1 for a tenant's single object).
    shards: u32,
    /// True when this object belongs to a retired shard layout under the
    /// configuration it runs with (both fixed for the instance's life).
    retired: bool,
}

impl DurableObject for TenantLedger {
    fn new(state: State, env: Env) -> Self {
        log::install_panic_hook();
        let ledger = Ledger::new(DoSqlStore::new(&state));
        let ready = ledger
            .migrate()
            .and_then(|_| orders::migrate(ledger.store()))
            .map_err(|e| e.to_string());
        let config = Config::from_lookup(&config_lookup(&env));
        if let Ok(c) = &config {
            log::set_level(c.log_level);
            log::set_hash_key(c.log_hash_key.as_ref().map(|k| k.expose()));
        }
        let max_waiters = config.as_ref().map_or(0, |c| c.wait.max_waiters);
        let name = state.id().name();
        let shards = name.as_deref().map_or(1, |n| parse_object_name(n).shards);
        let retired = match (&name, &config) {
            (Some(n), Ok(c)) => c.tenant_shards.role_of(n) == Role::Retired,
            _ => false,
        };
        TenantLedger {
            shards,
            retired,
            waiters: Waiters::new(max_waiters),
            state,
            ledger,
            config,
            ready,
            alarm_known: Cell::new(false),
            started: Cell::new(false),
        }
    }

    async fn fetch(&self, req: Request) -> worker::Result<Response> {
        Ok(self.serve(req).await)
    }

    async fn alarm(&self) -> worker::Result<Response> {
        let config = self
            .config
            .as_ref()
            .map_err(|e| worker::Error::RustError(e.to_string()))?;
        let now = now_ms();
        // An Err here is returned so the platform retries the alarm; the sweep
        // is idempotent (it deletes only what has expired).
        let outcome = self
            .ledger
            .sweep(now, config.sweep_batch)
            .map_err(|e| worker::Error::RustError(e.to_string()))?;
        let storage = self.state.storage();
        if outcome.batch_full {
            storage
                .set_alarm(at_epoch_ms(now + FULL_BATCH_REARM_MS))
                .await?;
        } else if let Some(next) = outcome.next_expires_at {
            storage.set_alarm(at_epoch_ms(next.max(now + 1))).await?;
        } else {
            storage.delete_alarm().await?;
            self.alarm_known.set(false);
        }
        log::info(
            "idempotency.sweep",
            fields! {"deleted" => outcome.deleted, "batch_full" => outcome.batch_full},
        );
        Response::ok("swept")
    }
}

/// The lease time left when a refusal is "in flight" (what a waiter waits on).
fn in_flight(refusal: &Refusal) -> Option<i64> {
    match refusal {
        Refusal::InFlight { retry_after_ms, .. } => Some(*retry_after_ms),
        _ => None,
    }
}

/// Names the time a call spent parked (`ledger-waited-ms`), if it was.
fn with_wait(response: Response, report: &WaitReport) -> Response {
    if let Some(ms) = report.waited_ms {
        let _ = response.headers().set(WAITED_HEADER, &ms.to_string());
    }
    response
}

fn bad_call(detail: impl Into<String>) -> Problem {
    Problem::new(ProblemKind::InvalidRpc, detail)
}

fn parse_call<T: DeserializeOwned>(body: &[u8]) -> Result<T, Problem> {
    serde_json::from_slice(body).map_err(|e| bad_call(format!("the call body is not valid: {e}")))
}

/// A ledger operation failed in SQLite: logged, and answered as the one
/// store failure clients know (`503 idempotency-store-unavailable`).
fn store_unavailable(e: &StoreError) -> Problem {
    log::error(
        "idempotency.store_unavailable",
        fields! {"error" => e.to_string()},
    );
    answer::store_unavailable()
}

impl TenantLedger {
    async fn serve(&self, mut req: Request) -> Response {
        if let Err(e) = &self.ready {
            log::error("idempotency.schema_error", fields! {"error" => e});
            return http::problem(&answer::store_unavailable());
        }
        let config = match &self.config {
            Ok(c) => c,
            Err(e) => return misconfigured(&e.variable, &e.message),
        };
        if !self.started.replace(true) {
            self.ensure_alarm().await;
        }
        // The path from the raw URL string: `Request::path()` would parse it
        // with the `url` crate, which alone adds IDNA tables to the bundle.
        let url = req.inner().url();
        let path = path_of(target_of(&url));
        let method = req.inner().method();
        let body = match req.bytes().await {
            Ok(b) => b,
            Err(_) => return http::problem(&bad_call("the request body could not be read")),
        };
        if path == APP_PATH {
            // The target comes from a header, never from the URL.
            let target = req
                .headers()
                .get(APP_TARGET_HEADER)
                .ok()
                .flatten()
                .filter(|t| t.starts_with('/'))
                .unwrap_or_default();
            let app_path = path_of(&target);
            return match orders::handle(self.ledger.store(), &method, app_path, &body, now_ms()) {
                Ok(r) => http::app(r),
                Err(e) => http::problem(&store_unavailable(&e)),
            };
        }
        let Some(route) = Route::from_path(path) else {
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
        match self.dispatch(route, config, &body).await {
            Ok(r) => r,
            Err(p) => http::problem(&p),
        }
    }

    fn policy(
        &self,
        config: &Config,
        lease_seconds: Option<u64>,
        retention_seconds: Option<u64>,
    ) -> ClaimPolicy {
        // MAX_KEYS_PER_TENANT stays a tenant's quota: each of a sharded
        // tenant's N objects holds at most its N-th part (rounded up).
        ClaimPolicy {
            lease_ms: lease_seconds.map_or(config.lease_ms(), |s| s as i64 * 1000),
            retention_ms: retention_seconds.map_or(config.retention_ms(), |s| s as i64 * 1000),
            max_keys: config.max_keys_per_tenant.div_ceil(u64::from(self.shards)),
            max_db_bytes: config.max_db_bytes_per_object,
        }
    }

    async fn dispatch(
        &self,
        route: Route,
        config: &Config,
        body: &[u8],
    ) -> Result<Response, Problem> {
        let now = now_ms();
        match route {
            Route::Claim => {
                let call: ClaimCall = parse_call(body)?;
                call.validate().map_err(bad_call)?;
                let policy = self.policy(config, call.lease_seconds, call.retention_seconds);
                check_claim_windows(policy.lease_ms, policy.retention_ms).map_err(bad_call)?;
                let (out, report) = self
                    .keyed(
                        config,
                        &call.key,
                        call.wait_ms,
                        |now| {
                            self.ledger
                                .claim(&call.key, &call.fingerprint, &policy, now)
                        },
                        |out| match out {
                            ClaimOutcome::Refused(refusal) => Some(refusal),
                            ClaimOutcome::Claimed { .. } => None,
                        },
                    )
                    .await?;
                if let ClaimOutcome::Claimed { .. } = out {
                    self.ensure_alarm().await;
                }
                Ok(with_wait(http::json(200, &out), &report))
            }
            Route::Complete => {
                let call: CompleteCall = parse_call(body)?;
                call.validate().map_err(bad_call)?;
                self.check_home(&call.key, now)?;
                let retention = self
                    .policy(config, None, call.retention_seconds)
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
                    }
                }
                Ok(http::json(200, &out))
            }
            Route::Release => {
                let call: ReleaseCall = parse_call(body)?;
                call.validate().map_err(bad_call)?;
                self.check_home(&call.key, now)?;
                let out = self
                    .ledger
                    .release(&call.key, call.generation)
                    .map_err(|e| store_unavailable(&e))?;
                match &out {
                    ReleaseOutcome::FencedOut { current } => {
                        log::fenced_out("release", &call.key, call.generation, current)
                    }
                    ReleaseOutcome::Released => {
                        self.waiters.wake(&call.key);
                    }
                }
                Ok(http::json(200, &out))
            }
            Route::Lookup => {
                let call: LookupCall = parse_call(body)?;
                call.validate().map_err(bad_call)?;
                let record = self
                    .ledger
                    .lookup(&call.key, now)
                    .map_err(|e| store_unavailable(&e))?;
                Ok(http::json(200, &LookupAnswer { record }))
            }
            Route::Replayed => {
                let call: ReplayedCall = parse_call(body)?;
                call.validate().map_err(bad_call)?;
                for r in &call.replays {
                    self.ledger.add_replays(&r.key, r.generation, r.count, now);
                }
                self.ledger
                    .add_count(Counter::CompleteFailed, call.complete_failed, now);
                // Written now: counts that arrive here are already late.
                self.ledger
                    .flush_pending()
                    .map_err(|e| store_unavailable(&e))?;
                Ok(http::json(200, &ReplayedOutcome::Counted))
            }
            Route::Stats => {
                let mut stats = self.ledger.stats().map_err(|e| store_unavailable(&e))?;
                stats.waiting = self.waiters.parked() as i64;
                Ok(http::json(200, &stats))
            }
            Route::Execute => {
                let call: ExecuteCall = parse_call(body)?;
                call.validate().map_err(bad_call)?;
                let policy = self.policy(config, None, None);
                let capture = config.capture_policy();
                let request = &call.request;
                let (out, report) = self
                    .keyed(
                        config,
                        &call.key,
                        call.wait_ms,
                        |now| {
                            let app = |store: &DoSqlStore| {
                                let method = &request.method;
                                orders::handle(store, method, request.path(), &request.body, now)
                            };
                            let key = &call.key;
                            self.ledger
                                .execute(key, &call.fingerprint, &policy, &capture, now, app)
                        },
                        |out| match out {
                            ExecuteOutcome::Refused(refusal) => Some(refusal),
                            ExecuteOutcome::Ran { .. } => None,
                        },
                    )
                    .await?;
                if matches!(out, ExecuteOutcome::Ran { .. }) {
                    // Waiters parked on this key (behind an RPC claim) replay it.
                    self.waiters.wake(&call.key);
                    self.ensure_alarm().await;
                }
                Ok(with_wait(http::json(200, &out), &report))
            }
        }
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
        mut attempt: impl FnMut(i64) -> Result<T, StoreError>,
        refusal: impl Fn(&T) -> Option<&Refusal>,
    ) -> Result<(T, WaitReport), Problem> {
        let budget = config.wait.bound_ms(wait_ms.unwrap_or(0));
        let (out, report) = attempt_waiting(
            &self.waiters,
            key,
            budget,
            |now| {
                self.check_home(key, now)?;
                attempt(now).map_err(|e| store_unavailable(&e))
            },
            |out| refusal(out).and_then(in_flight),
        )
        .await?;
        let replayed = matches!(refusal(&out), Some(Refusal::Completed { .. }));
        self.count_wait(&report, replayed);
        Ok((out, report))
    }

    /// A retired shard (the tenant is being resharded, see
    /// `contract::shards`) answers only for the keys it holds: for any other
    /// key a claim, execute, complete or release is refused with `421
    /// idempotency-key-moved` and changes nothing (so every caller routes a
    /// keyed call the same way: previous layout first, on 421 the current), so
    /// no caller — not even a gateway still running the old configuration —
    /// can create a key here while another creates it in its current object.
    fn check_home(&self, key: &str, now: i64) -> Result<(), Problem> {
        if !self.retired {
            return Ok(());
        }
        if self
            .ledger
            .holds(key, now)
            .map_err(|e| store_unavailable(&e))?
        {
            return Ok(());
        }
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

    /// Makes sure an alarm is set while the ledger holds records. Checks the
    /// storage once per instance (this also re-arms after a restart, when an
    /// overdue alarm may have been lost), then trusts `alarm_known`.
    async fn ensure_alarm(&self) {
        if self.alarm_known.get() {
            return;
        }
        let storage = self.state.storage();
        match storage.get_alarm().await {
            Ok(Some(_)) => self.alarm_known.set(true),
            Ok(None) => {
                if let Ok(Some(at)) = self.ledger.next_expires_at() {
                    match storage.set_alarm(at_epoch_ms(at.max(now_ms() + 1))).await {
                        Ok(()) => {
                            self.alarm_known.set(true);
                            log::info("idempotency.alarm_armed", fields! {"at" => rfc3339(at)});
                        }
                        Err(e) => log::error(
                            "idempotency.alarm_set_failed",
                            fields! {"error" => e.to_string()},
                        ),
                    }
                }
            }
            Err(e) => log::warn(
                "idempotency.alarm_check_failed",
                fields! {"error" => e.to_string()},
            ),
        }
    }
}
