//! What a claim, execute, completion or release can come to: the closed
//! outcomes and the one refusal they share (see [`super`] for what must
//! stay true of their wire shape; `wire.rs` reads them back).

use serde::Serialize;

use super::key_state::RecordState;
use crate::ledger::clock::Millis;
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
    /// The caller owns the key at `generation` and must run, then complete
    /// or release, presenting `lease`: the token naming this grant across
    /// every object (`ledger::lease`). `None` only for a grant made before
    /// tokens (schema 9 and older), repeated to its attempt, or read from
    /// an object older than tokens: settled by its generation alone.
    Claimed {
        generation: i64,
        takeover: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease: Option<String>,
    },
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
