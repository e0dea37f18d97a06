//! Lease tokens: a settlement names the grant it settles, so a late owner
//! never settles another grant of the same generation — on this object
//! after an eviction, or on another object (two layouts of one tenant)
//! that granted the same number (docs/contract.md §3, "Lease tokens").

use std::collections::HashSet;

use crate::support::*;
use idempotency_ledger::ledger::lease::is_lease_token;
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::{
    ClaimOutcome, CompleteOutcome, EvictOutcome, Grant, KeyState, Ledger, RecordState, Refusal,
    ReleaseOutcome,
};

/// The grant's generation and token, or a panic naming what came instead.
fn grant_of(out: ClaimOutcome) -> (i64, String) {
    match out {
        ClaimOutcome::Claimed {
            generation,
            lease: Some(lease),
            ..
        } => (generation, lease),
        other => panic!("expected a grant with a lease token, got {other:?}"),
    }
}

fn claim(l: &Ledger<RusqliteStore>, key: &str, now: i64) -> (i64, String) {
    grant_of(l.claim(key, &fp(key), &policy(), now).unwrap())
}

#[test]
fn every_grant_takes_a_fresh_token_and_a_repeated_attempt_is_answered_its_own() {
    let l = ledger();
    let p = policy();
    let mut seen = HashSet::new();
    // A new key, its attempt's repeat, a takeover, a reclaim, a rebirth.
    let first = l
        .claim_as("k", &fp("k"), Some("attempt-1"), &p, 1_000)
        .unwrap();
    let (g1, t1) = grant_of(first.outcome);
    assert!(is_lease_token(&t1), "{t1:?}");
    seen.insert(t1.clone());
    let repeat = l
        .claim_as("k", &fp("k"), Some("attempt-1"), &p, 2_000)
        .unwrap();
    assert!(repeat.repeated);
    assert_eq!(
        grant_of(repeat.outcome),
        (g1, t1.clone()),
        "the same grant, the same token"
    );
    let (g2, t2) = claim(&l, "k", 1_000 + LEASE_MS);
    assert_eq!(g2, 2);
    assert!(seen.insert(t2.clone()), "a takeover takes a new token");
    assert_eq!(
        l.release("k", Grant::new(g2, Some(&t2)), 70_000).unwrap(),
        ReleaseOutcome::Released
    );
    let (g3, t3) = claim(&l, "k", 70_001);
    assert_eq!(g3, 3);
    assert!(seen.insert(t3.clone()), "a reclaim takes a new token");
    assert_eq!(
        l.complete(
            "k",
            Grant::new(g3, Some(&t3)),
            &response("r"),
            1_000,
            70_002
        )
        .unwrap(),
        CompleteOutcome::Stored
    );
    let (g4, t4) = grant_of(l.claim("k", &fp("k"), &policy(), 80_000).unwrap());
    assert_eq!(g4, 4);
    assert!(seen.insert(t4), "a rebirth takes a new token");
    // Many fresh keys: never the same token twice.
    for i in 0..200 {
        let (_, t) = claim(&l, &format!("many-{i}"), 90_000);
        assert!(seen.insert(t), "a token drawn twice");
    }
}

#[test]
fn a_token_that_did_not_grant_the_claim_settles_nothing_even_at_its_generation() {
    let l = ledger();
    let (g, token) = claim(&l, "k", 1_000);
    let stranger = "0123456789abcdef0123456789abcdef";
    assert_ne!(token, stranger);
    let current = Some(RecordState {
        state: KeyState::InFlight,
        generation: g,
    });
    assert_eq!(
        l.release("k", Grant::new(g, Some(stranger)), 2_000)
            .unwrap(),
        ReleaseOutcome::FencedOut {
            current: current.clone()
        }
    );
    assert_eq!(
        l.complete(
            "k",
            Grant::new(g, Some(stranger)),
            &response("other"),
            RETENTION_MS,
            2_000
        )
        .unwrap(),
        CompleteOutcome::FencedOut { current }
    );
    // Nothing changed: the owner's lease is live, and the owner completes.
    assert!(matches!(
        l.claim("k", &fp("k"), &policy(), 3_000).unwrap(),
        ClaimOutcome::Refused(Refusal::InFlight { .. })
    ));
    assert_eq!(
        l.complete(
            "k",
            Grant::new(g, Some(&token)),
            &response("mine"),
            RETENTION_MS,
            4_000
        )
        .unwrap(),
        CompleteOutcome::Stored
    );
    let s = l.stats(5_000).unwrap();
    assert_eq!((s.fenced_out, s.completed), (2, 1));
}

