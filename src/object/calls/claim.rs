//! `claim` applied: take the key for a request, or learn why not (wire
//! shape: `rpc/claim.rs`).
//!
//! What must stay true here: a claim runs in the key's home and may wait
//! for an in-flight key (see [`LedgerObject::keyed`]); a granted claim
//! arms the alarm by the time its record may expire; a repeated attempt
//! (its first answer lost) is answered its grant and logged
//! `idempotency.claim_repeated`, not counted as a claim again.

use crate::config::Config;
use crate::fields;
use crate::ledger::{Claim, ClaimOutcome};
use crate::object::ledger_object::LedgerObject;
use crate::object::problems::bad_call;
use crate::object::waiting::WaitReport;
use crate::platform::{log, now_ms};
use crate::protocol::limits::check_claim_windows;
use crate::protocol::Problem;
use crate::rpc::ClaimCall;

/// RPC v1 `claim` applied to `object`, once parsed and validated.
pub(in crate::object) async fn claim(
    object: &LedgerObject,
    config: &Config,
    call: ClaimCall,
    asked: Option<u32>,
) -> Result<(ClaimOutcome, WaitReport), Problem> {
    if let Some(answer) = object
        .previous_answer(config, &call.key, &call, asked)
        .await?
    {
        return Ok(answer);
    }
    let policy = object.policy(config, call.lease_seconds, call.retention_seconds)?;
    check_claim_windows(policy.lease_ms, policy.retention_ms).map_err(bad_call)?;
    let attempt = call.attempt.as_deref();
    let claim = |now| {
        object
            .ledger
            .claim_as(&call.key, &call.fingerprint, attempt, &policy, now)
    };
    let (out, report) = object
        .keyed(config, &call.key, call.wait_ms, claim, |c: &Claim| {
            c.outcome.refusal()
        })
        .await?;
    match out.outcome {
        ClaimOutcome::Claimed { generation, .. } if out.repeated => {
            // The same grant again: its record and alarm are as the
            // first answer left them.
            log::info(
                "idempotency.claim_repeated",
                fields! {"key" => log::short_hash(&call.key), "generation" => generation},
            );
        }
        ClaimOutcome::Claimed { .. } => object.alarm.arm_by(policy.sweep_at(now_ms())).await,
        ClaimOutcome::Refused(_) => {}
    }
    Ok((out.outcome, report))
}
