//! The gateway's contract on the host: every row of the outcome table
//! (docs/contract.md §2.5) and the admission rules (docs/contract.md §2.1–§2.4), decided by
//! `contract` from the answers of a real ledger on rusqlite.

use std::collections::HashMap;

use crate::support::*;
use idempotency_ledger::config::{Config, FailurePolicy};
use idempotency_ledger::contract::admission::{
    self, check_body_length, introspection_key, misconfigured,
};
use idempotency_ledger::contract::answer::{
    execute_answer, ledger_failure, lookup_answer, read_failure, refusal_answer, replay,
    retry_after_seconds, REPLAYED_HEADER,
};
use idempotency_ledger::contract::auth::{authenticate, TokenMap};
use idempotency_ledger::contract::proxy::{after_completion, after_origin, unprotected_answer};
use idempotency_ledger::contract::{
    Disposition, GatewayRoute, LedgerFailure, OriginFailure, Protection, RequestHead, Settle,
};
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::{ClaimOutcome, CompleteOutcome, ExecuteOutcome, Ledger};
use idempotency_ledger::orders;
use idempotency_ledger::protocol::{AppResponse, StoredResponse, PROBLEM_CONTENT_TYPE};
use idempotency_ledger::rpc::LedgerError;
use serde_json::Value;
use sha2::{Digest, Sha256};

fn config(vars: &[(&str, &str)]) -> Config {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(&|name| map.get(name).cloned()).expect("valid config")
}

fn header<'a>(r: &'a AppResponse, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The problem document of an answer, checked to be one.
fn problem(r: &AppResponse) -> Value {
    assert_eq!(header(r, "content-type"), Some(PROBLEM_CONTENT_TYPE));
    let doc: Value = serde_json::from_slice(&r.body).expect("problem JSON");
    assert_eq!(doc["status"], r.status);
    assert!(doc["title"].is_string() && doc["detail"].is_string());
    doc
}

/// Checks an answer is the problem `slug` at `status`; returns its document.
fn expect_problem(r: &AppResponse, status: u16, expected: &str) -> Value {
    assert_eq!((r.status, slug(r)), (status, expected.to_string()));
    problem(r)
}

fn slug(r: &AppResponse) -> String {
    let doc = problem(r);
    let ty = doc["type"].as_str().expect("type").to_string();
    ty.rsplit('/').next().unwrap().to_string()
}

fn origin_response(status: u16, body: &[u8]) -> AppResponse {
    AppResponse {
        status,
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-trace".into(), "t1".into()),
        ],
        body: body.to_vec(),
    }
}

/// Claims `key` on the real ledger and answers the refusal as the gateway would.
fn answer_to_claim(
    l: &Ledger<RusqliteStore>,
    key: &str,
    body: &str,
    at: i64,
) -> (AppResponse, Disposition) {
    match l.claim(key, &fp(body), &policy(), at).unwrap() {
        ClaimOutcome::Refused(refusal) => refusal_answer(refusal),
        out @ ClaimOutcome::Claimed { .. } => panic!("expected a refusal, got {out:?}"),
    }
}

// --- The outcome table, row by row -------------------------------------

