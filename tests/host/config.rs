//! Configuration (docs/contract.md §5): defaults, loud failures naming the variable,
//! secrets, the token map.

use std::collections::HashMap;

use idempotency_ledger::config::*;
use idempotency_ledger::contract::auth::{TokenKind, TokenMap, Tokens};
use sha2::{Digest, Sha256};

fn parse(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(&|name| map.get(name).cloned())
}

#[test]
fn defaults_match_the_contract() {
    let c = parse(&[]).unwrap();
    assert_eq!(c.retention_seconds, 86_400);
    assert_eq!(c.lease_seconds, 60);
    assert_eq!(c.max_request_body_bytes, 1_048_576);
    assert_eq!(c.max_stored_body_bytes, 1_048_576);
    assert_eq!(c.sweep_batch, 500);
    assert_eq!(c.sweep_interval_seconds, 60);
    assert!(c.idempotency_required);
    assert_eq!(c.idempotency_key_header, "idempotency-key");
    assert_eq!(c.protected_methods, vec!["POST", "PATCH"]);
    assert_eq!(c.fingerprint_headers, vec!["content-type"]);
    assert_eq!(
        c.stored_response_headers,
        vec!["content-type", "location", "etag"]
    );
    assert!(!c.release_on_5xx);
    assert!(!c.evict_with_api_tokens);
    assert_eq!(c.max_keys_per_tenant, 1_000_000);
    assert_eq!(c.failure_policy, FailurePolicy::Closed);
    assert_eq!(c.origin_timeout_seconds, 30);
    assert_eq!(c.origin_url, None);
    assert_eq!(c.log_level, LogLevel::Info);
    assert_eq!(c.replay_cache_bytes, 8 * 1_048_576);
    assert!(c.origin_signing_secret.is_none() && c.log_hash_key.is_none());
    assert_eq!(c.wait.default_seconds, 0);
    assert_eq!(c.wait.max_seconds, 10);
    assert_eq!(c.wait.max_waiters, 1_000);
    assert_eq!(c.max_db_bytes_per_object, 9_000_000_000);
    assert_eq!(c.tenant_shards, ShardMap::default());
    assert!(c.warnings().is_empty());
}

#[test]
fn invalid_values_name_their_variable() {
    for (name, value) in [
        ("RETENTION_SECONDS", "abc"),
        ("LEASE_SECONDS", "0"),
        ("SWEEP_BATCH", "-1"),
        ("MAX_REQUEST_BODY_BYTES", "16777217"),
        ("SWEEP_INTERVAL_SECONDS", "0"),
        ("SWEEP_INTERVAL_SECONDS", "3601"),
        ("IDEMPOTENCY_REQUIRED", "yes"),
        ("IDEMPOTENCY_KEY_HEADER", ""),
        (
            "IDEMPOTENCY_KEY_HEADER",
            "X-Idempotency-Key,Idempotency-Key",
        ),
        ("IDEMPOTENCY_KEY_HEADER", "x idempotency key"),
        ("IDEMPOTENCY_KEY_HEADER", "Authorization"),
        ("IDEMPOTENCY_KEY_HEADER", "x-tenant-id"),
        ("STORED_RESPONSE_HEADERS", "content-type,Set-Cookie"),
        ("FAILURE_POLICY", "sometimes"),
        ("PROTECTED_METHODS", " , "),
        ("MAX_STORED_BODY_BYTES", "3000000"),
        ("ORIGIN_URL", "ftp://x"),
        ("LOG_LEVEL", "debug"),
        ("REPLAY_CACHE_BYTES", "-1"),
        ("REPLAY_CACHE_BYTES", "67108865"),
        ("REPLAY_CACHE_BYTES", "8MiB"),
        ("ORIGIN_SIGNING_SECRET", "short"),
        ("LOG_HASH_KEY", "short"),
        ("LOG_LEVEL", "WARN"),
        ("IN_FLIGHT_WAIT_SECONDS", "-1"),
        ("IN_FLIGHT_WAIT_SECONDS", "2.5"),
        ("IN_FLIGHT_WAIT_MAX_SECONDS", "301"),
        ("IN_FLIGHT_WAIT_MAX_SECONDS", "99999999999999999999999"),
        ("IN_FLIGHT_MAX_WAITERS", "100001"),
        ("IN_FLIGHT_MAX_WAITERS", "many"),
        ("TENANT_SHARDS", "{\"acme\": 0}"),
        ("TENANT_SHARDS", "8"),
        (
            "TENANT_SHARDS",
            "{\"acme\": {\"shards\": 2, \"previous\": 2}}",
        ),
        ("MAX_DB_BYTES_PER_OBJECT", "1000"),
        ("MAX_DB_BYTES_PER_OBJECT", "10000000001"),
        ("EVICT_WITH_API_TOKENS", "yes"),
        ("EVICT_WITH_API_TOKENS", "on"),
        ("EVICT_WITH_API_TOKENS", "1"),
        ("EVICT_WITH_API_TOKENS", "TRUE"),
    ] {
        let e = parse(&[(name, value)]).unwrap_err();
        assert_eq!(e.variable, name, "{value}");
    }
}

