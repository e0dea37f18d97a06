//! `replayed` applied: counts a caller answered without the object
//! (wire shape: `rpc/replayed.rs`).
//!
//! What must stay true here: the counts are written at once and only if
//! they are written: a `503` leaves none behind, so the caller's re-send
//! is counted once.

use crate::config::Config;
use crate::object::ledger_object::LedgerObject;
use crate::object::problems::store_unavailable;
use crate::object::waiting::answered;
use crate::object::waiting::WaitReport;
use crate::platform::now_ms;
use crate::protocol::Problem;
use crate::rpc::{ReplayedCall, ReplayedOutcome};

/// RPC v1 `replayed` applied to `object`, once parsed and validated.
pub(in crate::object) async fn replayed(
    object: &LedgerObject,
    _: &Config,
    call: ReplayedCall,
) -> Result<(ReplayedOutcome, WaitReport), Problem> {
    let now = now_ms();
    let replays: Vec<(&str, i64, i64)> = call
        .replays
        .iter()
        .map(|r| (r.key.as_str(), r.generation, r.count))
        .collect();
    // Written now (counts that arrive here are already late), and only
    // if they are written: a 503 leaves none of them behind, so the
    // gateway's re-send is counted once.
    object
        .ledger
        .write_reported(&replays, call.complete_failed, now)
        .map_err(|e| store_unavailable(&e))?;
    Ok(answered(ReplayedOutcome::Counted))
}
