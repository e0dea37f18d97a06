//! Admission: which requests get in, as whom, and under which key (docs/contract.md
//! §2.1–§2.4).
//!
//! Role: everything the gateway decides from a request's head, before any
//! body is read or any ledger is asked: the route, the tenant (from the
//! bearer token only), whether the method is protected, the declared body
//! size, and the `Idempotency-Key`.
//!
//! What must stay true here:
//! - The tenant comes only from `Authorization: Bearer <token>` through the
//!   token map; nothing else the client sends can choose it.
//! - Each route says which token kinds may call it ([`GatewayRoute::access`]):
//!   an operator's token reaches the reads and a key's eviction only, never
//!   the application — so never a protected request, never a stored body.
//!   A key's eviction (which lets a completed key run again) needs an
//!   operator's token unless `EVICT_WITH_API_TOKENS=true` lets a tenant's
//!   API token evict too.
//! - A refusal here names its problem and (for the log line) its outcome;
//!   nothing has been claimed.
//! - The method is the raw method string the runtime delivered.

use super::auth::TokenKind;
use super::disposition::Disposition;
use crate::config::Config;
use crate::protocol::{parse_idempotency_key, Problem, ProblemKind};

/// What the gateway serves at a path. Decided before authentication so
/// `/health` never touches configuration or a Durable Object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatewayRoute<'a> {
    /// `GET|HEAD /health`.
    Health,
    /// `GET /v1/idempotency-keys/{percent-encoded key}` (the raw segment).
    KeyIntrospection(&'a str),
    /// `DELETE /v1/idempotency-keys/{percent-encoded key}`: evict the key
    /// (docs/contract.md §2.11).
    KeyEviction(&'a str),
    /// `GET /v1/idempotency-keys` (the query string is read by
    /// `contract::listing`).
    KeyList,
    /// `GET /v1/idempotency/stats`.
    Stats,
    /// `GET|HEAD /openapi.json`: the gateway's OpenAPI document (no auth).
    OpenApi,
    /// Everything else: the application (embedded or origin).
    Application,
}

/// Who may call a route (docs/contract.md §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No token: `/health`, `/openapi.json`.
    Anyone,
    /// A tenant's token (`API_TOKENS`) or its operator's
    /// (`OPERATOR_TOKENS`): the tenant's stats, key listing and key
    /// lookup, none of which carries a stored body or stored headers.
    TenantOrOperator,
    /// An operator's token; a tenant's too only when the configuration
    /// opts API tokens in (`EVICT_WITH_API_TOKENS=true`): a key's
    /// eviction, after which the key runs again — least privilege for the
    /// one call that can charge a card twice.
    Evict,
    /// A tenant's token only: the application — every protected request,
    /// every replay (a stored body), everything forwarded to the origin.
    TenantOnly,
}

impl Access {
    /// Whether a token of `kind` may call a route of this access under
    /// `config` (`EVICT_WITH_API_TOKENS`).
    pub fn admits(self, kind: TokenKind, config: &Config) -> bool {
        match self {
            Access::Anyone | Access::TenantOrOperator => true,
            Access::TenantOnly => kind == TokenKind::Tenant,
            Access::Evict => kind == TokenKind::Operator || config.evict_with_api_tokens,
        }
    }

    /// The refusal of a known token this access does not admit: `403
    /// forbidden` (`final`: no retry with that token changes it), saying
    /// which token the route needs.
    pub fn refusal(self) -> Problem {
        let problem = match self {
            Access::Evict => Problem::new(
                ProblemKind::Forbidden,
                "evicting a key needs an operator token (OPERATOR_TOKENS): an API token may not evict unless EVICT_WITH_API_TOKENS is true",
            ),
            _ => Problem::of(ProblemKind::Forbidden),
        };
        problem.with_header("WWW-Authenticate", r#"Bearer error="insufficient_scope""#)
    }
}

impl GatewayRoute<'_> {
    /// Which token kinds may call this route: the one rule of who reaches
    /// what. A route added here says its kind (a read that carries no
    /// stored body is `TenantOrOperator`; a key's eviction is `Evict`).
    pub fn access(&self) -> Access {
        match self {
            GatewayRoute::Health | GatewayRoute::OpenApi => Access::Anyone,
            GatewayRoute::KeyEviction(_) => Access::Evict,
            GatewayRoute::KeyIntrospection(_) | GatewayRoute::KeyList | GatewayRoute::Stats => {
                Access::TenantOrOperator
            }
            GatewayRoute::Application => Access::TenantOnly,
        }
    }
}

/// Routes a request by its raw method and its path (without the query).
pub fn route<'a>(method: &str, path: &'a str) -> GatewayRoute<'a> {
    match method {
        "GET" | "HEAD" if path == "/health" => GatewayRoute::Health,
        "GET" | "HEAD" if path == "/openapi.json" => GatewayRoute::OpenApi,
        "GET" => match path.strip_prefix("/v1/idempotency-keys/") {
            Some(encoded) => GatewayRoute::KeyIntrospection(encoded),
            None if path == "/v1/idempotency-keys" => GatewayRoute::KeyList,
            None if path == "/v1/idempotency/stats" => GatewayRoute::Stats,
            None => GatewayRoute::Application,
        },
        "DELETE" => match path.strip_prefix("/v1/idempotency-keys/") {
            Some(encoded) => GatewayRoute::KeyEviction(encoded),
            None => GatewayRoute::Application,
        },
        _ => GatewayRoute::Application,
    }
}

