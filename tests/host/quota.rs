//! The byte quota (`MAX_DB_BYTES_PER_OBJECT`): new keys — and rebirths,
//! reclaims and takeovers — are refused with `ledger_full` once the
//! database reaches it; existing keys are answered; a completion it has no
//! room for is stored as a counted tombstone.

use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::{
    ClaimOutcome, ClaimPolicy, CompleteOutcome, ExecuteOutcome, Ledger, Refusal, SqlStore,
    StoreError, QUOTA_OVERSHOOT_PER_RECORD,
};
use idempotency_ledger::protocol::{AppResponse, CapturePolicy, StoredResponse};

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

// ---------------------------------------------------------------------
// The quota holds for every write that grows the database (docs/contract.md
// §4): a claim on a record the ledger holds is refused as a new key is,
// and a completion the quota has no room for stores a counted tombstone.

/// A body of a million bytes: what the issue's load answered with.
fn large_response() -> StoredResponse {
    StoredResponse {
        status: 201,
        headers: vec![("content-type".into(), "application/json".into())],
        body: Some(vec![b'x'; 1_000_000]),
    }
}

/// A policy whose byte quota sits 64 KiB above what `l` holds now.
fn quota_above(l: &Ledger<RusqliteStore>) -> ClaimPolicy {
    let mut p = policy();
    p.max_db_bytes = l.store().database_size().unwrap() + 64 * 1024;
    p
}

/// Completes records with 4 KB bodies (no quota) until the database
/// reaches `limit`.
fn fill_to(l: &Ledger<RusqliteStore>, limit: u64, now: i64) {
    let body = "f".repeat(4_000);
    let mut i = 0;
    while l.store().database_size().unwrap() < limit {
        let key = format!("fill-{i}");
        let ClaimOutcome::Claimed { generation, .. } =
            l.claim(&key, &fp(&key), &policy(), now).unwrap()
        else {
            panic!("fill claim refused")
        };
        l.complete(&key, generation, &response(&body), RETENTION_MS, now)
            .unwrap();
        i += 1;
    }
}

fn assert_full(out: ClaimOutcome, what: &str) {
    assert!(
        matches!(out, ClaimOutcome::Refused(Refusal::LedgerFull { retry_after_ms }) if retry_after_ms >= 1_000),
        "{what}: want ledger_full once the database reached its byte quota, got {out:?}"
    );
}

#[test]
fn a_completion_past_the_byte_quota_is_a_counted_tombstone_within_the_stated_bound() {
    // The issue's load: 8 keys in flight at once, each answered with a
    // million bytes, under a quota of 64 KiB above an empty ledger.
    let l = ledger();
    let p = quota_above(&l);
    let keys: Vec<String> = (0..8).map(|i| format!("big-{i}")).collect();
    for key in &keys {
        assert!(matches!(
            l.claim(key, &fp(key), &p, 1_000).unwrap(),
            ClaimOutcome::Claimed { generation: 1, .. }
        ));
    }
    for key in &keys {
        let out = l
            .complete_within(
                key,
                1,
                &large_response(),
                RETENTION_MS,
                p.max_db_bytes,
                2_000,
            )
            .unwrap();
        assert_eq!(
            out,
            (CompleteOutcome::Stored, true),
            "stored, as a tombstone the quota made: the caller keeps its answer"
        );
    }
    let bytes = l.store().database_size().unwrap();
    let bound = p.max_db_bytes + (1 + 8) * QUOTA_OVERSHOOT_PER_RECORD;
    assert!(
        bytes <= bound,
        "db_bytes {bytes} past the stated bound {bound} (quota {})",
        p.max_db_bytes
    );
    // Every replay says the answer was not retained, naming its status.
    for key in &keys {
        match l.claim(key, &fp(key), &p, 3_000).unwrap() {
            ClaimOutcome::Refused(Refusal::Completed { response, .. }) => {
                assert_eq!((response.status, response.body), (201, None), "{key}")
            }
            other => panic!("{key}: {other:?}"),
        }
        assert_eq!(l.lookup(key, 3_000).unwrap().unwrap().retained, Some(false));
    }
    l.flush_pending().unwrap();
    let s = l.stats(3_000).unwrap();
    assert_eq!((s.quota_tombstones, s.completed), (8, 8));
}

