//! Origin authentication: the signature the gateway puts on every request
//! it forwards when `ORIGIN_SIGNING_SECRET` is set (docs/contract.md §2.6).
//!
//! Role: let an origin reachable by others (`ORIGIN_URL`) tell the
//! gateway's requests — and so its `X-Tenant-Id` — from forged ones,
//! Stripe-webhook style. Pure: the caller supplies the time.
//!
//! What must stay true here: the signed string is, byte for byte,
//! `"{t}\n{tenant}\n{METHOD}\n{target}\n{idempotency key}\n{hex sha256(body)}"`
//! (the `Idempotency-Key` field value as forwarded; empty without one), `t`
//! is taken when the request is sent (after any claim or wait), and the header
//! `X-Idempotency-Signature: t={t},v1={hex HMAC-SHA256(secret, signed)}`;
//! the verification code in docs/proxy-mode.md and the e2e origin compute
//! exactly this.

use crate::protocol::digest::{hmac_hex, sha256_hex};

/// The header that carries the signature.
pub const SIGNATURE_HEADER: &str = "x-idempotency-signature";

/// How old a signature an origin should accept, in seconds (the replay
/// window docs/proxy-mode.md recommends; the gateway signs at send time).
pub const RECOMMENDED_TOLERANCE_SECONDS: u64 = 300;

/// The string that is signed.
pub fn signed_payload(
    unix_seconds: u64,
    tenant: &str,
    method: &str,
    target: &str,
    key: &str,
    body: &[u8],
) -> String {
    format!(
        "{unix_seconds}\n{tenant}\n{method}\n{target}\n{key}\n{}",
        sha256_hex(body)
    )
}

/// The `X-Idempotency-Signature` value for one forwarded request.
pub fn origin_signature(
    secret: &str,
    unix_seconds: u64,
    tenant: &str,
    method: &str,
    target: &str,
    key: &str,
    body: &[u8],
) -> String {
    let payload = signed_payload(unix_seconds, tenant, method, target, key, body);
    format!(
        "t={unix_seconds},v1={}",
        hmac_hex(secret.as_bytes(), payload.as_bytes())
    )
}