#[test]
fn retention_shorter_than_the_lease_is_refused_naming_both() {
    for (retention, lease) in [("2", "20"), ("59", "60"), ("1", "2")] {
        let e = parse(&[("RETENTION_SECONDS", retention), ("LEASE_SECONDS", lease)]).unwrap_err();
        assert!(e.variable.contains("RETENTION_SECONDS") && e.variable.contains("LEASE_SECONDS"));
    }
    // The default lease (60) against a short retention, too.
    assert!(parse(&[("RETENTION_SECONDS", "30")]).is_err());
    assert!(parse(&[("RETENTION_SECONDS", "3"), ("LEASE_SECONDS", "2")]).is_ok());
    // The one rule of RPC claims too: equal is enough.
    assert!(parse(&[("RETENTION_SECONDS", "60"), ("LEASE_SECONDS", "60")]).is_ok());
}

#[test]
fn the_default_wait_may_not_exceed_the_maximum_naming_both() {
    let e = parse(&[("IN_FLIGHT_WAIT_SECONDS", "11")]).unwrap_err();
    assert!(e.variable.contains("IN_FLIGHT_WAIT_SECONDS"));
    assert!(e.variable.contains("IN_FLIGHT_WAIT_MAX_SECONDS"));
    let c = parse(&[
        ("IN_FLIGHT_WAIT_SECONDS", "30"),
        ("IN_FLIGHT_WAIT_MAX_SECONDS", "30"),
        ("IN_FLIGHT_MAX_WAITERS", "0"),
    ])
    .unwrap();
    assert_eq!(
        (
            c.wait.default_seconds,
            c.wait.max_seconds,
            c.wait.max_waiters
        ),
        (30, 30, 0)
    );
}

#[test]
fn secrets_are_checked_for_length_and_never_printed() {
    let long = "s".repeat(40);
    let c = parse(&[("ORIGIN_SIGNING_SECRET", &long), ("LOG_HASH_KEY", &long)]).unwrap();
    assert_eq!(
        c.origin_signing_secret.as_ref().map(SecretString::expose),
        Some(long.as_str())
    );
    assert!(
        !format!("{c:?}").contains(&long),
        "Debug must not print secrets"
    );
    let e = parse(&[("ORIGIN_SIGNING_SECRET", "tooshortsecret")]).unwrap_err();
    assert!(!e.message.contains("tooshortsecret"));
}

#[test]
fn log_levels_parse_and_order_by_severity() {
    assert_eq!(
        parse(&[("LOG_LEVEL", "warn")]).unwrap().log_level,
        LogLevel::Warn
    );
    assert_eq!(
        parse(&[("LOG_LEVEL", " error ")]).unwrap().log_level,
        LogLevel::Error
    );
    assert!(LogLevel::Info < LogLevel::Warn && LogLevel::Warn < LogLevel::Error);
}

