//! RFC 9457 problem documents: every refusal the product makes.
//!
//! Role: one error value for all edges. The slugs are the wire contract that
//! clients match on (docs/contract.md §2.5): renaming one is a breaking change. Pure.
//!
//! What must stay true here:
//! - Every problem renders `type` (ending in its slug), `title`, `status` and
//!   `detail` as `application/problem+json`, in that order, then its
//!   extension members by name.
//! - Statuses, titles and fixed details come from the catalog
//!   (`docs/problems.json`) that the JS package renders too; the Rust enum
//!   only names the slugs.
//! - Details never contain raw keys, tokens or bodies supplied by the client
//!   beyond what the client needs to fix its request.

use serde_json::{Map, Value};

use super::response::AppResponse;

/// The header that tells clients (Stainless-generated SDKs among them) not
/// to retry an answer: every replay and every final refusal carries
/// `X-Should-Retry: false` (docs/contract.md §2.5).
pub const SHOULD_RETRY_HEADER: &str = "x-should-retry";

/// The media type of every problem document.
pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

/// The closed catalogue of refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    Unauthorized,
    /// A known token of a kind the route does not admit (an operator's
    /// token on anything but the reads, docs/contract.md §2.1).
    Forbidden,
    Misconfigured,
    KeyMissing,
    KeyInvalid,
    RequestTooLarge,
    BodyUnreadable,
    KeyInUse,
    KeyReused,
    OriginUnavailable,
    OriginTimeout,
    OriginInvalidResponse,
    OriginResponseIncomplete,
    MethodNotSupported,
    ResponseNotRetained,
    StoreUnavailable,
    LedgerFull,
    InvalidOrder,
    NotFound,
    MethodNotAllowed,
    InvalidRpc,
    /// A gateway read's query parameters (the key listing's `state`,
    /// `limit`, `cursor`) are not ones it accepts.
    InvalidQuery,
    /// A retired shard (resharding) does not hold the key: ask its current object.
    KeyMoved,
}

impl ProblemKind {
    /// Every kind, for the tests that hold the enum to the catalog.
    pub const ALL: [ProblemKind; 23] = [
        ProblemKind::Unauthorized,
        ProblemKind::Forbidden,
        ProblemKind::Misconfigured,
        ProblemKind::KeyMissing,
        ProblemKind::KeyInvalid,
        ProblemKind::RequestTooLarge,
        ProblemKind::BodyUnreadable,
        ProblemKind::KeyInUse,
        ProblemKind::KeyReused,
        ProblemKind::OriginUnavailable,
        ProblemKind::OriginTimeout,
        ProblemKind::OriginInvalidResponse,
        ProblemKind::OriginResponseIncomplete,
        ProblemKind::MethodNotSupported,
        ProblemKind::ResponseNotRetained,
        ProblemKind::StoreUnavailable,
        ProblemKind::LedgerFull,
        ProblemKind::InvalidOrder,
        ProblemKind::NotFound,
        ProblemKind::MethodNotAllowed,
        ProblemKind::InvalidRpc,
        ProblemKind::InvalidQuery,
        ProblemKind::KeyMoved,
    ];

    /// The kind a slug names, if any.
    pub fn from_slug(slug: &str) -> Option<ProblemKind> {
        ProblemKind::ALL.into_iter().find(|k| k.slug() == slug)
    }

    /// The slug clients match on.
    pub fn slug(self) -> &'static str {
        match self {
            ProblemKind::Unauthorized => "unauthorized",
            ProblemKind::Forbidden => "forbidden",
            ProblemKind::Misconfigured => "misconfigured",
            ProblemKind::KeyMissing => "idempotency-key-missing",
            ProblemKind::KeyInvalid => "idempotency-key-invalid",
            ProblemKind::RequestTooLarge => "request-too-large",
            ProblemKind::BodyUnreadable => "request-body-unreadable",
            ProblemKind::KeyInUse => "idempotency-key-in-use",
            ProblemKind::KeyReused => "idempotency-key-reused",
            ProblemKind::OriginUnavailable => "origin-unavailable",
            ProblemKind::OriginTimeout => "origin-timeout",
            ProblemKind::OriginInvalidResponse => "origin-invalid-response",
            ProblemKind::OriginResponseIncomplete => "origin-response-incomplete",
            ProblemKind::MethodNotSupported => "method-not-supported",
            ProblemKind::ResponseNotRetained => "idempotency-response-not-retained",
            ProblemKind::StoreUnavailable => "idempotency-store-unavailable",
            ProblemKind::LedgerFull => "idempotency-ledger-full",
            ProblemKind::InvalidOrder => "invalid-order",
            ProblemKind::NotFound => "not-found",
            ProblemKind::MethodNotAllowed => "method-not-allowed",
            ProblemKind::InvalidRpc => "invalid-rpc",
            ProblemKind::InvalidQuery => "invalid-query",
            ProblemKind::KeyMoved => "idempotency-key-moved",
        }
    }

    /// The HTTP status the problem is answered with (from the catalog).
    pub fn status(self) -> u16 {
        catalog_entry(self).status
    }

    /// A short, fixed, human-readable summary (from the catalog).
    pub fn title(self) -> &'static str {
        catalog_entry(self).title
    }

    /// The catalog's detail for this problem, `{placeholders}` unfilled; or
    /// `None` when every occurrence says its own (a parser's message).
    pub fn detail_template(self) -> Option<&'static str> {
        catalog_entry(self).detail
    }

    /// Whether no retry can change this answer (the catalog's `final`): a
    /// replay's, a reused, missing or invalid key's, an over-large body's,
    /// a method that cannot be forwarded. Answered with
    /// `X-Should-Retry: false`.
    pub fn is_final(self) -> bool {
        catalog_entry(self).is_final
    }
}

