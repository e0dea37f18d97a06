//! Transactions inside transactions: a ledger call made inside another
//! (an `execute` whose application calls `execute` for another key), and a
//! ledger call inside the caller's own transaction. Each level is a
//! savepoint; what a level that fails wrote — the records and the counts —
//! goes with it.

use crate::support::*;
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::{
    ClaimOutcome, ExecuteOutcome, KeyState, Ledger, SqlStore, StoreError,
};
use idempotency_ledger::orders;

const ORDER: &str = r#"{"sku":"SKU-1","quantity":2}"#;

/// An inner `execute` for `key` whose application writes an order and then fails.
fn failing_inner(
    l: &Ledger<RusqliteStore>,
    key: &str,
    now: i64,
) -> Result<ExecuteOutcome, StoreError> {
    l.execute(key, &fp(ORDER), &policy(), &capture(), now, |store| {
        orders::create(store, ORDER.as_bytes(), now)?;
        Err(StoreError::Sql("the inner application failed".into()))
    })
}

#[test]
fn a_nested_execute_that_fails_takes_back_only_its_own_writes_and_counts() {
    let l = ledger();
    let out = l
        .execute("outer", &fp(ORDER), &policy(), &capture(), 1_000, |store| {
            // The caller catches the inner failure and carries on.
            assert!(failing_inner(&l, "inner", 1_000).is_err());
            orders::create(store, ORDER.as_bytes(), 1_000)
        })
        .expect("the outer execute commits");
    assert!(matches!(out, ExecuteOutcome::Ran { .. }), "{out:?}");
    assert_eq!(count(&l, "orders"), 1, "only the outer order stands");
    assert!(
        l.lookup("inner", 2_000).unwrap().is_none(),
        "the inner key is free"
    );
    assert_eq!(
        l.lookup("outer", 2_000).unwrap().unwrap().state,
        KeyState::Completed
    );
    l.flush_pending().unwrap();
    let stats = l.stats(2_000).unwrap();
    assert_eq!(
        (stats.claims, stats.completed, stats.records),
        (1, 1, 1),
        "{stats:?}"
    );
    // The inner key then runs once, as a new key.
    let again = l
        .execute("inner", &fp(ORDER), &policy(), &capture(), 3_000, |store| {
            orders::create(store, ORDER.as_bytes(), 3_000)
        })
        .unwrap();
    assert!(
        matches!(
            again,
            ExecuteOutcome::Ran {
                takeover: false,
                ..
            }
        ),
        "{again:?}"
    );
}

#[test]
fn a_released_key_reclaimed_by_a_failing_nested_execute_stays_released() {
    let l = ledger();
    let ClaimOutcome::Claimed { generation, .. } =
        l.claim("k", &fp(ORDER), &policy(), 1_000).unwrap()
    else {
        panic!("claimed")
    };
    l.release("k", generation, 1_500).unwrap();
    l.execute("outer", &fp(ORDER), &policy(), &capture(), 2_000, |store| {
        assert!(failing_inner(&l, "k", 2_000).is_err());
        orders::create(store, ORDER.as_bytes(), 2_000)
    })
    .unwrap();
    let record = l.lookup("k", 3_000).unwrap().unwrap();
    assert_eq!(
        record.state,
        KeyState::Released,
        "never left in flight for a lease"
    );
    assert_eq!(record.generation, generation);
}

