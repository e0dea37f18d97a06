//! `complete` applied: record the response of the owner at `generation`
//! (wire shape: `rpc/complete.rs`).
//!
//! What must stay true here: only a key this shard holds is completed; a
//! stored completion wakes the key's waiters and moves the alarm earlier
//! when its retention ends sooner than the claim's — never late; one the
//! byte quota made a tombstone is logged (`idempotency.quota_tombstone`). A
//! completion settles a claim already granted, so no operation refuses it:
//! it is served while the schema upgrades and under a layout the registry
//! refuses or holds (no `check_layout`: it creates no key).

use crate::config::Config;
use crate::ledger::CompleteOutcome;
use crate::object::ledger_object::LedgerObject;
use crate::object::problems::store_unavailable;
use crate::object::waiting::answered;
use crate::object::waiting::WaitReport;
use crate::platform::{log, now_ms};
use crate::protocol::Problem;
use crate::rpc::CompleteCall;

/// RPC v1 `complete` applied to `object`, once parsed and validated.
pub(in crate::object) async fn complete(
    object: &LedgerObject,
    config: &Config,
    call: CompleteCall,
    asked: Option<u32>,
) -> Result<(CompleteOutcome, WaitReport), Problem> {
    // A key this object does not hold is settled where the previous
    // layout holds it (a settlement is never refused by the layout).
    if let Some(answer) = object
        .home
        .ask_previous_for_record(config, &call.key, &call, (asked, None))
        .await?
    {
        return Ok(answer);
    }
    let now = now_ms();
    object.home.check_home(config, &call.key, now)?;
    let policy = object.policy(config, None, call.retention_seconds)?;
    let retention = policy.retention_ms;
    let (out, over_quota) = object
        .ledger
        .complete_within(
            &call.key,
            call.grant(),
            &call.response,
            retention,
            policy.max_db_bytes,
            now,
        )
        .map_err(|e| store_unavailable(&e))?;
    match &out {
        CompleteOutcome::FencedOut { current } => {
            log::fenced_out("complete", &call.key, call.generation, current)
        }
        CompleteOutcome::Stored => {
            if over_quota {
                log::warn(
                    "idempotency.quota_tombstone",
                    crate::fields! {
                        "key" => log::short_hash(&call.key),
                        "generation" => call.generation,
                        "status" => call.response.status,
                        "max_db_bytes" => policy.max_db_bytes,
                    },
                );
            }
            object.waiters.wake(&call.key);
            // A completion's retention may be shorter than its claim's:
            // the record then expires earlier than the alarm the claim
            // set (the ledger moved its `sweep_at`), so the alarm moves
            // too — never late. Nothing is read or set when the alarm is
            // known to be early enough.
            object.alarm.arm_by(now.saturating_add(retention)).await;
        }
    }
    Ok(answered(out))
}
