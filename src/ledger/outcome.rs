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

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};

use super::Millis;
use crate::protocol::{AppResponse, StoredResponse};

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

/// RPC v1's flat outcome object as every outcome is read back: its tag and
/// every field any outcome carries, read straight off the wire (unknown
/// fields ignored, as the derived deserializers ignored them). One struct
/// for every outcome enum, so its deserializer exists once per input type.
#[derive(Deserialize)]
struct Wire {
    outcome: String,
    generation: Option<i64>,
    takeover: Option<bool>,
    retained: Option<bool>,
    retry_after_ms: Option<i64>,
    /// `ran`'s [`AppResponse`] and `completed`'s [`StoredResponse`] share
    /// one shape but for the body (`null`: a tombstone, `completed` only).
    response: Option<StoredResponse>,
    expires_at: Option<Millis>,
    differs: Option<Vec<String>>,
    current: Option<RecordState>,
}

/// A field the outcome must carry.
fn required<T, E: serde::de::Error>(value: Option<T>, field: &'static str) -> Result<T, E> {
    value.ok_or_else(|| E::missing_field(field))
}

impl Wire {
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Wire, D::Error> {
        Wire::deserialize(d)
    }

    fn unknown<T, E: serde::de::Error>(&self, expected: &'static [&'static str]) -> Result<T, E> {
        Err(E::unknown_variant(&self.outcome, expected))
    }

    fn refusal<E: serde::de::Error>(self) -> Result<Refusal, E> {
        match self.outcome.as_str() {
            "in_flight" => Ok(Refusal::InFlight {
                generation: required(self.generation, "generation")?,
                retry_after_ms: required(self.retry_after_ms, "retry_after_ms")?,
            }),
            "completed" => Ok(Refusal::Completed {
                generation: required(self.generation, "generation")?,
                response: required(self.response, "response")?,
                expires_at: self.expires_at,
            }),
            "mismatch" => Ok(Refusal::Mismatch {
                differs: required(self.differs, "differs")?,
            }),
            "ledger_full" => Ok(Refusal::LedgerFull {
                retry_after_ms: required(self.retry_after_ms, "retry_after_ms")?,
            }),
            _ => self.unknown(&["in_flight", "completed", "mismatch", "ledger_full"]),
        }
    }
}

/// Reads an outcome that has no fields (`{"outcome": "<tag>"}`, other
/// fields ignored) and is one of `tags`: RPC v1's `replayed` and `layout`
/// answers.
pub(crate) fn read_unit_outcome<'de, D: Deserializer<'de>>(
    d: D,
    tags: &'static [&'static str],
) -> Result<(), D::Error> {
    let wire = Wire::read(d)?;
    if tags.contains(&wire.outcome.as_str()) {
        Ok(())
    } else {
        wire.unknown(tags)
    }
}

impl<'de> Deserialize<'de> for Refusal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Wire::read(d)?.refusal()
    }
}

impl<'de> Deserialize<'de> for ClaimOutcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = Wire::read(d)?;
        if wire.outcome != "claimed" {
            return wire.refusal().map(ClaimOutcome::Refused);
        }
        Ok(ClaimOutcome::Claimed {
            generation: required(wire.generation, "generation")?,
            takeover: required(wire.takeover, "takeover")?,
        })
    }
}

impl<'de> Deserialize<'de> for ExecuteOutcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = Wire::read(d)?;
        if wire.outcome != "ran" {
            return wire.refusal().map(ExecuteOutcome::Refused);
        }
        let response = required(wire.response, "response")?;
        let Some(body) = response.body else {
            return Err(D::Error::invalid_type(
                serde::de::Unexpected::Unit,
                &"the response body (base64)",
            ));
        };
        Ok(ExecuteOutcome::Ran {
            generation: required(wire.generation, "generation")?,
            takeover: required(wire.takeover, "takeover")?,
            retained: required(wire.retained, "retained")?,
            response: AppResponse {
                status: response.status,
                headers: response.headers,
                body,
            },
        })
    }
}

impl<'de> Deserialize<'de> for CompleteOutcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = Wire::read(d)?;
        match wire.outcome.as_str() {
            "stored" => Ok(CompleteOutcome::Stored),
            "fenced_out" => Ok(CompleteOutcome::FencedOut {
                current: wire.current,
            }),
            _ => wire.unknown(&["stored", "fenced_out"]),
        }
    }
}

impl<'de> Deserialize<'de> for ReleaseOutcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = Wire::read(d)?;
        match wire.outcome.as_str() {
            "released" => Ok(ReleaseOutcome::Released),
            "fenced_out" => Ok(ReleaseOutcome::FencedOut {
                current: wire.current,
            }),
            _ => wire.unknown(&["released", "fenced_out"]),
        }
    }
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

/// The counters kept in the `ledger_state` row, by column name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Counter {
    /// Records held in each state (their sum is the quota's count).
    InFlight,
    Completed,
    Released,
    Claims,
    Replays,
    InUse,
    Reused,
    Takeovers,
    FencedOut,
    Swept,
    /// Completions a gateway could not store after its retries.
    CompleteFailed,
    /// Claims that met a live lease and waited for its outcome.
    Waited,
    /// Waiters answered with the replay of the run they waited for.
    WaitedReplayed,
    /// Waiters whose budget ran out while the key was still in flight (`409`).
    WaitedTimedOut,
}

impl Counter {
    pub const ALL: [Counter; 14] = [
        Counter::InFlight,
        Counter::Completed,
        Counter::Released,
        Counter::Claims,
        Counter::Replays,
        Counter::InUse,
        Counter::Reused,
        Counter::Takeovers,
        Counter::FencedOut,
        Counter::Swept,
        Counter::CompleteFailed,
        Counter::Waited,
        Counter::WaitedReplayed,
        Counter::WaitedTimedOut,
    ];

    /// The outcomes the per-minute trend follows (`ledger::trend`), in the
    /// order its stored rows hold them.
    pub const TRENDED: [Counter; 7] = [
        Counter::Claims,
        Counter::Replays,
        Counter::InUse,
        Counter::Reused,
        Counter::Takeovers,
        Counter::FencedOut,
        Counter::Swept,
    ];

    /// This counter's place in a trend row, if the trend follows it.
    pub fn trend_slot(self) -> Option<usize> {
        Counter::TRENDED.iter().position(|c| *c == self)
    }

    /// The stored name (a column of `ledger_state`; the v1 counter name).
    pub fn name(self) -> &'static str {
        match self {
            Counter::InFlight => "in_flight",
            Counter::Completed => "completed",
            Counter::Released => "released",
            Counter::Claims => "claims",
            Counter::Replays => "replays",
            Counter::InUse => "in_use",
            Counter::Reused => "reused",
            Counter::Takeovers => "takeovers",
            Counter::FencedOut => "fenced_out",
            Counter::Swept => "swept",
            Counter::CompleteFailed => "complete_failed",
            Counter::Waited => "waited",
            Counter::WaitedReplayed => "waited_replayed",
            Counter::WaitedTimedOut => "waited_timed_out",
        }
    }

    /// The counter of records in `state`.
    pub fn of_state(state: KeyState) -> Counter {
        match state {
            KeyState::InFlight => Counter::InFlight,
            KeyState::Completed => Counter::Completed,
            KeyState::Released => Counter::Released,
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
