//! Property tests on the host: the key parser against the `sfv` crate
//! (RFC 8941 items), and the parsers that take untrusted input — key,
//! fingerprint, RPC calls, token map, configuration — never panic on
//! arbitrary bytes, and valid inputs round-trip.

use idempotency_ledger::config::Config;
use idempotency_ledger::contract::auth::TokenMap;
use idempotency_ledger::protocol::{parse_idempotency_key, Fingerprint, RequestParts};
use idempotency_ledger::rpc::{
    Call, ClaimCall, CompleteCall, ExecuteCall, ListCall, LookupCall, ReleaseCall, ReplayedCall,
};
use rand::{rngs::SmallRng, Rng, SeedableRng};

const PRINTABLE: std::ops::RangeInclusive<u8> = 0x20..=0x7e;

fn printable_string(rng: &mut SmallRng, len: usize) -> String {
    (0..len).map(|_| rng.gen_range(PRINTABLE) as char).collect()
}

fn sf_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// A random valid RFC 8941 bare item.
fn bare_item(rng: &mut SmallRng) -> String {
    match rng.gen_range(0..6) {
        0 => rng.gen_range(-999_999i64..999_999).to_string(),
        1 => format!("{}.{}", rng.gen_range(-999i64..999), rng.gen_range(0..999)),
        2 => {
            let first = (b'a' + rng.gen_range(0..26)) as char;
            let rest: String = (0..rng.gen_range(0..8))
                .map(|_| *b"abcXYZ019:/*!#".get(rng.gen_range(0..14)).unwrap() as char)
                .collect();
            format!("{first}{rest}")
        }
        3 => {
            let len = rng.gen_range(0..12);
            sf_string(&printable_string(rng, len))
        }
        4 => if rng.gen_bool(0.5) { "?1" } else { "?0" }.to_string(),
        _ => ":aGVsbG8=:".to_string(),
    }
}

/// A random valid sf-string item with random parameters.
fn sf_item(rng: &mut SmallRng, key: &str) -> String {
    let mut item = sf_string(key);
    for i in 0..rng.gen_range(0..4) {
        item.push(';');
        item.push_str(&format!(
            "p{i}{}",
            ["", "-x", ".y", "*"][rng.gen_range(0..4)]
        ));
        if rng.gen_bool(0.7) {
            item.push('=');
            item.push_str(&bare_item(rng));
        }
    }
    item
}

#[test]
fn every_valid_sf_string_item_parses_to_what_sfv_reads() {
    let mut rng = SmallRng::seed_from_u64(0x5f5);
    for _ in 0..20_000 {
        let len = rng.gen_range(1..=60);
        let key = printable_string(&mut rng, len);
        let field = sf_item(&mut rng, &key);
        let reference = match sfv::Parser::parse_item(field.as_bytes()) {
            Ok(item) => item,
            Err(e) => panic!("the generator wrote an invalid item {field:?}: {e}"),
        };
        let sfv::BareItem::String(expected) = reference.bare_item else {
            panic!("not a string item: {field:?}")
        };
        assert_eq!(expected, key);
        assert_eq!(
            parse_idempotency_key(&field).as_deref(),
            Ok(expected.as_str()),
            "{field:?}"
        );
    }
}

#[test]
fn what_the_parser_accepts_as_quoted_sfv_reads_the_same_or_refuses() {
    // Leniency is allowed (OWS before ';'), disagreement is not: whenever
    // both accept a quoted value they must agree on the key.
    let mut rng = SmallRng::seed_from_u64(0xabc);
    let alphabet = b"\"\\;=, \tab?1:.*-@%xyz0";
    let mut agreed = 0;
    for _ in 0..50_000 {
        let len = rng.gen_range(0..24);
        let mut field: String = (0..len)
            .map(|_| alphabet[rng.gen_range(0..alphabet.len())] as char)
            .collect();
        field.insert(0, '"');
        let ours = parse_idempotency_key(&field);
        if let (Ok(key), Ok(item)) = (&ours, sfv::Parser::parse_item(field.as_bytes())) {
            if let sfv::BareItem::String(s) = item.bare_item {
                assert_eq!(key, &s, "{field:?}");
                agreed += 1;
            }
        }
    }
    assert!(
        agreed > 100,
        "the generator must reach valid items ({agreed})"
    );
}

/// Random bytes, often near something valid.
fn noise(rng: &mut SmallRng, seed: &[u8]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for _ in 0..rng.gen_range(0..8) {
        match rng.gen_range(0..3) {
            0 if !bytes.is_empty() => {
                let i = rng.gen_range(0..bytes.len());
                bytes[i] = rng.gen();
            }
            1 => {
                let i = rng.gen_range(0..=bytes.len());
                bytes.insert(i, rng.gen());
            }
            _ if !bytes.is_empty() => {
                let i = rng.gen_range(0..bytes.len());
                bytes.remove(i);
            }
            _ => {}
        }
    }
    bytes
}

