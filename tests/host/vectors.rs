//! Shared test vectors (tests/fixtures): the Rust parser must give exactly
//! what the fixture says — and the JS client's tests hold its own parser to
//! the same file.

use idempotency_ledger::protocol::parse_idempotency_key;
use serde_json::Value;

/// A shared fixture file in tests/fixtures.
fn fixture(file: &str) -> Value {
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    serde_json::from_str(&text).expect("fixture JSON")
}

/// The `vectors` array of a shared fixture file in tests/fixtures.
fn vectors(file: &str) -> Vec<Value> {
    fixture(file)["vectors"]
        .as_array()
        .expect("vectors")
        .clone()
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

/// src/protocol/limits.json: the limits' one home (build.rs compiles it into
/// `protocol::limits`; the JS package's copy is generated from it).
fn limits_home() -> Value {
    let path = format!("{}/src/protocol/limits.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("home")).expect("home JSON")
}

/// tests/fixtures/limits.json: the lease/retention rule's vectors the JS package is held to too.
fn limits_fixture() -> Value {
    let path = format!("{}/tests/fixtures/limits.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("fixture JSON")
}

#[test]
fn every_public_path_of_a_limit_carries_its_home_s_value() {
    let home = limits_home();
    let l = &home["limits"];
    let n = |name: &str| {
        l[name]["value"]
            .as_u64()
            .unwrap_or_else(|| panic!("{name} in limits.json"))
    };
    assert_eq!(
        n("MAX_WINDOW_SECONDS"),
        idempotency_ledger::rpc::MAX_WINDOW_SECONDS
    );
    assert_eq!(
        n("STORED_BODY_CEILING"),
        idempotency_ledger::ledger::STORED_BODY_CEILING as u64
    );
    assert_eq!(
        n("MAX_REQUEST_BODY_CEILING"),
        idempotency_ledger::config::MAX_REQUEST_BODY_CEILING
    );
    assert_eq!(
        n("MAX_SHARDS"),
        u64::from(idempotency_ledger::config::shards::MAX_SHARDS)
    );
    assert_eq!(
        n("MAX_KEY_LEN"),
        idempotency_ledger::protocol::MAX_KEY_LEN as u64
    );
    assert_eq!(
        n("DEFAULT_LIST_LIMIT"),
        u64::from(idempotency_ledger::ledger::list::DEFAULT_LIST_LIMIT)
    );
    assert_eq!(
        n("MAX_LIST_LIMIT"),
        u64::from(idempotency_ledger::ledger::list::MAX_LIST_LIMIT)
    );
    assert_eq!(
        n("MAX_WAIT_SECONDS"),
        idempotency_ledger::config::waiting::MAX_WAIT_SECONDS
    );
    let delays: Vec<u64> = l["SETTLE_RETRY_DELAYS_MS"]["value"]
        .as_array()
        .expect("SETTLE_RETRY_DELAYS_MS")
        .iter()
        .map(|d| d.as_u64().expect("a delay"))
        .collect();
    assert_eq!(
        delays,
        idempotency_ledger::contract::proxy::SETTLE_RETRY_DELAYS_MS.to_vec()
    );
    let lost: Vec<u64> = l["LOST_ANSWER_RETRY_DELAYS_MS"]["value"]
        .as_array()
        .expect("LOST_ANSWER_RETRY_DELAYS_MS")
        .iter()
        .map(|d| d.as_u64().expect("a delay"))
        .collect();
    assert_eq!(
        lost,
        idempotency_ledger::rpc::LOST_ANSWER_RETRY_DELAYS_MS.to_vec()
    );
    let null_body: Vec<u64> = l["NULL_BODY_STATUSES"]["value"]
        .as_array()
        .expect("NULL_BODY_STATUSES")
        .iter()
        .map(|d| d.as_u64().expect("a status"))
        .collect();
    for status in 100..=599u16 {
        assert_eq!(
            idempotency_ledger::protocol::is_null_body_status(status),
            null_body.contains(&u64::from(status)),
            "{status}"
        );
    }
}

#[test]
fn a_lease_and_a_retention_are_held_to_one_rule_in_rpc_and_configuration() {
    let fixture = limits_fixture();
    let windows = fixture["windows"].as_array().expect("windows");
    assert!(windows.len() >= 5);
    for w in windows {
        let (lease, retention) = (
            w["lease_seconds"].as_u64().unwrap(),
            w["retention_seconds"].as_u64().unwrap(),
        );
        let holds = w["holds"].as_bool().unwrap();
        let rpc = idempotency_ledger::rpc::check_claim_windows(
            lease as i64 * 1000,
            retention as i64 * 1000,
        );
        assert_eq!(rpc.is_ok(), holds, "RPC {w}");
        let (l, r) = (lease.to_string(), retention.to_string());
        let vars = [
            ("RETENTION_SECONDS", r.as_str()),
            ("LEASE_SECONDS", l.as_str()),
        ];
        let parsed = idempotency_ledger::config::Config::from_lookup(&|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        });
        // A lease beyond LEASE_SECONDS's own range is refused for that reason alone.
        if lease <= 86_400 {
            assert_eq!(parsed.is_ok(), holds, "configuration {w}");
        }
    }
}

#[test]
fn to_hex_is_lowercase_hex_of_every_byte() {
    use idempotency_ledger::protocol::digest::to_hex;
    let all: Vec<u8> = (0..=255).collect();
    let expected: String = all.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(to_hex(&all), expected);
    assert_eq!(to_hex(&[]), "");
}

#[test]
fn tenant_ids_and_their_object_names_match_the_shared_vectors() {
    use idempotency_ledger::config::shards::{object_name, shard_object_name};
    use idempotency_ledger::protocol::{is_valid_tenant_id, object_base, tenant_of_object_base};
    let vectors = vectors("tenants.json");
    assert!(vectors.len() >= 20);
    // Every object of every valid id (its single object, each shard of 2
    // and 4) belongs to that id alone.
    let mut owners: std::collections::HashMap<String, String> = Default::default();
    for v in vectors {
        let tenant = v["tenant"].as_str().unwrap();
        assert_eq!(
            is_valid_tenant_id(tenant),
            v["valid"].as_bool().unwrap(),
            "{tenant:?}"
        );
        let Some(object) = v["object"].as_str() else {
            continue;
        };
        assert_eq!(object_base(tenant), object, "{tenant:?}");
        assert_eq!(
            object_name(object, 1, 2),
            v["shard_1_of_2"].as_str().unwrap()
        );
        assert_eq!(
            shard_object_name(tenant, 1, 2),
            v["shard_1_of_2"].as_str().unwrap()
        );
        assert_eq!(shard_object_name(tenant, 0, 1), object);
        assert_eq!(tenant_of_object_base(object).as_deref(), Some(tenant));
        let names = [(0, 1), (0, 2), (1, 2), (0, 4), (1, 4), (2, 4), (3, 4)]
            .map(|(i, n)| object_name(object, i, n));
        for name in names {
            if let Some(other) = owners.insert(name.clone(), tenant.to_string()) {
                assert_eq!(other, tenant, "{name:?} is two tenants' object");
            }
        }
    }
    // v1.3 ids keep their objects.
    for t in ["acme", "globex", "a.b-c_D9"] {
        assert_eq!(object_base(t), t);
    }
}

#[test]
fn object_names_have_one_spelling_and_one_tenant_as_the_shared_vectors_say() {
    use idempotency_ledger::config::shards::parse_object_name;
    use idempotency_ledger::protocol::tenant_of_object_base;
    let objects = fixture("tenants.json")["objects"]
        .as_array()
        .unwrap()
        .clone();
    assert!(objects.len() >= 20);
    for v in objects {
        let name = v["name"].as_str().unwrap();
        let place = parse_object_name(name);
        assert_eq!(place.tenant, v["base"].as_str().unwrap(), "{name:?}");
        assert_eq!(
            u64::from(place.shards),
            v["shards"].as_u64().unwrap(),
            "{name:?}"
        );
        assert_eq!(
            tenant_of_object_base(&place.tenant).as_deref(),
            v["tenant"].as_str(),
            "{name:?}"
        );
    }
}
