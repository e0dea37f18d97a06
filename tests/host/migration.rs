//! The in-place upgrade from schema v1, from a database the v1 code wrote
//! (tests/fixtures/ledger-v1.sqlite: made at the commit that added it, by
//! the v1 ledger on rusqlite — its generator is in that commit).

use crate::support::*;
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::schema::Found;
use idempotency_ledger::ledger::{ClaimOutcome, CompleteOutcome, ExecuteOutcome, Ledger, Refusal};

/// The v1 fixture's clock: records were written around this time.
const T0: i64 = 1_800_000_000_000;

fn v1_ledger() -> Ledger<RusqliteStore> {
    let dir = std::env::temp_dir().join(format!(
        "ledger-v1-{}-{}",
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
                idempotency_ledger::orders::handle(store, "POST", "/v1/orders", order, T0 + 100)
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
        l.claim("freed", &fp("e"), &p, T0 + 2_000).unwrap(),
        ClaimOutcome::Claimed {
            generation: 2,
            takeover: false
        }
    );
    // busy is taken over once its lease has ended, at generation 2.
    assert_eq!(
        l.claim("busy", &fp("c"), &p, T0 + 61_001).unwrap(),
        ClaimOutcome::Claimed {
            generation: 2,
            takeover: true
        }
    );
}
