//! `lookup` applied: one key's record, or none (wire shape:
//! `rpc/lookup.rs`).
//!
//! What must stay true here: a lookup only reads; it writes nothing, not
//! even a count. A key this object does not hold is looked up where the
//! previous layout the tenant's registry records holds it (unless the
//! caller asked there first: `home/ask_previous.rs`).

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
    config: &Config,
    call: LookupCall,
    asked: Option<u32>,
) -> Result<(LookupAnswer, WaitReport), Problem> {
    let record = object
        .ledger
        .lookup(&call.key, now_ms())
        .map_err(|e| store_unavailable(&e))?;
    if record.is_none() {
        // Not here: where the previous layout holds it, if it does.
        let holds = (asked, Some(false));
        if let Some(answer) = object
            .home
            .ask_previous_for_record(config, &call.key, &call, holds)
            .await?
        {
            return Ok(answer);
        }
    }
    Ok(answered(LookupAnswer { record }))
}
