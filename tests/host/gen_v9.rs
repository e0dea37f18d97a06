use crate::support::*;
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::Ledger;

#[test]
#[ignore]
fn generate_v9_fixture() {
    const T0: i64 = 1_800_000_000_000;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ledger-v9.sqlite"
    );
    let _ = std::fs::remove_file(path);
    let l = Ledger::new(RusqliteStore::new(
        rusqlite::Connection::open(path).unwrap(),
    ));
    l.migrate().unwrap();
    idempotency_ledger::orders::migrate(l.store()).unwrap();
    let p = policy();
    l.claim("done", &fp("a"), &p, T0).unwrap();
    l.complete("done", 1, &response(r#"{"id":1}"#), RETENTION_MS, T0 + 10)
        .unwrap();
    l.claim("done", &fp("a"), &p, T0 + 20).unwrap(); // a replay
    l.claim("done", &fp("b"), &p, T0 + 30).unwrap(); // reused
    l.claim_as("busy", &fp("c"), Some("attempt-1"), &p, T0 + 1_000)
        .unwrap();
    l.claim("busy", &fp("c"), &p, T0 + 1_010).unwrap(); // in use
    l.claim("freed", &fp("e"), &p, T0).unwrap();
    l.release("freed", 1, T0 + 5).unwrap();
    l.claim("freed", &fp("e"), &p, T0 + 6).unwrap(); // generation 2
    l.release("freed", 2, T0 + 7).unwrap();
    l.claim("gone", &fp("g"), &p, T0 + 8).unwrap();
    l.complete("gone", 1, &response("{}"), RETENTION_MS, T0 + 9)
        .unwrap();
    l.evict("gone", 0, T0 + 50).unwrap();
    l.record_name("acme").unwrap();
    l.flush_pending().unwrap();
}
