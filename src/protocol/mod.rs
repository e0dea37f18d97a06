//! The wire protocol's pure pieces: what a request and a response *mean* to
//! the idempotency contract, independent of any runtime.
//!
//! May call: std, serde, sha2, hex, base64. Never workers-rs, never storage.

pub mod fingerprint;
pub mod key;
pub mod problem;
pub mod response;

pub use fingerprint::{Component, Fingerprint, RequestParts};
pub use key::{parse_idempotency_key, validate_key, KeyError, MAX_KEY_LEN};
pub use problem::{Problem, ProblemKind, PROBLEM_CONTENT_TYPE};
pub use response::{is_null_body_status, AppResponse, CapturePolicy, StoredResponse};
