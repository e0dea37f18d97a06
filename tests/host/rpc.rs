//! RPC v1 wire shapes: routes, validation, the JSON each call and outcome
//! keeps.

use idempotency_ledger::ledger::ClaimOutcome;
use idempotency_ledger::protocol::{Fingerprint, StoredResponse};
use idempotency_ledger::rpc::*;

#[test]
fn routes_resolve_only_under_v1() {
    assert_eq!(Route::from_path("/rpc/v1/claim"), Some(Route::Claim));
    assert_eq!(Route::from_path("/rpc/v2/claim"), None);
    assert_eq!(Route::from_path("/rpc/v1/nope"), None);
    for r in [
        Route::Claim,
        Route::Complete,
        Route::Release,
        Route::Lookup,
        Route::List,
        Route::Stats,
        Route::Execute,
        Route::Replayed,
        Route::Evict,
    ] {
        assert_eq!(Route::from_path(r.path()), Some(r));
    }
}

#[test]
fn outcomes_are_tagged_json() {
    let json = serde_json::to_value(ClaimOutcome::Claimed {
        generation: 2,
        takeover: true,
        lease: None,
    })
    .unwrap();
    assert_eq!(
        json,
        serde_json::json!({"outcome": "claimed", "generation": 2, "takeover": true})
    );
}

#[test]
fn a_claim_retention_shorter_than_its_lease_is_refused() {
    assert!(check_claim_windows(5_000, 4_000).is_err());
    // One rule with RETENTION_SECONDS against LEASE_SECONDS
    // (tests/fixtures/limits.json `windows`): equal is enough.
    assert!(check_claim_windows(5_000, 5_000).is_ok());
    assert!(check_claim_windows(5_000, 6_000).is_ok());
    assert!(check_claim_windows(1_000, 86_400_000).is_ok());
}

#[test]
fn a_borrowed_execute_call_is_the_same_json() {
    let fingerprint = Fingerprint::from_components(vec![]);
    let owned = ExecuteCall {
        key: "k".into(),
        fingerprint: fingerprint.clone(),
        request: AppRequest {
            method: "POST".into(),
            target: "/v1/orders".into(),
            body: vec![0, 255, 10],
        },
        wait_ms: Some(5_000),
    };
    let borrowed = ExecuteCallRef {
        key: "k",
        fingerprint: &fingerprint,
        request: AppRequestRef {
            method: "POST",
            target: "/v1/orders",
            body: &[0, 255, 10],
        },
        wait_ms: Some(5_000),
    };
    assert_eq!(
        serde_json::to_value(&owned).unwrap(),
        serde_json::to_value(&borrowed).unwrap()
    );
}

#[test]
fn a_wait_is_optional_and_bounded() {
    let fingerprint = Fingerprint::of(&idempotency_ledger::protocol::RequestParts {
        method: "POST",
        target: "/v1/orders",
        headers: &[],
        body: b"{}",
    });
    let call = |wait_ms| ClaimCall {
        key: "k".into(),
        fingerprint: fingerprint.clone(),
        lease_seconds: None,
        retention_seconds: None,
        wait_ms,
        attempt: None,
    };
    assert_eq!(call(None).validate(), Ok(()));
    assert_eq!(call(Some(0)).validate(), Ok(()));
    assert_eq!(call(Some(MAX_CALL_WAIT_MS)).validate(), Ok(()));
    assert!(call(Some(MAX_CALL_WAIT_MS + 1)).validate().is_err());
    // Absent from the JSON when not set: RPC v1 calls are unchanged.
    assert!(serde_json::to_value(call(None))
        .unwrap()
        .get("wait_ms")
        .is_none());
    let negative: Result<ClaimCall, _> = serde_json::from_value(serde_json::json!({
        "key": "k", "fingerprint": fingerprint, "wait_ms": -1
    }));
    assert!(negative.is_err());
}

