//! `Prefer: wait` (RFC 7240) as the gateway reads it, and the wait it plans
//! from it (docs/contract.md §2.4): the first `wait` preference, bounded by
//! `IN_FLIGHT_WAIT_MAX_SECONDS`; `Preference-Applied` only when asked and
//! waited.

use idempotency_ledger::config::WaitSettings;
use idempotency_ledger::contract::waiting::{prefer_wait, WaitPlan, PREFERENCE_APPLIED};

#[test]
fn reads_the_first_wait_preference() {
    assert_eq!(prefer_wait(Some("wait=5")), Some(5));
    assert_eq!(prefer_wait(Some("WAIT = 7")), Some(7));
    assert_eq!(prefer_wait(Some("respond-async, wait=10")), Some(10));
    assert_eq!(prefer_wait(Some("wait=3, wait=9")), Some(3));
    assert_eq!(prefer_wait(Some("wait=\"4\"")), Some(4));
    assert_eq!(prefer_wait(Some("wait=2; foo=bar")), Some(2));
    assert_eq!(prefer_wait(Some("x=\"a, wait=1\", wait=6")), Some(6));
    assert_eq!(
        prefer_wait(Some("wait=99999999999999999999999")),
        Some(u64::MAX)
    );
}

#[test]
fn unreadable_or_absent_waits_are_ignored() {
    for h in [
        None,
        Some(""),
        Some("respond-async"),
        Some("wait"),
        Some("wait="),
        Some("wait=-1"),
        Some("wait=1.5"),
        Some("wait=5s"),
        Some("waiting=5"),
        Some("return=minimal"),
    ] {
        assert_eq!(prefer_wait(h), None, "{h:?}");
    }
}

#[test]
fn the_plan_is_bounded_by_the_maximum() {
    let s = WaitSettings::default();
    assert_eq!(
        WaitPlan::new(None, &s),
        WaitPlan {
            wait_ms: 0,
            asked: None
        }
    );
    assert_eq!(
        WaitPlan::new(Some(5), &s),
        WaitPlan {
            wait_ms: 5000,
            asked: Some(5)
        }
    );
    assert_eq!(
        WaitPlan::new(Some(u64::MAX), &s),
        WaitPlan {
            wait_ms: 10_000,
            asked: Some(10)
        }
    );
    let by_default = WaitSettings {
        default_seconds: 3,
        ..s
    };
    assert_eq!(WaitPlan::new(None, &by_default).wait_ms, 3000);
    // An explicit wait=0 opts out of the operator's default.
    assert_eq!(WaitPlan::new(Some(0), &by_default).wait_ms, 0);
    assert_eq!(s.bound_ms(60_000), 10_000);
    assert_eq!(s.bound_ms(200), 200);
}

#[test]
fn preference_applied_only_when_asked_and_waited() {
    let s = WaitSettings::default();
    let asked = WaitPlan::new(Some(30), &s);
    assert_eq!(
        asked.applied(true),
        Some((PREFERENCE_APPLIED, "wait=10".into()))
    );
    assert_eq!(asked.applied(false), None);
    let by_default = WaitPlan::new(
        None,
        &WaitSettings {
            default_seconds: 2,
            ..s
        },
    );
    assert_eq!(by_default.applied(true), None);
}