#[test]
fn first_request_runs_once_and_its_answer_is_returned_in_full() {
    // Embedded: execute on the real ledger, answered by the contract.
    let l = ledger();
    let body = br#"{"sku":"A","quantity":1}"#;
    let out = l
        .execute("k", &fp("x"), &policy(), &capture(), 1_000, |s| {
            orders::handle(s, "POST", "/v1/orders", body, 1_000)
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
            orders::handle(s, "POST", "/v1/orders", br#"{"sku":"A","quantity":1}"#, at)
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
    let ok = origin_response(200, b"x");
    assert_eq!(unprotected_answer(Ok(ok.clone())), ok);
    let down = unprotected_answer(Err(OriginFailure::Unreachable));
    assert_eq!(
        (down.status, slug(&down)),
        (502, "origin-unavailable".to_string())
    );
    let late = unprotected_answer(Err(OriginFailure::TimedOut));
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

// --- Admission --------------------------------------------------------

fn tokens() -> TokenMap {
    let acme = hex::encode(Sha256::digest(b"dev-token-acme"));
    TokenMap::parse(&format!(r#"{{"{acme}":"acme"}}"#)).unwrap()
}

fn unauthorized(header_value: Option<&str>) -> AppResponse {
    let problem = authenticate(header_value, &tokens()).expect_err("must be refused");
    let answer = AppResponse::from(&problem);
    expect_problem(&answer, 401, "unauthorized");
    assert_eq!(header(&answer, "www-authenticate"), Some("Bearer"));
    answer
}

#[test]
fn the_bearer_scheme_is_case_insensitive_and_the_token_trimmed() {
    for value in [
        "Bearer dev-token-acme",
        "bearer dev-token-acme",
        "BEARER dev-token-acme",
        "Bearer   dev-token-acme  ",
        " Bearer dev-token-acme",
    ] {
        assert_eq!(
            authenticate(Some(value), &tokens()).as_deref(),
            Ok("acme"),
            "{value:?}"
        );
    }
}

#[test]
fn missing_empty_foreign_or_unknown_credentials_are_401() {
    for value in [
        None,
        Some(""),
        Some("Bearer"),
        Some("Bearer "),
        Some("Bearer \t "),
        Some("Basic ZGV2LXRva2VuLWFjbWU="),
        Some("Token dev-token-acme"),
        Some("Bearerdev-token-acme"),
        Some("Bearer dev-token-acmE"),
        Some("Bearer dev-token-globex"),
        Some("dev-token-acme"),
    ] {
        unauthorized(value);
    }
}

#[test]
fn only_get_and_head_health_skip_authentication() {
    assert_eq!(admission::route("GET", "/health"), GatewayRoute::Health);
    assert_eq!(admission::route("HEAD", "/health"), GatewayRoute::Health);
    assert_eq!(
        admission::route("POST", "/health"),
        GatewayRoute::Application
    );
    assert_eq!(
        admission::route("GET", "/health/"),
        GatewayRoute::Application
    );
    assert_eq!(
        admission::route("GET", "/v1/idempotency-keys/a%20b"),
        GatewayRoute::KeyIntrospection("a%20b")
    );
    assert_eq!(
        admission::route("GET", "/v1/idempotency/stats"),
        GatewayRoute::Stats
    );
    assert_eq!(
        admission::route("POST", "/v1/idempotency/stats"),
        GatewayRoute::Application
    );
    assert_eq!(
        admission::route("GET", "/openapi.json"),
        GatewayRoute::OpenApi
    );
    assert_eq!(
        admission::route("POST", "/openapi.json"),
        GatewayRoute::Application
    );
}

#[test]
fn the_openapi_document_covers_every_gateway_route_status_and_slug() {
    let doc: Value = serde_json::from_str(admission::OPENAPI_DOCUMENT).expect("valid JSON");
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    for path in [
        "/v1/orders",
        "/v1/orders/{id}",
        "/v1/idempotency-keys/{key}",
        "/v1/idempotency/stats",
        "/health",
        "/openapi.json",
    ] {
        assert!(paths.contains_key(path), "{path} is documented");
    }
    let create = &paths["/v1/orders"]["post"]["responses"];
    for status in [
        "201", "400", "401", "409", "413", "422", "429", "500", "503",
    ] {
        assert!(
            create.get(status).is_some(),
            "POST /v1/orders documents {status}"
        );
    }
    // Every slug the gateway can answer in embedded mode is named.
    let text = admission::OPENAPI_DOCUMENT;
    for slug in [
        "unauthorized",
        "misconfigured",
        "idempotency-key-missing",
        "idempotency-key-invalid",
        "request-too-large",
        "request-body-unreadable",
        "idempotency-key-in-use",
        "idempotency-key-reused",
        "idempotency-response-not-retained",
        "idempotency-store-unavailable",
        "idempotency-ledger-full",
        "invalid-order",
        "not-found",
    ] {
        assert!(text.contains(&format!("`{slug}`")), "{slug} is documented");
    }
    let served = admission::openapi();
    assert_eq!(served.status, 200);
    assert_eq!(served.body, text.as_bytes());
}

fn head<'a>(method: &'a str, length: Option<&'a str>, key: Option<&'a str>) -> RequestHead<'a> {
    RequestHead {
        method,
        content_length: length,
        idempotency_key: key,
    }
}

#[test]
fn a_declared_body_over_the_limit_is_413_before_the_key_is_read() {
    let c = config(&[("MAX_REQUEST_BODY_BYTES", "10")]);
    let r = admission::admit(&head("POST", Some("11"), Some("\"bad")), &c).unwrap_err();
    assert_eq!(r.outcome, Disposition::TooLarge);
    let answer = AppResponse::from(&r.problem);
    assert_eq!(
        (answer.status, slug(&answer)),
        (413, "request-too-large".to_string())
    );
    // Unprotected methods are bounded too.
    assert!(admission::admit(&head("PUT", Some("11"), None), &c).is_err());
}

#[test]
fn a_missing_or_unparsable_content_length_defers_to_the_real_length() {
    let c = config(&[("MAX_REQUEST_BODY_BYTES", "10")]);
    for length in [
        None,
        Some(""),
        Some("abc"),
        Some("-1"),
        Some("10, 10"),
        Some(" 10 "),
    ] {
        assert_eq!(
            admission::admit(&head("POST", length, Some("k")), &c),
            Ok(Protection::Keyed("k".into())),
            "{length:?}"
        );
    }
    assert!(check_body_length(10, &c).is_ok());
    let r = check_body_length(11, &c).unwrap_err();
    assert_eq!(r.outcome, Disposition::TooLarge);
}

#[test]
fn protected_methods_need_a_valid_key() {
    let c = config(&[]);
    let r = admission::admit(&head("POST", None, None), &c).unwrap_err();
    assert_eq!(r.outcome, Disposition::KeyMissing);
    assert_eq!(
        slug(&AppResponse::from(&r.problem)),
        "idempotency-key-missing"
    );
    for bad in ["", "\"open", "a, b", "\"a\\x\"", "\u{7f}"] {
        let r = admission::admit(&head("PATCH", None, Some(bad)), &c).unwrap_err();
        assert_eq!(r.outcome, Disposition::KeyInvalid, "{bad:?}");
        assert_eq!(
            slug(&AppResponse::from(&r.problem)),
            "idempotency-key-invalid"
        );
    }
    assert_eq!(
        admission::admit(&head("POST", None, Some("\"a,b\";x=1")), &c),
        Ok(Protection::Keyed("a,b".into()))
    );
}

#[test]
fn unprotected_methods_and_optional_keys_run_without_the_ledger() {
    let c = config(&[]);
    // An unprotected method ignores even a malformed key.
    let p = admission::admit(&head("GET", None, Some("\"bad")), &c).unwrap();
    assert_eq!(p, Protection::Unprotected);
    assert!(!p.is_logged());
    let optional = config(&[("IDEMPOTENCY_REQUIRED", "false")]);
    let p = admission::admit(&head("POST", None, None), &optional).unwrap();
    assert_eq!(p, Protection::UnprotectedNoKey);
    assert!(p.is_logged());
    // The raw method is compared: a lowercase method is not protected.
    assert_eq!(
        admission::admit(&head("post", None, None), &c),
        Ok(Protection::Unprotected)
    );
}

#[test]
fn introspection_keys_are_percent_decoded_and_validated() {
    assert_eq!(
        introspection_key("order%2F7%20a").as_deref(),
        Ok("order/7 a")
    );
    for bad in ["", "%FF", "%00", &"k".repeat(256)] {
        let problem = introspection_key(bad).unwrap_err();
        assert_eq!(
            slug(&AppResponse::from(&problem)),
            "idempotency-key-invalid",
            "{bad:?}"
        );
    }
}

#[test]
fn misconfiguration_is_500_and_never_names_a_secret_value() {
    let answer = AppResponse::from(&misconfigured("API_TOKENS"));
    assert_eq!(
        (answer.status, slug(&answer)),
        (500, "misconfigured".to_string())
    );
    assert!(problem(&answer)["detail"]
        .as_str()
        .unwrap()
        .contains("API_TOKENS"));
}

#[test]
fn the_target_is_the_url_after_its_authority_verbatim() {
    use idempotency_ledger::protocol::{path_of, target_of};
    assert_eq!(
        target_of("https://gw.test/v1/orders?b=2&a=1"),
        "/v1/orders?b=2&a=1"
    );
    assert_eq!(
        target_of("https://gw.test/a%2Fb/../c?x#frag"),
        "/a%2Fb/../c?x"
    );
    assert_eq!(target_of("https://gw.test"), "/");
    assert_eq!(
        target_of("https://tenant-ledger/rpc/v1/claim"),
        "/rpc/v1/claim"
    );
    assert_eq!(path_of("/rpc/v1/claim?x=1"), "/rpc/v1/claim");
    assert_eq!(path_of("/"), "/");
}

#[test]
fn a_body_that_breaks_off_keeps_the_key_with_502_incomplete() {
    let after = after_origin(Err(OriginFailure::Incomplete), false, &config(&[]));
    assert_eq!(after.settle, Settle::Keep, "the origin ran: never released");
    assert_eq!(after.outcome, Disposition::OriginResponseIncomplete);
    expect_problem(&after.reply, 502, "origin-response-incomplete");
    let unprotected = unprotected_answer(Err(OriginFailure::Incomplete));
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
        expect_problem(
            &unprotected_answer(Ok(origin_response(status, b""))),
            502,
            "origin-invalid-response",
        );
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
