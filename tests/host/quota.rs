//! The byte quota (`MAX_DB_BYTES_PER_OBJECT`): new keys are refused with
//! `ledger_full` once the database reaches it; existing keys are answered.

use idempotency_ledger::ledger::{ClaimOutcome, Refusal, SqlStore};

use crate::support::*;

#[test]
fn new_keys_are_refused_once_the_database_reaches_its_byte_quota() {
    let l = ledger();
    let start = l.store().database_size().expect("rusqlite knows its size");
    assert!(start > 0);
    let mut p = policy();
    p.max_db_bytes = start + 64 * 1024;
    let body = "x".repeat(1_000);
    let mut accepted = 0;
    let mut refused = None;
    for i in 0..10_000 {
        let key = format!("k-{i}");
        match l.claim(&key, &fp(&body), &p, 1_000).unwrap() {
            ClaimOutcome::Claimed { generation, .. } => {
                accepted += 1;
                l.complete(&key, generation, &response(&body), RETENTION_MS, 1_000)
                    .unwrap();
            }
            ClaimOutcome::Refused(Refusal::LedgerFull { retry_after_ms }) => {
                refused = Some((i, retry_after_ms));
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let (at, retry_after_ms) = refused.expect("the byte quota refused a new key");
    assert!(
        accepted > 10,
        "a 64 KiB quota holds some records ({accepted})"
    );
    assert_eq!(at, accepted);
    assert!(retry_after_ms >= 1_000);
    assert!(l.store().database_size().unwrap() >= p.max_db_bytes);
    // Known keys are still answered: a replay, not a refusal.
    assert!(matches!(
        l.claim("k-0", &fp(&body), &p, 2_000).unwrap(),
        ClaimOutcome::Refused(Refusal::Completed { .. })
    ));
    // And stats shows the size.
    assert!(l.stats(0).unwrap().db_bytes as u64 >= p.max_db_bytes);
}

#[test]
fn a_sharded_tenants_stats_are_the_sum_of_its_objects() {
    use idempotency_ledger::ledger::Stats;
    let a = Stats {
        records: 3,
        completed: 2,
        in_flight: 1,
        claims: 4,
        waiting: 1,
        db_bytes: 100,
        next_sweep_at: Some("2026-12-01T00:00:05.000Z".into()),
        ..Stats::default()
    };
    let b = Stats {
        records: 2,
        completed: 2,
        claims: 2,
        replays: 7,
        db_bytes: 50,
        next_sweep_at: Some("2026-12-01T00:00:01.000Z".into()),
        ..Stats::default()
    };
    let mut total = Stats::default();
    total.add(&a);
    total.add(&b);
    total.add(&Stats::default());
    assert_eq!((total.records, total.completed, total.in_flight), (5, 4, 1));
    assert_eq!(
        (total.claims, total.replays, total.waiting, total.db_bytes),
        (6, 7, 1, 150)
    );
    assert_eq!(
        total.next_sweep_at.as_deref(),
        Some("2026-12-01T00:00:01.000Z")
    );
}
