//! `evict` applied: remove one key's record (wire shape: `rpc/evict.rs`).
//!
//! What must stay true here: every eviction is logged (the key's hash, the
//! state, generation and stored status it removed) and wakes the key's
//! waiters; a refused one (a live lease, no record) changes nothing.
//! Answered wherever the record is: a caller asks the key's object in a
//! previous layout first, then its current one (as a lookup does), and a
//! current-layout object that does not hold the key asks the previous
//! layout the tenant's registry records itself unless its caller did
//! (`home/ask_previous.rs`: a layout kept in force after the configuration
//! dropped `"previous"` included), so a retired shard answers
//! `not_found` for a key it does not hold, and
//! evicts an in-flight record only once its lease and the settle grace
//! (`ORIGIN_TIMEOUT_SECONDS`) have passed.

use crate::config::Config;
use crate::fields;
use crate::ledger::EvictOutcome;
use crate::object::ledger_object::LedgerObject;
use crate::object::problems::store_unavailable;
use crate::object::waiting::answered;
use crate::object::waiting::WaitReport;
use crate::platform::{log, now_ms};
use crate::protocol::Problem;
use crate::rpc::EvictCall;

/// RPC v1 `evict` applied to `object`, once parsed and validated.
pub(in crate::object) async fn evict(
    object: &LedgerObject,
    config: &Config,
    call: EvictCall,
    asked: Option<u32>,
) -> Result<(EvictOutcome, WaitReport), Problem> {
    // A retired shard's key is claimed next in its current object,
    // which its generation floor does not reach: an in-flight record
    // goes only once its owner can no longer settle (`ledger::evict`).
    let owner_grace_ms = if object.place(config)?.retired {
        (config.origin_timeout_seconds as i64).saturating_mul(1000)
    } else {
        0
    };
    let out = object
        .ledger
        .evict(&call.key, owner_grace_ms, now_ms())
        .map_err(|e| store_unavailable(&e))?;
    if let EvictOutcome::Evicted { record } = &out {
        log::warn(
            "idempotency.key_evicted",
            fields! {
                "key" => log::short_hash(&call.key),
                "state" => record.state.as_str(),
                "generation" => record.generation,
                "status" => record.response_status,
            },
        );
        object.waiters.wake(&call.key);
    }
    if out == EvictOutcome::NotFound {
        // Not here (nothing changed): where the previous layout holds it.
        let holds = (asked, Some(false));
        if let Some(answer) = object
            .home
            .ask_previous_for_record(config, &call.key, &call, holds)
            .await?
        {
            return Ok(answer);
        }
    }
    Ok(answered(out))
}