#[test]
fn counts_written_in_the_transaction_leave_with_an_enclosing_rollback() {
    let l = ledger().count_in_transaction();
    let one_key = idempotency_ledger::ledger::ClaimPolicy {
        max_keys: 1,
        ..policy()
    };
    // The caller's own transaction: the ledger's write, then a failure.
    let rolled_back: Result<(), StoreError> = l.store().atomically(|| {
        let out = l.execute("k1", &fp(ORDER), &one_key, &capture(), 1_000, |store| {
            orders::create(store, ORDER.as_bytes(), 1_000)
        })?;
        assert!(matches!(out, ExecuteOutcome::Ran { .. }));
        Err(StoreError::Sql(
            "the caller's transaction failed afterwards".into(),
        ))
    });
    assert!(rolled_back.is_err());
    assert_eq!(count(&l, "orders"), 0);
    assert!(l.lookup("k1", 2_000).unwrap().is_none());
    let stats = l.stats(2_000).unwrap();
    assert_eq!(
        (stats.claims, stats.completed, stats.records),
        (0, 0, 0),
        "{stats:?}"
    );
    // The quota counts what committed: with room for one key, a new key runs.
    let out = l
        .execute("k2", &fp(ORDER), &one_key, &capture(), 3_000, |store| {
            orders::create(store, ORDER.as_bytes(), 3_000)
        })
        .unwrap();
    assert!(matches!(out, ExecuteOutcome::Ran { .. }), "{out:?}");
    // And what committed is counted in the row itself, nothing pending.
    assert!(!l.has_pending());
    let stats = l.stats(4_000).unwrap();
    assert_eq!(
        (stats.claims, stats.completed, stats.records),
        (1, 1, 1),
        "{stats:?}"
    );
    let full = l
        .execute("k3", &fp(ORDER), &one_key, &capture(), 5_000, |store| {
            orders::create(store, ORDER.as_bytes(), 5_000)
        })
        .unwrap();
    assert!(
        matches!(
            full,
            ExecuteOutcome::Refused(idempotency_ledger::ledger::Refusal::LedgerFull { .. })
        ),
        "{full:?}"
    );
}

#[test]
fn a_replay_counted_in_the_enclosing_rollback_still_counts() {
    // A replay wrote nothing: it happened whatever the caller's transaction comes to.
    let l = ledger().count_in_transaction();
    l.execute("k", &fp(ORDER), &policy(), &capture(), 1_000, |store| {
        orders::create(store, ORDER.as_bytes(), 1_000)
    })
    .unwrap();
    let _: Result<(), StoreError> = l.store().atomically(|| {
        let out = l.execute(
            "k",
            &fp(ORDER),
            &policy(),
            &capture(),
            2_000,
            |_| -> Result<_, StoreError> { panic!("a completed key never runs") },
        )?;
        assert!(matches!(out, ExecuteOutcome::Refused(_)));
        Err(StoreError::Sql("rolled back".into()))
    });
    l.flush_pending().unwrap();
    assert_eq!(l.stats(3_000).unwrap().replays, 1);
}

/// The object's `execute` runs the orders app within its own transaction
/// (`orders::handle_within`: no savepoint of the app's own): an app that
/// fails after writing its order takes the order, the record and the
/// counts back with the ledger's transaction; the key then runs once.
#[test]
fn an_app_run_within_execute_that_fails_takes_back_its_order_with_the_record() {
    let l = ledger();
    let failed = l.execute("k", &fp(ORDER), &policy(), &capture(), 1_000, |store| {
        let created = orders::handle_within(store, "POST", "/v1/orders", ORDER.as_bytes(), 1_000)?;
        assert_eq!(
            created.status, 201,
            "the order was written before the failure"
        );
        Err::<idempotency_ledger::protocol::AppResponse, _>(StoreError::Sql(
            "the application failed after its insert".into(),
        ))
    });
    assert!(failed.is_err());
    assert_eq!(
        count(&l, "orders"),
        0,
        "the order went with the transaction"
    );
    assert!(l.lookup("k", 2_000).unwrap().is_none(), "the key is free");
    l.flush_pending().unwrap();
    let stats = l.stats(2_000).unwrap();
    assert_eq!((stats.claims, stats.records), (0, 0), "{stats:?}");
    let ran = l
        .execute("k", &fp(ORDER), &policy(), &capture(), 3_000, |store| {
            orders::handle_within(store, "POST", "/v1/orders", ORDER.as_bytes(), 3_000)
        })
        .unwrap();
    assert!(matches!(ran, ExecuteOutcome::Ran { .. }), "{ran:?}");
    assert_eq!(count(&l, "orders"), 1);
}
