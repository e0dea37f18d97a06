//! The gateway Worker: authenticate, derive the tenant, validate the key,
//! fingerprint, and forward to that tenant's `TenantLedger` (SPEC §2).
//!
//! Role: carry one HTTP request through the contract's decisions
//! (`crate::contract`) — admit → protected? → embedded or proxied → answer →
//! log — converting between `worker` types and the contract's values. Every
//! status, problem and key decision is made in `contract`; none is made here.
//!
//! What must stay true here:
//! - The tenant comes only from the bearer token (via `API_TOKENS`), never
//!   from anything the client sends. Without `API_TOKENS` nobody is let in.
//! - Nothing is claimed before the request is admitted: auth, key, and body
//!   size are checked first (bad input changes nothing).
//! - The method is read raw (workers-rs maps unknown methods to GET).
//!
//! Speed: the handler takes the raw `web_sys::Request` (worker 0.8.7
//! implements `FromRequest` for it). Converting to `worker::Request` reads
//! the URL, headers and the `cf` object of every request up front, and `cf`
//! alone was ~4% of the isolate's CPU per request in `npm run
//! bench:profile`; the gateway reads only the headers it needs.
//! - No `Err` escapes to the runtime: every failure is a problem document.
//! - One JSON log line per protected request, with hashed tenant and key.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use worker::worker_sys::web_sys;
use worker::{event, Context, Env, Headers, Response};

use crate::config::{Config, ConfigError, TokenMap};
use crate::contract::admission::{self, body_unreadable, check_body_length, misconfigured};
use crate::contract::answer::{self, LedgerFailure};
use crate::contract::proxy::{self, AfterOrigin, Settle};
use crate::contract::replay_cache::Replayable;
use crate::contract::{GatewayRoute, Outcome, Protection, Rejection, RequestHead};
use crate::fields;
use crate::ledger::{ClaimOutcome, ExecuteOutcome, Refusal};
use crate::platform::client::{LedgerClient, LedgerError};
use crate::platform::http::{body_of, header};
use crate::platform::origin::{Forward, Origin, OriginError};
use crate::platform::replays::{count_replays, count_replays_when_due, with_replays};
use crate::platform::{config_lookup, http, log, now_ms, LEDGER_BINDING};
use crate::protocol::{AppResponse, Fingerprint, RequestParts};
use crate::rpc::{AppRequest, ClaimCall, CompleteCall, ExecuteCall, LookupCall, ReleaseCall};

/// Per-isolate parsed settings: variables never change within an isolate.
struct Settings {
    config: Config,
    tokens: Option<TokenMap>,
}

thread_local! {
    static SETTINGS: RefCell<Option<Rc<Result<Settings, ConfigError>>>> = const { RefCell::new(None) };
}

fn load_settings(env: &Env) -> Result<Settings, ConfigError> {
    let config = Config::from_lookup(&config_lookup(env))?;
    log::set_level(config.log_level);
    for warning in config.warnings() {
        log::warn("idempotency.config_warning", fields! {"warning" => warning});
    }
    let raw_tokens = env
        .secret("API_TOKENS")
        .map(|s| s.to_string())
        .or_else(|_| env.var("API_TOKENS").map(|v| v.to_string()))
        .ok();
    let tokens = raw_tokens.as_deref().map(TokenMap::parse).transpose()?;
    Ok(Settings { config, tokens })
}

fn settings(env: &Env) -> Rc<Result<Settings, ConfigError>> {
    SETTINGS.with(|cell| {
        cell.borrow_mut()
            .get_or_insert_with(|| Rc::new(load_settings(env)))
            .clone()
    })
}

/// The log line of one protected request (SPEC §6).
struct RequestLog {
    outcome: Outcome,
    tenant: String,
    key: Option<String>,
}

#[event(fetch)]
pub async fn fetch(req: web_sys::Request, env: Env, ctx: Context) -> worker::Result<Response> {
    log::install_panic_hook();
    let started = now_ms();
    let (response, line) = handle(req, &env, &ctx).await;
    if let Some(line) = line.filter(|_| log::info_enabled()) {
        log::info(
            "idempotency.request",
            fields! {
                "outcome" => line.outcome,
                "status" => response.status_code(),
                "duration_ms" => now_ms() - started,
                "tenant" => log::short_hash(&line.tenant),
                "key" => line.key.as_deref().map(log::short_hash),
            },
        );
    }
    Ok(response)
}

fn configuration_failed(variable: &str, message: &str) -> Response {
    log::error(
        "idempotency.misconfigured",
        fields! {"variable" => variable, "error" => message},
    );
    http::problem(&misconfigured(variable))
}

fn store_unavailable(error: &LedgerError) -> Response {
    log::error(
        "idempotency.store_unavailable",
        fields! {"error" => error.to_string()},
    );
    http::app(answer::read_failure(error))
}

