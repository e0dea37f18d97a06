//! `replayed`: replays (and given-up completions) a caller answered
//! without the object, so `stats` stays exact.
//!
//! Answer: [`ReplayedOutcome::Counted`].

use serde::{Deserialize, Serialize};

use super::call::{check_generation, check_key, Call, Route};

/// Most entries one `replayed` call may carry.
pub const MAX_REPLAYED_ENTRIES: usize = 1_000;

/// Most replays one entry may report.
pub const MAX_REPLAYED_COUNT: i64 = 1_000_000;

/// Replays of one completed record answered without the object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayCount {
    pub key: String,
    /// The generation whose completion was replayed.
    pub generation: i64,
    pub count: i64,
}

/// `replayed`: count replays a caller answered from its own cache (the
/// gateway's replay cache), so `stats` stays exact. Changes no record's
/// state; a record no longer completed at that generation keeps its count
/// out of the record but in the tenant's `replays`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayedCall {
    pub replays: Vec<ReplayCount>,
    /// Completions the caller could not store after its retries (added to
    /// `stats.complete_failed`). Optional; 0 when absent.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub complete_failed: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl Call for ReplayedCall {
    const ROUTE: Route = Route::Replayed;
    type Answer = ReplayedOutcome;

    fn validate(&self) -> Result<(), String> {
        if self.replays.len() > MAX_REPLAYED_ENTRIES {
            return Err(format!("at most {MAX_REPLAYED_ENTRIES} entries per call"));
        }
        if !(0..=MAX_REPLAYED_COUNT).contains(&self.complete_failed) {
            return Err(format!(
                "complete_failed must be between 0 and {MAX_REPLAYED_COUNT}"
            ));
        }
        for r in &self.replays {
            check_key(&r.key)?;
            check_generation(r.generation)?;
            if !(1..=MAX_REPLAYED_COUNT).contains(&r.count) {
                return Err(format!("count must be between 1 and {MAX_REPLAYED_COUNT}"));
            }
        }
        Ok(())
    }
}

/// The answer to `replayed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReplayedOutcome {
    Counted,
}

/// Read through the ledger's flat outcome object, never serde's buffering
/// tagged deserializer (`ledger::outcome`).
impl<'de> Deserialize<'de> for ReplayedOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::ledger::outcome::read_unit_outcome(d, &["counted"])
            .map(|()| ReplayedOutcome::Counted)
    }
}
