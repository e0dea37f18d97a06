//! Generations only grow (docs/contract.md §4): the sequence that used to
//! run a key twice — a slow owner whose record the sweep deleted, a retry
//! that claimed the key again at generation 1, the slow owner's late
//! completion accepted and the retry's fenced out.

use crate::support::*;
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::{ClaimOutcome, ClaimPolicy, CompleteOutcome, Ledger, Refusal};

/// LEASE_SECONDS=2, RETENTION_SECONDS=3, and an origin timeout of `grace`.
fn short(grace_ms: i64) -> ClaimPolicy {
    ClaimPolicy {
        lease_ms: 2_000,
        retention_ms: 3_000,
        settle_grace_ms: grace_ms,
        ..policy()
    }
}

fn granted(out: ClaimOutcome) -> (i64, bool) {
    match out {
        ClaimOutcome::Claimed {
            generation,
            takeover,
            ..
        } => (generation, takeover),
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn replayed_body(l: &Ledger<RusqliteStore>, p: &ClaimPolicy, now: i64) -> Vec<u8> {
    match l.claim("k", &fp("a"), p, now).unwrap() {
        ClaimOutcome::Refused(Refusal::Completed { response, .. }) => response.body.unwrap(),
        other => panic!("expected a replay, got {other:?}"),
    }
}

/// A (generation 1) completes late and is fenced out; B (generation 2)
/// completes, and B's answer is what replays.
fn late_owner_fenced_out_and_retry_replays(l: &Ledger<RusqliteStore>, p: &ClaimPolicy) {
    assert!(matches!(
        l.complete("k", 1, &response("A"), p.retention_ms, 6_000)
            .unwrap(),
        CompleteOutcome::FencedOut { .. }
    ));
    assert_eq!(
        l.complete("k", 2, &response("B"), p.retention_ms, 8_000)
            .unwrap(),
        CompleteOutcome::Stored
    );
    assert_eq!(replayed_body(l, p, 8_100), b"B");
}

#[test]
fn the_sweep_spares_a_record_whose_owner_may_still_complete() {
    let l = ledger();
    let p = short(30_000);
    assert_eq!(granted(l.claim("k", &fp("a"), &p, 0).unwrap()), (1, false));
    // A's lease ended at 2 s and its retention at 3 s, but it may still be
    // waiting for its origin: the sweep leaves its record alone.
    assert_eq!(l.sweep(3_500, 100).unwrap().deleted, 0);
    // B takes over at the next generation and runs.
    assert_eq!(
        granted(l.claim("k", &fp("a"), &p, 4_000).unwrap()),
        (2, true)
    );
    late_owner_fenced_out_and_retry_replays(&l, &p);
    // Only once the grace has passed as well is an unfinished record swept.
    let g = granted(l.claim("slow", &fp("a"), &p, 10_000).unwrap()).0;
    assert_eq!(g, 1);
    l.sweep(10_000 + 2_000 + 29_999, 100).unwrap();
    assert!(
        l.holds("slow", 10_000 + 2_000 + 29_999).unwrap(),
        "kept through the grace"
    );
    assert_eq!(l.sweep(10_000 + 2_000 + 30_000, 100).unwrap().deleted, 1);
    assert!(!l.holds("slow", 10_000 + 2_000 + 30_000).unwrap());
}

#[test]
fn a_key_claimed_again_after_the_sweep_starts_above_every_generation_swept() {
    let l = ledger();
    // No grace: the record goes as soon as its lease and retention end.
    let p = short(0);
    assert_eq!(granted(l.claim("k", &fp("a"), &p, 0).unwrap()), (1, false));
    assert_eq!(l.sweep(3_500, 100).unwrap().deleted, 1);
    // B claims the swept key: a new record, but never generation 1 again.
    assert_eq!(
        granted(l.claim("k", &fp("a"), &p, 4_000).unwrap()),
        (2, false)
    );
    late_owner_fenced_out_and_retry_replays(&l, &p);
    // Every new key starts above the floor, too.
    assert_eq!(granted(l.claim("other", &fp("a"), &p, 8_200).unwrap()).0, 2);
}

#[test]
fn the_generation_floor_survives_a_restart_of_the_object() {
    let file = LedgerFile::new("floor");
    let p = short(0);
    {
        let l = file.open();
        for generation in 1..=3 {
            // Claimed, lease ended, taken over: generation 3 at the end.
            let at = (generation - 1) * 2_001;
            assert_eq!(
                granted(l.claim("k", &fp("a"), &p, at).unwrap()).0,
                generation
            );
        }
        assert_eq!(l.sweep(100_000, 100).unwrap().deleted, 1);
    }
    let l = file.open();
    assert_eq!(
        granted(l.claim("k", &fp("a"), &p, 200_000).unwrap()),
        (4, false)
    );
}
