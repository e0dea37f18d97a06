//! Every ledger transition, one behaviour per test.

use crate::support::*;
use idempotency_ledger::ledger::{
    ClaimOutcome, CompleteOutcome, KeyState, Refusal, ReleaseOutcome,
};

#[test]
fn a_fresh_key_is_claimed_at_generation_one() {
    let l = ledger();
    let out = l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
    assert_eq!(
        without_lease(out),
        ClaimOutcome::Claimed {
            generation: 1,
            takeover: false,
            lease: None
        }
    );
    let view = l.lookup("k", 1_000).unwrap().unwrap();
    assert_eq!(view.state, KeyState::InFlight);
    assert_eq!(view.generation, 1);
    assert!(view.lease_expires_at.is_some());
}

#[test]
fn a_live_lease_answers_in_flight_with_the_time_left() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
    let out = l.claim("k", &fp("a"), &policy(), 11_000).unwrap();
    assert_eq!(
        out,
        ClaimOutcome::Refused(Refusal::InFlight {
            generation: 1,
            retry_after_ms: LEASE_MS - 10_000
        })
    );
    assert_eq!(l.stats(0).unwrap().in_use, 1);
}

#[test]
fn a_different_fingerprint_is_a_mismatch_naming_the_body() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
    let out = l.claim("k", &fp("b"), &policy(), 2_000).unwrap();
    assert_eq!(
        out,
        ClaimOutcome::Refused(Refusal::Mismatch {
            differs: vec!["body".into()]
        })
    );
    l.complete("k", 1, &response("r"), RETENTION_MS, 3_000)
        .unwrap();
    let out = l.claim("k", &fp("b"), &policy(), 4_000).unwrap();
    assert_eq!(
        out,
        ClaimOutcome::Refused(Refusal::Mismatch {
            differs: vec!["body".into()]
        }),
        "also once completed"
    );
    assert_eq!(l.stats(0).unwrap().reused, 2);
}

#[test]
fn a_completed_key_replays_its_stored_response() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
    assert_eq!(
        l.complete("k", 1, &response("r1"), RETENTION_MS, 2_000)
            .unwrap(),
        CompleteOutcome::Stored
    );
    for _ in 0..3 {
        let out = l.claim("k", &fp("a"), &policy(), 3_000).unwrap();
        assert_eq!(
            out,
            ClaimOutcome::Refused(Refusal::Completed {
                generation: 1,
                response: response("r1"),
                expires_at: Some(2_000 + RETENTION_MS),
            })
        );
    }
    let view = l.lookup("k", 3_000).unwrap().unwrap();
    assert_eq!(
        (
            view.state.as_str(),
            view.replays,
            view.response_status,
            view.retained
        ),
        ("completed", 3, Some(201), Some(true))
    );
    assert_eq!(l.stats(0).unwrap().replays, 3);
}

#[test]
fn a_completed_response_is_never_replaced() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
    l.complete("k", 1, &response("first"), RETENTION_MS, 2_000)
        .unwrap();
    let again = l
        .complete("k", 1, &response("second"), RETENTION_MS, 3_000)
        .unwrap();
    assert!(matches!(again, CompleteOutcome::FencedOut { .. }));
    let out = l.claim("k", &fp("a"), &policy(), 4_000).unwrap();
    assert_eq!(
        out,
        ClaimOutcome::Refused(Refusal::Completed {
            generation: 1,
            response: response("first"),
            expires_at: Some(2_000 + RETENTION_MS),
        })
    );
}

