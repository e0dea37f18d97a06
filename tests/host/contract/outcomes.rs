//! The outcome table (docs/contract.md §2.5), row by row.

use super::*;

#[test]
fn first_request_runs_once_and_its_answer_is_returned_in_full() {
    // Embedded: execute on the real ledger, answered by the contract.
    let l = ledger();
    let body = br#"{"sku":"A","quantity":1}"#;
    let out = l
        .execute("k", &fp("x"), &policy(), &capture(), 1_000, |s| {
            orders::handle_within(s, "POST", "/v1/orders", body, 1_000)
        })
        .unwrap();
    let (answer, outcome) = execute_answer(out);
    assert_eq!(answer.status, 201);
    assert_eq!(outcome, Disposition::Executed);
    assert_eq!(header(&answer, REPLAYED_HEADER), None);

    // Proxy: the origin's answer is stored and returned untouched.
    let c = config(&[]);
    let sent = origin_response(201, b"{\"id\":1}");
    let after = after_origin(Ok(sent.clone()), false, &c);
    assert_eq!(
        after.reply, sent,
        "the caller gets every header, not only stored ones"
    );
    assert_eq!(after.outcome, Disposition::Executed);
    let Settle::Complete(stored) = after.settle else {
        panic!("expected a completion, got {:?}", after.settle)
    };
    assert_eq!(stored.status, 201);
    assert_eq!(
        stored.headers,
        vec![("content-type".to_string(), "application/json".to_string())]
    );
    assert_eq!(stored.body.as_deref(), Some(&b"{\"id\":1}"[..]));
}

#[test]
fn a_completed_key_replays_the_stored_bytes_marked_replayed() {
    let l = ledger();
    let body: Vec<u8> = (0..=255u8).collect();
    l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
    let stored = StoredResponse {
        status: 201,
        headers: vec![("location".into(), "/v1/orders/1".into())],
        body: Some(body.clone()),
    };
    l.complete("k", 1, &stored, RETENTION_MS, 2_000).unwrap();
    let (answer, outcome) = answer_to_claim(&l, "k", "a", 3_000);
    assert_eq!(outcome, Disposition::Replayed);
    assert_eq!(answer.status, 201);
    assert_eq!(answer.body, body);
    assert_eq!(header(&answer, "location"), Some("/v1/orders/1"));
    assert_eq!(header(&answer, REPLAYED_HEADER), Some("true"));
}

#[test]
fn a_live_lease_is_409_in_use_with_a_short_retry_after() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
    let (answer, outcome) = answer_to_claim(&l, "k", "a", 11_000);
    assert_eq!(outcome, Disposition::InUse);
    expect_problem(&answer, 409, "idempotency-key-in-use");
    assert_eq!(header(&answer, "retry-after"), Some("1"));
    assert_eq!(problem(&answer)["lease_remaining_ms"], LEASE_MS - 10_000);
}

#[test]
fn a_different_request_is_422_naming_what_differed() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
    let (answer, outcome) = answer_to_claim(&l, "k", "b", 2_000);
    assert_eq!(outcome, Disposition::Reused);
    expect_problem(&answer, 422, "idempotency-key-reused");
    assert_eq!(problem(&answer)["differs"], serde_json::json!(["body"]));
}

#[test]
fn a_takeover_runs_and_the_superseded_completion_is_fenced_out() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
    let ClaimOutcome::Claimed {
        generation,
        takeover,
        ..
    } = l.claim("k", &fp("a"), &policy(), 1_000 + LEASE_MS).unwrap()
    else {
        panic!("expected a takeover")
    };
    assert_eq!((generation, takeover), (2, true));
    let c = config(&[]);
    let after = after_origin(Ok(origin_response(201, b"second")), takeover, &c);
    assert_eq!(after.outcome, Disposition::TookOver);

    // The first owner's origin answered too; its completion is fenced out,
    // and its caller still gets the response its run produced.
    let first = after_origin(Ok(origin_response(201, b"first")), false, &c);
    let Settle::Complete(stored) = &first.settle else {
        panic!("expected a completion")
    };
    let completion = l
        .complete("k", 1, stored, RETENTION_MS, 1_000 + LEASE_MS + 1)
        .unwrap();
    assert!(matches!(completion, CompleteOutcome::FencedOut { .. }));
    assert_eq!(
        after_completion(first.outcome, Ok(&completion)),
        Disposition::FencedOut
    );
    assert_eq!(first.reply.body, b"first");
}

