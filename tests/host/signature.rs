//! The Rust origin verification of docs/proxy-mode.md (as rustfmt lays it out), against the gateway's
//! own signature.

use hmac::{Hmac, Mac};
use idempotency_ledger::contract::signature::{origin_signature, RECOMMENDED_TOLERANCE_SECONDS};
use sha2::{Digest, Sha256};

#[allow(clippy::too_many_arguments)] // the documented verifier's signature
fn verify_gateway_signature(
    header: &str,
    tenant: &str,
    method: &str,
    target: &str,
    idempotency_key: &str,
    body: &[u8],
    secret: &[u8],
    now_unix: u64,
) -> bool {
    let Some((t, v1)) = header.strip_prefix("t=").and_then(|r| r.split_once(",v1=")) else {
        return false;
    };
    let (Ok(t), Ok(sig)) = (t.parse::<u64>(), hex::decode(v1)) else {
        return false;
    };
    if now_unix.abs_diff(t) > 300 {
        return false;
    }
    let payload = format!(
        "{t}\n{tenant}\n{method}\n{target}\n{idempotency_key}\n{}",
        hex::encode(Sha256::digest(body))
    );
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(payload.as_bytes());
    mac.verify_slice(&sig).is_ok() // constant time
}

#[test]
fn the_readme_verifier_accepts_the_gateway_signature_within_its_window_only() {
    let secret = "0123456789abcdef0123456789abcdef";
    let header = origin_signature(
        secret,
        1_000_000,
        "acme",
        "POST",
        "/charges?a=1",
        "charge-1",
        b"amount=100",
    );
    let ok = |h: &str, tenant, body: &[u8], now| {
        verify_gateway_signature(
            h,
            tenant,
            "POST",
            "/charges?a=1",
            "charge-1",
            body,
            secret.as_bytes(),
            now,
        )
    };
    assert!(ok(&header, "acme", b"amount=100", 1_000_000));
    let edge = 1_000_000 + RECOMMENDED_TOLERANCE_SECONDS;
    assert!(ok(&header, "acme", b"amount=100", edge));
    assert!(
        !ok(&header, "acme", b"amount=100", edge + 1),
        "outside the replay window"
    );
    assert!(
        !ok(&header, "globex", b"amount=100", 1_000_000),
        "another tenant"
    );
    assert!(
        !ok(&header, "acme", b"amount=101", 1_000_000),
        "another body"
    );
    assert!(
        !verify_gateway_signature(
            &header,
            "acme",
            "POST",
            "/charges?a=1",
            "charge-2",
            b"amount=100",
            secret.as_bytes(),
            1_000_000
        ),
        "another key"
    );
    assert!(!ok("t=1000000,v1=00", "acme", b"amount=100", 1_000_000));
    assert!(!ok("garbage", "acme", b"amount=100", 1_000_000));
}
