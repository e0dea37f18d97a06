//! `execute` applied: claim, run the embedded orders application and
//! complete, in one transaction (wire shape: `rpc/execute.rs`).
//!
//! What must stay true here: an execute runs in the key's home and may
//! wait as a claim does; a run wakes the key's waiters (parked behind an
//! RPC claim, they replay it) and arms the alarm by its expiry.

use crate::config::Config;
use crate::ledger::DoSqlStore;
use crate::ledger::ExecuteOutcome;
use crate::object::ledger_object::LedgerObject;
use crate::object::waiting::WaitReport;
use crate::orders;
use crate::platform::now_ms;
use crate::protocol::Problem;
use crate::rpc::ExecuteCall;

/// RPC v1 `execute` applied to `object`, once parsed and validated.
pub(in crate::object) async fn execute(
    object: &LedgerObject,
    config: &Config,
    call: ExecuteCall,
    asked: Option<u32>,
) -> Result<(ExecuteOutcome, WaitReport), Problem> {
    if let Some(answer) = object
        .previous_answer(config, &call.key, &call, asked)
        .await?
    {
        return Ok(answer);
    }
    let policy = object.policy(config, None, None)?;
    let capture = config.capture_policy();
    let request = &call.request;
    let execute = |now| {
        let app = |store: &DoSqlStore| {
            orders::handle_within(store, &request.method, request.path(), &request.body, now)
        };
        object
            .ledger
            .execute(&call.key, &call.fingerprint, &policy, &capture, now, app)
    };
    let (out, report) = object
        .keyed(
            config,
            &call.key,
            call.wait_ms,
            execute,
            ExecuteOutcome::refusal,
        )
        .await?;
    if matches!(out, ExecuteOutcome::Ran { .. }) {
        // Waiters parked on this key (behind an RPC claim) replay it.
        object.waiters.wake(&call.key);
        object.alarm.arm_by(policy.sweep_at(now_ms())).await;
    }
    Ok((out, report))
}