#[test]
fn a_claim_attempt_is_optional_and_a_hostile_one_is_refused() {
    let fingerprint = Fingerprint::of(&idempotency_ledger::protocol::RequestParts {
        method: "POST",
        target: "/v1/orders",
        headers: &[],
        body: b"{}",
    });
    let call = |attempt: Option<&str>| ClaimCall {
        key: "k".into(),
        fingerprint: fingerprint.clone(),
        lease_seconds: None,
        retention_seconds: None,
        wait_ms: None,
        attempt: attempt.map(str::to_string),
    };
    // Absent from the JSON when not set: RPC v1 claims are unchanged.
    assert!(serde_json::to_value(call(None))
        .unwrap()
        .get("attempt")
        .is_none());
    let longest = "a".repeat(MAX_ATTEMPT_CHARS);
    for ok in [
        "0b6c1f4e-6a2b-4d1e-9b7a-3f2d8c5e1a90",
        "A_z-9",
        longest.as_str(),
    ] {
        assert_eq!(call(Some(ok)).validate(), Ok(()), "{ok}");
    }
    let too_long = "a".repeat(MAX_ATTEMPT_CHARS + 1);
    for bad in [
        "",
        too_long.as_str(),
        "a b",
        "a\nb",
        "a/b",
        "é",
        "a\u{0}",
        "\"quoted\"",
    ] {
        assert!(call(Some(bad)).validate().is_err(), "{bad:?}");
    }
    // Not a string: the call itself is refused.
    let number: Result<ClaimCall, _> = serde_json::from_value(serde_json::json!({
        "key": "k", "fingerprint": fingerprint, "attempt": 7
    }));
    assert!(number.is_err());
}

