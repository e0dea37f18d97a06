//! The runs an object holds in memory for a lost answer's repeat when the
//! ledger kept their response only as a tombstone (`object::unkept`).

use idempotency_ledger::object::unkept::{Unkept, HELD_BODY_BYTES, HELD_MS, HELD_RUNS};
use idempotency_ledger::protocol::AppResponse;

fn response(body: &[u8]) -> AppResponse {
    AppResponse {
        status: 201,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_vec(),
    }
}

#[test]
fn only_the_same_attempt_of_the_same_key_and_generation_is_answered_while_held() {
    let held = Unkept::default();
    held.remember(("k", "attempt-1", 3), &response(b"{\"id\":7}"), 1_000);
    assert_eq!(
        held.answer(("k", "attempt-1", 3), 1_500).map(|r| r.body),
        Some(b"{\"id\":7}".to_vec())
    );
    assert!(
        held.answer(("k", "attempt-2", 3), 1_500).is_none(),
        "another attempt"
    );
    assert!(
        held.answer(("k", "attempt-1", 4), 1_500).is_none(),
        "another grant"
    );
    assert!(
        held.answer(("other", "attempt-1", 3), 1_500).is_none(),
        "another key"
    );
    assert!(
        held.answer(("k", "attempt-1", 3), 1_000 + HELD_MS)
            .is_none(),
        "no longer than HELD_MS"
    );
}

#[test]
fn memory_is_bounded_by_runs_and_body_size() {
    let held = Unkept::default();
    for i in 0..HELD_RUNS as i64 + 2 {
        held.remember(("k", &format!("a{i}"), 1), &response(b"x"), 1_000 + i);
    }
    assert!(
        held.answer(("k", "a0", 1), 1_100).is_none(),
        "the oldest went first"
    );
    assert!(held.answer(("k", "a1", 1), 1_100).is_none());
    let last = format!("a{}", HELD_RUNS + 1);
    assert!(held.answer(("k", &last, 1), 1_100).is_some());
    let big = vec![b'x'; HELD_BODY_BYTES + 1];
    held.remember(("big", "a", 1), &response(&big), 1_200);
    assert!(
        held.answer(("big", "a", 1), 1_201).is_none(),
        "a body over the cap is not held"
    );
}