async fn handle(req: web_sys::Request, env: &Env, ctx: &Context) -> (Response, Option<RequestLog>) {
    let method = req.method();
    let url = req.url();
    let target = admission::target_of(&url).to_string();
    let path = admission::path_of(&target);
    let route = admission::route(&method, path);
    if route == GatewayRoute::Health {
        return (http::json(200, &serde_json::json!({"status": "ok"})), None);
    }

    // Who is asking: the tenant comes from the bearer token alone.
    let settings = settings(env);
    let settings = match settings.as_ref() {
        Ok(s) => s,
        Err(e) => return (configuration_failed(&e.variable, &e.message), None),
    };
    let Some(tokens) = &settings.tokens else {
        let message = "the secret is not set; no token can be accepted";
        return (configuration_failed("API_TOKENS", message), None);
    };
    let tenant = match admission::authenticate(header(&req, "authorization").as_deref(), tokens) {
        Ok(t) => t,
        Err(p) => return (http::problem(&p), None),
    };
    let config = &settings.config;
    let client = match LedgerClient::for_tenant(env, LEDGER_BINDING, &tenant) {
        Ok(c) => c,
        Err(e) => return (store_unavailable(&e), None),
    };
    let cache = config.replay_cache_bytes;
    match route {
        // Replays answered by this isolate are counted before any read.
        GatewayRoute::KeyIntrospection(encoded) => {
            count_replays(&client, &tenant, cache).await;
            return (introspect(&client, encoded).await, None);
        }
        GatewayRoute::Stats => {
            count_replays(&client, &tenant, cache).await;
            return (stats(&client).await, None);
        }
        GatewayRoute::Health | GatewayRoute::Application => {}
    }

    // Admit: the declared size and (for protected methods) the key.
    let refused = |rejection: Rejection, key: Option<String>| {
        let line = config.is_protected(&method).then(|| RequestLog {
            outcome: rejection.outcome,
            tenant: tenant.clone(),
            key,
        });
        (http::problem(&rejection.problem), line)
    };
    let head_key = header(&req, "idempotency-key");
    let head_length = header(&req, "content-length");
    let head = RequestHead {
        method: &method,
        content_length: head_length.as_deref(),
        idempotency_key: head_key.as_deref(),
    };
    let protection = match admission::admit(&head, config) {
        Ok(p) => p,
        Err(rejection) => return refused(rejection, None),
    };
    let key = match &protection {
        Protection::Keyed(key) => Some(key.clone()),
        Protection::Unprotected | Protection::UnprotectedNoKey => None,
    };
    let body = match body_of(&req).await {
        Ok(b) => b,
        Err(_) => return refused(body_unreadable(), key),
    };
    if let Err(rejection) = check_body_length(body.len(), config) {
        return refused(rejection, key);
    }

    let origin = Origin::from_env(env, config);
    let client_headers = origin.as_ref().map(|_| Headers(req.headers()));
    let forward = Forward::new(&method, &target, client_headers.as_ref(), &tenant, body);
    let Some(key) = key else {
        let response = run_unprotected(&client, origin.as_ref(), config, &forward).await;
        let line = protection.is_logged().then_some(RequestLog {
            outcome: Outcome::UnprotectedNoKey,
            tenant,
            key: None,
        });
        return (response, line);
    };

    // Protected: embedded (one hop, one transaction) or proxied.
    let headers: Vec<(String, Option<String>)> = config
        .fingerprint_headers
        .iter()
        .map(|name| (name.clone(), header(&req, name)))
        .collect();
    let fingerprint = Fingerprint::of(&RequestParts {
        method: &method,
        target: &target,
        headers: &headers,
        body: &forward.body,
    });
    count_replays_when_due(ctx, env, &tenant, cache);
    let cached = with_replays(cache, |c| {
        c.serve(&tenant, &key, &fingerprint.digest, now_ms())
    });
    if let Some(stored) = cached {
        // A completed record, immutable until it expires: no hop needed.
        let line = RequestLog {
            outcome: Outcome::Replayed,
            tenant,
            key: Some(key),
        };
        return (http::replay(stored), Some(line));
    }
    let protected = Protected {
        client: &client,
        config,
        tenant: &tenant,
        key: &key,
        fingerprint,
        forward: &forward,
    };
    let step = match &origin {
        None => protected.embedded().await,
        Some(origin) => protected.proxied(origin).await,
    };

    // Answer, whatever the ledger did.
    let (response, outcome) = match step {
        Ok(done) => done,
        Err(e) => match answer::ledger_failure(&e, config.failure_policy) {
            LedgerFailure::RunUnprotected => {
                log::warn(
                    "idempotency.unprotected",
                    fields! {"reason" => e.to_string(), "tenant" => log::short_hash(&tenant), "key" => log::short_hash(&key)},
                );
                let response = run_unprotected(&client, origin.as_ref(), config, &forward).await;
                (response, Outcome::Unprotected)
            }
            LedgerFailure::Answer(answer) => {
                log::error(
                    "idempotency.store_unavailable",
                    fields! {"error" => e.to_string(), "key" => log::short_hash(&key)},
                );
                (http::app(answer), Outcome::StoreUnavailable)
            }
        },
    };
    let line = RequestLog {
        outcome,
        tenant,
        key: Some(key),
    };
    (response, Some(line))
}

