//! The gateway Worker: authenticate, derive the tenant, validate the key,
//! fingerprint, and forward to that tenant's `TenantLedger` (SPEC §2).
//!
//! Role: translate one HTTP request into at most one ledger call and render
//! its closed outcome. Decisions about idempotency live in the core.
//!
//! What must stay true here:
//! - The tenant comes only from the bearer token (via `API_TOKENS`), never
//!   from anything the client sends. Without `API_TOKENS` nobody is let in.
//! - Nothing is claimed before the request is known to be acceptable: auth,
//!   key, and body size are checked first (bad input changes nothing).
//! - The method is read raw (workers-rs maps unknown methods to GET).
//! - No `Err` escapes to the runtime: every failure is a problem document.
//! - One JSON log line per protected request, with hashed tenant and key.

use std::cell::RefCell;
use std::rc::Rc;

use worker::{event, Context, Env, Request, Response};

use std::time::Duration;

use crate::config::{Config, ConfigError, FailurePolicy, TokenMap};
use crate::fields;
use crate::ledger::{ClaimOutcome, CompleteOutcome, ExecuteOutcome, ReleaseOutcome};
use crate::platform::client::{LedgerClient, LedgerError};
use crate::platform::origin::{Forward, Origin, OriginError};
use crate::platform::{config_lookup, http, log, now_ms, LEDGER_BINDING};
use crate::protocol::{
    parse_idempotency_key, Fingerprint, Problem, ProblemKind, RequestParts, StoredResponse,
};
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

fn misconfigured(variable: &str, message: &str) -> Response {
    log::error(
        "idempotency.misconfigured",
        fields! {"variable" => variable, "error" => message},
    );
    http::problem(&Problem::new(
        ProblemKind::Misconfigured,
        format!("configuration variable {variable} is missing or invalid; see the logs"),
    ))
}

fn unauthorized(detail: &str) -> Problem {
    Problem::new(ProblemKind::Unauthorized, detail).with_header("WWW-Authenticate", "Bearer")
}

/// The tenant of the bearer token in `Authorization`.
fn authenticate(req: &Request, tokens: &TokenMap) -> Result<String, Problem> {
    let header = req.headers().get("authorization").ok().flatten();
    let Some(header) = header else {
        return Err(unauthorized("send Authorization: Bearer <token>"));
    };
    let token = header
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .filter(|t| !t.is_empty());
    let Some(token) = token else {
        return Err(unauthorized(
            "the Authorization header must use the Bearer scheme",
        ));
    };
    tokens
        .tenant_for(token)
        .map(str::to_string)
        .ok_or_else(|| unauthorized("unknown bearer token"))
}

/// Path plus query exactly as the runtime received them: the URL string with
/// scheme and authority cut off, never re-serialised from a parsed URL.
fn request_target(req: &Request) -> String {
    let url = req.inner().url();
    let after_scheme = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    let target = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
    target.split('#').next().unwrap_or("/").to_string()
}

/// What the request log line needs, filled in as the request goes.
#[derive(Default)]
struct Trace {
    /// Set once the request is known to be protected (and authenticated).
    outcome: Option<&'static str>,
    tenant: Option<String>,
    key: Option<String>,
}

#[event(fetch)]
pub async fn fetch(req: Request, env: Env, _ctx: Context) -> worker::Result<Response> {
    let started = now_ms();
    let mut trace = Trace::default();
    let response = handle(req, &env, &mut trace).await;
    // One line per protected request, refused ones included (SPEC §6).
    if let Some(outcome) = trace.outcome {
        log::info(
            "idempotency.request",
            fields! {
                "outcome" => outcome,
                "status" => response.status_code(),
                "duration_ms" => now_ms() - started,
                "tenant" => trace.tenant.as_deref().map(log::short_hash),
                "key" => trace.key.as_deref().map(log::short_hash),
            },
        );
    }
    Ok(response)
}

