//! The ledger's closed answers: what a claim, completion, release or
//! execute can come to, and the words records and counters are stored as.
//!
//! Role: one vocabulary shared by the state machine, RPC v1, the clients and
//! the contract. Pure data; no I/O.
//!
//! What must stay true here:
//! - A refusal is one [`Refusal`] value, whatever call produced it: claim
//!   and execute answer `Claimed | Refused(Refusal)` and `Ran |
//!   Refused(Refusal)`, so no caller ever handles an impossible case.
//! - RPC v1's JSON is unchanged: every outcome is one flat object tagged by
//!   `"outcome"` (`claimed`, `ran`, `in_flight`, `completed`, `mismatch`,
//!   `ledger_full`, `stored`, `released`, `fenced_out`). The granted variant
//!   is matched by its tag; a refusal is serde's untagged fallback and
//!   carries its own tag, so the wire shape is the same flat object.
//! - Outcomes are read back through one flat [`Wire`] object (every field
//!   any outcome carries), never through serde's derived internally tagged
//!   and untagged deserializers: those buffer the object in serde's
//!   `Content` first, machinery that was a fifth of the gateway's serde
//!   code. Serialization stays derived.
//! - States and counters are enums whose stored spelling never changes:
//!   renaming one is a schema migration.

use serde::{Deserialize, Serialize};

use super::Millis;
use crate::protocol::{AppResponse, StoredResponse};

mod counter;
mod wire;

pub use counter::Counter;
pub(crate) use wire::read_unit_outcome;

/// Why a claim did not hand the key to the caller. Shared by `claim` and
/// `execute`; the contract turns each into its answer (replay, 409, 422, 429).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Refusal {
    /// Another owner holds a live lease.
    InFlight {
        generation: i64,
        retry_after_ms: i64,
    },
    /// Already done: replay this. `expires_at` (epoch ms, the object's
    /// clock) is when the record leaves its retention window: until then
    /// the answer cannot change, so a caller may cache it. Absent from
    /// answers of objects older than this field.
    Completed {
        generation: i64,
        response: StoredResponse,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires_at: Option<Millis>,
    },
    /// Same key, different request: these fingerprint components differ.
    Mismatch { differs: Vec<String> },
    /// The tenant holds its maximum number of records; try after the next expiry.
    LedgerFull { retry_after_ms: i64 },
}

impl Refusal {
    /// The lease time left when the key is in flight (what a waiter waits on).
    pub fn lease_remaining(&self) -> Option<Millis> {
        match self {
            Refusal::InFlight { retry_after_ms, .. } => Some(*retry_after_ms),
            _ => None,
        }
    }
}

/// The answer to a claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ClaimOutcome {
    /// The caller owns the key at `generation` and must run, then complete or release.
    Claimed { generation: i64, takeover: bool },
    /// The caller must not run; [`Refusal`] says what to answer instead.
    #[serde(untagged)]
    Refused(Refusal),
}

impl ClaimOutcome {
    /// The refusal, when the claim did not hand the key over.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            ClaimOutcome::Refused(refusal) => Some(refusal),
            ClaimOutcome::Claimed { .. } => None,
        }
    }
}

/// What a claim came to, as the ledger tells its caller
/// (`Ledger::claim_as`): the outcome, and whether it repeated a grant this
/// attempt was already given (its first answer lost on the way; nothing
/// was written or counted again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub outcome: ClaimOutcome,
    pub repeated: bool,
}

/// The single-hop answer of `execute`: the application ran (and its
/// response was recorded in the same transaction), or the claim refused it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ExecuteOutcome {
    Ran {
        generation: i64,
        takeover: bool,
        /// False when the response was too large to keep (a tombstone).
        retained: bool,
        response: AppResponse,
    },
    #[serde(untagged)]
    Refused(Refusal),
}

impl ExecuteOutcome {
    /// The refusal, when the application did not run.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            ExecuteOutcome::Refused(refusal) => Some(refusal),
            ExecuteOutcome::Ran { .. } => None,
        }
    }
}

/// The answer to `complete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CompleteOutcome {
    Stored,
    FencedOut { current: Option<RecordState> },
}

/// The answer to `release`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReleaseOutcome {
    Released,
    FencedOut { current: Option<RecordState> },
}

/// Where a refused completion or release found the record (for logs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordState {
    pub state: KeyState,
    pub generation: i64,
}

/// The state column of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyState {
    InFlight,
    Completed,
    Released,
}

impl KeyState {
    /// The stored (and wire) spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyState::InFlight => "in_flight",
            KeyState::Completed => "completed",
            KeyState::Released => "released",
        }
    }

    /// Reads the stored spelling; `None` for anything the ledger never wrote.
    pub fn parse(stored: &str) -> Option<KeyState> {
        match stored {
            "in_flight" => Some(KeyState::InFlight),
            "completed" => Some(KeyState::Completed),
            "released" => Some(KeyState::Released),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
                takeover: false
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
        let names: std::collections::HashSet<&str> =
            Counter::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names.len(), Counter::ALL.len());
        assert!(!names.contains("claim"));
    }
}
