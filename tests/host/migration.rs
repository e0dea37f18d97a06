//! The in-place upgrades from schema v1 to v9, from databases those
//! versions wrote (tests/fixtures/ledger-v1.sqlite, ledger-v2.sqlite,
//! ledger-v3.sqlite, ledger-v4.sqlite, ledger-v5.sqlite, ledger-v6.sqlite,
//! ledger-v7.sqlite, ledger-v8.sqlite and ledger-v9.sqlite:
//! each made at the commit that added it, by that version's ledger on
//! rusqlite — its generator is in that commit).

use crate::support::*;
use idempotency_ledger::config::reshard::{decide, Evidence, LayoutDecision};
use idempotency_ledger::config::shards::ShardMap;
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::schema::Found;
use idempotency_ledger::ledger::schema::SCHEMA_VERSION;
use idempotency_ledger::ledger::{
    ClaimOutcome, CompleteOutcome, ExecuteOutcome, Grant, LayoutRecord, Ledger, Refusal,
    ReleaseOutcome,
};

/// The v1 fixture's clock: records were written around this time.
const T0: i64 = 1_800_000_000_000;

fn v1_ledger() -> Ledger<RusqliteStore> {
    fixture_ledger("ledger-v1.sqlite")
}

fn fixture_ledger(fixture: &str) -> Ledger<RusqliteStore> {
    let dir = std::env::temp_dir().join(format!(
        "ledger-fixture-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ledger.sqlite");
    std::fs::copy(
        format!("{}/tests/fixtures/{fixture}", env!("CARGO_MANIFEST_DIR")),
        &path,
    )
    .unwrap();
    Ledger::new(RusqliteStore::new(
        rusqlite::Connection::open(path).unwrap(),
    ))
}

fn sql_of(l: &Ledger<RusqliteStore>, name: &str) -> Option<String> {
    l.store()
        .connection()
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = ?",
            [name],
            |r| r.get(0),
        )
        .ok()
}

#[test]
fn a_v1_database_upgrades_in_place_once() {
    let l = v1_ledger();
    assert!(sql_of(&l, "ledger_counters").is_some(), "the fixture is v1");
    assert_eq!(l.migrate().unwrap(), Found::V1);
    assert_eq!(
        l.migrate().unwrap(),
        Found::Current,
        "a second start changes nothing"
    );
    assert!(sql_of(&l, "idempotency_records")
        .unwrap()
        .contains("WITHOUT ROWID"));
    assert!(sql_of(&l, "idempotency_records_sweep_at").is_some());
    assert!(sql_of(&l, "ledger_counters").is_none());
    assert_eq!(count(&l, "idempotency_records"), 6);
}

#[test]
fn every_counter_is_kept_and_the_records_are_counted_by_state() {
    let l = v1_ledger();
    l.migrate().unwrap();
    let s = l.stats(T0 + 100).unwrap();
    assert_eq!(
        (
            s.claims,
            s.replays,
            s.reused,
            s.in_use,
            s.takeovers,
            s.fenced_out
        ),
        (8, 2, 1, 1, 2, 1)
    );
    assert_eq!(
        (s.records, s.in_flight, s.completed, s.released),
        (6, 2, 3, 1)
    );
    assert_eq!(l.lookup("done", T0 + 100).unwrap().unwrap().replays, 2);
}

