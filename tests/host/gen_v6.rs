use crate::support::*;
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::Ledger;

#[test]
#[ignore]
fn generate_v6_fixture() {
    const T0: i64 = 1_800_000_000_000;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ledger-v6.sqlite"
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
    l.claim("busy", &fp("c"), &p, T0 + 1_000).unwrap();
    l.claim("busy", &fp("c"), &p, T0 + 1_010).unwrap(); // in use
    l.claim("freed", &fp("e"), &p, T0).unwrap();
    l.release("freed", 1, T0 + 5).unwrap();
    // A claim that names its attempt (schema 6).
    l.claim_as("named", &fp("f"), Some("0b6c1f4e-6a2b-4d1e-9b7a-3f2d8c5e1a90"), &p, T0 + 40)
        .unwrap();
    l.record_name("acme").unwrap();
    l.flush_pending().unwrap();
}