async fn handle(mut req: Request, env: &Env, trace: &mut Trace) -> Response {
    let method = req.inner().method();
    let target = request_target(&req);
    let path = target.split('?').next().unwrap_or("/").to_string();
    if path == "/health" && (method == "GET" || method == "HEAD") {
        return http::json(200, &serde_json::json!({"status": "ok"}));
    }
    let settings = settings(env);
    let settings = match settings.as_ref() {
        Ok(s) => s,
        Err(e) => return misconfigured(&e.variable, &e.message),
    };
    let Some(tokens) = &settings.tokens else {
        return misconfigured(
            "API_TOKENS",
            "the secret is not set; no token can be accepted",
        );
    };
    let tenant = match authenticate(&req, tokens) {
        Ok(t) => t,
        Err(p) => return http::problem(&p),
    };
    let config = &settings.config;
    let client = match LedgerClient::for_tenant(env, LEDGER_BINDING, &tenant) {
        Ok(c) => c,
        Err(e) => return store_unavailable(&e),
    };

    if method == "GET" {
        if let Some(encoded) = path.strip_prefix("/v1/idempotency-keys/") {
            return introspect_key(&client, encoded).await;
        }
        if path == "/v1/idempotency/stats" {
            return match client.stats().await {
                Ok(stats) => http::json(200, &stats),
                Err(e) => ledger_failure(&e),
            };
        }
    }

    let protected = config.is_protected(&method);
    if protected {
        trace.tenant = Some(tenant.clone());
    }
    // Refusals before the ledger are named in the trace for the log line.
    let mut refuse = |outcome: &'static str, problem: Problem| {
        if protected {
            trace.outcome = Some(outcome);
        }
        http::problem(&problem)
    };
    // The body is bounded before anything is read or claimed.
    let declared = req
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.trim().parse::<u64>().ok());
    let too_large = || {
        Problem::new(
            ProblemKind::RequestTooLarge,
            format!(
                "request bodies are limited to {} bytes",
                config.max_request_body_bytes
            ),
        )
    };
    if declared.is_some_and(|n| n > config.max_request_body_bytes as u64) {
        return refuse("too_large", too_large());
    }

    let key = if protected {
        match req.headers().get("idempotency-key").ok().flatten() {
            Some(raw) => match parse_idempotency_key(&raw) {
                Ok(k) => Some(k),
                Err(e) => {
                    return refuse(
                        "key_invalid",
                        Problem::new(ProblemKind::KeyInvalid, e.to_string()),
                    )
                }
            },
            None if config.idempotency_required => {
                return refuse(
                    "key_missing",
                    Problem::new(
                        ProblemKind::KeyMissing,
                        format!("{method} requests must carry an Idempotency-Key header"),
                    ),
                )
            }
            None => None,
        }
    } else {
        None
    };

    let body = match req.bytes().await {
        Ok(b) => b,
        Err(_) => {
            return refuse(
                "body_unreadable",
                Problem::new(
                    ProblemKind::BodyUnreadable,
                    "the request body could not be read to its end",
                ),
            )
        }
    };
    if body.len() > config.max_request_body_bytes {
        return refuse("too_large", too_large());
    }

    let origin = Origin::from_env(env, config);
    let forward = Forward::new(&method, &target, req.headers(), &tenant, body);

    let Some(key) = key else {
        if protected {
            trace.outcome = Some("unprotected_no_key");
        }
        return run_unprotected(&client, origin.as_ref(), config, &forward).await;
    };
    trace.key = Some(key.clone());

    let headers: Vec<(String, Option<String>)> = config
        .fingerprint_headers
        .iter()
        .map(|name| (name.clone(), req.headers().get(name).ok().flatten()))
        .collect();
    let fingerprint = Fingerprint::of(&RequestParts {
        method: &method,
        target: &target,
        headers: &headers,
        body: &forward.body,
    });
    let ctx = Protected {
        client: &client,
        config,
        key: &key,
        fingerprint,
        forward: &forward,
    };
    let step = match &origin {
        None => ctx.embedded().await,
        Some(origin) => ctx.proxied(origin).await,
    };
    let (response, outcome) = match step {
        Ok(done) => done,
        Err(e) => match (config.failure_policy, &e) {
            (FailurePolicy::Open, LedgerError::Unreachable(_)) => {
                log::warn(
                    "idempotency.unprotected",
                    fields! {"reason" => e.to_string(), "tenant" => log::short_hash(&tenant), "key" => log::short_hash(&key)},
                );
                (
                    run_unprotected(&client, origin.as_ref(), config, &forward).await,
                    "unprotected",
                )
            }
            _ => (ledger_failure(&e), "store_unavailable"),
        },
    };
    trace.outcome = Some(outcome);
    response
}

/// One protected request on its way through the ledger.
struct Protected<'a> {
    client: &'a LedgerClient,
    config: &'a Config,
    key: &'a str,
    fingerprint: Fingerprint,
    forward: &'a Forward,
}