#[test]
fn completed_keys_replay_byte_for_byte_and_tombstones_stay_tombstones() {
    let l = v1_ledger();
    l.migrate().unwrap();
    let p = policy();
    match l.claim("done", &fp("a"), &p, T0 + 100).unwrap() {
        ClaimOutcome::Refused(Refusal::Completed {
            generation,
            response,
            expires_at,
        }) => {
            assert_eq!(generation, 1);
            assert_eq!(response, self::response(r#"{"id":1}"#));
            assert_eq!(expires_at, Some(T0 + 10 + RETENTION_MS));
        }
        other => panic!("{other:?}"),
    }
    match l.claim("tomb", &fp("t"), &p, T0 + 100).unwrap() {
        ClaimOutcome::Refused(Refusal::Completed { response, .. }) => {
            assert_eq!((response.status, response.body), (201, None));
        }
        other => panic!("{other:?}"),
    }
    // The embedded order replays, and its row is still there.
    let order = br#"{"sku":"A","quantity":1}"#;
    let out = l
        .execute(
            "order-1",
            &fp(r#"{"sku":"A","quantity":1}"#),
            &p,
            &capture(),
            T0 + 100,
            |store| {
                idempotency_ledger::orders::handle_within(
                    store,
                    "POST",
                    "/v1/orders",
                    order,
                    T0 + 100,
                )
            },
        )
        .unwrap();
    assert!(matches!(
        out,
        ExecuteOutcome::Refused(Refusal::Completed { generation: 1, .. })
    ));
    assert_eq!(count(&l, "orders"), 1);
}

#[test]
fn in_flight_keys_keep_their_generation_and_lease() {
    let l = v1_ledger();
    l.migrate().unwrap();
    let p = policy();
    // busy: claimed at T0 + 1 s, lease 60 s — still live.
    assert_eq!(
        l.claim("busy", &fp("c"), &p, T0 + 2_000).unwrap(),
        ClaimOutcome::Refused(Refusal::InFlight {
            generation: 1,
            retry_after_ms: 59_000
        })
    );
    // taken: in flight at generation 3 under a lease to T0 + 180.002 s.
    assert!(matches!(
        l.claim("taken", &fp("d"), &p, T0 + 2_000).unwrap(),
        ClaimOutcome::Refused(Refusal::InFlight { generation: 3, .. })
    ));
    // Its owner still completes; an earlier generation stays fenced out.
    assert!(matches!(
        l.complete("taken", 2, &response("stale"), RETENTION_MS, T0 + 2_000)
            .unwrap(),
        CompleteOutcome::FencedOut { .. }
    ));
    assert_eq!(
        l.complete("taken", 3, &response("done"), RETENTION_MS, T0 + 2_000)
            .unwrap(),
        CompleteOutcome::Stored
    );
    // freed: released at generation 1, reclaimed at 2.
    assert_eq!(
        without_lease(l.claim("freed", &fp("e"), &p, T0 + 2_000).unwrap()),
        ClaimOutcome::Claimed {
            generation: 2,
            takeover: false,
            lease: None
        }
    );
    // busy is taken over once its lease has ended, at generation 2.
    assert_eq!(
        without_lease(l.claim("busy", &fp("c"), &p, T0 + 61_001).unwrap()),
        ClaimOutcome::Claimed {
            generation: 2,
            takeover: true,
            lease: None
        }
    );
}

/// The schema version the database says it holds.
fn version_of(l: &Ledger<RusqliteStore>) -> i64 {
    l.store()
        .connection()
        .query_row("SELECT schema_version FROM ledger_state", [], |r| r.get(0))
        .unwrap()
}

/// The columns `table` has now, in order.
fn columns_of(l: &Ledger<RusqliteStore>, table: &str) -> Vec<String> {
    let conn = l.store().connection();
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_info(?1)")
        .unwrap();
    stmt.query_map([table], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

const YEAR_MS: i64 = 31_536_000_000;

#[test]
fn a_v2_database_upgrades_keeping_its_layout_and_learns_its_expiry_horizon() {
    let l = fixture_ledger("ledger-v2.sqlite");
    assert_eq!(version_of(&l), 2, "the fixture is v2");
    assert_eq!(l.migrate_at(T0 + 100).unwrap(), Found::V2);
    assert_eq!(l.migrate_at(T0 + 200).unwrap(), Found::Current);
    assert_eq!(version_of(&l), SCHEMA_VERSION);
    assert_eq!(count(&l, "idempotency_records"), 4);
    // The layout history schema 2 kept is kept; it is not "unknown".
    assert_eq!(
        l.layout_record().unwrap(),
        Some(LayoutRecord {
            shards: 4,
            previous: Some(1),
            since: T0,
            window_ms: 100_000
        })
    );
    assert_eq!(l.v1_upgraded_at().unwrap(), None);
    assert_eq!(l.object_name().unwrap().as_deref(), Some("acme"));
    // The horizon starts at the latest expiry held: the key kept a year.
    assert_eq!(l.expires_by().unwrap(), T0 + 10 + YEAR_MS);
    match l
        .claim("kept-a-year", &fp("y"), &policy(), T0 + 100)
        .unwrap()
    {
        ClaimOutcome::Refused(Refusal::Completed { expires_at, .. }) => {
            assert_eq!(expires_at, Some(T0 + 10 + YEAR_MS))
        }
        other => panic!("{other:?}"),
    }
    let s = l.stats(T0 + 100).unwrap();
    assert_eq!(
        (s.completed, s.in_flight, s.released, s.claims),
        (2, 1, 1, 4)
    );
}

#[test]
fn a_v1_upgrade_learns_the_latest_expiry_and_when_its_layout_history_became_unknown() {
    let l = v1_ledger();
    let upgraded = T0 + 500;
    assert_eq!(l.migrate_at(upgraded).unwrap(), Found::V1);
    assert_eq!(l.v1_upgraded_at().unwrap(), Some(upgraded));
    assert_eq!(l.layout_record().unwrap(), None);
    let latest: i64 = l
        .store()
        .connection()
        .query_row("SELECT MAX(expires_at) FROM idempotency_records", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(l.expires_by().unwrap(), latest);
    // A second start keeps the upgrade's time.
    assert_eq!(l.migrate_at(upgraded + 1_000).unwrap(), Found::Current);
    assert_eq!(l.v1_upgraded_at().unwrap(), Some(upgraded));
}

/// The registry's decision on `TENANT_SHARDS` for tenant acme, from what
/// the upgraded v1 ledger holds (as `TenantLedger` asks it).
fn registry_decides(
    l: &Ledger<RusqliteStore>,
    tenant_shards: &str,
    asker_upgraded_from_v1: bool,
    now: i64,
    window_ms: i64,
) -> LayoutDecision {
    let asked = ShardMap::parse(tenant_shards).unwrap().layout("acme");
    let evidence = Evidence {
        registry_holds_records: l.holds_any().unwrap(),
        previous_expires_by: None,
        registry_upgraded_at: l.v1_upgraded_at().unwrap(),
        asker_upgraded_from_v1,
    };
    decide(l.layout_record().unwrap(), asked, now, window_ms, evidence)
}

#[test]
fn a_v1_registry_treats_its_layout_history_as_unknown_for_a_window_and_believes_previous() {
    // acme's own object under v1, its records all swept (a tenant sharded
    // under v1 after it was one object).
    let l = v1_ledger();
    l.store()
        .connection()
        .execute("DELETE FROM idempotency_records", [])
        .unwrap();
    let upgraded = T0 + 500;
    let window = 100_000;
    l.migrate_at(upgraded).unwrap();
    // {"acme": 4} asked by a shard that held nothing before the upgrade: it
    // may be a change from a v1 layout nobody recorded (say 2).
    for at in [upgraded + 1, upgraded + window - 1] {
        assert!(
            matches!(
                registry_decides(&l, r#"{"acme": 4}"#, false, at, window),
                LayoutDecision::Refuse(_)
            ),
            "at {at}"
        );
    }
    // Asked by a shard that held v1 records, it is the layout in use.
    assert_eq!(
        registry_decides(&l, r#"{"acme": 4}"#, true, upgraded + 1, window),
        LayoutDecision::Accept(Some(LayoutRecord {
            shards: 4,
            previous: None,
            since: upgraded + 1,
            window_ms: window
        }))
    );
    // A full window after the upgrade, by anyone.
    assert!(matches!(
        registry_decides(&l, r#"{"acme": 4}"#, false, upgraded + window, window),
        LayoutDecision::Accept(Some(_))
    ));
    // Mid-reshard at the upgrade: "previous" is believed, and recorded.
    let mid = registry_decides(
        &l,
        r#"{"acme": {"shards": 4, "previous": 2}}"#,
        false,
        upgraded + 1,
        window,
    );
    let LayoutDecision::Accept(Some(record)) = mid else {
        panic!("{mid:?}")
    };
    assert_eq!((record.shards, record.previous), (4, Some(2)));
    l.record_layout(&record).unwrap();
    // Dropping it keeps the previous layout in force for a window from then.
    assert!(matches!(
        registry_decides(&l, r#"{"acme": 4}"#, true, upgraded + window, window),
        LayoutDecision::KeepPrevious {
            previous: 2,
            record: None,
            ..
        }
    ));
    assert!(matches!(
        registry_decides(&l, r#"{"acme": 4}"#, true, upgraded + 1 + window, window),
        LayoutDecision::AskPrevious(2)
    ));
}

#[test]
fn a_v1_registry_that_holds_records_keeps_its_one_object_layout() {
    let l = v1_ledger();
    l.migrate_at(T0 + 500).unwrap();
    // Unsharded, nothing changes; a layout that forgets the one object is refused.
    assert_eq!(
        registry_decides(&l, r#"{}"#, false, T0 + 600, 100_000),
        LayoutDecision::Accept(None)
    );
    for shards in [
        r#"{"acme": 4}"#,
        r#"{"acme": {"shards": 4, "previous": 2}}"#,
    ] {
        assert!(matches!(
            registry_decides(&l, shards, true, T0 + 600, 100_000),
            LayoutDecision::Refuse(_)
        ));
    }
    assert!(matches!(
        registry_decides(
            &l,
            r#"{"acme": {"shards": 4, "previous": 1}}"#,
            false,
            T0 + 600,
            100_000
        ),
        LayoutDecision::Accept(Some(_))
    ));
}

/// The v1 fixture in a file, with `extra` more completed records of
/// `body_len` bytes written by the v1 schema (its own table and columns);
/// the file's path is returned for reopening (a restart).
fn large_v1(extra: usize, body_len: usize) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ledger-large-v1-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ledger.sqlite");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/ledger-v1.sqlite"
        ),
        &path,
    )
    .unwrap();
    let mut conn = rusqlite::Connection::open(&path).unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO idempotency_records (key, state, generation, fingerprint, components,
                    created_at, claimed_at, completed_at, expires_at, response_status, response_headers,
                    response_body, retained, replays)
                 VALUES (?1, 'completed', 1, ?2, '[]', ?3, ?3, ?3, ?4, 201, '[]', ?5, 1, 0)",
            )
            .unwrap();
        for i in 0..extra {
            let t = T0 + i as i64;
            insert
                .execute(rusqlite::params![
                    format!("bulk-{i:06}"),
                    "a".repeat(64),
                    t,
                    t + 86_400_000,
                    vec![b'x'; body_len]
                ])
                .unwrap();
        }
    }
    tx.commit().unwrap();
    path
}

fn open(path: &std::path::Path) -> Ledger<RusqliteStore> {
    Ledger::new(RusqliteStore::new(
        rusqlite::Connection::open(path).unwrap(),
    ))
}

#[test]
fn a_large_v1_database_upgrades_in_bounded_steps_never_holding_two_copies() {
    use idempotency_ledger::ledger::schema::{upgrading_v1, UPGRADE_STEP_BYTES};
    // 6,000 records of 4 KiB: about 24 MiB, three steps at least by bytes.
    let path = large_v1(6_000, 4_096);
    let before = std::fs::metadata(&path).unwrap().len();
    let l = open(&path);
    let (found, done) = l.migrate_within(T0 + 1, 1).unwrap();
    assert_eq!(found, Found::V1);
    assert!(!done, "one step moves at most 2,000 records or 8 MiB");
    assert!(upgrading_v1(l.store()).unwrap());
    let moved = count(&l, "idempotency_records");
    assert!(
        moved >= 1 && moved as u64 * 4_096 <= UPGRADE_STEP_BYTES as u64 + 4_096,
        "{moved}"
    );
    let mut steps = 1;
    while !l.continue_upgrade(1).unwrap() {
        steps += 1;
        assert!(steps < 100, "the upgrade ends");
    }
    assert!(steps >= 3, "{steps} steps");
    assert!(!upgrading_v1(l.store()).unwrap(), "the v1 table is gone");
    assert_eq!(
        version_of(&l),
        idempotency_ledger::ledger::schema::SCHEMA_VERSION
    );
    // Every record moved once, counted once; the fixture's own counts kept.
    let s = l.stats(T0 + 100).unwrap();
    assert_eq!(
        (s.records, s.in_flight, s.completed, s.released),
        (6_006, 2, 6_003, 1)
    );
    assert_eq!((s.claims, s.replays), (8, 2));
    assert_eq!(count(&l, "idempotency_records"), 6_006);
    assert_eq!(l.lookup("done", T0 + 100).unwrap().unwrap().replays, 2);
    let bulk = l.lookup("bulk-005999", T0 + 100).unwrap().unwrap();
    assert_eq!(bulk.generation, 1);
    // Deleting as it moves, the file never held the records twice.
    drop(l);
    let after = std::fs::metadata(&path).unwrap().len();
    assert!(
        after < before + before / 2,
        "the database grew from {before} to {after} bytes"
    );
}

#[test]
fn an_upgrade_interrupted_between_steps_resumes_on_the_next_start_without_counting_twice() {
    let path = large_v1(5_000, 1_024);
    {
        let l = open(&path);
        let (_, done) = l.migrate_within(T0 + 1, 1).unwrap();
        assert!(!done);
        // The instance ends here (an eviction, a deploy).
    }
    let l = open(&path);
    let (found, done) = l.migrate_within(T0 + 2, u32::MAX).unwrap();
    assert_eq!(
        found,
        Found::Current,
        "the schema is current; only records were still moving"
    );
    assert!(done);
    let s = l.stats(T0 + 100).unwrap();
    assert_eq!((s.records, s.completed), (5_006, 5_003));
    assert_eq!(count(&l, "idempotency_records"), 5_006);
}

#[test]
fn a_v3_database_upgrades_in_place_with_an_empty_trend_keeping_every_record_and_counter() {
    let l = fixture_ledger("ledger-v3.sqlite");
    assert_eq!(version_of(&l), 3, "the fixture is v3");
    assert!(!columns_of(&l, "ledger_state").contains(&"trend".to_string()));
    assert_eq!(l.migrate_at(T0 + 100).unwrap(), Found::V3);
    assert_eq!(l.migrate_at(T0 + 200).unwrap(), Found::Current);
    assert_eq!(version_of(&l), SCHEMA_VERSION);
    assert!(columns_of(&l, "ledger_state").contains(&"trend".to_string()));
    assert_eq!(count(&l, "idempotency_records"), 3);
    assert_eq!(l.object_name().unwrap().as_deref(), Some("acme"));
    let s = l.stats(T0 + 2_000).unwrap();
    assert_eq!(
        (s.claims, s.replays, s.reused, s.in_use),
        (3, 1, 1, 1),
        "every counter kept"
    );
    assert_eq!(
        (s.records, s.in_flight, s.completed, s.released),
        (3, 1, 1, 1)
    );
    // Schema 3 kept no counts by minute: the hour starts empty.
    assert_eq!(s.trend.len(), 60);
    assert!(s
        .trend
        .iter()
        .all(|m| m.claims + m.replays + m.reused + m.in_use == 0));
    // Records answer as before, and what happens now is trended.
    assert_eq!(l.lookup("done", T0 + 2_000).unwrap().unwrap().replays, 1);
    match l.claim("done", &fp("a"), &policy(), T0 + 2_000).unwrap() {
        ClaimOutcome::Refused(Refusal::Completed { response, .. }) => {
            assert_eq!(response, self::response(r#"{"id":1}"#))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        l.claim("busy", &fp("c"), &policy(), T0 + 2_000).unwrap(),
        ClaimOutcome::Refused(Refusal::InFlight { .. })
    ));
    assert!(matches!(
        l.claim("freed", &fp("e"), &policy(), T0 + 2_000).unwrap(),
        ClaimOutcome::Claimed { generation: 2, .. }
    ));
    l.flush_pending().unwrap();
    let s = l.stats(T0 + 2_000).unwrap();
    let now = &s.trend[59];
    assert_eq!((now.claims, now.replays, now.in_use), (1, 1, 1));
    assert_eq!((s.claims, s.replays, s.in_use), (4, 2, 2));
}

/// Adds an in-flight record written by the v1 schema behind every other
/// one (the last step of an upgrade would move it): `key` at
/// `generation`, its lease live until `T0 + 600 s`.
fn v1_in_flight(path: &std::path::Path, key: &str, generation: i64) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute(
        "INSERT INTO idempotency_records (key, state, generation, fingerprint, components,
            created_at, claimed_at, lease_expires_at, expires_at, replays)
         VALUES (?1, 'in_flight', ?2, ?3, '[]', ?4, ?4, ?5, ?6, 0)",
        rusqlite::params![
            key,
            generation,
            "b".repeat(64),
            T0,
            T0 + 600_000,
            T0 + 86_400_000
        ],
    )
    .unwrap();
}

#[test]
fn a_claim_granted_before_a_stepwise_upgrade_settles_during_it_moving_only_its_own_key() {
    use idempotency_ledger::ledger::{KeyState, RecordState, ReleaseOutcome};
    let path = large_v1(5_000, 16);
    v1_in_flight(&path, "late-complete", 2);
    v1_in_flight(&path, "late-release", 1);
    let l = open(&path);
    let (_, done) = l.migrate_within(T0 + 1, 1).unwrap();
    assert!(!done, "the upgrade is under way");
    let set_aside = count(&l, "idempotency_records_v1");
    assert!(set_aside > 2, "{set_aside}");
    // A retired shard answers for a key still set aside: it holds it.
    assert!(l.holds("late-release", T0 + 2).unwrap());
    // A stale owner is still fenced out, told the record's real state.
    assert_eq!(
        l.complete("late-complete", 1, &response("stale"), RETENTION_MS, T0 + 2)
            .unwrap(),
        CompleteOutcome::FencedOut {
            current: Some(RecordState {
                state: KeyState::InFlight,
                generation: 2
            })
        }
    );
    assert_eq!(
        l.complete("late-complete", 2, &response("done"), RETENTION_MS, T0 + 3)
            .unwrap(),
        CompleteOutcome::Stored
    );
    assert_eq!(
        l.release("late-release", 1, T0 + 4).unwrap(),
        ReleaseOutcome::Released
    );
    // Those two keys moved; no other record did.
    assert_eq!(count(&l, "idempotency_records_v1"), set_aside - 2);
    while !l.continue_upgrade(1).unwrap() {}
    // The completion is kept; every record counted once, in its state.
    let record = l.lookup("late-complete", T0 + 5).unwrap().unwrap();
    assert_eq!((record.state, record.generation), (KeyState::Completed, 2));
    let s = l.stats(T0 + 100).unwrap();
    assert_eq!(
        (s.records, s.in_flight, s.completed, s.released),
        (5_008, 2, 5_004, 2)
    );
}

#[test]
fn a_v4_database_upgrades_in_place_with_no_quota_tombstones_keeping_every_record_counter_and_trend()
{
    let l = fixture_ledger("ledger-v4.sqlite");
    assert_eq!(version_of(&l), 4, "the fixture is v4");
    assert!(!columns_of(&l, "ledger_state").contains(&"quota_tombstones".to_string()));
    assert_eq!(l.migrate_at(T0 + 100).unwrap(), Found::V4);
    assert_eq!(l.migrate_at(T0 + 200).unwrap(), Found::Current);
    assert_eq!(version_of(&l), SCHEMA_VERSION);
    assert!(columns_of(&l, "ledger_state").contains(&"quota_tombstones".to_string()));
    assert_eq!(count(&l, "idempotency_records"), 3);
    assert_eq!(l.object_name().unwrap().as_deref(), Some("acme"));
    let s = l.stats(T0 + 2_000).unwrap();
    assert_eq!(
        (s.claims, s.replays, s.reused, s.in_use, s.quota_tombstones),
        (3, 1, 1, 1, 0),
        "every counter kept, the new one at 0"
    );
    assert_eq!(
        (s.records, s.in_flight, s.completed, s.released),
        (3, 1, 1, 1)
    );
    // Schema 4's trend is kept: the fixture's minute is this one.
    let now = &s.trend[59];
    assert_eq!(
        (now.claims, now.replays, now.in_use, now.reused),
        (3, 1, 1, 1)
    );
    assert_eq!(l.lookup("done", T0 + 2_000).unwrap().unwrap().replays, 1);
    // The horizon covers every expiry the v4 object held (schema 4 tracked
    // only those past the reshard window; issue 33).
    let latest: i64 = l
        .store()
        .connection()
        .query_row("SELECT MAX(expires_at) FROM idempotency_records", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(l.expires_by().unwrap() >= latest);
    assert!(l.horizon().unwrap() >= latest);
    // The in-flight key completes past a quota it has no room under: a
    // tombstone, counted in the new column.
    let full = idempotency_ledger::ledger::SqlStore::database_size(l.store()).unwrap();
    let big = idempotency_ledger::protocol::StoredResponse {
        body: Some(vec![b'x'; 100_000]),
        ..response("")
    };
    assert_eq!(
        l.complete_within("busy", 1, &big, RETENTION_MS, full, T0 + 3_000)
            .unwrap(),
        (CompleteOutcome::Stored, true)
    );
    l.flush_pending().unwrap();
    assert_eq!(l.stats(T0 + 3_000).unwrap().quota_tombstones, 1);
}

#[test]
fn a_v5_database_upgrades_in_place_with_unnamed_leases_keeping_every_record_and_counter() {
    let l = fixture_ledger("ledger-v5.sqlite");
    assert_eq!(version_of(&l), 5, "the fixture is v5");
    assert!(!columns_of(&l, "idempotency_records").contains(&"lease_attempt".to_string()));
    let index = sql_of(&l, "idempotency_records_sweep_at");
    assert_eq!(l.migrate_at(T0 + 100).unwrap(), Found::V5);
    assert_eq!(l.migrate_at(T0 + 200).unwrap(), Found::Current);
    assert_eq!(version_of(&l), SCHEMA_VERSION);
    let now = columns_of(&l, "idempotency_records");
    assert!(now.contains(&"lease_attempt".to_string()));
    assert!(now.contains(&"lease_took_over".to_string()));
    // The sweep index is kept as it was; the one index added is schema 7's.
    assert_eq!(
        indexes(&l),
        [
            "idempotency_records_in_flight",
            "idempotency_records_sweep_at"
        ]
    );
    assert_eq!(sql_of(&l, "idempotency_records_sweep_at"), index);
    assert_eq!(count(&l, "idempotency_records"), 3);
    assert_eq!(l.object_name().unwrap().as_deref(), Some("acme"));
    let s = l.stats(T0 + 2_000).unwrap();
    assert_eq!(
        (s.claims, s.replays, s.reused, s.in_use),
        (3, 1, 1, 1),
        "every counter kept"
    );
    assert_eq!(
        (s.records, s.in_flight, s.completed, s.released),
        (3, 1, 1, 1)
    );
    assert_eq!(
        s.trend.iter().map(|m| m.claims).sum::<i64>(),
        3,
        "the trend kept"
    );
    // Records answer as before; a lease granted before the upgrade is
    // unnamed, so no attempt is answered its grant.
    assert_eq!(l.lookup("done", T0 + 2_000).unwrap().unwrap().replays, 1);
    match l.claim("done", &fp("a"), &policy(), T0 + 2_000).unwrap() {
        ClaimOutcome::Refused(Refusal::Completed { response, .. }) => {
            assert_eq!(response, self::response(r#"{"id":1}"#))
        }
        other => panic!("{other:?}"),
    }
    let attempt = Some("0b6c1f4e-6a2b-4d1e-9b7a-3f2d8c5e1a90");
    assert!(matches!(
        l.claim_as("busy", &fp("c"), attempt, &policy(), T0 + 2_000)
            .unwrap()
            .outcome,
        ClaimOutcome::Refused(Refusal::InFlight { generation: 1, .. })
    ));
    // A grant after the upgrade keeps its attempt.
    let first = l
        .claim_as("freed", &fp("e"), attempt, &policy(), T0 + 2_000)
        .unwrap();
    assert!(!first.repeated);
    let again = l
        .claim_as("freed", &fp("e"), attempt, &policy(), T0 + 2_100)
        .unwrap();
    assert!(again.repeated);
    assert!(matches!(
        again.outcome,
        ClaimOutcome::Claimed { generation: 2, .. }
    ));
    l.flush_pending().unwrap();
    let s = l.stats(T0 + 2_000).unwrap();
    assert_eq!((s.claims, s.replays, s.in_use), (4, 2, 2));
}

/// The indexes of the records table, by name.
fn indexes(l: &Ledger<RusqliteStore>) -> Vec<String> {
    let conn = l.store().connection();
    let mut stmt = conn
        .prepare(
            "SELECT name FROM sqlite_master
             WHERE type = 'index' AND tbl_name = 'idempotency_records' ORDER BY name",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_v6_database_upgrades_in_place_with_an_index_of_its_records_in_flight() {
    use idempotency_ledger::ledger::{KeyState, ListQuery};
    let l = fixture_ledger("ledger-v6.sqlite");
    assert_eq!(version_of(&l), 6, "the fixture is v6");
    assert_eq!(indexes(&l), ["idempotency_records_sweep_at"]);
    let sweep_index = sql_of(&l, "idempotency_records_sweep_at");
    let records = |l: &Ledger<RusqliteStore>| -> Vec<(String, String, i64, Option<String>, i64)> {
        let conn = l.store().connection();
        let mut stmt = conn
            .prepare(
                "SELECT key, state, generation, lease_attempt, sweep_at
                 FROM idempotency_records ORDER BY key",
            )
            .unwrap();
        stmt.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let before = records(&l);
    assert_eq!(l.migrate_at(T0 + 100).unwrap(), Found::V6);
    assert_eq!(l.migrate_at(T0 + 200).unwrap(), Found::Current);
    assert_eq!(version_of(&l), SCHEMA_VERSION);
    assert_eq!(
        indexes(&l),
        [
            "idempotency_records_in_flight",
            "idempotency_records_sweep_at"
        ]
    );
    assert_eq!(sql_of(&l, "idempotency_records_sweep_at"), sweep_index);
    assert_eq!(records(&l), before, "every record kept as it was");
    // The index holds exactly the records in flight.
    let entries: i64 = l
        .store()
        .connection()
        .query_row(
            "SELECT COUNT(*) FROM idempotency_records INDEXED BY idempotency_records_in_flight
             WHERE state = 'in_flight'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(entries, 2);
    let s = l.stats(T0 + 3_000).unwrap();
    assert_eq!(
        (s.claims, s.replays, s.reused, s.in_use),
        (4, 1, 1, 1),
        "every counter kept"
    );
    assert_eq!(
        (s.records, s.in_flight, s.completed, s.released),
        (4, 2, 1, 1)
    );
    assert_eq!(l.object_name().unwrap().as_deref(), Some("acme"));
    // The in-flight listing finds the records claimed before the upgrade,
    // oldest first, and one claimed after it; settled, it leaves.
    let list = |l: &Ledger<RusqliteStore>| -> Vec<String> {
        l.list(
            &ListQuery {
                state: Some(KeyState::InFlight),
                limit: 20,
                after: None,
            },
            T0 + 3_000,
        )
        .unwrap()
        .keys
        .into_iter()
        .map(|k| k.record.key)
        .collect()
    };
    assert_eq!(list(&l), ["busy", "later"]);
    // The lease granted before the upgrade keeps its attempt.
    let attempt = Some("0b6c1f4e-6a2b-4d1e-9b7a-3f2d8c5e1a90");
    let again = l
        .claim_as("busy", &fp("c"), attempt, &policy(), T0 + 2_500)
        .unwrap();
    assert!(again.repeated);
    l.claim("new", &fp("n"), &policy(), T0 + 2_600).unwrap();
    assert_eq!(list(&l), ["busy", "later", "new"]);
    assert_eq!(
        l.complete("busy", 1, &response("{}"), RETENTION_MS, T0 + 2_700)
            .unwrap(),
        CompleteOutcome::Stored
    );
    l.release("later", 1, T0 + 2_800).unwrap();
    assert_eq!(list(&l), ["new"]);
}

#[test]
fn a_v7_database_upgrades_in_place_with_no_recorded_jurisdiction_keeping_every_record_and_counter()
{
    let l = fixture_ledger("ledger-v7.sqlite");
    assert_eq!(version_of(&l), 7, "the fixture is v7");
    assert!(!columns_of(&l, "ledger_state").contains(&"jurisdiction".to_string()));
    let records = columns_of(&l, "idempotency_records");
    let index = indexes(&l);
    assert_eq!(l.migrate_at(T0 + 100).unwrap(), Found::V7);
    assert_eq!(l.migrate_at(T0 + 200).unwrap(), Found::Current);
    assert_eq!(version_of(&l), SCHEMA_VERSION);
    assert!(columns_of(&l, "ledger_state").contains(&"jurisdiction".to_string()));
    // The records table gains only the lease token (the 9 → 10 step) and
    // its indexes are untouched; nothing is recorded: the tenant's keys
    // are where schema 7 kept them (unrestricted).
    let with_lease: Vec<String> = records.into_iter().chain(["lease_token".into()]).collect();
    assert_eq!(columns_of(&l, "idempotency_records"), with_lease);
    assert_eq!(indexes(&l), index);
    assert_eq!(l.recorded_jurisdiction().unwrap(), None);
    assert_eq!(count(&l, "idempotency_records"), 4);
    assert_eq!(l.object_name().unwrap().as_deref(), Some("acme"));
    let s = l.stats(T0 + 3_000).unwrap();
    assert_eq!(
        (s.claims, s.replays, s.reused, s.in_use),
        (4, 1, 1, 1),
        "every counter kept"
    );
    assert_eq!(
        (s.records, s.in_flight, s.completed, s.released),
        (4, 2, 1, 1)
    );
    // A claim's named attempt is still answered its grant.
    let attempt = Some("0b6c1f4e-6a2b-4d1e-9b7a-3f2d8c5e1a90");
    let again = l
        .claim_as("busy", &fp("c"), attempt, &policy(), T0 + 2_500)
        .unwrap();
    assert!(again.repeated, "{again:?}");
    // The new column records, and reads back.
    l.record_jurisdiction("eu").unwrap();
    assert_eq!(l.recorded_jurisdiction().unwrap().as_deref(), Some("eu"));
}

#[test]
fn a_v8_database_upgrades_in_place_with_no_evictions_keeping_every_record_counter_jurisdiction_and_trend(
) {
    let l = fixture_ledger("ledger-v8.sqlite");
    assert_eq!(version_of(&l), 8, "the fixture is v8");
    assert!(!columns_of(&l, "ledger_state").contains(&"evicted".to_string()));
    let trend_of = |l: &Ledger<RusqliteStore>| -> String {
        l.store()
            .connection()
            .query_row("SELECT trend FROM ledger_state", [], |r| r.get(0))
            .unwrap()
    };
    // Schema 8 wrote seven counts a minute.
    let stored: serde_json::Value = serde_json::from_str(&trend_of(&l)).unwrap();
    let (minute, counts) = stored.as_object().unwrap().iter().next().unwrap();
    assert_eq!(counts.as_array().unwrap().len(), 7);
    let minute: i64 = minute.parse().unwrap();
    assert_eq!(l.migrate_at(T0 + 100).unwrap(), Found::V8);
    assert_eq!(l.migrate_at(T0 + 200).unwrap(), Found::Current);
    assert_eq!(version_of(&l), SCHEMA_VERSION);
    assert!(columns_of(&l, "ledger_state").contains(&"evicted".to_string()));
    // The in-flight index is kept: it holds the key in flight.
    assert_eq!(
        indexes(&l),
        [
            "idempotency_records_in_flight",
            "idempotency_records_sweep_at"
        ]
    );
    assert_eq!(count(&l, "idempotency_records"), 3);
    assert_eq!(l.object_name().unwrap().as_deref(), Some("acme"));
    // The jurisdiction schema 8 recorded is kept.
    assert_eq!(l.recorded_jurisdiction().unwrap().as_deref(), Some("eu"));
    let s = l.stats(T0 + 2_000).unwrap();
    assert_eq!(
        (s.claims, s.replays, s.reused, s.in_use, s.evicted),
        (4, 1, 1, 1, 0),
        "every counter kept, the new one at 0"
    );
    assert_eq!(
        (s.records, s.in_flight, s.completed, s.released),
        (3, 1, 1, 1)
    );
    // The seven-count minute reads as it was, with no evictions.
    let now = &s.trend[59];
    assert_eq!(
        (now.claims, now.replays, now.in_use, now.reused, now.evicted),
        (4, 1, 1, 1, 0)
    );
    // The released key (generation 2) is evicted and comes back above it;
    // the minute written again holds eight counts, its old ones kept.
    match l.evict("freed", 0, T0 + 3_000).unwrap() {
        idempotency_ledger::ledger::EvictOutcome::Evicted { record } => {
            assert_eq!(record.generation, 2)
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        l.claim("freed", &fp("e"), &policy(), T0 + 3_100).unwrap(),
        ClaimOutcome::Claimed { generation: 3, .. }
    ));
    l.flush_pending().unwrap();
    let stored: serde_json::Value = serde_json::from_str(&trend_of(&l)).unwrap();
    assert_eq!(
        stored[minute.to_string()],
        serde_json::json!([5, 1, 1, 1, 0, 0, 0, 1])
    );
    let reopened = Ledger::new(RusqliteStore::new(
        rusqlite::Connection::open(l.store().connection().path().unwrap()).unwrap(),
    ));
    let s = reopened.stats(T0 + 3_200).unwrap();
    assert_eq!((s.evicted, s.claims, s.trend[59].evicted), (1, 5, 1));
}

#[test]
fn a_v9_database_upgrades_in_place_its_grants_settled_by_generation_and_new_ones_by_token() {
    let l = fixture_ledger("ledger-v9.sqlite");
    assert_eq!(version_of(&l), 9, "the fixture is v9");
    let records = columns_of(&l, "idempotency_records");
    assert!(!records.contains(&"lease_token".to_string()));
    let index = indexes(&l);
    assert_eq!(l.migrate_at(T0 + 100).unwrap(), Found::V9);
    assert_eq!(
        Found::V9.upgraded_from(),
        Some(9),
        "logged as an upgrade from 9"
    );
    assert_eq!(l.migrate_at(T0 + 200).unwrap(), Found::Current);
    assert_eq!(Found::Current.upgraded_from(), None);
    assert_eq!(version_of(&l), SCHEMA_VERSION);
    // One column added; no record rewritten, no index touched.
    let with_lease: Vec<String> = records.into_iter().chain(["lease_token".into()]).collect();
    assert_eq!(columns_of(&l, "idempotency_records"), with_lease);
    assert_eq!(indexes(&l), index);
    assert_eq!(count(&l, "idempotency_records"), 3);
    assert_eq!(l.object_name().unwrap().as_deref(), Some("acme"));
    let s = l.stats(T0 + 2_000).unwrap();
    assert_eq!(
        (s.claims, s.replays, s.reused, s.in_use, s.evicted),
        (5, 1, 1, 1, 1),
        "every counter kept"
    );
    // The claim schema 9 granted has no token: its attempt's repeat is
    // answered its grant without one...
    let again = l
        .claim_as("busy", &fp("c"), Some("attempt-1"), &policy(), T0 + 2_500)
        .unwrap();
    assert!(again.repeated, "{again:?}");
    assert_eq!(
        again.outcome,
        ClaimOutcome::Claimed {
            generation: 1,
            takeover: false,
            lease: None
        }
    );
    // ...a token it never had settles nothing, and its owner settles it
    // by its generation, as it was granted.
    let stranger = "00000000000000000000000000000000";
    assert!(matches!(
        l.release("busy", Grant::new(1, Some(stranger)), T0 + 2_600)
            .unwrap(),
        ReleaseOutcome::FencedOut { .. }
    ));
    assert_eq!(
        l.complete("busy", 1, &response("late"), RETENTION_MS, T0 + 2_700)
            .unwrap(),
        CompleteOutcome::Stored
    );
    // A new grant carries a token, and is settled by it alone.
    let ClaimOutcome::Claimed {
        generation, lease, ..
    } = l.claim("freed", &fp("e"), &policy(), T0 + 3_000).unwrap()
    else {
        panic!("the released key is claimed again")
    };
    assert_eq!(generation, 3);
    let lease = lease.expect("a grant after the upgrade carries a token");
    assert!(matches!(
        l.complete(
            "freed",
            Grant::new(3, Some(stranger)),
            &response("x"),
            RETENTION_MS,
            T0 + 3_100
        )
        .unwrap(),
        CompleteOutcome::FencedOut { .. }
    ));
    assert_eq!(
        l.complete(
            "freed",
            Grant::new(3, Some(&lease)),
            &response("x"),
            RETENTION_MS,
            T0 + 3_200
        )
        .unwrap(),
        CompleteOutcome::Stored
    );
}
