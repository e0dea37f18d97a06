//! The gateway Worker: authenticate, derive the tenant, validate the key,
//! fingerprint, and forward to that tenant's `TenantLedger`
//! (docs/contract.md §2).
//!
//! Role: carry one HTTP request through the contract's decisions
//! (`crate::contract`) as phases read top to bottom — route → admit (who,
//! [`settings`]) → reads ([`reads`]) → admit the head → read the body →
//! unprotected ([`unprotected`]), or protect ([`protected`]: embedded, or [`proxied`] through
//! [`origin`], [`stream`] and the isolate's [`replays`]) → answer a failure → log
//! (and never the application on the console's own host, [`console`]) —
//! converting between `worker` types and the contract's values. Every
//! status, problem and key decision is made in `contract`; none is made
//! here.
//!
//! What must stay true here:
//! - The tenant comes only from the bearer token (via `API_TOKENS`, or
//!   `OPERATOR_TOKENS`), never from anything the client sends. Without
//!   `API_TOKENS` nobody is let in.
//! - Each route is admitted by its own rule (`GatewayRoute::access`): an
//!   operator's token reaches the reads only, never the application.
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

pub mod check;
pub mod console;
pub mod origin;
pub mod protected;
pub mod proxied;
pub mod reads;
pub mod replays;
pub mod settings;
pub mod stream;
pub mod unprotected;

use std::time::Duration;

use worker::worker_sys::web_sys;
use worker::{event, Context, Env, Headers, Response};

use crate::config::Config;
use crate::contract::admission::{self, body_unreadable, check_body_length};
use crate::contract::answer::{self, LedgerFailure};
use crate::contract::waiting::{prefer_wait, WaitPlan};
use crate::contract::{Disposition, GatewayRoute, Protection, Rejection, RequestHead};
use crate::fields;
use crate::platform::client::LedgerError;
use crate::platform::http::{self, body_reader, body_within, drain, header, Body};
use crate::platform::{analytics, log, now_ms};
use crate::protocol::{path_of, target_of, Fingerprint, RequestParts};
use origin::Forward;
use protected::Protected;
use reads::key_homes;
use replays::{count_replays_when_due, with_replays};
use settings::Tenancy;
use unprotected::run_unprotected;

/// The log line of one protected request (docs/contract.md §6).
struct RequestLog {
    outcome: Disposition,
    tenant: String,
    key: Option<String>,
    /// Rows the tenant's objects reported writing for it (metered only
    /// with the `ANALYTICS` binding).
    rows_written: Option<u64>,
}

/// An answer, and the log line it owes if the request was protected.
type Answered = (Response, Option<RequestLog>);