#[test]
fn an_unreachable_origin_releases_the_key_with_502() {
    let after = after_origin(Err(OriginFailure::Unreachable), false, &config(&[]));
    assert_eq!(after.settle, Settle::Release);
    assert_eq!(after.outcome, Disposition::OriginUnavailable);
    expect_problem(&after.reply, 502, "origin-unavailable");
}

#[test]
fn an_origin_timeout_keeps_the_key_in_flight_with_504() {
    let after = after_origin(
        Err(OriginFailure::TimedOut),
        false,
        &config(&[("ORIGIN_TIMEOUT_SECONDS", "7")]),
    );
    assert_eq!(after.settle, Settle::Keep);
    assert_eq!(after.outcome, Disposition::OriginTimeout);
    expect_problem(&after.reply, 504, "origin-timeout");
    assert!(problem(&after.reply)["detail"]
        .as_str()
        .unwrap()
        .contains("7 seconds"));
}

#[test]
fn an_oversized_response_is_delivered_once_then_replays_as_a_loud_500() {
    let c = config(&[("MAX_STORED_BODY_BYTES", "4")]);
    let after = after_origin(Ok(origin_response(200, b"12345")), false, &c);
    assert_eq!(
        after.reply.body, b"12345",
        "the first caller gets the full body"
    );
    let Settle::Complete(stored) = after.settle else {
        panic!("expected a completion")
    };
    assert!(!stored.retained());

    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
    l.complete("k", 1, &stored, RETENTION_MS, 2_000).unwrap();
    let (answer, outcome) = answer_to_claim(&l, "k", "a", 3_000);
    assert_eq!(outcome, Disposition::Replayed);
    expect_problem(&answer, 500, "idempotency-response-not-retained");
    assert_eq!(problem(&answer)["original_status"], 200);
    assert_eq!(header(&answer, REPLAYED_HEADER), Some("true"));
}

#[test]
fn a_5xx_is_stored_unless_release_on_5xx() {
    let stored = after_origin(Ok(origin_response(503, b"down")), false, &config(&[]));
    assert!(matches!(stored.settle, Settle::Complete(ref s) if s.status == 503));
    assert_eq!(stored.outcome, Disposition::Executed);

    let released = after_origin(
        Ok(origin_response(503, b"down")),
        false,
        &config(&[("RELEASE_ON_5XX", "true")]),
    );
    assert_eq!(released.settle, Settle::Release);
    assert_eq!(released.outcome, Disposition::Released5xx);
    assert_eq!(released.reply.status, 503, "the 5xx is still passed on");
    assert_eq!(released.reply.body, b"down");

    // A 4xx is never released, whatever RELEASE_ON_5XX says.
    let kept = after_origin(
        Ok(origin_response(499, b"")),
        false,
        &config(&[("RELEASE_ON_5XX", "true")]),
    );
    assert!(matches!(kept.settle, Settle::Complete(_)));
}

#[test]
fn an_unusable_ledger_is_503_closed_and_runs_unprotected_only_when_certainly_unreached() {
    let not_reached = LedgerError::NotReached("no binding".into());
    let unreachable = LedgerError::Unreachable("stub threw".into());
    let undecodable = LedgerError::Undecodable("expected value".into());
    for (error, policy) in [
        (&not_reached, FailurePolicy::Closed),
        (&unreachable, FailurePolicy::Closed),
        (&undecodable, FailurePolicy::Closed),
        // The object may have run the call: never a second, unprotected run.
        (&unreachable, FailurePolicy::Open),
        (&undecodable, FailurePolicy::Open),
    ] {
        let LedgerFailure::Answer(answer) = ledger_failure(error, policy, false) else {
            panic!("{error:?} under {policy:?} must not run unprotected")
        };
        expect_problem(&answer, 503, "idempotency-store-unavailable");
    }
    assert_eq!(
        ledger_failure(&not_reached, FailurePolicy::Open, false),
        LedgerFailure::RunUnprotected
    );
}

