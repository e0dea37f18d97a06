//! The gateway Worker: authenticate, derive the tenant, validate the key,
//! fingerprint, and forward to that tenant's `TenantLedger` (docs/contract.md §2).
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
//! - No `Err` escapes to the runtime: every failure is a problem document.
//! - One JSON log line per protected request, with hashed tenant and key.
//!
//! Speed: the handler takes the raw `web_sys::Request` (worker 0.8.7
//! implements `FromRequest` for it). Converting to `worker::Request` reads
//! the URL, headers and the `cf` object of every request up front, and `cf`
//! alone was ~4% of the isolate's CPU per request in `npm run
//! bench:profile`; the gateway reads only the headers it needs.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use worker::worker_sys::web_sys;
use worker::{event, Context, Env, Headers, Response};

use crate::config::shards::{object_name, Layout};
use crate::config::{Config, ConfigError};
use crate::contract::admission::{self, body_unreadable, check_body_length};
use crate::contract::answer::{self, LedgerFailure};
use crate::contract::auth::{self, TokenMap};
use crate::contract::proxy;
use crate::contract::waiting::{prefer_wait, WaitPlan};
use crate::contract::{GatewayRoute, Outcome, Protection, Rejection, RequestHead};
use crate::fields;
use crate::ledger::Stats;
use crate::platform::client::{LedgerClient, LedgerError};
use crate::platform::http::{body_within, header, Body};
use crate::platform::origin::{Forward, Origin};
use crate::platform::protected::Protected;
use crate::platform::replays::{count_replays, count_replays_when_due, with_replays};
use crate::platform::{config_lookup, http, log, misconfigured, now_ms, LEDGER_BINDING};
use crate::protocol::{Fingerprint, RequestParts};
use crate::rpc::LookupCall;

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
    log::set_hash_key(config.log_hash_key.as_ref().map(|k| k.expose()));
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