#[test]
fn timeout_not_below_lease_warns_naming_both() {
    let c = parse(&[("LEASE_SECONDS", "2"), ("ORIGIN_TIMEOUT_SECONDS", "5")]).unwrap();
    let w = c.warnings();
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("ORIGIN_TIMEOUT_SECONDS") && w[0].contains("LEASE_SECONDS"));
}

#[test]
fn tokens_map_by_hash_to_tenants() {
    let acme = hex::encode(Sha256::digest(b"dev-token-acme"));
    let map = TokenMap::parse(&format!(r#"{{"{acme}":"acme"}}"#)).unwrap();
    assert_eq!(map.tenant_for("dev-token-acme"), Some("acme"));
    assert_eq!(map.tenant_for("dev-token-globex"), None);
    assert!(TokenMap::parse("[]").is_err());
    assert!(TokenMap::parse(r#"{"abc":"acme"}"#).is_err());
    // Scope-style ids are tenants; control characters and over-long ids are not.
    let scoped = TokenMap::parse(&format!(r#"{{"{acme}":"api-key:123"}}"#)).unwrap();
    assert_eq!(scoped.tenant_for("dev-token-acme"), Some("api-key:123"));
    assert!(TokenMap::parse(&format!(r#"{{"{acme}":"bad\ttenant"}}"#)).is_err());
    assert!(TokenMap::parse(&format!(r#"{{"{acme}":""}}"#)).is_err());
    let long = "t".repeat(257);
    assert!(TokenMap::parse(&format!(r#"{{"{acme}":"{long}"}}"#)).is_err());
}

#[test]
fn repeated_or_case_colliding_token_hashes_are_refused() {
    let acme = hex::encode(Sha256::digest(b"dev-token-acme"));
    let upper = acme.to_ascii_uppercase();
    for raw in [
        format!(r#"{{"{acme}":"acme","{acme}":"globex"}}"#),
        format!(r#"{{"{acme}":"acme","{upper}":"globex"}}"#),
        format!(r#"{{"{acme}":"acme","{upper}":"acme"}}"#),
    ] {
        let e = TokenMap::parse(&raw).unwrap_err();
        assert_eq!(e.variable, "API_TOKENS");
    }
    let map = TokenMap::parse(&format!(r#"{{"{upper}":"acme"}}"#)).unwrap();
    assert_eq!(map.tenant_for("dev-token-acme"), Some("acme"));
}

#[test]
fn the_key_header_is_one_header_name_lowercased() {
    let c = parse(&[("IDEMPOTENCY_KEY_HEADER", " X-Idempotency-Key ")]).unwrap();
    assert_eq!(c.idempotency_key_header, "x-idempotency-key");
}

#[test]
fn the_published_defaults_are_the_defaults_applied() {
    // src/config/defaults.json is what wrangler.toml publishes and what
    // the JS middleware applies; the Rust gateway applies the same when a
    // variable is absent.
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("../../src/config/defaults.json")).unwrap();
    let published: HashMap<String, String> = fixture["variables"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    assert!(published.len() >= 19);
    let from_published = Config::from_lookup(&|name| published.get(name).cloned()).unwrap();
    let absent = Config::from_lookup(&|_| None).unwrap();
    assert_eq!(from_published, absent);
}

/// `npm run check:config` lists every invalid variable, not only the first.
#[test]
fn every_invalid_variable_is_reported_not_only_the_first() {
    let vars: HashMap<&str, &str> = [
        ("PROTECTED_METHODS", "PO ST"),
        ("LEASE_SECONDS", "120"),
        ("RETENTION_SECONDS", "60"),
        ("FAILURE_POLICY", "maybe"),
        ("TENANT_SHARDS", r#"{"acme": 0}"#),
        ("LOG_HASH_KEY", "short"),
    ]
    .into_iter()
    .collect();
    let get = |name: &str| vars.get(name).map(|v| v.to_string());
    let named: Vec<String> = Config::errors(&get)
        .into_iter()
        .map(|e| e.variable)
        .collect();
    assert_eq!(
        named,
        [
            "PROTECTED_METHODS",
            "FAILURE_POLICY",
            "RETENTION_SECONDS and LEASE_SECONDS",
            "LOG_HASH_KEY",
            "TENANT_SHARDS"
        ]
    );
    // The first is the one the Worker refuses with.
    assert_eq!(
        Config::from_lookup(&get).unwrap_err().variable,
        "PROTECTED_METHODS"
    );
    assert!(Config::errors(&|_| None).is_empty());
}

#[test]
fn the_first_sharded_tenant_is_found_for_the_proxy_mode_rule() {
    let map = ShardMap::parse(r#"{"zeta": 1, "beta": {"shards": 1, "previous": 2}, "alpha": 4}"#)
        .unwrap();
    assert_eq!(map.first_sharded(), Some("alpha"));
    assert_eq!(
        ShardMap::parse(r#"{"zeta": 1}"#).unwrap().first_sharded(),
        None
    );
}

#[test]
fn operator_tokens_have_the_api_tokens_shape_and_are_refused_by_name() {
    let acme = hex::encode(Sha256::digest(b"dev-token-acme"));
    let operator = hex::encode(Sha256::digest(b"operator-token-acme"));
    let api = format!(r#"{{"{acme}":"acme"}}"#);
    let tokens = Tokens::parse(&api, Some(&format!(r#"{{"{operator}":"acme"}}"#))).unwrap();
    assert_eq!(
        tokens.caller_for("operator-token-acme").map(|c| c.kind),
        Some(TokenKind::Operator)
    );
    assert!(Tokens::parse(&api, None).is_ok());
    let upper = operator.to_ascii_uppercase();
    for bad in [
        "[]".to_string(),
        "".to_string(),
        r#"{"abc":"acme"}"#.to_string(),
        format!(r#"{{"{operator}":"bad\ttenant"}}"#),
        format!(r#"{{"{operator}":"acme","{upper}":"globex"}}"#),
    ] {
        let e = Tokens::parse(&api, Some(&bad)).unwrap_err();
        assert_eq!(e.variable, "OPERATOR_TOKENS", "{bad:?}");
    }
    // API_TOKENS is judged first, under its own name.
    let e = Tokens::parse("{}x", Some(&format!(r#"{{"{operator}":"acme"}}"#))).unwrap_err();
    assert_eq!(e.variable, "API_TOKENS");
}

#[test]
fn a_token_in_both_api_tokens_and_operator_tokens_is_refused() {
    let acme = hex::encode(Sha256::digest(b"dev-token-acme"));
    let api = format!(r#"{{"{acme}":"acme"}}"#);
    // The same hash, in any letter case, for the same or another tenant.
    for operator in [
        format!(r#"{{"{acme}":"acme"}}"#),
        format!(r#"{{"{}":"globex"}}"#, acme.to_ascii_uppercase()),
    ] {
        let e = Tokens::parse(&api, Some(&operator)).unwrap_err();
        assert_eq!(e.variable, "OPERATOR_TOKENS");
        assert!(e.message.contains("also in API_TOKENS"), "{}", e.message);
        assert!(!e.message.contains(&acme), "the error never repeats a hash");
    }
}

#[test]
fn the_console_is_off_in_proxy_mode_unless_turned_on() {
    let by_mode = parse(&[]).unwrap().console;
    assert!(
        by_mode.serves("gw.example.com", false),
        "outside proxy mode"
    );
    assert!(!by_mode.serves("gw.example.com", true), "in proxy mode");
    let on = parse(&[("CONSOLE", "on")]).unwrap().console;
    assert!(on.serves("gw.example.com", true) && on.serves("gw.example.com", false));
    let off = parse(&[("CONSOLE", " off ")]).unwrap().console;
    assert!(!off.serves("gw.example.com", true) && !off.serves("gw.example.com", false));
    for mode in [&by_mode, &on, &off] {
        assert!(!mode.is_console_host("gw.example.com"));
    }
}

#[test]
fn a_console_host_serves_the_console_there_only_and_no_application() {
    for vars in [
        &[("CONSOLE_HOST", "Console.Example.com")][..],
        &[("CONSOLE_HOST", "console.example.com"), ("CONSOLE", "on")][..],
    ] {
        let c = parse(vars).unwrap().console;
        assert_eq!(c.host.as_deref(), Some("console.example.com"));
        for proxied in [true, false] {
            assert!(c.serves("console.example.com", proxied));
            assert!(c.serves("CONSOLE.example.com", proxied));
            assert!(!c.serves("api.example.com", proxied));
            assert!(!c.serves("console.example.com:8443", proxied));
        }
        assert!(c.is_console_host("console.example.com"));
        assert!(!c.is_console_host("api.example.com"));
    }
    let local = parse(&[("CONSOLE_HOST", "127.0.0.1:8787")])
        .unwrap()
        .console;
    assert!(local.serves("127.0.0.1:8787", true) && !local.serves("127.0.0.1", true));
}

#[test]
fn bad_console_values_are_refused_by_name() {
    for (vars, variable) in [
        (&[("CONSOLE", "yes")][..], "CONSOLE"),
        (&[("CONSOLE", "ON")][..], "CONSOLE"),
        (&[("CONSOLE", "")][..], "CONSOLE"),
        (&[("CONSOLE_HOST", "")][..], "CONSOLE_HOST"),
        (
            &[("CONSOLE_HOST", "https://console.example.com")][..],
            "CONSOLE_HOST",
        ),
        (
            &[("CONSOLE_HOST", "console.example.com/console")][..],
            "CONSOLE_HOST",
        ),
        (
            &[("CONSOLE_HOST", "console.example.com.")][..],
            "CONSOLE_HOST",
        ),
        (
            &[("CONSOLE_HOST", "-console.example.com")][..],
            "CONSOLE_HOST",
        ),
        (
            &[("CONSOLE_HOST", "console example.com")][..],
            "CONSOLE_HOST",
        ),
        (
            &[("CONSOLE_HOST", "console.example.com:0")][..],
            "CONSOLE_HOST",
        ),
        (
            &[("CONSOLE_HOST", "console.example.com:65536")][..],
            "CONSOLE_HOST",
        ),
        (
            &[("CONSOLE_HOST", "console.example.com:")][..],
            "CONSOLE_HOST",
        ),
        (&[("CONSOLE_HOST", "[::1]:8787")][..], "CONSOLE_HOST"),
        (
            &[("CONSOLE_HOST", "console.example.com"), ("CONSOLE", "off")][..],
            "CONSOLE and CONSOLE_HOST",
        ),
    ] {
        assert_eq!(parse(vars).unwrap_err().variable, variable, "{vars:?}");
    }
    let vars: HashMap<&str, &str> = [("CONSOLE", "maybe"), ("CONSOLE_HOST", "a/b")]
        .into_iter()
        .collect();
    let get = |name: &str| vars.get(name).map(|v| v.to_string());
    let named: Vec<String> = Config::errors(&get)
        .into_iter()
        .map(|e| e.variable)
        .collect();
    assert_eq!(named, ["CONSOLE", "CONSOLE_HOST"]);
}

#[test]
fn a_request_host_is_read_from_its_url() {
    use idempotency_ledger::config::console::host_of;
    assert_eq!(
        host_of("https://console.example.com/console"),
        "console.example.com"
    );
    assert_eq!(
        host_of("http://127.0.0.1:8787/console/app.js?x=1"),
        "127.0.0.1:8787"
    );
    assert_eq!(host_of("http://gateway.test"), "gateway.test");
    assert_eq!(host_of("http://u:p@gateway.test/console"), "gateway.test");
    assert_eq!(host_of("/console"), "");
}

/// `TENANT_JURISDICTIONS`: each tenant's objects, by the one naming rule,
/// in the jurisdiction it names; shards find it from their own name.
#[test]
fn tenant_jurisdictions_map_each_tenants_objects_to_their_jurisdiction() {
    let c = parse(&[(
        "TENANT_JURISDICTIONS",
        r#"{"acme-eu": "eu", "org/team": "fedramp-high", "gov": "fedramp", "us1": "us"}"#,
    )])
    .unwrap();
    let j = &c.tenant_jurisdictions;
    assert_eq!(j.of("acme-eu"), Some(Jurisdiction::Eu));
    assert_eq!(j.of_object("acme-eu/shard-3-of-8"), Some(Jurisdiction::Eu));
    // Keyed by the tenant's object name: an escaped id finds its own.
    let base = idempotency_ledger::protocol::object_base("org/team");
    assert_eq!(j.of(&base), Some(Jurisdiction::FedrampHigh));
    assert_eq!(
        j.of_object(&format!("{base}/shard-0-of-2")),
        Some(Jurisdiction::FedrampHigh)
    );
    assert_eq!(j.of("gov"), Some(Jurisdiction::Fedramp));
    assert_eq!(j.of("us1").map(Jurisdiction::as_str), Some("us"));
    // Another tenant, or a name that only starts like one, is unrestricted.
    assert_eq!(j.of("acme"), None);
    assert_eq!(j.of_object("acme-eu-2"), None);
    // Unset or empty: nobody is restricted.
    assert!(parse(&[]).unwrap().tenant_jurisdictions.is_empty());
    assert!(parse(&[("TENANT_JURISDICTIONS", " ")])
        .unwrap()
        .tenant_jurisdictions
        .is_empty());
}

/// A jurisdiction the platform does not know, or a bad tenant, is refused
/// naming the variable, the tenant and the value: never an object created
/// unrestricted.
#[test]
fn an_unknown_jurisdiction_or_tenant_is_refused_naming_both() {
    for (raw, says) in [
        (
            r#"{"acme-eu": "mars"}"#,
            r#""acme-eu": "mars" is not a jurisdiction"#,
        ),
        (r#"{"acme-eu": "EU"}"#, r#""EU" is not a jurisdiction"#),
        (r#"{"acme-eu": ""}"#, r#""" is not a jurisdiction"#),
        (r#"{"acme-eu": 1}"#, "1 is not a jurisdiction"),
        (r#"{"acme-eu": null}"#, "null is not a jurisdiction"),
        (r#"{"": "eu"}"#, "not a valid tenant id"),
        (r#"{"a\u0001b": "eu"}"#, "not a valid tenant id"),
        (r#"["eu"]"#, "JSON object"),
        ("eu", "not valid JSON"),
    ] {
        let e = parse(&[("TENANT_JURISDICTIONS", raw)]).unwrap_err();
        assert_eq!(e.variable, "TENANT_JURISDICTIONS", "{raw}");
        assert!(e.message.contains(says), "{raw}: {}", e.message);
    }
    let e = parse(&[("TENANT_JURISDICTIONS", r#"{"x": "moon"}"#)]).unwrap_err();
    assert!(
        e.message.contains("eu, fedramp, fedramp-high, us"),
        "{}",
        e.message
    );
}

/// A tenant's jurisdiction may be set while it has no unrestricted key;
/// once recorded, removing or changing it is refused, never served from an
/// empty ledger elsewhere.
#[test]
fn a_changed_jurisdiction_is_refused_where_both_configurations_meet() {
    use idempotency_ledger::config::jurisdictions::{decide, JurisdictionDecision as D};
    let eu = Some(Jurisdiction::Eu);
    let us = Some(Jurisdiction::Us);
    // Unrestricted, as before jurisdictions: nothing changes.
    assert_eq!(decide(None, None, true), D::Accept);
    assert_eq!(decide(None, None, false), D::Accept);
    // A new tenant's first use records it; then it is accepted.
    assert_eq!(decide(None, eu, false), D::Record(Jurisdiction::Eu));
    assert_eq!(decide(Some("eu"), eu, true), D::Accept);
    assert_eq!(decide(Some("eu"), eu, false), D::Accept);
    // Adding a jurisdiction to a tenant with unrestricted keys, removing
    // it, or changing it: refused, saying where the keys are and how to move.
    for (recorded, asked, holds, says) in [
        (None, eu, true, "keys outside any jurisdiction"),
        (Some("eu"), None, false, "no longer names it"),
        (Some("eu"), None, true, "no longer names it"),
        (Some("eu"), us, false, "names \"us\""),
    ] {
        match decide(recorded, asked, holds) {
            D::Refuse(why) => {
                assert!(why.contains(says), "{why}");
                assert!(why.contains("docs/migrating.md"), "{why}");
            }
            other => panic!("{recorded:?} -> {asked:?}: {other:?}"),
        }
    }
}

/// An invalid variable no settlement reads leaves `complete` and `release`
/// of claims already granted served (under every other value as
/// configured); one a settlement reads refuses them too, naming it.
#[test]
fn a_settlement_is_refused_only_by_a_variable_it_reads() {
    use idempotency_ledger::config::settlement::NOT_READ_BY_SETTLEMENTS;
    let with = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    };
    // Gateway-only variables invalid: the settlement runs with the rest as configured.
    let get = with(&[
        ("FAILURE_POLICY", "maybe"),
        ("IN_FLIGHT_MAX_WAITERS", "many"),
        ("CONSOLE", "yes"),
        ("RETENTION_SECONDS", "600"),
        ("TENANT_SHARDS", r#"{"acme": {"shards": 2, "previous": 1}}"#),
    ]);
    assert!(Config::from_lookup(&get).is_err(), "new claims are refused");
    let settling = Config::for_settlement(&get).unwrap();
    assert_eq!(
        settling.retention_seconds, 600,
        "what it reads is the configured value"
    );
    assert_eq!(
        settling.tenant_shards,
        ShardMap::parse(r#"{"acme": {"shards": 2, "previous": 1}}"#).unwrap()
    );
    // A variable a settlement reads, invalid (alone or beside gateway-only ones): refused, naming it.
    for (pairs, named) in [
        (&[("RETENTION_SECONDS", "soon")][..], "RETENTION_SECONDS"),
        (&[("LEASE_SECONDS", "0")][..], "LEASE_SECONDS"),
        (&[("TENANT_SHARDS", "8")][..], "TENANT_SHARDS"),
        (
            &[("TENANT_JURISDICTIONS", "{\"a\": \"mars\"}")][..],
            "TENANT_JURISDICTIONS",
        ),
        (
            &[("MAX_DB_BYTES_PER_OBJECT", "1")][..],
            "MAX_DB_BYTES_PER_OBJECT",
        ),
        (&[("LOG_HASH_KEY", "short")][..], "LOG_HASH_KEY"),
        (
            &[("ORIGIN_TIMEOUT_SECONDS", "0")][..],
            "ORIGIN_TIMEOUT_SECONDS",
        ),
        (
            &[("SWEEP_INTERVAL_SECONDS", "0")][..],
            "SWEEP_INTERVAL_SECONDS",
        ),
        (
            &[("FAILURE_POLICY", "maybe"), ("RETENTION_SECONDS", "30")][..],
            "RETENTION_SECONDS and LEASE_SECONDS",
        ),
    ] {
        let pairs: &'static [(&'static str, &'static str)] = pairs;
        let e = Config::for_settlement(&with(pairs)).unwrap_err();
        assert_eq!(e.variable, named, "{pairs:?}");
    }
    // Valid: the same configuration as a claim's.
    let none = |_: &str| None;
    assert_eq!(Config::for_settlement(&none), Config::from_lookup(&none));
    // Every name on the list is a variable the configuration reads (a typo would let nothing through).
    for name in NOT_READ_BY_SETTLEMENTS {
        let bad = move |n: &str| (n == *name).then(|| "\u{1}not valid\u{1}".to_string());
        let refused = Config::errors(&bad);
        assert!(
            refused
                .iter()
                .any(|e| e.variable.split(" and ").any(|v| v == *name)),
            "{name} is read and refused when invalid"
        );
        assert!(Config::for_settlement(&bad).is_ok(), "{name}");
    }
}