#[test]
fn a_waiting_call_that_loses_its_object_is_409_never_a_run() {
    let unreachable = LedgerError::Unreachable("Durable Object reset".into());
    for policy in [FailurePolicy::Closed, FailurePolicy::Open] {
        let LedgerFailure::WaitInterrupted(answer) = ledger_failure(&unreachable, policy, true)
        else {
            panic!("a lost waiting call must answer 409 under {policy:?}")
        };
        expect_problem(&answer, 409, "idempotency-key-in-use");
        assert!(answer
            .headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("retry-after") && v == "1"));
    }
    // Certainly unreached: the usual rules, waiting or not.
    assert_eq!(
        ledger_failure(
            &LedgerError::NotReached("none".into()),
            FailurePolicy::Open,
            true
        ),
        LedgerFailure::RunUnprotected
    );
    let undecodable = LedgerError::Undecodable("x".into());
    assert!(matches!(
        ledger_failure(&undecodable, FailurePolicy::Closed, true),
        LedgerFailure::Answer(_)
    ));
}

#[test]
fn a_problem_the_object_rendered_is_passed_through() {
    let refused = LedgerError::Refused {
        status: 500,
        problem: serde_json::json!({"type": "https://idempotency-ledger.dev/problems/misconfigured",
            "title": "t", "status": 500, "detail": "d"}),
        retry_after: None,
    };
    for policy in [FailurePolicy::Closed, FailurePolicy::Open] {
        let LedgerFailure::Answer(answer) = ledger_failure(&refused, policy, false) else {
            panic!("a rendered refusal never runs unprotected")
        };
        assert_eq!(slug(&answer), "misconfigured");
    }
    // A refusal without a problem document is a store failure.
    let bare = LedgerError::Refused {
        status: 500,
        problem: Value::Null,
        retry_after: None,
    };
    assert_eq!(slug(&read_failure(&bare)), "idempotency-store-unavailable");
}

#[test]
fn a_full_ledger_is_429_with_retry_after_in_whole_seconds() {
    let l = ledger();
    let mut p = policy();
    p.max_keys = 1;
    l.claim("a", &fp("a"), &p, 1_000).unwrap();
    let ClaimOutcome::Refused(refusal) = l.claim("b", &fp("b"), &p, 2_000).unwrap() else {
        panic!("a new key beyond the quota must be refused")
    };
    let (answer, outcome) = refusal_answer(refusal);
    assert_eq!(outcome, Disposition::LedgerFull);
    expect_problem(&answer, 429, "idempotency-ledger-full");
    let expected = retry_after_seconds(1_000 + RETENTION_MS - 2_000);
    assert_eq!(
        header(&answer, "retry-after"),
        Some(expected.to_string().as_str())
    );
    assert_eq!(retry_after_seconds(1), 1);
    assert_eq!(retry_after_seconds(1_000), 1);
    assert_eq!(retry_after_seconds(1_001), 2);
}

