//! Reading outcomes back from RPC v1's JSON: one flat [`Wire`] object
//! (every field any outcome carries) instead of serde's derived internally
//! tagged and untagged deserializers (see the parent module's doc).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use super::key_state::RecordState;
use super::outcomes::{ClaimOutcome, CompleteOutcome, ExecuteOutcome, Refusal, ReleaseOutcome};
use crate::ledger::clock::Millis;
use crate::protocol::{AppResponse, StoredResponse};

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
    lease: Option<String>,
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
            lease: wire.lease,
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

/// A settlement's answer (`complete`, `release`): `Ok(())` for its done
/// tag (`tags[0]`), `Err(current)` for `fenced_out` (`tags[1]`).
fn read_settled<'de, D: Deserializer<'de>>(
    d: D,
    tags: &'static [&'static str; 2],
) -> Result<Result<(), Option<RecordState>>, D::Error> {
    let wire = Wire::read(d)?;
    match wire.outcome.as_str() {
        t if t == tags[0] => Ok(Ok(())),
        t if t == tags[1] => Ok(Err(wire.current)),
        _ => wire.unknown(tags),
    }
}

impl<'de> Deserialize<'de> for CompleteOutcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match read_settled(d, &["stored", "fenced_out"])? {
            Ok(()) => CompleteOutcome::Stored,
            Err(current) => CompleteOutcome::FencedOut { current },
        })
    }
}

impl<'de> Deserialize<'de> for ReleaseOutcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match read_settled(d, &["released", "fenced_out"])? {
            Ok(()) => ReleaseOutcome::Released,
            Err(current) => ReleaseOutcome::FencedOut { current },
        })
    }
}
