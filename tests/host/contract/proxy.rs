//! Proxy mode (docs/contract.md §2.6): what happens to the key once the origin
//! has answered, or failed to.

use super::*;

#[test]
fn a_body_that_breaks_off_keeps_the_key_with_502_incomplete() {
    let after = after_origin(Err(OriginFailure::Incomplete), false, &config(&[]));
    assert_eq!(after.settle, Settle::Keep, "the origin ran: never released");
    assert_eq!(after.outcome, Disposition::OriginResponseIncomplete);
    expect_problem(&after.reply, 502, "origin-response-incomplete");
    let unprotected = unprotected_answer(OriginFailure::Incomplete);
    expect_problem(&unprotected, 502, "origin-response-incomplete");
}

#[test]
fn a_status_that_cannot_be_passed_on_keeps_the_key_with_502_invalid() {
    let c = config(&[("RELEASE_ON_5XX", "true")]);
    for status in [0, 101, 199, 600, 999] {
        let after = after_origin(Ok(origin_response(status, b"")), false, &c);
        assert_eq!(after.settle, Settle::Keep, "{status}");
        assert_eq!(after.outcome, Disposition::OriginInvalidResponse);
        expect_problem(&after.reply, 502, "origin-invalid-response");
        expect_problem(&not_passable(status), 502, "origin-invalid-response");
    }
    for status in [200, 204, 599] {
        assert!(idempotency_ledger::protocol::is_passable_status(status));
    }
}

#[test]
fn hop_by_hop_headers_are_recognised() {
    use idempotency_ledger::protocol::is_hop_by_hop;
    for h in [
        "connection",
        "upgrade",
        "keep-alive",
        "te",
        "transfer-encoding",
        "trailer",
        "proxy-authorization",
        "proxy-connection",
    ] {
        assert!(is_hop_by_hop(h), "{h}");
    }
    for h in [
        "content-type",
        "idempotency-key",
        "x-proxy",
        "authorization",
        "tenant",
    ] {
        assert!(!is_hop_by_hop(h), "{h}");
    }
}

#[test]
fn a_method_that_cannot_be_forwarded_is_501_and_claims_nothing() {
    let (answer, outcome) = idempotency_ledger::contract::proxy::not_forwardable("TRACE");
    assert_eq!(outcome, Disposition::MethodNotSupported);
    expect_problem(&answer, 501, "method-not-supported");
}

#[test]
fn settlements_retry_only_what_is_safe_to_retry() {
    use idempotency_ledger::contract::proxy::is_retryable;
    assert!(is_retryable(&LedgerError::NotReached("x".into())));
    assert!(is_retryable(&LedgerError::Unreachable("x".into())));
    let refused = |status| LedgerError::Refused {
        status,
        problem: Value::Null,
        retry_after: None,
    };
    assert!(is_retryable(&refused(503)));
    assert!(
        !is_retryable(&refused(400)),
        "a refused call fails the same way again"
    );
    assert!(
        !is_retryable(&LedgerError::Undecodable("x".into())),
        "it was applied"
    );
}

#[test]
fn a_retry_that_finds_its_own_completion_knows_the_first_attempt_landed() {
    use idempotency_ledger::contract::proxy::landed_earlier;
    use idempotency_ledger::ledger::{KeyState, RecordState};
    // A real ledger: the first completion lands, its answer is "lost", the retry is fenced out.
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
    l.complete("k", 1, &response("r"), RETENTION_MS, 2_000)
        .unwrap();
    let CompleteOutcome::FencedOut { current } = l
        .complete("k", 1, &response("r"), RETENTION_MS, 2_100)
        .unwrap()
    else {
        panic!("a second completion is fenced out")
    };
    assert!(landed_earlier(&current, 1, KeyState::Completed));
    // Taken over by generation 2: not ours.
    let theirs = Some(RecordState {
        state: KeyState::InFlight,
        generation: 2,
    });
    assert!(!landed_earlier(&theirs, 1, KeyState::Completed));
    let later = Some(RecordState {
        state: KeyState::Completed,
        generation: 2,
    });
    assert!(!landed_earlier(&later, 1, KeyState::Completed));
    assert!(!landed_earlier(&None, 1, KeyState::Completed));
}