#[test]
fn execute_answers_refusals_exactly_as_claim_does() {
    let l = ledger();
    let run = |at| {
        l.execute("k", &fp("x"), &policy(), &capture(), at, |s| {
            orders::handle_within(s, "POST", "/v1/orders", br#"{"sku":"A","quantity":1}"#, at)
        })
        .unwrap()
    };
    run(1_000);
    let ExecuteOutcome::Refused(refusal) = run(2_000) else {
        panic!("expected a replay")
    };
    let (answer, outcome) = execute_answer(ExecuteOutcome::Refused(refusal.clone()));
    assert_eq!(outcome, Disposition::Replayed);
    assert_eq!(refusal_answer(refusal).0, answer);
    assert_eq!(header(&answer, REPLAYED_HEADER), Some("true"));
}

#[test]
fn a_failed_completion_is_complete_failed_and_the_caller_keeps_its_answer() {
    let err = LedgerError::Unreachable("gone".into());
    assert_eq!(
        after_completion(Disposition::Executed, Err(&err)),
        Disposition::CompleteFailed
    );
    assert_eq!(
        after_completion(Disposition::TookOver, Ok(&CompleteOutcome::Stored)),
        Disposition::TookOver
    );
}

#[test]
fn unprotected_forwarding_promises_nothing_about_keys() {
    let down = unprotected_answer(OriginFailure::Unreachable);
    assert_eq!(
        (down.status, slug(&down)),
        (502, "origin-unavailable".to_string())
    );
    let late = unprotected_answer(OriginFailure::TimedOut);
    assert_eq!(
        (late.status, slug(&late)),
        (504, "origin-timeout".to_string())
    );
}

#[test]
fn lookups_answer_the_record_or_404() {
    let l = ledger();
    l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
    let found = lookup_answer(l.lookup("k", 2_000).unwrap());
    assert_eq!(found.status, 200);
    let doc: Value = serde_json::from_slice(&found.body).unwrap();
    assert_eq!(doc["state"], "in_flight");
    let missing = lookup_answer(l.lookup("nope", 2_000).unwrap());
    assert_eq!(
        (missing.status, slug(&missing)),
        (404, "not-found".to_string())
    );
}

#[test]
fn replaying_a_null_body_status_sends_no_body() {
    let answer = replay(StoredResponse {
        status: 204,
        headers: vec![],
        body: Some(vec![]),
    });
    assert_eq!(answer.status, 204);
    assert!(answer.body.is_empty());
    assert_eq!(header(&answer, REPLAYED_HEADER), Some("true"));
}

#[test]
fn a_503_says_the_request_may_have_run_unless_the_ledger_was_never_reached() {
    let detail = |e: LedgerError| {
        let answer = read_failure(&e);
        expect_problem(&answer, 503, "idempotency-store-unavailable")["detail"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(detail(LedgerError::NotReached("no binding".into())).contains("was not run"));
    for e in [
        LedgerError::Unreachable("reset".into()),
        LedgerError::Undecodable("half an answer".into()),
    ] {
        let d = detail(e);
        assert!(d.contains("may have run"), "{d}");
        assert!(!d.contains("not run"), "{d}");
    }
}

#[test]
fn the_stats_answer_carries_the_counts_the_trend_and_the_tenants_limits() {
    use idempotency_ledger::contract::answer::{stats_answer, Limits};
    let l = ledger();
    l.claim("k", &fp("k"), &policy(), 1_000).unwrap();
    let stats = l.stats(2_000).unwrap();
    let c = config(&[
        ("MAX_KEYS_PER_TENANT", "5000"),
        ("MAX_DB_BYTES_PER_OBJECT", "1048576"),
    ]);
    let answer = stats_answer(&stats, Limits::of(&c));
    assert_eq!(answer.status, 200);
    let doc: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(
        doc["limits"],
        serde_json::json!({"max_keys": 5000, "max_db_bytes": 1048576})
    );
    assert_eq!(doc["claims"], 1);
    assert_eq!(doc["trend"].as_array().unwrap().len(), 60);
    assert_eq!(
        doc["trend"][59]["claims"], 1,
        "the claim's minute is the current one"
    );
    assert_eq!(doc["trend"][59]["minute"], "1970-01-01T00:00:00.000Z");
    // Everything else is the object's stats, as they are.
    let mut without = doc.clone();
    without.as_object_mut().unwrap().remove("limits");
    assert_eq!(without, serde_json::to_value(&stats).unwrap());
}

#[test]
fn an_upgrading_objects_retry_after_reaches_the_client() {
    let upgrading = LedgerError::Refused {
        status: 503,
        problem: serde_json::json!({"type": "https://idempotency-ledger.dev/problems/idempotency-store-unavailable",
            "title": "t", "status": 503, "detail": "the ledger is upgrading its schema in place; retry in a moment"}),
        retry_after: Some(1),
    };
    for (policy, waiting) in [(FailurePolicy::Closed, false), (FailurePolicy::Open, true)] {
        let LedgerFailure::Answer(answer) = ledger_failure(&upgrading, policy, waiting) else {
            panic!("a rendered refusal is answered as it is")
        };
        assert_eq!(answer.status, 503);
        assert_eq!(slug(&answer), "idempotency-store-unavailable");
        assert!(
            answer
                .headers
                .iter()
                .any(|(n, v)| n == "retry-after" && v == "1"),
            "{:?}",
            answer.headers
        );
    }
}

#[test]
fn labels_serialise_as_logged_and_are_distinct() {
    let mut seen = std::collections::HashSet::new();
    for o in Disposition::ALL {
        assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        assert!(seen.insert(o.as_str()), "{o:?}");
    }
    assert_eq!(Disposition::Released5xx.as_str(), "released_5xx");
}
