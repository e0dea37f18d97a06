//! `release` applied: give the key back after a run that produced no
//! response (wire shape: `rpc/release.rs`).
//!
//! What must stay true here: only a key this shard holds is released; a
//! release wakes the key's waiters (the next claim runs it again), a
//! fenced-out one is logged and changes nothing. Like a completion, a
//! release is served while the schema upgrades and under a layout the
//! registry refuses or holds (no `check_layout`: it creates no key).

use crate::config::Config;
use crate::ledger::ReleaseOutcome;
use crate::object::ledger_object::LedgerObject;
use crate::object::problems::store_unavailable;
use crate::object::waiting::answered;
use crate::object::waiting::WaitReport;
use crate::platform::{log, now_ms};
use crate::protocol::Problem;
use crate::rpc::ReleaseCall;

/// RPC v1 `release` applied to `object`, once parsed and validated.
pub(in crate::object) async fn release(
    object: &LedgerObject,
    config: &Config,
    call: ReleaseCall,
    asked: Option<u32>,
) -> Result<(ReleaseOutcome, WaitReport), Problem> {
    // A key this object does not hold is settled where the previous
    // layout holds it (a settlement is never refused by the layout).
    if let Some(answer) = object
        .home
        .ask_previous_for_record(config, &call.key, &call, (asked, None))
        .await?
    {
        return Ok(answer);
    }
    object.home.check_home(config, &call.key, now_ms())?;
    let out = object
        .ledger
        .release(&call.key, call.grant(), now_ms())
        .map_err(|e| store_unavailable(&e))?;
    match &out {
        ReleaseOutcome::FencedOut { current } => {
            log::fenced_out("release", &call.key, call.generation, current)
        }
        ReleaseOutcome::Released => {
            object.waiters.wake(&call.key);
        }
    }
    Ok(answered(out))
}
