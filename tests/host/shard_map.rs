//! `TENANT_SHARDS` and shard names (`config::shards`): a tenant's one
//! object is the tenant itself, names round-trip, the map is validated
//! (the shared fixture's invalid layouts included), and every object knows
//! its role while a tenant is resharded.

use idempotency_ledger::config::shards::{
    object_name, parse_object_name, shard_object_name, Layout, ObjectPlace, Role, ShardMap,
};

#[test]
fn one_shard_is_the_tenant_itself() {
    assert_eq!(object_name("acme", 0, 1), "acme");
    assert_eq!(Layout::SINGLE.home("acme", "any-key"), "acme");
    assert_eq!(
        parse_object_name("acme"),
        ObjectPlace {
            tenant: "acme".into(),
            shards: 1
        }
    );
    assert_eq!(ShardMap::default().role_of("acme"), Role::Current);
}

#[test]
fn names_round_trip() {
    for (i, n) in [(0, 2), (7, 8), (127, 128)] {
        let name = object_name("a.b-c_d", i, n);
        assert_eq!(
            parse_object_name(&name),
            ObjectPlace {
                tenant: "a.b-c_d".into(),
                shards: n
            }
        );
    }
    // Not a shard name: the whole string is the tenant.
    assert_eq!(parse_object_name("x/shard-9-of-4").shards, 1);
    assert_eq!(parse_object_name("x/shard-a-of-4").shards, 1);
}

#[test]
fn a_shard_name_has_one_spelling_so_a_map_never_gives_a_second_shard_its_role() {
    let m = ShardMap::parse(r#"{"acme": 2}"#).unwrap();
    assert_eq!(m.role_of("acme/shard-1-of-2"), Role::Current);
    for other in [
        "acme/shard-01-of-2",
        "acme/shard-1-of-02",
        "acme/shard-+1-of-2",
    ] {
        // Read as a one-object name of its own, not acme's shard 1 (the
        // fixture tests/fixtures/tenants.json `objects` holds the rest).
        assert_eq!(parse_object_name(other).tenant, other);
        assert_eq!(parse_object_name(other).shards, 1);
    }
}

#[test]
fn a_tenant_id_is_mapped_to_its_object_name_before_it_names_a_layout() {
    let m = ShardMap::parse(r#"{"org/team": 2, "acme": 4}"#).unwrap();
    assert_eq!(m.layout_of_tenant("org/team").shards, 2);
    assert_eq!(m.layout("~org%2Fteam").shards, 2);
    assert_eq!(
        m.layout("org/team"),
        Layout::SINGLE,
        "keyed by object names"
    );
    assert_eq!(
        m.layout_of_tenant("acme").shards,
        4,
        "a v1.3 id is its name"
    );
    assert_eq!(
        shard_object_name("org/team", 1, 2),
        "~org%2Fteam/shard-1-of-2"
    );
    assert_eq!(
        shard_object_name("acme/shard-1-of-2", 0, 1),
        "~acme%2Fshard-1-of-2"
    );
}

#[test]
fn the_map_is_validated() {
    let m = ShardMap::parse(r#"{"acme": 8, "globex": {"shards": 4, "previous": 1}}"#).unwrap();
    assert_eq!(
        m.layout("acme"),
        Layout {
            shards: 8,
            previous: None
        }
    );
    assert_eq!(
        m.layout("globex"),
        Layout {
            shards: 4,
            previous: Some(1)
        }
    );
    assert_eq!(m.layout("other"), Layout::SINGLE);
    assert!(m.layout("acme").is_sharded() && m.layout("globex").is_sharded());
    // The invalid layouts both parsers refuse live in the shared fixture.
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/shards.json")).unwrap();
    let invalid = fixture["invalid"].as_array().unwrap();
    assert!(invalid.len() >= 10);
    for bad in invalid {
        let bad = bad.as_str().unwrap();
        assert!(ShardMap::parse(bad).is_err(), "{bad}");
    }
    assert!(!ShardMap::parse(r#"{"acme": 1}"#)
        .unwrap()
        .layout("acme")
        .is_sharded());
}

#[test]
fn objects_know_their_role() {
    let m = ShardMap::parse(r#"{"acme": {"shards": 4, "previous": 1}}"#).unwrap();
    assert_eq!(m.role_of("acme/shard-2-of-4"), Role::Current);
    assert_eq!(m.role_of("acme"), Role::Retired);
    assert_eq!(m.role_of("acme/shard-0-of-2"), Role::Retired);
    assert_eq!(m.role_of("globex"), Role::Current);
    let l = m.layout("acme");
    assert_eq!(l.previous_home("acme", "k"), Some("acme".into()));
    assert_eq!(l.objects("acme").len(), 5);
}

/// The `TENANT_SHARDS` strings both languages read alike
/// (`tests/fixtures/shards.json`, also read by the Node tests): each valid
/// one, as the Worker reads the variable (trimmed, then parsed), to exactly
/// its tenants' layouts; each invalid one refused naming the variable.
#[test]
fn tenant_shards_strings_are_read_as_the_js_parser_reads_them() {
    use idempotency_ledger::config::Config;
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/shards.json")).unwrap();
    let read = |raw: &str| {
        let raw = raw.to_string();
        Config::from_lookup(&|name| (name == "TENANT_SHARDS").then(|| raw.clone()))
    };
    let valid = fixture["valid"].as_array().unwrap();
    assert!(valid.len() >= 10);
    for case in valid {
        let raw = case["raw"].as_str().unwrap();
        let map = read(raw)
            .unwrap_or_else(|e| panic!("{raw:?}: {e}"))
            .tenant_shards;
        let tenants = case["tenants"].as_object().unwrap();
        if tenants.is_empty() {
            assert_eq!(map, ShardMap::default(), "{raw:?}");
        }
        for (tenant, layout) in tenants {
            let expected = Layout {
                shards: layout[0].as_u64().unwrap() as u32,
                previous: layout[1].as_u64().map(|p| p as u32),
            };
            assert_eq!(map.layout(tenant), expected, "{raw:?}: {tenant}");
        }
        let sharded = tenants
            .values()
            .filter(|l| l[0] != 1 || !l[1].is_null())
            .count();
        assert_eq!(
            map.first_sharded().is_some(),
            sharded > 0,
            "{raw:?}: no other tenant is read"
        );
    }
    for bad in fixture["invalid"].as_array().unwrap() {
        let bad = bad.as_str().unwrap();
        let e = read(bad).unwrap_err();
        assert_eq!(e.variable, "TENANT_SHARDS", "{bad:?}");
    }
}
