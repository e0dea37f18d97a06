use crate::support::*;
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::{LayoutRecord, Ledger};

#[test]
#[ignore]
fn generate_v2_fixture() {
    const T0: i64 = 1_800_000_000_000;
    const YEAR_MS: i64 = 31_536_000_000;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ledger-v2.sqlite"
    );
    let _ = std::fs::remove_file(path);
    let l = Ledger::new(RusqliteStore::new(
        rusqlite::Connection::open(path).unwrap(),
    ));
    l.migrate().unwrap();
    let p = policy();
    let mut long = policy();
    long.retention_ms = YEAR_MS;
    l.claim("kept-a-year", &fp("y"), &long, T0).unwrap();
    l.complete(
        "kept-a-year",
        1,
        &response(r#"{"id":"y"}"#),
        YEAR_MS,
        T0 + 10,
    )
    .unwrap();
    l.claim("done", &fp("a"), &p, T0).unwrap();
    l.complete("done", 1, &response(r#"{"id":1}"#), RETENTION_MS, T0 + 10)
        .unwrap();
    l.claim("busy", &fp("c"), &p, T0 + 1_000).unwrap();
    l.claim("freed", &fp("e"), &p, T0).unwrap();
    l.release("freed", 1, T0 + 5).unwrap();
    l.record_name("acme").unwrap();
    l.record_layout(&LayoutRecord {
        shards: 4,
        previous: Some(1),
        since: T0,
        window_ms: 100_000,
    })
    .unwrap();
    l.flush_pending().unwrap();
}
