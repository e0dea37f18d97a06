//! The wire protocol's pure pieces: what a request and a response *mean* to
//! the idempotency contract, independent of any runtime.
//!
//! May call: std, serde, sha2, hmac, hex, base64. Never workers-rs, never storage.

pub mod digest;
pub mod fingerprint;
pub mod key;
pub mod limits;
pub mod problem;
pub mod response;
pub mod target;
pub mod tenant;

pub use fingerprint::{Component, Fingerprint, RequestParts};
pub use key::{parse_idempotency_key, validate_key, KeyError, MAX_KEY_LEN};
pub use problem::{Problem, ProblemKind, PROBLEM_CONTENT_TYPE, SHOULD_RETRY_HEADER};
pub use response::{
    is_hop_by_hop, is_null_body_status, is_passable_status, AppResponse, CapturePolicy,
    StoredResponse,
};
pub use target::{path_of, target_of};
pub use tenant::{is_valid_tenant_id, object_base, tenant_of_object_base, TENANT_RULE};