#[test]
fn a_late_owner_after_an_eviction_never_settles_the_next_grant_of_its_generation() {
    // The generation floor keeps a reborn record above the evicted one on
    // one object; two objects have no common floor. Here: object A grants
    // generation 1 to a first owner; object B (the tenant's other layout)
    // grants generation 1 of the same key to a second owner, as after a
    // reshard and an eviction. The first owner's late settlement, sent to
    // B, is fenced out by its token, and the second owner's claim stands.
    let (a, b) = (ledger(), ledger());
    let (g_a, first) = claim(&a, "pay-1", 1_000);
    let (g_b, second) = claim(&b, "pay-1", 2_000);
    assert_eq!((g_a, g_b), (1, 1), "both objects grant generation 1");
    assert_eq!(
        b.release("pay-1", Grant::new(1, Some(&first)), 3_000)
            .unwrap(),
        ReleaseOutcome::FencedOut {
            current: Some(RecordState {
                state: KeyState::InFlight,
                generation: 1
            })
        }
    );
    assert!(matches!(
        b.complete(
            "pay-1",
            Grant::new(1, Some(&first)),
            &response("late"),
            RETENTION_MS,
            3_000
        )
        .unwrap(),
        CompleteOutcome::FencedOut { .. }
    ));
    // B's key is still held by the second owner: a third caller meets 409.
    assert!(matches!(
        b.claim("pay-1", &fp("pay-1"), &policy(), 4_000).unwrap(),
        ClaimOutcome::Refused(Refusal::InFlight { .. })
    ));
    assert_eq!(
        b.complete(
            "pay-1",
            Grant::new(1, Some(&second)),
            &response("ok"),
            RETENTION_MS,
            5_000
        )
        .unwrap(),
        CompleteOutcome::Stored
    );
    // On one object, an evicted in-flight record's owner is fenced out of
    // the next grant (its generation is above the floor, and its token
    // differs).
    let l = ledger();
    let (g, old) = claim(&l, "k", 1_000);
    assert!(matches!(
        l.evict("k", 0, 1_000 + LEASE_MS).unwrap(),
        EvictOutcome::Evicted { .. }
    ));
    let (g_next, _) = claim(&l, "k", 1_000 + LEASE_MS + 1);
    assert!(g_next > g);
    assert!(matches!(
        l.release("k", Grant::new(g_next, Some(&old)), 1_000 + LEASE_MS + 2)
            .unwrap(),
        ReleaseOutcome::FencedOut { .. }
    ));
}

#[test]
fn a_settlement_repeated_under_its_token_is_told_it_landed_and_changes_nothing() {
    let l = ledger();
    let (g, token) = claim(&l, "done", 1_000);
    let grant = Grant::new(g, Some(&token));
    assert_eq!(
        l.complete("done", grant, &response("first"), RETENTION_MS, 2_000)
            .unwrap(),
        CompleteOutcome::Stored
    );
    // The answer was lost; the owner sends it again.
    assert_eq!(
        l.complete("done", grant, &response("first"), RETENTION_MS, 3_000)
            .unwrap(),
        CompleteOutcome::Stored
    );
    let ClaimOutcome::Refused(Refusal::Completed { response: r, .. }) =
        l.claim("done", &fp("done"), &policy(), 4_000).unwrap()
    else {
        panic!("the key replays")
    };
    assert_eq!(r.body.as_deref(), Some(&b"first"[..]));
    let (g2, t2) = claim(&l, "freed", 1_000);
    let grant = Grant::new(g2, Some(&t2));
    assert_eq!(
        l.release("freed", grant, 2_000).unwrap(),
        ReleaseOutcome::Released
    );
    assert_eq!(
        l.release("freed", grant, 3_000).unwrap(),
        ReleaseOutcome::Released
    );
    // A bare generation cannot tell its own repeat from another grant's:
    // fenced out, as RPC v1 always answered.
    assert!(matches!(
        l.complete("done", g, &response("first"), RETENTION_MS, 5_000)
            .unwrap(),
        CompleteOutcome::FencedOut { .. }
    ));
    // A repeat is no new settlement: none fenced out, one completed.
    let s = l.stats(6_000).unwrap();
    assert_eq!((s.fenced_out, s.completed, s.released), (1, 1, 1));
}

#[test]
fn a_settlement_without_a_token_is_matched_by_its_generation_as_before() {
    let l = ledger();
    let (g, _) = claim(&l, "k", 1_000);
    assert_eq!(
        l.complete("k", g, &response("v1 caller"), RETENTION_MS, 2_000)
            .unwrap(),
        CompleteOutcome::Stored
    );
    let (g2, _) = claim(&l, "r", 1_000);
    assert_eq!(
        l.release("r", g2 + 1, 2_000).unwrap(),
        ReleaseOutcome::FencedOut {
            current: Some(RecordState {
                state: KeyState::InFlight,
                generation: g2
            })
        }
    );
    assert_eq!(l.release("r", g2, 2_000).unwrap(), ReleaseOutcome::Released);
}