#[test]
fn an_expired_lease_is_taken_over_and_the_old_owner_is_fenced_out() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
    let t = 1_000 + LEASE_MS;
    let out = l.claim("k", &fp("a"), &policy(), t).unwrap();
    assert_eq!(
        without_lease(out),
        ClaimOutcome::Claimed {
            generation: 2,
            takeover: true,
            lease: None
        }
    );
    // The takeover completes first; the superseded owner's completion is refused.
    assert_eq!(
        l.complete("k", 2, &response("new"), RETENTION_MS, t + 1)
            .unwrap(),
        CompleteOutcome::Stored
    );
    let stale = l
        .complete("k", 1, &response("old"), RETENTION_MS, t + 2)
        .unwrap();
    match stale {
        CompleteOutcome::FencedOut { current: Some(c) } => {
            assert_eq!((c.state.as_str(), c.generation), ("completed", 2))
        }
        other => panic!("expected fenced out, got {other:?}"),
    }
    let replay = l.claim("k", &fp("a"), &policy(), t + 3).unwrap();
    assert_eq!(
        replay,
        ClaimOutcome::Refused(Refusal::Completed {
            generation: 2,
            response: response("new"),
            expires_at: Some(t + 1 + RETENTION_MS),
        })
    );
    let stats = l.stats(0).unwrap();
    assert_eq!((stats.takeovers, stats.fenced_out, stats.claims), (1, 1, 2));
}

#[test]
fn a_superseded_owner_cannot_complete_even_before_the_new_owner_does() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 0).unwrap();
    l.claim("k", &fp("a"), &policy(), LEASE_MS).unwrap();
    assert!(matches!(
        l.complete("k", 1, &response("old"), RETENTION_MS, LEASE_MS + 1)
            .unwrap(),
        CompleteOutcome::FencedOut { .. }
    ));
    assert_eq!(
        l.lookup("k", LEASE_MS + 1).unwrap().unwrap().state,
        KeyState::InFlight
    );
}

#[test]
fn a_late_completion_with_no_takeover_is_accepted() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 0).unwrap();
    let late = 10 * LEASE_MS;
    assert_eq!(
        l.complete("k", 1, &response("late"), RETENTION_MS, late)
            .unwrap(),
        CompleteOutcome::Stored
    );
}

#[test]
fn release_lets_the_next_claim_run_at_the_next_generation() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 0).unwrap();
    assert_eq!(l.release("k", 1, 0).unwrap(), ReleaseOutcome::Released);
    let view = l.lookup("k", 1).unwrap().unwrap();
    assert_eq!((view.state.as_str(), view.generation), ("released", 1));
    let out = l.claim("k", &fp("a"), &policy(), 2).unwrap();
    assert_eq!(
        without_lease(out),
        ClaimOutcome::Claimed {
            generation: 2,
            takeover: false,
            lease: None
        }
    );
    // The generation-1 owner can neither complete nor release generation 2.
    assert!(matches!(
        l.complete("k", 1, &response("x"), RETENTION_MS, 3).unwrap(),
        CompleteOutcome::FencedOut { .. }
    ));
    assert!(matches!(
        l.release("k", 1, 0).unwrap(),
        ReleaseOutcome::FencedOut { .. }
    ));
    assert_eq!(l.stats(0).unwrap().fenced_out, 2);
}

#[test]
fn release_of_a_completed_or_unknown_record_is_fenced_out() {
    let l = ledger();
    assert!(matches!(
        l.release("missing", 1, 0).unwrap(),
        ReleaseOutcome::FencedOut { current: None }
    ));
    l.claim("k", &fp("a"), &policy(), 0).unwrap();
    l.complete("k", 1, &response("r"), RETENTION_MS, 1).unwrap();
    assert!(matches!(
        l.release("k", 1, 0).unwrap(),
        ReleaseOutcome::FencedOut { .. }
    ));
    assert_eq!(
        l.lookup("k", 2).unwrap().unwrap().state,
        KeyState::Completed
    );
}

