//! Writes tests/fixtures/ledger-v1.sqlite with the schema-v1 ledger (run
//! once, at the commit that still had it: `cargo test --features
//! host-sqlite write_the_v1_fixture -- --ignored`).

use crate::support::*;
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::{ClaimOutcome, Ledger};
use idempotency_ledger::protocol::StoredResponse;

pub const T0: i64 = 1_800_000_000_000;

#[test]
#[ignore]
fn write_the_v1_fixture() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ledger-v1.sqlite"
    );
    let _ = std::fs::remove_file(path);
    let conn = rusqlite::Connection::open(path).unwrap();
    let l = Ledger::new(RusqliteStore::new(conn));
    l.migrate().unwrap();
    idempotency_ledger::orders::migrate(l.store()).unwrap();
    let p = policy();
    let gen = |o: ClaimOutcome| match o {
        ClaimOutcome::Claimed { generation, .. } => generation,
        other => panic!("{other:?}"),
    };
    // done: completed, replayed twice, once refused as reused.
    let g = gen(l.claim("done", &fp("a"), &p, T0).unwrap());
    l.complete("done", g, &response(r#"{"id":1}"#), p.retention_ms, T0 + 10)
        .unwrap();
    l.claim("done", &fp("a"), &p, T0 + 20).unwrap();
    l.claim("done", &fp("a"), &p, T0 + 30).unwrap();
    l.claim("done", &fp("b"), &p, T0 + 40).unwrap();
    // tomb: a tombstone.
    let g = gen(l.claim("tomb", &fp("t"), &p, T0).unwrap());
    let tomb = StoredResponse {
        status: 201,
        headers: vec![("content-type".into(), "application/json".into())],
        body: None,
    };
    l.complete("tomb", g, &tomb, p.retention_ms, T0 + 10)
        .unwrap();
    // busy: in flight under a live lease (refused once as in use).
    gen(l.claim("busy", &fp("c"), &p, T0 + 1_000).unwrap());
    l.claim("busy", &fp("c"), &p, T0 + 1_500).unwrap();
    // taken: taken over twice, in flight at generation 3; the first owner's
    // completion is fenced out.
    gen(l.claim("taken", &fp("d"), &p, T0).unwrap());
    gen(l.claim("taken", &fp("d"), &p, T0 + p.lease_ms + 1).unwrap());
    let g3 = gen(l
        .claim("taken", &fp("d"), &p, T0 + 2 * p.lease_ms + 2)
        .unwrap());
    assert_eq!(g3, 3);
    l.complete(
        "taken",
        1,
        &response("late"),
        p.retention_ms,
        T0 + 2 * p.lease_ms + 3,
    )
    .unwrap();
    // freed: released at generation 1.
    let g = gen(l.claim("freed", &fp("e"), &p, T0).unwrap());
    l.release("freed", g).unwrap();
    // order-1: an embedded order, in the same transaction as its record.
    l.execute(
        "order-1",
        &fp(r#"{"sku":"A","quantity":1}"#),
        &p,
        &capture(),
        T0 + 5,
        |store| {
            idempotency_ledger::orders::handle(
                store,
                "POST",
                "/v1/orders",
                br#"{"sku":"A","quantity":1}"#,
                T0 + 5,
            )
        },
    )
    .unwrap();
    l.flush_pending().unwrap();
}
