//! `lookup` applied: one key's record, or none (wire shape:
//! `rpc/lookup.rs`).
//!
//! What must stay true here: a lookup only reads; it writes nothing, not
//! even a count.

use crate::config::Config;
use crate::object::ledger_object::LedgerObject;
use crate::object::problems::store_unavailable;
use crate::object::waiting::answered;
use crate::object::waiting::WaitReport;
use crate::platform::now_ms;
use crate::protocol::Problem;
use crate::rpc::{LookupAnswer, LookupCall};

/// RPC v1 `lookup` applied to `object`, once parsed and validated.
pub(in crate::object) async fn lookup(
    object: &LedgerObject,
    _: &Config,
    call: LookupCall,
) -> Result<(LookupAnswer, WaitReport), Problem> {
    let record = object
        .ledger
        .lookup(&call.key, now_ms())
        .map_err(|e| store_unavailable(&e))?;
    Ok(answered(LookupAnswer { record }))
}
