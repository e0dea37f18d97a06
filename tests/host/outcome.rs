//! The ledger's outcomes keep RPC v1's flat JSON (docs/contract.md §3):
//! each one serialized and read back (src/ledger/outcome/).

use idempotency_ledger::ledger::*;
use idempotency_ledger::protocol::{AppResponse, StoredResponse};
use serde::{Deserialize, Serialize};
use serde_json::json;

fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(
    value: T,
    wire: serde_json::Value,
) {
    assert_eq!(serde_json::to_value(&value).unwrap(), wire);
    assert_eq!(serde_json::from_value::<T>(wire).unwrap(), value);
}

#[test]
fn claim_outcomes_keep_rpc_v1_flat_json() {
    round_trip(
        ClaimOutcome::Claimed {
            generation: 2,
            takeover: true,
            lease: Some("0123456789abcdef0123456789abcdef".into()),
        },
        json!({"outcome": "claimed", "generation": 2, "takeover": true,
               "lease": "0123456789abcdef0123456789abcdef"}),
    );
    // A grant without a token (made before tokens, or by an object older
    // than them) carries no `lease` member, as RPC v1 always did.
    round_trip(
        ClaimOutcome::Claimed {
            generation: 2,
            takeover: true,
            lease: None,
        },
        json!({"outcome": "claimed", "generation": 2, "takeover": true}),
    );
    round_trip(
        ClaimOutcome::Refused(Refusal::InFlight {
            generation: 1,
            retry_after_ms: 500,
        }),
        json!({"outcome": "in_flight", "generation": 1, "retry_after_ms": 500}),
    );
    round_trip(
        ClaimOutcome::Refused(Refusal::Completed {
            generation: 3,
            response: StoredResponse {
                status: 201,
                headers: vec![("content-type".into(), "text/plain".into())],
                body: Some(b"hi".to_vec()),
            },
            expires_at: Some(86_400_000),
        }),
        json!({"outcome": "completed", "generation": 3, "response": {
            "status": 201, "headers": [["content-type", "text/plain"]], "body": "aGk="},
            "expires_at": 86_400_000}),
    );
    round_trip(
        ClaimOutcome::Refused(Refusal::Mismatch {
            differs: vec!["body".into()],
        }),
        json!({"outcome": "mismatch", "differs": ["body"]}),
    );
    round_trip(
        ClaimOutcome::Refused(Refusal::LedgerFull {
            retry_after_ms: 1000,
        }),
        json!({"outcome": "ledger_full", "retry_after_ms": 1000}),
    );
}

#[test]
fn execute_outcomes_keep_rpc_v1_flat_json() {
    round_trip(
        ExecuteOutcome::Ran {
            generation: 1,
            takeover: false,
            retained: true,
            response: AppResponse {
                status: 201,
                headers: vec![],
                body: b"{}".to_vec(),
            },
        },
        json!({"outcome": "ran", "generation": 1, "takeover": false, "retained": true,
               "response": {"status": 201, "headers": [], "body": "e30="}}),
    );
    round_trip(
        ExecuteOutcome::Refused(Refusal::Completed {
            generation: 1,
            response: StoredResponse {
                status: 500,
                headers: vec![],
                body: None,
            },
            expires_at: None,
        }),
        json!({"outcome": "completed", "generation": 1,
               "response": {"status": 500, "headers": [], "body": null}}),
    );
}

#[test]
fn unknown_or_malformed_outcomes_are_refused() {
    for wire in [
        json!({"outcome": "claimed"}),
        json!({"outcome": "ran", "generation": 1}),
        json!({"outcome": "bogus"}),
        json!({"generation": 1}),
    ] {
        assert!(serde_json::from_value::<ClaimOutcome>(wire.clone()).is_err());
        assert!(serde_json::from_value::<ExecuteOutcome>(wire).is_err());
    }
    // `ran` carries a whole response: a tombstone's null body is `completed`'s only.
    assert!(serde_json::from_value::<ExecuteOutcome>(json!({
        "outcome": "ran", "generation": 1, "takeover": false, "retained": true,
        "response": {"status": 201, "headers": [], "body": null}}))
    .is_err());
    // A claim outcome is not an execute outcome and vice versa.
    assert!(serde_json::from_value::<ClaimOutcome>(
        json!({"outcome": "ran", "generation": 1, "takeover": false})
    )
    .is_err());
}

#[test]
fn fields_an_outcome_does_not_carry_are_ignored_as_before() {
    assert_eq!(
        serde_json::from_value::<ClaimOutcome>(json!({
            "outcome": "claimed", "generation": 4, "takeover": false, "waited_ms": 12}))
        .unwrap(),
        ClaimOutcome::Claimed {
            generation: 4,
            takeover: false,
            lease: None
        }
    );
    assert_eq!(
        serde_json::from_value::<ReleaseOutcome>(json!({"outcome": "fenced_out"})).unwrap(),
        ReleaseOutcome::FencedOut { current: None }
    );
    assert!(serde_json::from_value::<ReleaseOutcome>(json!({"outcome": "stored"})).is_err());
}

#[test]
fn fenced_out_names_the_current_state_in_snake_case() {
    round_trip(
        CompleteOutcome::FencedOut {
            current: Some(RecordState {
                state: KeyState::InFlight,
                generation: 2,
            }),
        },
        json!({"outcome": "fenced_out", "current": {"state": "in_flight", "generation": 2}}),
    );
    round_trip(ReleaseOutcome::Released, json!({"outcome": "released"}));
    round_trip(CompleteOutcome::Stored, json!({"outcome": "stored"}));
}

#[test]
fn states_and_counters_read_back_what_they_store() {
    for s in [KeyState::InFlight, KeyState::Completed, KeyState::Released] {
        assert_eq!(KeyState::parse(s.as_str()), Some(s));
        assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
    }
    assert_eq!(KeyState::parse("done"), None);
    // Each counter is its own ledger_state column: names never repeat.
    let names: std::collections::HashSet<&str> = Counter::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(names.len(), Counter::ALL.len());
    assert!(!names.contains("claim"));
}