#[event(fetch)]
pub async fn fetch(req: web_sys::Request, env: Env, ctx: Context) -> worker::Result<Response> {
    log::install_panic_hook();
    let started = now_ms();
    let metered = settings::settings(&env).is_ok_and(|s| s.analytics);
    let method = metered.then(|| req.method());
    let (response, line) = handle(req, &env, &ctx).await;
    if let (Some(line), Some(method)) = (&line, &method) {
        analytics::write(
            &env,
            &analytics::DataPoint {
                tenant_hash: &log::short_hash(&line.tenant),
                outcome: line.outcome.as_str(),
                method,
                status: response.status_code(),
                duration_ms: now_ms() - started,
                rows_written: line.rows_written.unwrap_or(0),
            },
        );
    }
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

/// Route → who is asking → the tenant's reads, or its application.
async fn handle(req: web_sys::Request, env: &Env, ctx: &Context) -> Answered {
    let method = req.method();
    let url = req.url();
    let target = target_of(&url).to_string();
    let route = admission::route(&method, path_of(&target));
    // Health and the OpenAPI document are answered before anyone is admitted.
    let admit = || Tenancy::admit(&req, env, route.access());
    match route {
        GatewayRoute::Health => (http::json(200, &serde_json::json!({"status": "ok"})), None),
        GatewayRoute::OpenApi => (http::app(admission::openapi()), None),
        GatewayRoute::KeyIntrospection(encoded) => match admit() {
            Ok(who) => (reads::introspect(&who, encoded).await, None),
            Err(refused) => (refused, None),
        },
        GatewayRoute::KeyEviction(encoded) => match admit() {
            Ok(who) => (reads::evict(&who, encoded).await, None),
            Err(refused) => (refused, None),
        },
        GatewayRoute::KeyList => match admit() {
            Ok(who) => (reads::list(&who, query_of(&target)).await, None),
            Err(refused) => (refused, None),
        },
        GatewayRoute::Stats => match admit() {
            Ok(who) => (reads::stats(&who).await, None),
            Err(refused) => (refused, None),
        },
        // The console's own host (CONSOLE_HOST) shares its origin with no application.
        GatewayRoute::Application if console::on_console_host(env, &url) => {
            (http::problem(&console::not_on_console_host()), None)
        }
        GatewayRoute::Application => match admit() {
            Ok(who) => application(&req, ctx, &who, &method, &target).await,
            Err(refused) => (refused, None),
        },
    }
}

/// The query string of a request target (after its first `?`; empty if none).
fn query_of(target: &str) -> &str {
    target.split_once('?').map_or("", |(_, query)| query)
}

/// An application request: admit its head, read its body, then run it
/// unprotected or under its key.
async fn application(
    req: &web_sys::Request,
    ctx: &Context,
    who: &Tenancy,
    method: &str,
    target: &str,
) -> Answered {
    let config = who.config();
    let refused = |rejection: Rejection, key: Option<String>| {
        let line = config.is_protected(method).then(|| RequestLog {
            outcome: rejection.outcome,
            tenant: who.tenant.clone(),
            key,
            rows_written: None,
        });
        (http::problem(&rejection.problem), line)
    };
    let head_key = header(req, &config.idempotency_key_header);
    let head_length = header(req, "content-length");
    let head = RequestHead {
        method,
        content_length: head_length.as_deref(),
        idempotency_key: head_key.as_deref(),
    };
    let protection = match admission::admit(&head, config) {
        Ok(p) => p,
        Err(rejection) if rejection.outcome == Disposition::TooLarge => {
            // A Content-Length over the limit: the body was never read.
            let line = refused(rejection.clone(), None).1;
            return (draining(ctx, &rejection, body_reader(req), config), line);
        }
        Err(rejection) => return refused(rejection, None),
    };
    let key = match &protection {
        Protection::Keyed(key) => Some(key.clone()),
        Protection::Unprotected | Protection::UnprotectedNoKey => None,
    };
    let client_headers = who.origin.as_ref().map(|_| Headers(req.headers()));
    // An unprotected request to the origin streams through: nothing holds
    // its body (unless it is signed: the signature covers the body's hash).
    if key.is_none() && who.origin.is_some() && config.origin_signing_secret.is_none() {
        let mut forward = Forward::new(
            method,
            target,
            client_headers.as_ref(),
            &who.tenant,
            Vec::new(),
        );
        forward.stream = req.body();
        let response = run_unprotected(who, &forward).await;
        return (response, unprotected_line(who, &protection));
    }
    let declared = head_length.as_deref().and_then(admission::declared_length);
    let body = match body_within(req, declared, config.max_request_body_bytes).await {
        Ok(Body::Read(b)) => b,
        Ok(Body::TooLarge(rest)) => {
            let rejection = admission::too_large(config);
            let line = refused(rejection.clone(), key).1;
            return (draining(ctx, &rejection, Some(rest), config), line);
        }
        Err(_) => return refused(body_unreadable(), key),
    };
    if let Err(rejection) = check_body_length(body.len(), config) {
        return refused(rejection, key);
    }

    let forward = Forward::new(method, target, client_headers.as_ref(), &who.tenant, body);
    let Some(key) = key else {
        let response = run_unprotected(who, &forward).await;
        return (response, unprotected_line(who, &protection));
    };
    let (response, outcome) = protect(req, ctx, who, &key, &forward).await;
    let line = RequestLog {
        outcome,
        tenant: who.tenant.clone(),
        key: Some(key),
        rows_written: who.base().ok().and_then(|b| b.rows_written()),
    };
    (response, Some(line))
}

/// A `413` answered while what is left of the refused body is read and
/// discarded (docs/contract.md §2.4): its status, headers and document go
/// out at once, but its body is held open — the runtime stops reading a
/// request once its response is done, and resets the connection of a
/// client still sending, which then never reads its `413` — until the
/// request body ends, `contract::admission::drain_bound` more bytes came,
/// or `DRAIN_AFTER_REFUSAL_MS` passed. Its `Content-Length` tells the
/// client the document is whole as soon as it arrived.
fn draining(
    ctx: &Context,
    rejection: &Rejection,
    reader: Option<web_sys::ReadableStreamDefaultReader>,
    config: &Config,
) -> Response {
    let Some(reader) = reader else {
        return http::problem(&rejection.problem);
    };
    let bound = admission::drain_bound(config);
    let within = Duration::from_millis(admission::DRAIN_AFTER_REFUSAL_MS);
    let hold = async move {
        let (read, ended) = drain(reader, bound, within).await;
        log::info(
            "idempotency.refused_body_drained",
            fields! {"bytes" => read, "ended" => ended},
        );
    };
    match http::held_open(
        &crate::protocol::AppResponse::from(&rejection.problem),
        hold,
    ) {
        Some((response, finish)) => {
            ctx.wait_until(finish);
            response
        }
        // No stream to answer with: the plain refusal.
        None => http::problem(&rejection.problem),
    }
}

/// The log line of a request that ran without the ledger: only a protected
/// method without a key (`IDEMPOTENCY_REQUIRED=false`) is logged.
fn unprotected_line(who: &Tenancy, protection: &Protection) -> Option<RequestLog> {
    protection.is_logged().then(|| RequestLog {
        outcome: Disposition::UnprotectedNoKey,
        tenant: who.tenant.clone(),
        key: None,
        rows_written: None,
    })
}

/// A protected request: fingerprint, a replay from this isolate if it has
/// one, else the key's object (embedded or proxied); then the answer to a
/// ledger that failed, whatever it did.
async fn protect(
    req: &web_sys::Request,
    ctx: &Context,
    who: &Tenancy,
    key: &str,
    forward: &Forward,
) -> (Response, Disposition) {
    let config = who.config();
    let tenant = who.tenant.as_str();
    let headers: Vec<(String, Option<String>)> = config
        .fingerprint_headers
        .iter()
        .map(|name| (name.clone(), header(req, name)))
        .collect();
    let fingerprint = Fingerprint::of(&RequestParts {
        method: &forward.method,
        target: &forward.target,
        headers: &headers,
        body: &forward.body,
    });
    let cache = config.replay_cache_bytes;
    count_replays_when_due(ctx, || who.base().ok(), tenant, cache);
    let cached = with_replays(cache, |c| {
        c.serve(tenant, key, &fingerprint.digest, now_ms())
    });
    if let Some(stored) = cached {
        // A completed record, immutable until it expires: no hop needed.
        return (http::app(answer::replay(stored)), Disposition::Replayed);
    }
    // How long this request may wait if its key is in flight (a cached
    // replay above never does).
    let prefer = header(req, "prefer");
    let wait = WaitPlan::new(prefer_wait(prefer.as_deref()), &config.wait);
    // The key's object (and, while resharding, its object in the previous layout).
    let step = match key_homes(who, key) {
        Err(e) => Err(e),
        Ok((client, previous)) => {
            let protected = Protected {
                ctx,
                client: &client,
                previous: previous.as_ref(),
                config,
                tenant,
                key,
                fingerprint,
                forward,
                wait,
            };
            match &who.origin {
                None => protected.embedded().await,
                Some(origin) => protected.proxied(origin).await,
            }
        }
    };
    match step {
        Ok(done) => done,
        Err(e) => ledger_failed(who, key, forward, &e, wait.wait_ms > 0).await,
    }
}

/// The answer when the ledger call failed: `503`, `409` for a wait that
/// lost its object, or (`FAILURE_POLICY=open`, object certainly not
/// reached) the request run without the ledger.
async fn ledger_failed(
    who: &Tenancy,
    key: &str,
    forward: &Forward,
    error: &LedgerError,
    waiting: bool,
) -> (Response, Disposition) {
    let fields = fields! {"error" => error.to_string(), "key" => log::short_hash(key)};
    match answer::ledger_failure(error, who.config().failure_policy, waiting) {
        LedgerFailure::RunUnprotected => {
            log::warn(
                "idempotency.unprotected",
                fields! {"reason" => error.to_string(), "tenant" => log::short_hash(&who.tenant), "key" => log::short_hash(key)},
            );
            (
                run_unprotected(who, forward).await,
                Disposition::Unprotected,
            )
        }
        LedgerFailure::Answer(answer) => {
            log::error("idempotency.store_unavailable", fields);
            (http::app(answer), Disposition::StoreUnavailable)
        }
        LedgerFailure::WaitInterrupted(answer) => {
            log::warn("idempotency.wait_interrupted", fields);
            (http::app(answer), Disposition::InUse)
        }
    }
}
