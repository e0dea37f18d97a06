//! The single-hop `execute`: claim + embedded application + complete in one
//! transaction.

use crate::support::*;
use idempotency_ledger::ledger::{ExecuteOutcome, Refusal, StoreError};
use idempotency_ledger::orders;

const ORDER: &str = r#"{"sku":"SKU-1","quantity":2}"#;

fn run(
    l: &idempotency_ledger::ledger::Ledger<
        idempotency_ledger::ledger::rusqlite_store::RusqliteStore,
    >,
    key: &str,
    body: &str,
    now: i64,
) -> ExecuteOutcome {
    l.execute(key, &fp(body), &policy(), &capture(), now, |store| {
        orders::create(store, body.as_bytes(), now)
    })
    .expect("execute")
}

#[test]
fn the_first_execute_creates_one_order_and_replays_return_it() {
    let l = ledger();
    let first = run(&l, "k", ORDER, 1_000);
    let ExecuteOutcome::Ran {
        generation: 1,
        retained: true,
        response,
        ..
    } = first
    else {
        panic!("{first:?}")
    };
    assert_eq!(response.status, 201);
    let location = response
        .headers
        .iter()
        .find(|(n, _)| n == "location")
        .map(|(_, v)| v.clone());
    assert_eq!(location.as_deref(), Some("/v1/orders/ord_00000001"));
    for t in 0..5 {
        match run(&l, "k", ORDER, 2_000 + t) {
            ExecuteOutcome::Refused(Refusal::Completed {
                response: stored, ..
            }) => assert_eq!(stored.body.as_deref(), Some(response.body.as_slice())),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(count(&l, "orders"), 1);
}

#[test]
fn distinct_keys_create_distinct_orders() {
    let l = ledger();
    for k in ["a", "b", "c"] {
        assert!(matches!(
            run(&l, k, ORDER, 1_000),
            ExecuteOutcome::Ran { .. }
        ));
    }
    assert_eq!(count(&l, "orders"), 3);
}

#[test]
fn an_invalid_order_is_stored_and_replayed_like_any_answer() {
    let l = ledger();
    let ExecuteOutcome::Ran { response, .. } = run(&l, "k", "{oops", 1_000) else {
        panic!()
    };
    assert_eq!(response.status, 400);
    assert!(String::from_utf8_lossy(&response.body).contains("invalid-order"));
    assert!(
        matches!(run(&l, "k", "{oops", 2_000), ExecuteOutcome::Refused(Refusal::Completed { response, .. }) if response.status == 400)
    );
    assert_eq!(count(&l, "orders"), 0);
}

#[test]
fn a_failing_application_rolls_back_its_writes_and_the_claim() {
    let l = ledger();
    let out = l.execute("k", &fp(ORDER), &policy(), &capture(), 1_000, |store| {
        orders::create(store, ORDER.as_bytes(), 1_000)?;
        Err::<idempotency_ledger::protocol::AppResponse, StoreError>(StoreError::Sql(
            "boom after the insert".into(),
        ))
    });
    assert!(out.is_err());
    assert_eq!(count(&l, "orders"), 0, "the order insert was rolled back");
    assert_eq!(
        count(&l, "idempotency_records"),
        0,
        "the claim was rolled back"
    );
    assert!(matches!(
        run(&l, "k", ORDER, 2_000),
        ExecuteOutcome::Ran { generation: 1, .. }
    ));
    assert_eq!(count(&l, "orders"), 1);
}

#[test]
fn a_different_body_under_the_same_key_is_refused_without_an_order() {
    let l = ledger();
    run(&l, "k", ORDER, 1_000);
    match run(&l, "k", r#"{"sku":"SKU-1","quantity":3}"#, 2_000) {
        ExecuteOutcome::Refused(Refusal::Mismatch { differs }) => assert_eq!(differs, vec!["body"]),
        other => panic!("{other:?}"),
    }
    assert_eq!(count(&l, "orders"), 1);
}

#[test]
fn the_order_list_is_newest_first_and_at_most_100() {
    let l = ledger();
    for i in 0..105 {
        let body = format!(r#"{{"sku":"S{i}","quantity":1}}"#);
        orders::create(l.store(), body.as_bytes(), 1_000 + i).unwrap();
    }
    let list = orders::handle(l.store(), "GET", "/v1/orders", b"", 2_000).unwrap();
    assert_eq!(list.status, 200);
    let doc: serde_json::Value = serde_json::from_slice(&list.body).unwrap();
    let orders = doc["orders"].as_array().unwrap();
    assert_eq!(orders.len(), 100);
    assert_eq!(orders[0]["sku"], "S104");
    assert_eq!(orders[99]["sku"], "S5");
    let one = orders::handle(l.store(), "GET", "/v1/orders/ord_00000001", b"", 2_000).unwrap();
    assert_eq!(one.status, 200);
    let missing = orders::handle(l.store(), "GET", "/v1/orders/ord_99999999", b"", 2_000).unwrap();
    assert_eq!(missing.status, 404);
    let wrong = orders::handle(l.store(), "DELETE", "/v1/orders", b"", 2_000).unwrap();
    assert_eq!(wrong.status, 405);
}

#[test]
fn a_counts_flush_that_fails_after_the_commit_never_fails_the_execute_and_the_counts_are_kept() {
    use idempotency_ledger::ledger::SqlStore;
    let l = counts_fail_ledger();
    let exec = |key: &str, now: i64| {
        l.execute(key, &fp(ORDER), &policy(), &capture(), now, |store| {
            orders::create(store, ORDER.as_bytes(), now)
        })
    };
    assert!(matches!(exec("a", 1_000), Ok(ExecuteOutcome::Ran { .. })));
    l.store().failing.set(true);
    // Due (2 s later): the flush runs after the commit, and fails.
    let second = exec("b", 4_000);
    assert!(
        matches!(second, Ok(ExecuteOutcome::Ran { .. })),
        "{second:?}"
    );
    assert_eq!(
        l.store()
            .inner
            .query("SELECT count(*) FROM orders", &[])
            .expect("count")[0][0],
        2i64.into()
    );
    let stats = l.stats(4_000).expect("stats");
    assert_eq!(
        (stats.claims, stats.completed),
        (2, 2),
        "the counts are kept in memory"
    );
    assert!(stats.unwritten_counts > 0);
    // The next flush writes them all.
    l.store().failing.set(false);
    assert!(matches!(exec("c", 7_000), Ok(ExecuteOutcome::Ran { .. })));
    let stats = l.stats(7_000).expect("stats");
    assert_eq!(
        (stats.claims, stats.completed, stats.unwritten_counts),
        (3, 3, 0)
    );
}

#[test]
fn replays_reported_by_a_gateway_are_counted_once_when_their_write_fails_and_is_sent_again() {
    let l = counts_fail_ledger();
    let ran = l
        .execute("k", &fp(ORDER), &policy(), &capture(), 1_000, |store| {
            orders::create(store, ORDER.as_bytes(), 1_000)
        })
        .expect("execute");
    let ExecuteOutcome::Ran { generation, .. } = ran else {
        panic!("{ran:?}")
    };
    l.flush_pending().expect("flush");
    // The write fails: the gateway is answered 503 and keeps its counts...
    l.store().failing.set(true);
    assert!(l.write_reported(&[("k", generation, 5)], 2, 2_000).is_err());
    l.store().failing.set(false);
    assert_eq!(
        l.stats(2_000).unwrap().replays,
        0,
        "nothing of a failed report is kept"
    );
    // ...and sends them again: counted once.
    l.write_reported(&[("k", generation, 5)], 2, 3_000)
        .expect("written");
    let stats = l.stats(3_000).unwrap();
    assert_eq!((stats.replays, stats.complete_failed), (5, 2));
    assert_eq!(l.lookup("k", 3_000).unwrap().unwrap().replays, 5);
    l.flush_pending().expect("flush");
    assert_eq!(l.stats(4_000).unwrap().replays, 5, "never written twice");
}