type Step = Result<(Response, &'static str), LedgerError>;

impl Protected<'_> {
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
        let out = self.client.execute(&call).await?;
        if let Some(refusal) = out.refusal() {
            return Ok(http::refusal(refusal));
        }
        match out {
            ExecuteOutcome::Ran {
                response, takeover, ..
            } => Ok((
                http::app(response),
                if takeover { "took_over" } else { "executed" },
            )),
            _ => Err(LedgerError::Unreachable("execute gave no outcome".into())),
        }
    }

    /// Proxy mode: claim, forward to the origin, then complete (or release).
    async fn proxied(&self, origin: &Origin) -> Step {
        let claim = self
            .client
            .claim(&ClaimCall {
                key: self.key.to_string(),
                fingerprint: self.fingerprint.clone(),
                lease_seconds: None,
                retention_seconds: None,
            })
            .await?;
        let (generation, takeover) = match claim {
            ClaimOutcome::Claimed {
                generation,
                takeover,
            } => (generation, takeover),
            refusal => return Ok(http::refusal(refusal)),
        };
        let timeout = Duration::from_secs(self.config.origin_timeout_seconds);
        let response = match origin.forward(self.forward, timeout).await {
            Ok(r) => r,
            Err(OriginError::Unreachable(reason)) => {
                // No response at all: nothing ran to completion, a retry may run.
                self.release(generation).await;
                log::warn(
                    "idempotency.origin_unavailable",
                    fields! {"error" => reason, "key" => log::short_hash(self.key)},
                );
                return Ok((
                    http::problem(&Problem::new(
                        ProblemKind::OriginUnavailable,
                        "the origin could not be reached; the key was released, so a retry runs again",
                    )),
                    "origin_unavailable",
                ));
            }
            Err(OriginError::Timeout) => {
                // The outcome is unknown: keep the claim until its lease ends.
                return Ok((
                    http::problem(&Problem::new(
                        ProblemKind::OriginTimeout,
                        format!(
                            "the origin did not answer within {} seconds; the outcome is unknown, so the key stays in flight until its lease ends",
                            self.config.origin_timeout_seconds
                        ),
                    )),
                    "origin_timeout",
                ));
            }
        };
        if response.status >= 500 && self.config.release_on_5xx {
            self.release(generation).await;
            return Ok((http::app(response), "released_5xx"));
        }
        let stored = StoredResponse::capture(&response, &self.config.capture_policy());
        let call = CompleteCall {
            key: self.key.to_string(),
            generation,
            response: stored,
            retention_seconds: None,
        };
        let outcome = match self.client.complete(&call).await {
            Ok(CompleteOutcome::Stored) if takeover => "took_over",
            Ok(CompleteOutcome::Stored) => "executed",
            // The object logs idempotency.fenced_out (it sees every caller);
            // this request's own log line carries the outcome.
            Ok(CompleteOutcome::FencedOut { .. }) => "fenced_out",
            Err(e) => {
                log::error(
                    "idempotency.complete_failed",
                    fields! {"error" => e.to_string(), "key" => log::short_hash(self.key)},
                );
                "complete_failed"
            }
        };
        // The caller whose run produced this response always gets it.
        Ok((http::app(response), outcome))
    }

    async fn release(&self, generation: i64) {
        let call = ReleaseCall {
            key: self.key.to_string(),
            generation,
        };
        match self.client.release(&call).await {
            Ok(ReleaseOutcome::Released) => {}
            // Logged by the object as idempotency.fenced_out.
            Ok(ReleaseOutcome::FencedOut { .. }) => {}
            Err(e) => log::error(
                "idempotency.release_failed",
                fields! {"error" => e.to_string(), "key" => log::short_hash(self.key)},
            ),
        }
    }
}

fn store_unavailable(e: &LedgerError) -> Response {
    log::error(
        "idempotency.store_unavailable",
        fields! {"error" => e.to_string()},
    );
    http::problem(&Problem::new(
        ProblemKind::StoreUnavailable,
        "the idempotency ledger could not be reached; the request was not run",
    ))
}

/// A ledger call that failed: transport failures are "store unavailable";
/// a problem the object rendered is passed through as it is.
fn ledger_failure(e: &LedgerError) -> Response {
    match e {
        LedgerError::Refused { status, problem } if problem.is_object() => {
            let body = problem.to_string().into_bytes();
            http::app(crate::protocol::AppResponse {
                status: *status,
                headers: vec![(
                    "content-type".into(),
                    crate::protocol::PROBLEM_CONTENT_TYPE.into(),
                )],
                body,
            })
        }
        _ => store_unavailable(e),
    }
}

async fn introspect_key(client: &LedgerClient, encoded: &str) -> Response {
    let key = match percent_encoding::percent_decode_str(encoded).decode_utf8() {
        Ok(k) => k.into_owned(),
        Err(_) => {
            return http::problem(&Problem::new(
                ProblemKind::KeyInvalid,
                "the key is not valid percent-encoded UTF-8",
            ))
        }
    };
    if let Err(e) = crate::protocol::validate_key(&key) {
        return http::problem(&Problem::new(ProblemKind::KeyInvalid, e.to_string()));
    }
    match client.lookup(&LookupCall { key }).await {
        Ok(answer) => match answer.record {
            Some(record) => http::json(200, &record),
            None => http::problem(&Problem::new(
                ProblemKind::NotFound,
                "no record for this key",
            )),
        },
        Err(e) => ledger_failure(&e),
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
        Some(origin) => match origin
            .forward(fwd, Duration::from_secs(config.origin_timeout_seconds))
            .await
        {
            Ok(r) => http::app(r),
            Err(OriginError::Unreachable(_)) => http::problem(&Problem::new(
                ProblemKind::OriginUnavailable,
                "the origin could not be reached",
            )),
            Err(OriginError::Timeout) => http::problem(&Problem::new(
                ProblemKind::OriginTimeout,
                "the origin did not answer in time",
            )),
        },
        None => match client.app(&fwd.method, &fwd.target, &fwd.body).await {
            Ok(r) => r,
            Err(e) => store_unavailable(&e),
        },
    }
}
