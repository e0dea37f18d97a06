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

#[test]
fn the_size_estimate_measures_first_then_after_64_writes_or_near_the_limit() {
    use idempotency_ledger::ledger::SizeEstimate;
    let mut e = SizeEstimate::default();
    assert_eq!(e.reached_without_measuring(1 << 30), None, "never measured");
    e.measured(1 << 20);
    assert_eq!(e.reached_without_measuring(1 << 30), Some(false));
    // Far from the limit, but 64 writing statements since: measure again.
    for _ in 0..SizeEstimate::WRITES_BETWEEN_CHECKS {
        e.wrote(100, 1);
    }
    assert_eq!(e.reached_without_measuring(1 << 30), None);
    e.measured(1 << 20);
    // Statements that wrote nothing do not move the bound.
    for _ in 0..1_000 {
        e.wrote(1 << 20, 0);
    }
    assert_eq!(e.reached_without_measuring(1 << 30), Some(false));
    // One large write brings the bound within an eighth of the limit.
    e.wrote(450 << 20, 1);
    assert_eq!(e.reached_without_measuring(1 << 30), None);
    // Already past seven eighths when measured: every key measures.
    e.measured(950 << 20);
    assert_eq!(e.reached_without_measuring(1 << 30), None);
    // Absurd sizes saturate instead of wrapping.
    e.measured(1);
    e.wrote(u64::MAX, u64::MAX);
    assert_eq!(e.reached_without_measuring(u64::MAX), None);
}

/// The estimate's bound holds against real SQLite growth: rows of every
/// size inserted into the records table (row + its sweep_at index entry),
/// the database never grows past the last measurement plus the bound.
#[test]
fn the_size_estimate_bounds_real_sqlite_growth() {
    use idempotency_ledger::ledger::{SizeEstimate, SqlValue};
    let l = ledger();
    let store = l.store();
    let mut e = SizeEstimate::default();
    e.measured(store.database_size().unwrap());
    let mut state = 0x2545_f491_u64;
    for i in 0..3_000u64 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let len = match state % 10 {
            0 => (state % 200_000) as usize,
            1..=3 => (state % 8_000) as usize,
            _ => (state % 300) as usize,
        };
        let key = format!("size-{i}-{}", "k".repeat((state % 200) as usize));
        let params = [
            SqlValue::Text(key.clone()),
            SqlValue::Text("f".repeat(64)),
            SqlValue::Blob(vec![7u8; len]),
            SqlValue::Integer(i as i64),
        ];
        let bound = SizeEstimate::bound_bytes(&params);
        assert_eq!(bound, (key.len() + 64 + len + 8) as u64);
        store
            .execute(
                "INSERT INTO idempotency_records (key, state, generation, fingerprint, components, \
                 created_at, claimed_at, expires_at, sweep_at, response_body, retained) \
                 VALUES (?1, 'completed', 1, ?2, '[]', 0, 0, ?4, ?4, ?3, 1)",
                &params,
            )
            .unwrap();
        e.wrote(bound, 2);
        let now = store.database_size().unwrap();
        // What the estimate allows without measuring: the limit `now` must
        // not be answered "not reached" while it has been.
        assert_ne!(
            e.reached_without_measuring(now),
            Some(false),
            "row {i} ({len} bytes): grew to {now}, past the estimate"
        );
        if i % 37 == 0 {
            e.measured(now);
        }
    }
}