/// One entry of the problem catalog (`docs/problems.json`).
#[derive(Debug)]
pub struct CatalogEntry {
    pub slug: &'static str,
    pub status: u16,
    pub title: &'static str,
    /// The fixed (or `{placeholder}`) detail, if the catalog has one.
    pub detail: Option<&'static str>,
    /// `"final": true`: no retry can change this answer.
    pub is_final: bool,
}

// The catalog compiled in by build.rs (`PROBLEM_BASE`, `CATALOG`): the JS
// package renders from the same file; `tests/fixtures/problem-documents.json`
// pins the documents both produce.
include!(concat!(env!("OUT_DIR"), "/problem_catalog.rs"));

/// What a slug missing from the catalog renders as. Host tests prove every
/// [`ProblemKind`] has an entry, so only a broken build gets here — and it
/// still answers a well-formed 500 rather than panicking.
static MISSING: CatalogEntry = CatalogEntry {
    slug: "",
    status: 500,
    title: "",
    detail: None,
    is_final: false,
};

fn catalog_entry(kind: ProblemKind) -> &'static CatalogEntry {
    let slug = kind.slug();
    CATALOG.iter().find(|e| e.slug == slug).unwrap_or(&MISSING)
}

/// Every slug the catalog lists (for the tests that hold the enum and the
/// catalog to each other).
pub fn catalog_slugs() -> Vec<&'static str> {
    let mut slugs: Vec<&str> = CATALOG.iter().map(|e| e.slug).collect();
    slugs.sort_unstable();
    slugs
}

/// One refusal: its kind, a detail for this occurrence, extension members and
/// any response headers it needs (`Retry-After`, `WWW-Authenticate`).
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub kind: ProblemKind,
    pub detail: String,
    pub extensions: Map<String, Value>,
    pub headers: Vec<(String, String)>,
}

impl Problem {
    /// A problem whose detail is the catalog's (placeholders filled in with
    /// [`Problem::arg`]).
    pub fn of(kind: ProblemKind) -> Problem {
        Problem::new(kind, kind.detail_template().unwrap_or_default())
    }

    /// `500 misconfigured` naming the variable that cannot be used (never
    /// its value).
    pub fn misconfigured(variable: &str) -> Problem {
        Problem::of(ProblemKind::Misconfigured).arg("variable", variable)
    }

    /// Fills the catalog detail's `{name}` placeholder with `value`.
    pub fn arg(mut self, name: &str, value: impl std::fmt::Display) -> Problem {
        self.detail = self
            .detail
            .replace(&format!("{{{name}}}"), &value.to_string());
        self
    }

    /// A problem with a detail of its own (a parser's or validator's message).
    pub fn new(kind: ProblemKind, detail: impl Into<String>) -> Problem {
        Problem {
            kind,
            detail: detail.into(),
            extensions: Map::new(),
            headers: Vec::new(),
        }
    }

    /// Adds an extension member (`differs`, `lease_remaining_ms`, ...).
    pub fn with(mut self, member: &str, value: impl Into<Value>) -> Problem {
        self.extensions.insert(member.to_string(), value.into());
        self
    }

    /// Adds a response header.
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Problem {
        self.headers.push((name.to_string(), value.into()));
        self
    }

    pub fn status(&self) -> u16 {
        self.kind.status()
    }

    /// The `application/problem+json` document as a JSON value.
    pub fn to_json(&self) -> Value {
        serde_json::from_slice(&self.to_body()).unwrap_or(Value::Null)
    }

    /// The document as bytes: compact JSON with `type`, `title`, `status`,
    /// `detail`, then the extension members by name — byte for byte what
    /// the JS package renders (`tests/fixtures/problem-documents.json`).
    pub fn to_body(&self) -> Vec<u8> {
        let text = |s: &str| Value::String(s.to_string()).to_string();
        let mut out = format!(
            "{{\"type\":{},\"title\":{},\"status\":{},\"detail\":{}",
            text(&format!("{PROBLEM_BASE}{}", self.kind.slug())),
            text(self.kind.title()),
            self.kind.status(),
            text(&self.detail),
        );
        // serde_json's Map orders its members by name.
        for (name, value) in &self.extensions {
            out.push_str(&format!(",{}:{value}", text(name)));
        }
        out.push('}');
        out.into_bytes()
    }
}

/// The one way a problem becomes an HTTP answer: its status, the problem
/// media type, its own headers (names lowercased), `X-Should-Retry: false`
/// when it is final, and the document.
impl From<&Problem> for AppResponse {
    fn from(problem: &Problem) -> AppResponse {
        let mut headers = Vec::with_capacity(problem.headers.len() + 1);
        headers.push(("content-type".to_string(), PROBLEM_CONTENT_TYPE.to_string()));
        headers.extend(
            problem
                .headers
                .iter()
                .map(|(n, v)| (n.to_ascii_lowercase(), v.clone())),
        );
        if problem.kind.is_final() {
            headers.push((SHOULD_RETRY_HEADER.to_string(), "false".to_string()));
        }
        AppResponse {
            status: problem.status(),
            headers,
            body: problem.to_body(),
        }
    }
}

impl From<Problem> for AppResponse {
    fn from(problem: Problem) -> AppResponse {
        AppResponse::from(&problem)
    }
}