/// One protected request on its way through the ledger.
struct Protected<'a> {
    client: &'a LedgerClient,
    config: &'a Config,
    tenant: &'a str,
    key: &'a str,
    fingerprint: Fingerprint,
    forward: &'a Forward,
}

type Step = Result<(Response, Outcome), LedgerError>;

fn answered((answer, outcome): (AppResponse, Outcome)) -> (Response, Outcome) {
    (http::app(answer), outcome)
}

impl Protected<'_> {
    /// Keeps a completed record the object just replayed, so the next
    /// identical retry is answered from this isolate.
    fn remember(&self, refusal: &Refusal) {
        if let Refusal::Completed {
            generation,
            response,
            expires_at: Some(expires_at),
        } = refusal
        {
            let digest = &self.fingerprint.digest;
            let record = Replayable {
                generation: *generation,
                response,
                expires_at: *expires_at,
            };
            with_replays(self.config.replay_cache_bytes, |c| {
                c.insert(self.tenant, self.key, digest, record, now_ms())
            });
        }
    }

    /// Embedded mode: one hop, claim + orders app + complete in one transaction.
    async fn embedded(&self) -> Step {
        let call = ExecuteCall {
            key: self.key.to_string(),
            fingerprint: self.fingerprint.clone(),
            request: AppRequest {
                method: self.forward.method.to_ascii_uppercase(),
                target: self.forward.target.clone(),
                body: self.forward.body.clone(),
            },
        };
        let outcome = self.client.execute(&call).await?;
        if let ExecuteOutcome::Refused(refusal) = &outcome {
            self.remember(refusal);
        }
        Ok(answered(answer::execute_answer(outcome)))
    }

    /// Proxy mode: claim, forward to the origin, then settle the key as the
    /// contract decides (complete, release or keep).
    async fn proxied(&self, origin: &Origin) -> Step {
        let claim = ClaimCall {
            key: self.key.to_string(),
            fingerprint: self.fingerprint.clone(),
            lease_seconds: None,
            retention_seconds: None,
        };
        let (generation, takeover) = match self.client.claim(&claim).await? {
            ClaimOutcome::Claimed {
                generation,
                takeover,
            } => (generation, takeover),
            ClaimOutcome::Refused(refusal) => return Ok(answered(answer::refusal_answer(refusal))),
        };
        let timeout = Duration::from_secs(self.config.origin_timeout_seconds);
        let result = origin.forward(self.forward, timeout).await.map_err(|e| {
            if let OriginError::Unreachable(reason) = &e {
                log::warn(
                    "idempotency.origin_unavailable",
                    fields! {"error" => reason, "key" => log::short_hash(self.key)},
                );
            }
            e.failure()
        });
        let AfterOrigin {
            settle,
            reply,
            outcome,
        } = proxy::after_origin(result, takeover, self.config);
        let outcome = match settle {
            Settle::Complete(response) => {
                let call = CompleteCall {
                    key: self.key.to_string(),
                    generation,
                    response,
                    retention_seconds: None,
                };
                let completion = self.client.complete(&call).await;
                if let Err(e) = &completion {
                    log::error(
                        "idempotency.complete_failed",
                        fields! {"error" => e.to_string(), "key" => log::short_hash(self.key)},
                    );
                }
                // The object logs idempotency.fenced_out (it sees every caller).
                proxy::after_completion(outcome, completion.as_ref())
            }
            Settle::Release => {
                self.release(generation).await;
                outcome
            }
            Settle::Keep => outcome,
        };
        // The caller whose run produced this response always gets it.
        Ok((http::app(reply), outcome))
    }

    async fn release(&self, generation: i64) {
        let call = ReleaseCall {
            key: self.key.to_string(),
            generation,
        };
        // A fenced-out release is logged by the object as idempotency.fenced_out.
        if let Err(e) = self.client.release(&call).await {
            log::error(
                "idempotency.release_failed",
                fields! {"error" => e.to_string(), "key" => log::short_hash(self.key)},
            );
        }
    }
}

async fn introspect(client: &LedgerClient, encoded: &str) -> Response {
    let key = match admission::introspection_key(encoded) {
        Ok(k) => k,
        Err(p) => return http::problem(&p),
    };
    match client.lookup(&LookupCall { key }).await {
        Ok(found) => http::app(answer::lookup_answer(found.record)),
        Err(e) => store_unavailable(&e),
    }
}

async fn stats(client: &LedgerClient) -> Response {
    match client.stats().await {
        Ok(stats) => http::json(200, &stats),
        Err(e) => store_unavailable(&e),
    }
}

/// Runs a request without the ledger: on the origin in proxy mode, else on
/// the embedded application.
async fn run_unprotected(
    client: &LedgerClient,
    origin: Option<&Origin>,
    config: &Config,
    fwd: &Forward,
) -> Response {
    match origin {
        Some(origin) => {
            let timeout = Duration::from_secs(config.origin_timeout_seconds);
            let result = origin.forward(fwd, timeout).await.map_err(|e| e.failure());
            http::app(proxy::unprotected_answer(result))
        }
        None => match client.app(&fwd.method, &fwd.target, &fwd.body).await {
            Ok(r) => r,
            Err(e) => store_unavailable(&e),
        },
    }
}