#[test]
fn replayed_calls_are_bounded() {
    let entry = |key: &str, generation, count| ReplayCount {
        key: key.into(),
        generation,
        count,
    };
    let ok = ReplayedCall {
        replays: vec![entry("k", 1, 3)],
        complete_failed: 0,
    };
    assert_eq!(ok.validate(), Ok(()));
    // The optional count is absent from the JSON when zero, and bounded.
    assert_eq!(
        serde_json::to_value(&ok).unwrap(),
        serde_json::json!({"replays": [{"key": "k", "generation": 1, "count": 3}]})
    );
    for (n, valid) in [(1, true), (-1, false), (MAX_REPLAYED_COUNT + 1, false)] {
        let call = ReplayedCall {
            replays: vec![],
            complete_failed: n,
        };
        assert_eq!(call.validate().is_ok(), valid, "{n}");
    }
    for bad in [
        entry("", 1, 1),
        entry("k", 0, 1),
        entry("k", 1, 0),
        entry("k", 1, -5),
    ] {
        assert!(ReplayedCall {
            replays: vec![bad],
            complete_failed: 0
        }
        .validate()
        .is_err());
    }
    let too_many = ReplayedCall {
        replays: vec![entry("k", 1, 1); MAX_REPLAYED_ENTRIES + 1],
        complete_failed: 0,
    };
    assert!(too_many.validate().is_err());
    assert_eq!(
        serde_json::to_value(ReplayedOutcome::Counted).unwrap(),
        serde_json::json!({"outcome": "counted"})
    );
    assert_eq!(
        serde_json::from_str::<ReplayedOutcome>(r#"{"outcome":"counted"}"#).unwrap(),
        ReplayedOutcome::Counted
    );
    assert!(serde_json::from_str::<ReplayedOutcome>(r#"{"outcome":"accepted"}"#).is_err());
    assert!(serde_json::from_str::<ReplayedOutcome>(r#"{}"#).is_err());
}

#[test]
fn an_evict_call_names_one_valid_key_and_nothing_else() {
    assert_eq!(Route::from_path("/rpc/v1/evict"), Some(Route::Evict));
    let call: EvictCall = serde_json::from_str(r#"{"key":"k"}"#).unwrap();
    assert!(call.validate().is_ok());
    assert!(serde_json::from_str::<EvictCall>(r#"{"key":"k","generation":1}"#).is_err());
    assert!(serde_json::from_str::<EvictCall>(r#"{}"#).is_err());
    for bad in [r#"{"key":""}"#, r#"{"key":"a\u0000b"}"#] {
        let call: EvictCall = serde_json::from_str(bad).unwrap();
        assert!(call.validate().is_err(), "{bad}");
    }
    let long = format!(r#"{{"key":"{}"}}"#, "k".repeat(10_000));
    let call: EvictCall = serde_json::from_str(&long).unwrap();
    assert!(call.validate().is_err());
}

#[test]
fn unknown_fields_and_bad_values_are_refused() {
    assert!(serde_json::from_str::<ReleaseCall>(r#"{"key":"k","generation":1,"x":1}"#).is_err());
    let call: ReleaseCall = serde_json::from_str(r#"{"key":"k","generation":0}"#).unwrap();
    assert!(call.validate().is_err());
    let call: ReleaseCall = serde_json::from_str(r#"{"key":"","generation":1}"#).unwrap();
    assert!(call.validate().is_err());
}

#[test]
fn list_calls_are_optional_bounded_and_strict() {
    let call: ListCall = serde_json::from_str("{}").unwrap();
    assert_eq!(call.validate(), Ok(()));
    assert_eq!(call.query().limit, 20, "the default page");
    assert_eq!(serde_json::to_value(&call).unwrap(), serde_json::json!({}));
    let call: ListCall = serde_json::from_value(serde_json::json!({
        "state": "in_flight", "limit": 100, "after": {"sweep_at": 1_800_000_000_000i64, "key": "k"}
    }))
    .unwrap();
    assert_eq!(call.validate(), Ok(()));
    for bad in [
        serde_json::json!({"limit": 0}),
        serde_json::json!({"limit": 101}),
        serde_json::json!({"after": {"sweep_at": 1, "key": ""}}),
        serde_json::json!({"after": {"sweep_at": 9_007_199_254_740_992i64, "key": "k"}}),
    ] {
        let call: ListCall = serde_json::from_value(bad.clone()).unwrap();
        assert!(call.validate().is_err(), "{bad}");
    }
    for unreadable in [
        serde_json::json!({"state": "done"}),
        serde_json::json!({"limit": -1}),
        serde_json::json!({"limit": "5"}),
        serde_json::json!({"after": {"sweep_at": 1}}),
        serde_json::json!({"after": {"sweep_at": 1, "key": "k", "x": 1}}),
        serde_json::json!({"cursor": "abc"}),
    ] {
        assert!(
            serde_json::from_value::<ListCall>(unreadable.clone()).is_err(),
            "{unreadable}"
        );
    }
}

#[test]
fn a_listed_key_is_the_lookup_view_plus_its_sweep_at() {
    use idempotency_ledger::ledger::{KeyState, ListPage, ListedKey, Position, RecordView};
    let page = ListPage {
        keys: vec![ListedKey {
            record: RecordView {
                key: "k".into(),
                state: KeyState::InFlight,
                generation: 1,
                created_at: "2026-12-01T00:00:00.000Z".into(),
                expires_at: "2026-12-02T00:00:00.000Z".into(),
                lease_expires_at: Some("2026-12-01T00:01:00.000Z".into()),
                response_status: None,
                retained: None,
                replays: 0,
            },
            sweep_at: 1_764_633_600_000,
        }],
        next: Some(Position {
            sweep_at: 1_764_633_600_000,
            key: "k".into(),
        }),
    };
    let json = serde_json::to_value(&page).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "keys": [{"key": "k", "state": "in_flight", "generation": 1,
                      "created_at": "2026-12-01T00:00:00.000Z", "expires_at": "2026-12-02T00:00:00.000Z",
                      "lease_expires_at": "2026-12-01T00:01:00.000Z", "response_status": null,
                      "retained": null, "replays": 0, "sweep_at": 1_764_633_600_000i64}],
            "next": {"sweep_at": 1_764_633_600_000i64, "key": "k"}
        })
    );
    assert_eq!(serde_json::from_value::<ListPage>(json).unwrap(), page);
}

#[test]
fn only_complete_and_release_settle_so_no_operation_refuses_only_them() {
    // The calls an upgrading object or a refused layout still serves: they
    // settle a claim already granted and create no key (docs/contract.md §4, §8).
    let settling: Vec<Route> = ROUTES
        .iter()
        .map(|(r, _)| *r)
        .filter(|r| r.settles())
        .collect();
    assert_eq!(settling, vec![Route::Complete, Route::Release]);
}

#[test]
fn a_settlement_lease_is_optional_and_only_a_token_shape_is_accepted() {
    let complete = |lease: Option<&str>| CompleteCall {
        key: "k".into(),
        generation: 1,
        lease: lease.map(str::to_string),
        response: StoredResponse {
            status: 201,
            headers: vec![],
            body: Some(b"ok".to_vec()),
        },
        retention_seconds: None,
    };
    let release = |lease: Option<&str>| ReleaseCall {
        key: "k".into(),
        generation: 1,
        lease: lease.map(str::to_string),
    };
    // Absent from the JSON when not set: a caller older than tokens sends
    // exactly what it sent before, and an object older than tokens (which
    // refuses unknown fields) is never sent one it did not grant.
    assert!(serde_json::to_value(complete(None))
        .unwrap()
        .get("lease")
        .is_none());
    assert!(serde_json::to_value(release(None))
        .unwrap()
        .get("lease")
        .is_none());
    let token = "0123456789abcdef0123456789abcdef";
    assert_eq!(complete(Some(token)).validate(), Ok(()));
    assert_eq!(release(Some(token)).validate(), Ok(()));
    assert_eq!(release(None).validate(), Ok(()));
    for bad in [
        "",
        "0123456789ABCDEF0123456789ABCDEF",
        "0123456789abcdef0123456789abcde",
        "0123456789abcdef0123456789abcdef0",
        "0123456789abcdef0123456789abcdeg",
        "1",
    ] {
        assert!(complete(Some(bad)).validate().is_err(), "{bad:?}");
        assert!(release(Some(bad)).validate().is_err(), "{bad:?}");
    }
    let number: Result<ReleaseCall, _> =
        serde_json::from_value(serde_json::json!({"key": "k", "generation": 1, "lease": 7}));
    assert!(number.is_err());
}

#[test]
fn only_a_call_whose_repeat_is_answered_as_the_first_is_sent_again_when_its_answer_is_lost() {
    // The rule both the typed client and an object passing a call on to
    // the previous layout send with (`LedgerClient::send`).
    let fingerprint = Fingerprint::of(&idempotency_ledger::protocol::RequestParts {
        method: "POST",
        target: "/v1/orders",
        headers: &[],
        body: b"{}",
    });
    let claim = |attempt: Option<&str>, wait_ms: Option<u64>| ClaimCall {
        key: "k".into(),
        fingerprint: fingerprint.clone(),
        lease_seconds: None,
        retention_seconds: None,
        wait_ms,
        attempt: attempt.map(str::to_string),
    };
    assert!(claim(Some("attempt-1"), None).repeatable());
    assert!(claim(Some("attempt-1"), Some(0)).repeatable());
    assert!(
        !claim(Some("attempt-1"), Some(1_000)).repeatable(),
        "a waiting claim"
    );
    assert!(!claim(None, None).repeatable(), "an unnamed claim");
    let execute = |wait_ms: Option<u64>| ExecuteCall {
        key: "k".into(),
        fingerprint: fingerprint.clone(),
        request: AppRequest {
            method: "POST".into(),
            target: "/v1/orders".into(),
            body: vec![],
        },
        wait_ms,
    };
    assert!(execute(None).repeatable());
    assert!(!execute(Some(500)).repeatable());
    let complete = CompleteCall {
        key: "k".into(),
        generation: 1,
        lease: None,
        response: StoredResponse {
            status: 201,
            headers: vec![],
            body: None,
        },
        retention_seconds: None,
    };
    assert!(
        !complete.repeatable(),
        "a settlement is retried by its caller's own policy"
    );
    assert!(!EvictCall { key: "k".into() }.repeatable());
}
