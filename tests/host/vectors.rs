//! Shared test vectors (tests/fixtures): the Rust parser must give exactly
//! what the fixture says — and the JS client's tests hold its own parser to
//! the same file.

use idempotency_ledger::protocol::parse_idempotency_key;
use serde_json::Value;

/// The `vectors` array of a shared fixture file in tests/fixtures.
fn vectors(file: &str) -> Vec<Value> {
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    let fixture: Value = serde_json::from_str(&text).expect("fixture JSON");
    fixture["vectors"].as_array().expect("vectors").clone()
}

#[test]
fn the_key_parser_matches_the_shared_vectors() {
    let vectors = vectors("idempotency-keys.json");
    assert!(vectors.len() >= 20);
    for v in &vectors {
        let field = v["field"].as_str().unwrap();
        let got = parse_idempotency_key(field).map_err(|e| e.code());
        let want = match (v.get("key"), v.get("error")) {
            (Some(k), None) => Ok(k.as_str().unwrap().to_string()),
            (None, Some(e)) => Err(e.as_str().unwrap()),
            _ => panic!("a vector has key or error: {v}"),
        };
        assert_eq!(got, want, "{field:?}");
    }
}

#[test]
fn the_fingerprint_matches_the_shared_vectors() {
    use base64::{engine::general_purpose::STANDARD, Engine};
    use idempotency_ledger::protocol::{Fingerprint, RequestParts};
    let vectors = vectors("fingerprints.json");
    assert!(vectors.len() >= 10);
    for v in &vectors {
        let headers: Vec<(String, Option<String>)> = v["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h[0].as_str().unwrap().to_string(),
                    h[1].as_str().map(str::to_string),
                )
            })
            .collect();
        let body = STANDARD.decode(v["body_base64"].as_str().unwrap()).unwrap();
        let fp = Fingerprint::of(&RequestParts {
            method: v["method"].as_str().unwrap(),
            target: v["target"].as_str().unwrap(),
            headers: &headers,
            body: &body,
        });
        let expected: Fingerprint = serde_json::from_value(serde_json::json!({
            "digest": v["digest"], "components": v["components"]
        }))
        .unwrap();
        assert_eq!(fp, expected, "{}", v["about"]);
    }
}

#[test]
fn the_prefer_wait_reader_matches_the_shared_vectors() {
    use idempotency_ledger::contract::waiting::prefer_wait;
    let vectors = vectors("prefer-wait.json");
    assert!(vectors.len() >= 20);
    for v in &vectors {
        let header = v["header"].as_str();
        let want = match &v["wait"] {
            Value::Null => None,
            Value::String(s) if s == "saturated" => Some(u64::MAX),
            n => Some(n.as_u64().expect("a whole number")),
        };
        assert_eq!(prefer_wait(header), want, "{header:?}");
    }
}

#[test]
fn the_shard_layout_matches_the_shared_vectors() {
    use idempotency_ledger::config::shards::{object_name, shard_of, Layout};
    let vectors = vectors("shards.json");
    assert!(vectors.len() >= 50);
    for v in &vectors {
        let key = v["key"].as_str().unwrap();
        let n = v["shards"].as_u64().unwrap() as u32;
        let index = shard_of(key, n);
        assert_eq!(
            u64::from(index),
            v["index"].as_u64().unwrap(),
            "{key} over {n}"
        );
        assert_eq!(object_name("acme", index, n), v["object"].as_str().unwrap());
        let layout = Layout {
            shards: n,
            previous: None,
        };
        assert_eq!(layout.home("acme", key), v["object"].as_str().unwrap());
    }
}

#[test]
fn keys_spread_evenly_and_never_move_while_n_is_fixed() {
    use idempotency_ledger::config::shards::shard_of;
    let mut counts = [0u32; 8];
    for i in 0..10_000 {
        let key = format!("order-{i}");
        let shard = shard_of(&key, 8);
        counts[shard as usize] += 1;
        // Stable: the same key always lands on the same shard.
        assert_eq!(shard_of(&key, 8), shard);
    }
    for (shard, n) in counts.iter().enumerate() {
        assert!(
            (1_125..=1_375).contains(n),
            "shard {shard} holds {n} of 10,000 (±10% of 1,250)"
        );
    }
    // Random UUID-like keys too.
    let mut counts = [0u32; 8];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..10_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        counts[shard_of(&format!("{x:016x}-{:x}", x.rotate_left(17)), 8) as usize] += 1;
    }
    assert!(
        counts.iter().all(|n| (1_125..=1_375).contains(n)),
        "{counts:?}"
    );
}

#[test]
fn the_target_matches_the_shared_vectors() {
    use idempotency_ledger::protocol::target::target_of;
    let vectors = vectors("targets.json");
    assert!(vectors.len() >= 8);
    for v in &vectors {
        let url = v["url"].as_str().unwrap();
        assert_eq!(target_of(url), v["target"].as_str().unwrap(), "{url}");
    }
}