/// The parts of an application request's head that admission reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestHead<'a> {
    /// The raw method string.
    pub method: &'a str,
    /// The `Content-Length` field value, if sent.
    pub content_length: Option<&'a str>,
    /// The `Idempotency-Key` field value, if sent (repeated lines arrive merged).
    pub idempotency_key: Option<&'a str>,
}

/// How an admitted application request runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Protection {
    /// The method is not in `PROTECTED_METHODS`: no ledger, no log line.
    Unprotected,
    /// A protected method without a key, with `IDEMPOTENCY_REQUIRED=false`:
    /// it runs without the ledger, and its log line says so.
    UnprotectedNoKey,
    /// A protected request under this (parsed, validated) key.
    Keyed(String),
}

impl Protection {
    /// Is this request logged (docs/contract.md §6: one line per protected request)?
    pub fn is_logged(&self) -> bool {
        !matches!(self, Protection::Unprotected)
    }
}

/// A request refused before the ledger: its answer and its log outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub problem: Problem,
    pub outcome: Disposition,
}

impl Rejection {
    fn new(outcome: Disposition, problem: Problem) -> Rejection {
        Rejection { problem, outcome }
    }
}

/// The body is over `MAX_REQUEST_BODY_BYTES`: `413`, before anything is claimed.
pub fn too_large(config: &Config) -> Rejection {
    Rejection::new(
        Disposition::TooLarge,
        Problem::of(ProblemKind::RequestTooLarge).arg("limit", config.max_request_body_bytes),
    )
}

/// After a `413 request-too-large`, the gateway goes on reading and
/// discarding the body — up to this many times `MAX_REQUEST_BODY_BYTES`
/// (counted from where it stopped keeping it) or for
/// [`DRAIN_AFTER_REFUSAL_MS`], whichever ends first — while the `413` is
/// answered, the way servers linger before closing: a runtime that stops
/// reading mid-upload resets the connection, and a client still sending
/// then never reads the `413` (docs/contract.md §2.4).
pub const DRAIN_AFTER_REFUSAL_FACTOR: usize = 64;

/// The time bound of the drain after a `413` (see [`DRAIN_AFTER_REFUSAL_FACTOR`]).
pub const DRAIN_AFTER_REFUSAL_MS: u64 = 5_000;

/// How many more bytes of a refused body the gateway reads and discards
/// before it lets the connection go (see [`DRAIN_AFTER_REFUSAL_FACTOR`]).
pub fn drain_bound(config: &Config) -> usize {
    config
        .max_request_body_bytes
        .saturating_mul(DRAIN_AFTER_REFUSAL_FACTOR)
}

/// Admits an application request by its head: the declared body size
/// first, then (for protected methods) the key.
///
/// A `Content-Length` that is not a whole number says nothing about the
/// body's size; the body's real length is then checked by
/// [`check_body_length`] once it has been read.
pub fn admit(head: &RequestHead<'_>, config: &Config) -> Result<Protection, Rejection> {
    let declared = head.content_length.and_then(declared_length);
    if declared.is_some_and(|n| n > config.max_request_body_bytes as u64) {
        return Err(too_large(config));
    }
    if !config.is_protected(head.method) {
        return Ok(Protection::Unprotected);
    }
    match head.idempotency_key {
        Some(raw) => parse_idempotency_key(raw)
            .map(Protection::Keyed)
            .map_err(|e| {
                Rejection::new(
                    Disposition::KeyInvalid,
                    Problem::new(ProblemKind::KeyInvalid, e.to_string()),
                )
            }),
        None if config.idempotency_required => Err(Rejection::new(
            Disposition::KeyMissing,
            Problem::of(ProblemKind::KeyMissing).arg("method", head.method),
        )),
        None => Ok(Protection::UnprotectedNoKey),
    }
}

/// The body size a `Content-Length` value declares, if it is a whole number.
pub fn declared_length(value: &str) -> Option<u64> {
    value.trim().parse::<u64>().ok()
}

/// Checks the body's real length once read (a body may come without a
/// `Content-Length`, or with a false one).
pub fn check_body_length(len: usize, config: &Config) -> Result<(), Rejection> {
    if len > config.max_request_body_bytes {
        return Err(too_large(config));
    }
    Ok(())
}

/// The body could not be read to its end (the client went away, or its
/// framing was broken).
pub fn body_unreadable() -> Rejection {
    Rejection::new(
        Disposition::BodyUnreadable,
        Problem::of(ProblemKind::BodyUnreadable),
    )
}

/// The key named by an introspection path segment: percent-decoded UTF-8,
/// then held to the same rules as an `Idempotency-Key` value.
pub fn introspection_key(encoded: &str) -> Result<String, Problem> {
    let key = percent_encoding::percent_decode_str(encoded)
        .decode_utf8()
        .map_err(|_| {
            Problem::new(
                ProblemKind::KeyInvalid,
                "the key is not valid percent-encoded UTF-8",
            )
        })?
        .into_owned();
    crate::protocol::validate_key(&key)
        .map_err(|e| Problem::new(ProblemKind::KeyInvalid, e.to_string()))?;
    Ok(key)
}

/// The gateway's OpenAPI 3.1 document (`docs/openapi.json`, kept in the
/// repository and compiled in, so the served document is the reviewed one).
pub const OPENAPI_DOCUMENT: &str = include_str!("../../docs/openapi.json");

/// The answer to `GET /openapi.json`.
pub fn openapi() -> crate::protocol::AppResponse {
    crate::protocol::AppResponse {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: OPENAPI_DOCUMENT.as_bytes().to_vec(),
    }
}
