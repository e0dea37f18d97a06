//! A claim's lost answer (docs/contract.md §3): the attempt a grant was
//! given, named by its caller and kept with the lease, is answered that
//! grant again — and nothing else is.

use crate::support::*;
use idempotency_ledger::ledger::{Claim, ClaimOutcome, CompleteOutcome, Refusal};

const A: Option<&str> = Some("attempt-a");
const B: Option<&str> = Some("attempt-b");

/// A claim with its lease token checked and set aside (`without_lease`).
fn unleased(claim: Claim) -> Claim {
    Claim {
        outcome: without_lease(claim.outcome),
        repeated: claim.repeated,
    }
}

fn granted(generation: i64, takeover: bool, repeated: bool) -> Claim {
    Claim {
        outcome: ClaimOutcome::Claimed {
            generation,
            takeover,
            lease: None,
        },
        repeated,
    }
}

#[test]
fn a_repeated_attempt_is_answered_its_grant_without_extending_the_lease() {
    let l = ledger();
    let p = policy();
    assert_eq!(
        unleased(l.claim_as("k", &fp("a"), A, &p, 1_000).unwrap()),
        granted(1, false, false)
    );
    let lease = l.lookup("k", 1_000).unwrap().unwrap().lease_expires_at;
    assert_eq!(
        unleased(l.claim_as("k", &fp("a"), A, &p, 5_000).unwrap()),
        granted(1, false, true),
        "the same grant, again"
    );
    let view = l.lookup("k", 5_000).unwrap().unwrap();
    assert_eq!(view.lease_expires_at, lease, "the lease is not extended");
    assert_eq!(view.generation, 1);
    let s = l.stats(5_000).unwrap();
    assert_eq!(
        (s.claims, s.in_use, s.in_flight),
        (1, 0, 1),
        "one claim, no 409"
    );
    // The owner settles as usual.
    assert_eq!(
        l.complete("k", 1, &response("r"), RETENTION_MS, 6_000)
            .unwrap(),
        CompleteOutcome::Stored
    );
}

#[test]
fn another_attempt_or_an_unnamed_one_meets_the_lease_as_before() {
    let l = ledger();
    let p = policy();
    l.claim_as("k", &fp("a"), A, &p, 1_000).unwrap();
    for other in [B, None] {
        assert_eq!(
            l.claim_as("k", &fp("a"), other, &p, 2_000).unwrap().outcome,
            ClaimOutcome::Refused(Refusal::InFlight {
                generation: 1,
                retry_after_ms: LEASE_MS - 1_000
            }),
            "{other:?}"
        );
    }
    // An unnamed first claim is never repeated, not even by an unnamed one.
    l.claim("u", &fp("a"), &p, 1_000).unwrap();
    assert!(matches!(
        l.claim_as("u", &fp("a"), None, &p, 2_000).unwrap().outcome,
        ClaimOutcome::Refused(Refusal::InFlight { .. })
    ));
    assert!(matches!(
        l.claim_as("u", &fp("a"), A, &p, 2_000).unwrap().outcome,
        ClaimOutcome::Refused(Refusal::InFlight { .. })
    ));
}

#[test]
fn the_same_attempt_with_another_fingerprint_is_a_mismatch() {
    let l = ledger();
    let p = policy();
    l.claim_as("k", &fp("a"), A, &p, 1_000).unwrap();
    assert!(matches!(
        l.claim_as("k", &fp("b"), A, &p, 2_000).unwrap().outcome,
        ClaimOutcome::Refused(Refusal::Mismatch { .. })
    ));
}

#[test]
fn after_a_takeover_the_old_attempt_does_not_get_the_new_grant() {
    for taker in [B, None] {
        let l = ledger();
        let p = policy();
        l.claim_as("k", &fp("a"), A, &p, 1_000).unwrap();
        let after_lease = 1_000 + LEASE_MS;
        assert_eq!(
            unleased(l.claim_as("k", &fp("a"), taker, &p, after_lease).unwrap()),
            granted(2, true, false)
        );
        assert_eq!(
            l.claim_as("k", &fp("a"), A, &p, after_lease + 1)
                .unwrap()
                .outcome,
            ClaimOutcome::Refused(Refusal::InFlight {
                generation: 2,
                retry_after_ms: LEASE_MS - 1
            }),
            "taken over by {taker:?}"
        );
        if taker.is_some() {
            assert_eq!(
                unleased(
                    l.claim_as("k", &fp("a"), taker, &p, after_lease + 2)
                        .unwrap()
                ),
                granted(2, true, true),
                "the taker's own repeat is its takeover"
            );
        }
    }
}

#[test]
fn an_attempt_whose_lease_ended_takes_the_key_over_as_any_claim() {
    let l = ledger();
    let p = policy();
    l.claim_as("k", &fp("a"), A, &p, 1_000).unwrap();
    assert_eq!(
        unleased(l.claim_as("k", &fp("a"), A, &p, 1_000 + LEASE_MS).unwrap()),
        granted(2, true, false)
    );
}

#[test]
fn a_settled_key_answers_the_attempt_as_any_claim() {
    let l = ledger();
    let p = policy();
    l.claim_as("done", &fp("a"), A, &p, 1_000).unwrap();
    l.complete("done", 1, &response("r"), RETENTION_MS, 2_000)
        .unwrap();
    assert!(matches!(
        l.claim_as("done", &fp("a"), A, &p, 3_000).unwrap().outcome,
        ClaimOutcome::Refused(Refusal::Completed { generation: 1, .. })
    ));
    l.claim_as("freed", &fp("a"), A, &p, 1_000).unwrap();
    l.release("freed", 1, 2_000).unwrap();
    assert_eq!(
        unleased(l.claim_as("freed", &fp("a"), B, &p, 3_000).unwrap()),
        granted(2, false, false)
    );
    assert_eq!(
        l.claim_as("freed", &fp("a"), A, &p, 4_000).unwrap().outcome,
        ClaimOutcome::Refused(Refusal::InFlight {
            generation: 2,
            retry_after_ms: LEASE_MS - 1_000
        }),
        "the reclaim holds its own attempt"
    );
}

#[test]
fn the_attempt_is_kept_with_the_record_across_a_restart() {
    let file = LedgerFile::new("attempt-restart");
    let p = policy();
    file.open().claim_as("k", &fp("a"), A, &p, 1_000).unwrap();
    // The object was reset between its grant and the caller's read.
    assert_eq!(
        unleased(file.open().claim_as("k", &fp("a"), A, &p, 2_000).unwrap()),
        granted(1, false, true)
    );
}