#[test]
fn arbitrary_key_fields_never_panic() {
    let mut rng = SmallRng::seed_from_u64(7);
    for _ in 0..50_000 {
        let bytes = noise(&mut rng, b"\"order-\\\"7\";a=1, x");
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(key) = parse_idempotency_key(&text) {
            assert!(!key.is_empty() && key.len() <= 255);
            assert!(key.bytes().all(|b| PRINTABLE.contains(&b)));
        }
    }
}

#[test]
fn arbitrary_rpc_calls_never_panic_and_valid_ones_round_trip() {
    let fp = Fingerprint::of(&RequestParts {
        method: "POST",
        target: "/v1/orders",
        headers: &[("content-type".into(), Some("application/json".into()))],
        body: b"{}",
    });
    let claim = ClaimCall {
        key: "k-1".into(),
        fingerprint: fp.clone(),
        lease_seconds: Some(5),
        retention_seconds: Some(60),
        wait_ms: Some(2_000),
        attempt: Some("0b6c1f4e-6a2b-4d1e-9b7a-3f2d8c5e1a90".into()),
    };
    let json = serde_json::to_vec(&claim).unwrap();
    let back: ClaimCall = serde_json::from_slice(&json).unwrap();
    assert_eq!(back, claim);
    assert_eq!(back.validate(), Ok(()));
    let seeds: Vec<Vec<u8>> = vec![
        json,
        br#"{"key":"k","generation":1,"response":{"status":200,"headers":[],"body":"aGk="}}"#.to_vec(),
        br#"{"key":"k","generation":2}"#.to_vec(),
        br#"{"replays":[{"key":"k","generation":1,"count":3}]}"#.to_vec(),
        br#"{"state":"in_flight","limit":20,"after":{"sweep_at":1800000000000,"key":"k"}}"#.to_vec(),
        br#"{"key":"k","fingerprint":{"digest":"00","components":[]},"request":{"method":"POST","target":"/","body":""}}"#.to_vec(),
    ];
    let mut rng = SmallRng::seed_from_u64(11);
    for _ in 0..20_000 {
        let seed = &seeds[rng.gen_range(0..seeds.len())];
        let bytes = noise(&mut rng, seed);
        if let Ok(c) = serde_json::from_slice::<ClaimCall>(&bytes) {
            let _ = c.validate();
        }
        if let Ok(c) = serde_json::from_slice::<CompleteCall>(&bytes) {
            let _ = c.validate();
        }
        if let Ok(c) = serde_json::from_slice::<ReleaseCall>(&bytes) {
            let _ = c.validate();
        }
        if let Ok(c) = serde_json::from_slice::<LookupCall>(&bytes) {
            let _ = c.validate();
        }
        if let Ok(c) = serde_json::from_slice::<ListCall>(&bytes) {
            let _ = c.validate();
        }
        if let Ok(c) = serde_json::from_slice::<ReplayedCall>(&bytes) {
            let _ = c.validate();
        }
        if let Ok(c) = serde_json::from_slice::<ExecuteCall>(&bytes) {
            let _ = c.validate();
        }
    }
}

#[test]
fn arbitrary_fingerprints_are_well_formed_only_when_their_digest_is_theirs() {
    let mut rng = SmallRng::seed_from_u64(13);
    for _ in 0..5_000 {
        let n = rng.gen_range(0..4);
        let headers: Vec<(String, Option<String>)> = (0..n)
            .map(|i| {
                let value = rng
                    .gen_bool(0.7)
                    .then(|| String::from_utf8_lossy(&noise(&mut rng, b"v")).into_owned());
                (format!("h{i}"), value)
            })
            .collect();
        let body = noise(&mut rng, b"{\"a\":1}");
        let target = String::from_utf8_lossy(&noise(&mut rng, b"/x?y=1")).into_owned();
        let fp = Fingerprint::of(&RequestParts {
            method: "post",
            target: &target,
            headers: &headers,
            body: &body,
        });
        assert!(fp.is_well_formed());
        let json = serde_json::to_string(&fp).unwrap();
        assert_eq!(serde_json::from_str::<Fingerprint>(&json).unwrap(), fp);
        let mut tampered = fp.clone();
        tampered.components.reverse();
        if fp.components.len() > 1 {
            assert!(
                !tampered.is_well_formed(),
                "a digest is bound to its components' order"
            );
        }
    }
}

#[test]
fn arbitrary_token_maps_and_variables_never_panic() {
    let mut rng = SmallRng::seed_from_u64(17);
    let acme = "b66554facf970d1fc3a7940b46644cfe4594eaec92d950365467aeef325e555b";
    let seed = format!(r#"{{"{acme}":"acme"}}"#);
    for _ in 0..20_000 {
        let bytes = noise(&mut rng, seed.as_bytes());
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(map) = TokenMap::parse(&text) {
            let _ = map.tenant_for("dev-token-acme");
        }
        let value = text.clone().into_owned();
        let var = [
            "LEASE_SECONDS",
            "PROTECTED_METHODS",
            "ORIGIN_URL",
            "LOG_LEVEL",
        ][rng.gen_range(0..4)];
        let _ = Config::from_lookup(&|name| (name == var).then(|| value.clone()));
    }
}