/// The log line of one protected request (docs/contract.md §6).
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
    let target = crate::protocol::target_of(&url).to_string();
    let path = crate::protocol::path_of(&target);
    let route = admission::route(&method, path);
    match route {
        GatewayRoute::Health => {
            return (http::json(200, &serde_json::json!({"status": "ok"})), None)
        }
        GatewayRoute::OpenApi => return (http::app(admission::openapi()), None),
        _ => {}
    }

    // Who is asking: the tenant comes from the bearer token alone.
    let settings = settings(env);
    let settings = match settings.as_ref() {
        Ok(s) => s,
        Err(e) => return (misconfigured(&e.variable, &e.message), None),
    };
    let Some(tokens) = &settings.tokens else {
        let message = "the secret is not set; no token can be accepted";
        return (misconfigured("API_TOKENS", message), None);
    };
    let tenant = match auth::authenticate(header(&req, "authorization").as_deref(), tokens) {
        Ok(t) => t,
        Err(p) => return (http::problem(&p), None),
    };
    let config = &settings.config;
    let origin = Origin::from_env(env, config);
    // A tenant spread over several objects (TENANT_SHARDS): only in proxy
    // mode — the embedded orders must commit with the one ledger they share.
    let layout = config.tenant_shards.layout(&tenant);
    if layout.is_sharded() && origin.is_none() {
        let message = "a tenant is sharded but the gateway runs the embedded application; shard only proxy-mode tenants";
        return (misconfigured("TENANT_SHARDS", message), None);
    }
    // No client (no binding, no stub) is a ledger that was certainly not
    // reached: protected requests then follow FAILURE_POLICY below. A
    // sharded tenant's counts go to its shard 0.
    let base = object_name(&tenant, 0, layout.shards);
    let ledger = LedgerClient::for_tenant(env, LEDGER_BINDING, &base);
    let cache = config.replay_cache_bytes;
    match (route, &ledger) {
        // Replays answered by this isolate are counted before any read.
        (GatewayRoute::KeyIntrospection(encoded), Ok(client)) => {
            count_replays(client, &tenant, cache).await;
            return (
                introspect(env, client, &tenant, layout, encoded).await,
                None,
            );
        }
        (GatewayRoute::Stats, Ok(client)) => {
            count_replays(client, &tenant, cache).await;
            return (stats(env, client, &tenant, layout).await, None);
        }
        (GatewayRoute::KeyIntrospection(_) | GatewayRoute::Stats, Err(e)) => {
            return (store_unavailable(e), None)
        }
        (GatewayRoute::Health | GatewayRoute::OpenApi | GatewayRoute::Application, _) => {}
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
    let declared = head_length.as_deref().and_then(admission::declared_length);
    let body = match body_within(&req, declared, config.max_request_body_bytes).await {
        Ok(Body::Read(b)) => b,
        Ok(Body::TooLarge) => return refused(admission::too_large(config), key),
        Err(_) => return refused(body_unreadable(), key),
    };
    if let Err(rejection) = check_body_length(body.len(), config) {
        return refused(rejection, key);
    }

    let client_headers = origin.as_ref().map(|_| Headers(req.headers()));
    let mut forward = Forward::new(&method, &target, client_headers.as_ref(), &tenant, body);
    if let (Some(secret), Some(_)) = (&config.origin_signing_secret, &origin) {
        forward.sign(secret.expose(), &tenant, (now_ms() / 1000).max(0) as u64);
    }
    let Some(key) = key else {
        let response = run_unprotected(ledger.as_ref(), origin.as_ref(), config, &forward).await;
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
    count_replays_when_due(ctx, env, &tenant, &base, cache);
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
    // How long this request may wait if its key is in flight (a cached
    // replay above never does).
    let prefer = header(&req, "prefer");
    let wait = WaitPlan::new(prefer_wait(prefer.as_deref()), &config.wait);
    // The key's object (and, while resharding, its object in the previous layout).
    let homes = key_homes(env, ledger.as_ref(), &tenant, layout, &key);
    let step = match &homes {
        Err(e) => Err(e.clone()),
        Ok((client, previous)) => {
            let protected = Protected {
                ctx,
                client,
                previous: previous.as_ref(),
                config,
                tenant: &tenant,
                key: &key,
                fingerprint,
                forward: &forward,
                wait,
            };
            match &origin {
                None => protected.embedded().await,
                Some(origin) => protected.proxied(origin).await,
            }
        }
    };

    // Answer, whatever the ledger did.
    let (response, outcome) = match step {
        Ok(done) => done,
        Err(e) => match answer::ledger_failure(&e, config.failure_policy, wait.wait_ms > 0) {
            LedgerFailure::RunUnprotected => {
                log::warn(
                    "idempotency.unprotected",
                    fields! {"reason" => e.to_string(), "tenant" => log::short_hash(&tenant), "key" => log::short_hash(&key)},
                );
                let response =
                    run_unprotected(ledger.as_ref(), origin.as_ref(), config, &forward).await;
                (response, Outcome::Unprotected)
            }
            LedgerFailure::Answer(answer) => {
                log::error(
                    "idempotency.store_unavailable",
                    fields! {"error" => e.to_string(), "key" => log::short_hash(&key)},
                );
                (http::app(answer), Outcome::StoreUnavailable)
            }
            LedgerFailure::WaitInterrupted(answer) => {
                log::warn(
                    "idempotency.wait_interrupted",
                    fields! {"error" => e.to_string(), "key" => log::short_hash(&key)},
                );
                (http::app(answer), Outcome::InUse)
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

/// The client of `key`'s object and, while the tenant is resharded, of its
/// object in the previous layout. An unsharded tenant's key lives in the
/// tenant's one object (`base`).
fn key_homes(
    env: &Env,
    base: Result<&LedgerClient, &LedgerError>,
    tenant: &str,
    layout: Layout,
    key: &str,
) -> Result<(LedgerClient, Option<LedgerClient>), LedgerError> {
    if !layout.is_sharded() {
        return base.cloned().map_err(Clone::clone).map(|c| (c, None));
    }
    let current = LedgerClient::for_tenant(env, LEDGER_BINDING, &layout.home(tenant, key))?;
    let previous = layout
        .previous_home(tenant, key)
        .map(|name| LedgerClient::for_tenant(env, LEDGER_BINDING, &name))
        .transpose()?;
    Ok((current, previous))
}

async fn introspect(
    env: &Env,
    base: &LedgerClient,
    tenant: &str,
    layout: Layout,
    encoded: &str,
) -> Response {
    let key = match admission::introspection_key(encoded) {
        Ok(k) => k,
        Err(p) => return http::problem(&p),
    };
    let (current, previous) = match key_homes(env, Ok(base), tenant, layout, &key) {
        Ok(homes) => homes,
        Err(e) => return store_unavailable(&e),
    };
    // While resharding, the previous layout answers for the keys it holds.
    for client in previous.iter().chain(std::iter::once(&current)) {
        match client.lookup(&LookupCall { key: key.clone() }).await {
            Ok(found) if found.record.is_some() => {
                return http::app(answer::lookup_answer(found.record))
            }
            Ok(_) => {}
            Err(e) => return store_unavailable(&e),
        }
    }
    http::app(answer::lookup_answer(None))
}

/// The tenant's stats: its one object's, or the sum over every object of
/// its current (and previous) layout.
async fn stats(env: &Env, base: &LedgerClient, tenant: &str, layout: Layout) -> Response {
    if !layout.is_sharded() {
        return match base.stats().await {
            Ok(stats) => http::json(200, &stats),
            Err(e) => store_unavailable(&e),
        };
    }
    let mut clients = Vec::new();
    for name in layout.objects(tenant) {
        match LedgerClient::for_tenant(env, LEDGER_BINDING, &name) {
            Ok(c) => clients.push(c),
            Err(e) => return store_unavailable(&e),
        }
    }
    let answers = futures_util::future::join_all(clients.iter().map(|c| c.stats())).await;
    let mut total = Stats::default();
    for answer in answers {
        match answer {
            Ok(s) => total.add(&s),
            Err(e) => return store_unavailable(&e),
        }
    }
    http::json(200, &total)
}

/// Runs a request without the ledger: on the origin in proxy mode, else on
/// the embedded application.
async fn run_unprotected(
    ledger: Result<&LedgerClient, &LedgerError>,
    origin: Option<&Origin>,
    config: &Config,
    fwd: &Forward,
) -> Response {
    match origin {
        Some(origin) => {
            let Ok(request) = origin.prepare(fwd) else {
                return http::app(proxy::not_forwardable(&fwd.method).0);
            };
            let timeout = Duration::from_secs(config.origin_timeout_seconds);
            let result = origin.send(request, timeout).await.map_err(|e| e.failure());
            http::app(proxy::unprotected_answer(result))
        }
        None => match ledger {
            Ok(client) => match client.app(&fwd.method, &fwd.target, &fwd.body).await {
                Ok(r) => r,
                Err(e) => store_unavailable(&e),
            },
            // The embedded application lives in the object itself.
            Err(e) => store_unavailable(e),
        },
    }
}
