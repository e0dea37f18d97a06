//! RFC 9457 problem documents: every refusal the product makes.
//!
//! Role: one error value for all edges. The slugs are the wire contract that
//! clients match on (docs/contract.md §2.5): renaming one is a breaking change. Pure.
//!
//! What must stay true here:
//! - Every problem renders `type` (ending in its slug), `title`, `status` and
//!   `detail` as `application/problem+json`.
//! - Details never contain raw keys, tokens or bodies supplied by the client
//!   beyond what the client needs to fix its request.

use serde_json::{Map, Value};

use super::response::AppResponse;

/// Where problem types live. `type` is `PROBLEM_BASE` + slug.
pub const PROBLEM_BASE: &str = "https://idempotency-ledger.dev/problems/";

/// The media type of every problem document.
pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

/// The closed catalogue of refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    Unauthorized,
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
    /// A retired shard (resharding) does not hold the key: ask its current object.
    KeyMoved,
}

impl ProblemKind {
    /// The slug clients match on.
    pub fn slug(self) -> &'static str {
        match self {
            ProblemKind::Unauthorized => "unauthorized",
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
            ProblemKind::KeyMoved => "idempotency-key-moved",
        }
    }

    /// The HTTP status the problem is answered with.
    pub fn status(self) -> u16 {
        match self {
            ProblemKind::Unauthorized => 401,
            ProblemKind::Misconfigured => 500,
            ProblemKind::KeyMissing | ProblemKind::KeyInvalid => 400,
            ProblemKind::RequestTooLarge => 413,
            ProblemKind::BodyUnreadable => 400,
            ProblemKind::KeyInUse => 409,
            ProblemKind::KeyReused => 422,
            ProblemKind::OriginUnavailable => 502,
            ProblemKind::OriginTimeout => 504,
            ProblemKind::OriginInvalidResponse | ProblemKind::OriginResponseIncomplete => 502,
            ProblemKind::MethodNotSupported => 501,
            ProblemKind::ResponseNotRetained => 500,
            ProblemKind::StoreUnavailable => 503,
            ProblemKind::LedgerFull => 429,
            ProblemKind::InvalidOrder | ProblemKind::InvalidRpc => 400,
            ProblemKind::NotFound => 404,
            ProblemKind::MethodNotAllowed => 405,
            ProblemKind::KeyMoved => 421,
        }
    }

    /// A short, fixed, human-readable summary.
    pub fn title(self) -> &'static str {
        match self {
            ProblemKind::Unauthorized => "Missing or unknown bearer token",
            ProblemKind::Misconfigured => "The service is misconfigured",
            ProblemKind::KeyMissing => "An Idempotency-Key is required",
            ProblemKind::KeyInvalid => "The Idempotency-Key is invalid",
            ProblemKind::RequestTooLarge => "The request body is too large",
            ProblemKind::BodyUnreadable => "The request body could not be read",
            ProblemKind::KeyInUse => "A request with this Idempotency-Key is still in flight",
            ProblemKind::KeyReused => "This Idempotency-Key was used for a different request",
            ProblemKind::OriginUnavailable => "The origin could not be reached",
            ProblemKind::OriginTimeout => "The origin did not answer in time",
            ProblemKind::OriginInvalidResponse => "The origin's answer cannot be passed on",
            ProblemKind::OriginResponseIncomplete => "The origin's answer broke off",
            ProblemKind::MethodNotSupported => "The method cannot be forwarded",
            ProblemKind::ResponseNotRetained => "The original response was too large to retain",
            ProblemKind::StoreUnavailable => "The idempotency ledger is unavailable",
            ProblemKind::LedgerFull => "The idempotency ledger is full",
            ProblemKind::InvalidOrder => "The order is invalid",
            ProblemKind::NotFound => "Not found",
            ProblemKind::MethodNotAllowed => "Method not allowed",
            ProblemKind::InvalidRpc => "The ledger RPC call is invalid",
            ProblemKind::KeyMoved => "This key lives in another ledger object",
        }
    }
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

    /// The `application/problem+json` document.
    pub fn to_json(&self) -> Value {
        let mut doc = Map::new();
        doc.insert(
            "type".into(),
            Value::String(format!("{PROBLEM_BASE}{}", self.kind.slug())),
        );
        doc.insert("title".into(), Value::String(self.kind.title().into()));
        doc.insert("status".into(), Value::from(self.kind.status()));
        doc.insert("detail".into(), Value::String(self.detail.clone()));
        for (k, v) in &self.extensions {
            doc.insert(k.clone(), v.clone());
        }
        Value::Object(doc)
    }

    /// The document as bytes.
    pub fn to_body(&self) -> Vec<u8> {
        self.to_json().to_string().into_bytes()
    }
}

/// The one way a problem becomes an HTTP answer: its status, the problem
/// media type, its own headers (names lowercased), and the document.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_rfc9457_members_and_extensions() {
        let p =
            Problem::new(ProblemKind::KeyReused, "the body differs").with("differs", vec!["body"]);
        let doc = p.to_json();
        assert_eq!(
            doc["type"],
            "https://idempotency-ledger.dev/problems/idempotency-key-reused"
        );
        assert_eq!(doc["status"], 422);
        assert_eq!(doc["title"], ProblemKind::KeyReused.title());
        assert_eq!(doc["detail"], "the body differs");
        assert_eq!(doc["differs"][0], "body");
    }

    #[test]
    fn a_problem_answers_with_its_status_media_type_and_headers() {
        let p = Problem::new(ProblemKind::Unauthorized, "no token")
            .with_header("WWW-Authenticate", "Bearer");
        let r = AppResponse::from(&p);
        assert_eq!(r.status, 401);
        assert_eq!(
            r.headers,
            vec![
                ("content-type".to_string(), PROBLEM_CONTENT_TYPE.to_string()),
                ("www-authenticate".to_string(), "Bearer".to_string()),
            ]
        );
        let doc: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(doc["detail"], "no token");
    }
}
