//! The gateway's origin signature (`contract::signature`: an independent
//! HMAC, every signed part), and the Rust origin verification of
//! docs/proxy-mode.md (as rustfmt lays it out) against it.

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

#[test]
fn matches_an_independent_hmac_sha256() {
    // Computed with Python's hmac/hashlib from the documented format.
    assert_eq!(
        origin_signature(
            "0123456789abcdef0123456789abcdef",
            1_764_496_241,
            "acme",
            "POST",
            "/charges?a=1",
            "order-7f3a",
            b"amount=100"
        ),
        "t=1764496241,v1=f3d1d1443fab53bf8015c1b4a3169dd3d0c952c6be3c088a307a5c42551effd7"
    );
}

#[test]
fn every_signed_part_changes_the_signature() {
    let k = "k".repeat(32);
    let base = origin_signature(&k, 1, "acme", "POST", "/a", "key", b"x");
    for other in [
        origin_signature(
            "j".repeat(32).as_str(),
            1,
            "acme",
            "POST",
            "/a",
            "key",
            b"x",
        ),
        origin_signature(&k, 2, "acme", "POST", "/a", "key", b"x"),
        origin_signature(&k, 1, "globex", "POST", "/a", "key", b"x"),
        origin_signature(&k, 1, "acme", "PUT", "/a", "key", b"x"),
        origin_signature(&k, 1, "acme", "POST", "/b", "key", b"x"),
        origin_signature(&k, 1, "acme", "POST", "/a", "other", b"x"),
        origin_signature(&k, 1, "acme", "POST", "/a", "", b"x"),
        origin_signature(&k, 1, "acme", "POST", "/a", "key", b"y"),
    ] {
        assert_ne!(base, other);
    }
}
