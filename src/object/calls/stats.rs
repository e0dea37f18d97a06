//! `stats` applied: the object's counts, and how many requests are parked
//! on it now (wire shape: `rpc/stats.rs`).
//!
//! What must stay true here: `waiting` is this instance's registry (in
//! memory), every other count comes from the ledger.

use crate::config::Config;
use crate::ledger::Stats;
use crate::object::ledger_object::LedgerObject;
use crate::object::problems::store_unavailable;
use crate::object::waiting::answered;
use crate::object::waiting::WaitReport;
use crate::platform::now_ms;
use crate::protocol::Problem;
use crate::rpc::StatsCall;

/// RPC v1 `stats` applied to `object`, once parsed and validated.
pub(in crate::object) async fn stats(
    object: &LedgerObject,
    _: &Config,
    _: StatsCall,
) -> Result<(Stats, WaitReport), Problem> {
    let mut stats = object
        .ledger
        .stats(now_ms())
        .map_err(|e| store_unavailable(&e))?;
    stats.waiting = object.waiters.parked() as i64;
    Ok(answered(stats))
}
