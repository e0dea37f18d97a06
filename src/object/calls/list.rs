//! `list` applied: one page of this object's keys (wire shape:
//! `rpc/list.rs`).
//!
//! What must stay true here: a listing only reads; it writes nothing, not
//! even a count. A retired shard lists what it holds like any other object
//! (the caller merges the tenant's objects: `gateway::reads`).

use crate::config::Config;
use crate::ledger::ListPage;
use crate::object::ledger_object::LedgerObject;
use crate::object::problems::store_unavailable;
use crate::object::waiting::answered;
use crate::object::waiting::WaitReport;
use crate::platform::now_ms;
use crate::protocol::Problem;
use crate::rpc::ListCall;

/// RPC v1 `list` applied to `object`, once parsed and validated.
pub(in crate::object) async fn list(
    object: &LedgerObject,
    _: &Config,
    call: ListCall,
) -> Result<(ListPage, WaitReport), Problem> {
    let page = object
        .ledger
        .list(&call.query(), now_ms())
        .map_err(|e| store_unavailable(&e))?;
    Ok(answered(page))
}