#[test]
fn the_quota_refuses_new_keys_but_answers_existing_ones() {
    let l = ledger();
    let mut p = policy();
    p.max_keys = 3;
    for k in ["a", "b", "c"] {
        assert!(matches!(
            l.claim(k, &fp(k), &p, 0).unwrap(),
            ClaimOutcome::Claimed { .. }
        ));
    }
    match l.claim("d", &fp("d"), &p, 1_000).unwrap() {
        ClaimOutcome::Refused(Refusal::LedgerFull { retry_after_ms }) => {
            assert_eq!(retry_after_ms, RETENTION_MS - 1_000)
        }
        other => panic!("expected ledger full, got {other:?}"),
    }
    assert!(matches!(
        l.claim("a", &fp("a"), &p, 1_000).unwrap(),
        ClaimOutcome::Refused(Refusal::InFlight { .. })
    ));
    assert!(matches!(
        l.claim("b", &fp("x"), &p, 1_000).unwrap(),
        ClaimOutcome::Refused(Refusal::Mismatch { .. })
    ));
    l.complete("c", 1, &response("r"), RETENTION_MS, 1_000)
        .unwrap();
    assert!(matches!(
        l.claim("c", &fp("c"), &p, 2_000).unwrap(),
        ClaimOutcome::Refused(Refusal::Completed { .. })
    ));
    assert_eq!(count(&l, "idempotency_records"), 3);
}

#[test]
fn a_record_past_its_window_is_a_new_operation_at_the_next_generation() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 0).unwrap();
    l.complete("k", 1, &response("old"), RETENTION_MS, 10)
        .unwrap();
    let after = 10 + RETENTION_MS;
    assert_eq!(
        l.lookup("k", after).unwrap(),
        None,
        "expired records are not shown"
    );
    let out = l.claim("k", &fp("different"), &policy(), after).unwrap();
    assert_eq!(
        without_lease(out),
        ClaimOutcome::Claimed {
            generation: 2,
            takeover: false,
            lease: None
        }
    );
    assert!(matches!(
        l.complete("k", 1, &response("zombie"), RETENTION_MS, after + 1)
            .unwrap(),
        CompleteOutcome::FencedOut { .. }
    ));
}

#[test]
fn a_tombstone_replays_without_a_body() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 0).unwrap();
    let tomb = idempotency_ledger::protocol::StoredResponse {
        status: 200,
        headers: vec![],
        body: None,
    };
    l.complete("k", 1, &tomb, RETENTION_MS, 1).unwrap();
    assert_eq!(
        l.claim("k", &fp("a"), &policy(), 2).unwrap(),
        ClaimOutcome::Refused(Refusal::Completed {
            generation: 1,
            response: tomb,
            expires_at: Some(1 + RETENTION_MS),
        })
    );
    let view = l.lookup("k", 3).unwrap().unwrap();
    assert_eq!(
        (view.retained, view.response_status),
        (Some(false), Some(200))
    );
}

#[test]
fn empty_and_binary_bodies_replay_byte_for_byte() {
    let l = ledger();
    let bytes: Vec<u8> = (0..=255u8).rev().collect();
    for (k, body) in [("empty", Vec::new()), ("binary", bytes)] {
        l.claim(k, &fp(k), &policy(), 0).unwrap();
        let r = idempotency_ledger::protocol::StoredResponse {
            status: 200,
            headers: vec![],
            body: Some(body.clone()),
        };
        l.complete(k, 1, &r, RETENTION_MS, 1).unwrap();
        match l.claim(k, &fp(k), &policy(), 2).unwrap() {
            ClaimOutcome::Refused(Refusal::Completed { response, .. }) => {
                assert_eq!(response.body, Some(body))
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn rfc3339_matches_chrono_from_year_zero_to_9999() {
    use idempotency_ledger::ledger::rfc3339;
    let reference = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    };
    let first = -62_167_219_200_000_i64; // 0000-01-01T00:00:00.000Z
    let last = 253_402_300_799_999_i64; // 9999-12-31T23:59:59.999Z
    let mut samples = vec![first, last, 0, -1, 1, 951_782_400_000, 1_764_496_241_870];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        samples.push(first + (x % (last - first + 1) as u64) as i64);
    }
    for ms in samples {
        assert_eq!(rfc3339(ms), reference(ms), "{ms}");
    }
    assert_eq!(rfc3339(first - 1), (first - 1).to_string());
    assert_eq!(rfc3339(last + 1), (last + 1).to_string());
}