#[test]
fn a_completion_the_quota_has_room_for_keeps_its_body_and_counts_no_tombstone() {
    let l = ledger();
    let p = quota_above(&l);
    l.claim("small", &fp("small"), &p, 1_000).unwrap();
    l.complete_within(
        "small",
        1,
        &response("ok"),
        RETENTION_MS,
        p.max_db_bytes,
        2_000,
    )
    .unwrap();
    match l.claim("small", &fp("small"), &p, 3_000).unwrap() {
        ClaimOutcome::Refused(Refusal::Completed { response: r, .. }) => {
            assert_eq!(r, response("ok"))
        }
        other => panic!("{other:?}"),
    }
    // A body over MAX_STORED_BODY_BYTES came as a tombstone: not the quota's.
    l.claim("huge", &fp("huge"), &p, 1_000).unwrap();
    let tomb = StoredResponse {
        body: None,
        ..response("")
    };
    l.complete_within("huge", 1, &tomb, RETENTION_MS, p.max_db_bytes, 2_000)
        .unwrap();
    l.flush_pending().unwrap();
    assert_eq!(l.stats(3_000).unwrap().quota_tombstones, 0);
}

#[test]
fn an_expired_record_is_not_reborn_once_the_database_reached_its_byte_quota() {
    let l = ledger();
    let p = quota_above(&l);
    l.claim("old", &fp("old"), &policy(), 1_000).unwrap();
    l.complete("old", 1, &response("r"), 1_000, 1_000).unwrap();
    fill_to(&l, p.max_db_bytes, 1_000);
    let later = 1_000 + RETENTION_MS + 1;
    assert_full(
        l.claim("old", &fp("old"), &p, later).unwrap(),
        "an expired record",
    );
    // Without a quota it is reborn as before.
    assert!(matches!(
        l.claim("old", &fp("old"), &policy(), later).unwrap(),
        ClaimOutcome::Claimed { generation: 2, .. }
    ));
}

#[test]
fn a_released_record_is_not_reclaimed_once_the_database_reached_its_byte_quota() {
    let l = ledger();
    let p = quota_above(&l);
    l.claim("rel", &fp("rel"), &policy(), 1_000).unwrap();
    l.release("rel", 1, 1_000).unwrap();
    fill_to(&l, p.max_db_bytes, 1_000);
    assert_full(
        l.claim("rel", &fp("rel"), &p, 2_000).unwrap(),
        "a released record",
    );
    assert_eq!(
        l.lookup("rel", 2_000).unwrap().unwrap().generation,
        1,
        "the refusal wrote nothing"
    );
}

#[test]
fn an_ended_lease_is_not_taken_over_once_the_database_reached_its_byte_quota() {
    let l = ledger();
    let p = quota_above(&l);
    l.claim("t", &fp("t"), &policy(), 1_000).unwrap();
    fill_to(&l, p.max_db_bytes, 1_000);
    let after = 1_000 + LEASE_MS + 1;
    assert_full(l.claim("t", &fp("t"), &p, after).unwrap(), "an ended lease");
    l.flush_pending().unwrap();
    assert_eq!(l.stats(after).unwrap().takeovers, 0);
}

#[test]
fn an_executed_answer_past_the_byte_quota_is_a_counted_tombstone() {
    let l = ledger();
    let mut p = quota_above(&l);
    let capture = CapturePolicy {
        max_stored_body_bytes: 1_900_000,
        ..capture()
    };
    let app = |_: &RusqliteStore| -> Result<AppResponse, StoreError> {
        Ok(AppResponse {
            status: 201,
            headers: vec![],
            body: vec![b'x'; 1_000_000],
        })
    };
    // A new key, and a released one (through the claim it needs).
    let out = l
        .execute("new", &fp("new"), &p, &capture, 1_000, app)
        .unwrap();
    assert!(
        matches!(&out, ExecuteOutcome::Ran { retained: false, response, .. } if response.body.len() == 1_000_000),
        "the caller gets its answer, not kept: {out:?}"
    );
    l.claim("rel", &fp("rel"), &p, 1_000).unwrap();
    l.release("rel", 1, 1_000).unwrap();
    let out = l
        .execute("rel", &fp("rel"), &p, &capture, 2_000, app)
        .unwrap();
    assert!(
        matches!(
            out,
            ExecuteOutcome::Ran {
                retained: false,
                ..
            }
        ),
        "{out:?}"
    );
    assert!(l.store().database_size().unwrap() <= p.max_db_bytes);
    l.flush_pending().unwrap();
    assert_eq!(l.stats(2_000).unwrap().quota_tombstones, 2);
    // With room, the same answer is kept.
    p.max_db_bytes = u64::MAX;
    let out = l
        .execute("roomy", &fp("roomy"), &p, &capture, 3_000, app)
        .unwrap();
    assert!(
        matches!(out, ExecuteOutcome::Ran { retained: true, .. }),
        "{out:?}"
    );
}
