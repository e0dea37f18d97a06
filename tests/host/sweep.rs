//! The bounded sweep: deletes only what has expired, at most a batch at a
//! time, through the `expires_at` index.

use crate::support::*;
use idempotency_ledger::ledger::{ClaimOutcome, Refusal};
use rand::{rngs::SmallRng, Rng, SeedableRng};

#[test]
fn the_sweep_deletes_only_expired_records_in_bounded_batches() {
    let l = ledger();
    let mut p = policy();
    p.retention_ms = 1_000;
    p.lease_ms = 500;
    for i in 0..25 {
        l.claim(&format!("k{i}"), &fp("a"), &p, i * 100).unwrap();
    }
    // At t = 2_000, records claimed at 0..=1_000 have expired (claimed_at + 1_000 <= 2_000): 11 of them.
    let first = l.sweep(2_000, 4).unwrap();
    assert_eq!((first.deleted, first.batch_full), (4, true));
    let mut total = first.deleted;
    loop {
        let out = l.sweep(2_000, 4).unwrap();
        assert!(out.deleted <= 4);
        total += out.deleted;
        if !out.batch_full {
            assert_eq!(out.next_expires_at, Some(1_100 + 1_000));
            break;
        }
    }
    assert_eq!(total, 11);
    assert_eq!(count(&l, "idempotency_records"), 14);
    let stats = l.stats(0).unwrap();
    assert_eq!((stats.swept, stats.records), (11, 14));
    assert_eq!(
        l.held_records().unwrap(),
        14,
        "the quota counter follows the sweep"
    );
}

#[test]
fn an_empty_ledger_sweeps_nothing_and_has_no_next_expiry() {
    let l = ledger();
    let out = l.sweep(1_000, 10).unwrap();
    assert_eq!(
        (out.deleted, out.batch_full, out.next_expires_at),
        (0, false, None)
    );
    assert_eq!(l.stats(0).unwrap().next_sweep_at, None);
}

#[test]
fn the_sweep_never_deletes_a_record_inside_its_window() {
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    for _round in 0..40 {
        let l = ledger();
        let mut p = policy();
        p.retention_ms = rng.gen_range(1..5_000);
        p.lease_ms = rng.gen_range(1..3_000);
        let mut now = 0;
        for i in 0..rng.gen_range(1..60) {
            now += rng.gen_range(0..500);
            let key = format!("k{}", rng.gen_range(0..i + 1));
            if let Ok(idempotency_ledger::ledger::ClaimOutcome::Claimed { generation, .. }) =
                l.claim(&key, &fp("a"), &p, now)
            {
                match rng.gen_range(0..3) {
                    0 => {
                        l.complete(&key, generation, &response("r"), p.retention_ms, now)
                            .unwrap();
                    }
                    1 => {
                        l.release(&key, generation, 0).unwrap();
                    }
                    _ => {}
                }
            }
        }
        let sweep_at = now + rng.gen_range(0..6_000);
        let conn = l.store().connection();
        let live_before: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM idempotency_records WHERE expires_at > ?",
                [sweep_at],
                |r| r.get(0),
            )
            .unwrap();
        let batch = rng.gen_range(1..10);
        loop {
            let out = l.sweep(sweep_at, batch).unwrap();
            assert!(out.deleted <= batch);
            if !out.batch_full {
                break;
            }
        }
        let live_after: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM idempotency_records WHERE expires_at > ?",
                [sweep_at],
                |r| r.get(0),
            )
            .unwrap();
        let all_after: i64 = conn
            .query_row("SELECT COUNT(*) FROM idempotency_records", [], |r| r.get(0))
            .unwrap();
        assert_eq!(live_after, live_before, "no live record was deleted");
        assert_eq!(all_after, live_before, "every expired record was deleted");
    }
}

