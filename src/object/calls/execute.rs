//! `execute` applied: claim, run the embedded orders application and
//! complete, in one transaction (wire shape: `rpc/execute.rs`).
//!
//! What must stay true here: an execute runs in the key's home and may
//! wait as a claim does; a run wakes the key's waiters (parked behind an
//! RPC claim, they replay it) and arms the alarm by its expiry. A named
//! attempt (`rpc::ATTEMPT_HEADER`) whose run the ledger kept only as a
//! tombstone is answered that run's response again when it repeats after
//! a lost answer, while the object holds it (`object::unkept`).

use crate::config::Config;
use crate::ledger::DoSqlStore;
use crate::ledger::{ExecuteOutcome, Refusal};
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
    (asked, attempt): (Option<u32>, Option<String>),
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
    let out = match attempt {
        Some(attempt) => held_or_remembered(object, &call.key, &attempt, out),
        None => out,
    };
    Ok((out, report))
}

/// For a named attempt: a run the ledger kept only as a tombstone is held
/// in memory (`object::unkept`); the same attempt's repeat, which the
/// ledger answers with that tombstone, is answered the run's own response
/// while it is held.
fn held_or_remembered(
    object: &LedgerObject,
    key: &str,
    attempt: &str,
    out: ExecuteOutcome,
) -> ExecuteOutcome {
    match &out {
        ExecuteOutcome::Ran {
            generation,
            retained: false,
            response,
            ..
        } => {
            let run = (key, attempt, *generation);
            object.unkept.remember(run, response, now_ms());
            out
        }
        ExecuteOutcome::Refused(Refusal::Completed {
            generation,
            response,
            ..
        }) if response.body.is_none() => {
            let run = (key, attempt, *generation);
            match object.unkept.answer(run, now_ms()) {
                Some(response) => ExecuteOutcome::Ran {
                    generation: *generation,
                    takeover: false,
                    retained: false,
                    response,
                },
                None => out,
            }
        }
        _ => out,
    }
}