#[test]
fn the_sweep_finds_its_candidates_through_the_sweep_at_index() {
    let l = ledger();
    let plan: Vec<String> = {
        let conn = l.store().connection();
        let mut stmt = conn
            .prepare("EXPLAIN QUERY PLAN SELECT key FROM idempotency_records WHERE sweep_at <= ?1 AND expires_at <= ?1 AND NOT (state = 'in_flight' AND lease_expires_at > ?1) ORDER BY sweep_at LIMIT ?2")
            .unwrap();
        stmt.query_map([0i64, 10], |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert!(
        plan.iter()
            .any(|d| d.contains("USING") && d.contains("idempotency_records_sweep_at")),
        "plan: {plan:?}"
    );
    assert!(
        !plan.iter().any(|d| d.contains("TEMP B-TREE")),
        "no sort step: {plan:?}"
    );
}

#[test]
fn a_record_whose_lease_is_live_is_never_swept_or_reborn() {
    let l = ledger();
    // A caller-chosen retention shorter than the lease (RPC refuses this;
    // the ledger must hold even so): the record outlives the lease.
    let mut p = policy();
    p.retention_ms = 1_000;
    p.lease_ms = 20_000;
    l.claim("slow", &fp("a"), &p, 0).unwrap();
    assert_eq!(l.sweep(4_000, 100).unwrap().deleted, 0, "lease live at 4 s");
    let retry = l.claim("slow", &fp("a"), &p, 4_000).unwrap();
    assert!(
        matches!(
            retry,
            ClaimOutcome::Refused(Refusal::InFlight { generation: 1, .. })
        ),
        "a retry during the lease is 409, never a second run: {retry:?}"
    );
    assert_eq!(l.next_sweep_at(4_000).unwrap(), Some(20_000));
    // Once the lease has ended the usual rules apply again.
    assert_eq!(l.sweep(20_000, 100).unwrap().deleted, 1);
}

#[test]
fn alarms_fall_on_the_interval_grid_never_before_their_time() {
    use idempotency_ledger::ledger::sweep::on_grid;
    assert_eq!(on_grid(60_000, 60_000), 60_000);
    assert_eq!(on_grid(60_001, 60_000), 120_000);
    assert_eq!(on_grid(1, 1_000), 1_000);
    assert_eq!(on_grid(0, 1_000), 0);
    assert_eq!(on_grid(1_234, 0), 1_234, "a zero interval is no grid");
    assert_eq!(on_grid(i64::MAX - 5, 1_000), i64::MAX);
    for t in [1i64, 999, 1_000, 59_999, 86_400_123] {
        let at = on_grid(t, 1_000);
        assert!(at >= t && at - t < 1_000, "{t} -> {at}");
    }
}

#[test]
fn the_generation_floor_is_written_with_the_sweep_s_deletes_never_after_them() {
    // A flush of the counters that fails after the deletes committed used
    // to leave the raised floor in memory only: an eviction then lost it,
    // and a swept key was claimed again at a generation a stale owner of
    // the old record could still complete.
    let file = LedgerFile::new("floor");
    let short = idempotency_ledger::ledger::ClaimPolicy {
        lease_ms: 1_000,
        retention_ms: 2_000,
        ..policy()
    };
    {
        let l = file.open_failing();
        let ClaimOutcome::Claimed { generation, .. } =
            l.claim("k", &fp("{}"), &short, 1_000).unwrap()
        else {
            panic!("claimed")
        };
        assert_eq!(generation, 1);
        l.complete("k", 1, &response("{}"), 2_000, 1_500).unwrap();
        l.flush_pending().unwrap();
        // The counters row cannot be written: the sweep deletes nothing
        // rather than deleting without its floor.
        l.store().failing.set(true);
        assert!(l.sweep(10_000, 100).is_err());
        l.store().failing.set(false);
        // The instance is gone (an eviction) with whatever it kept in memory.
    }
    let l = file.open_failing();
    let ClaimOutcome::Claimed { generation, .. } = l.claim("k", &fp("{}"), &short, 11_000).unwrap()
    else {
        panic!("claimed again")
    };
    assert!(
        generation >= 2,
        "a swept key is never reborn at generation {generation}"
    );
    // And a sweep that succeeds leaves the floor in the row itself.
    l.complete("k", generation, &response("{}"), 2_000, 11_500)
        .unwrap();
    assert_eq!(l.sweep(20_000, 100).unwrap().deleted, 1);
    let floor: i64 = l
        .store()
        .inner
        .connection()
        .query_row(
            "SELECT generation_floor FROM ledger_state WHERE id = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(floor, generation);
}

#[test]
fn the_next_sweep_reads_a_bounded_number_of_rows_whatever_the_backlog() {
    use idempotency_ledger::ledger::sweep::DUE_SCAN;
    let l = ledger();
    let short = idempotency_ledger::ledger::ClaimPolicy {
        lease_ms: 1_000,
        retention_ms: 1_000,
        ..policy()
    };
    // 500 records expired and not yet swept (the alarm has not run).
    for i in 0..500 {
        assert!(matches!(
            l.claim(&format!("k{i}"), &fp("{}"), &short, 1_000 + i)
                .unwrap(),
            ClaimOutcome::Claimed { .. }
        ));
    }
    let now = 10_000;
    // With a backlog of due records the sweep is due now, never later.
    assert_eq!(l.next_sweep_at(now).unwrap(), Some(now));
    // Below DUE_SCAN due records, the least expiry among them.
    let l = ledger();
    for i in 0..(DUE_SCAN - 1) {
        l.claim(&format!("k{i}"), &fp("{}"), &short, 1_000 + i)
            .unwrap();
    }
    assert_eq!(l.next_sweep_at(now).unwrap(), Some(2_000));
    // And nothing due: the next sweep_at ahead.
    assert_eq!(l.next_sweep_at(1_500).unwrap(), Some(2_000));
}

#[test]
fn the_hourly_recount_is_on_the_alarm_even_when_no_record_expires_for_a_day() {
    use idempotency_ledger::ledger::sweep::RECOUNT_AFTER_MS;
    // Epoch milliseconds, as the objects' clocks give them.
    const T0: i64 = 1_764_000_000_000;
    let l = ledger();
    l.execute("k", &fp("{}"), &policy(), &capture(), T0 + 1_000, |_| {
        Ok::<_, idempotency_ledger::ledger::StoreError>(
            idempotency_ledger::protocol::AppResponse::json(201, &"ok"),
        )
    })
    .unwrap();
    // Never recounted: due an hour from now (then hourly), never at once.
    assert_eq!(
        l.next_recount_at(T0 + 1_000).unwrap(),
        Some(T0 + 1_000 + RECOUNT_AFTER_MS)
    );
    // The alarm of that hour recounts.
    let swept_at = T0 + 2_000 + RECOUNT_AFTER_MS;
    let first = l.sweep(swept_at, 100).unwrap();
    assert_eq!(first.deleted, 0);
    assert_eq!(
        first.next_recount_at,
        Some(swept_at + RECOUNT_AFTER_MS),
        "the sweep recounted"
    );
    // The record expires in a day; the alarm comes back within the hour.
    let at = first.next_alarm_at(swept_at, 60_000).unwrap();
    assert!(at <= swept_at + RECOUNT_AFTER_MS + 60_000, "{at}");
    assert!(first.next_expires_at.unwrap() > swept_at + 20 * RECOUNT_AFTER_MS);
    // No record: no recount, no alarm for it.
    assert_eq!(ledger().next_recount_at(T0 + 1_000).unwrap(), None);
}
