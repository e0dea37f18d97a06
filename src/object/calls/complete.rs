//! `complete` applied: record the response of the owner at `generation`
//! (wire shape: `rpc/complete.rs`).
//!
//! What must stay true here: only a key this shard holds is completed; a
//! stored completion wakes the key's waiters and moves the alarm earlier
//! when its retention ends sooner than the claim's — never late.

use super::{answered, store_unavailable, Apply};
use crate::config::Config;
use crate::ledger::CompleteOutcome;
use crate::object::waiting::WaitReport;
use crate::object::LedgerObject;
use crate::platform::{log, now_ms};
use crate::protocol::Problem;
use crate::rpc::CompleteCall;

impl Apply<CompleteCall> for LedgerObject {
    async fn apply(
        &self,
        config: &Config,
        call: CompleteCall,
    ) -> Result<(CompleteOutcome, WaitReport), Problem> {
        self.check_layout(config).await?;
        if let Some(answer) = self.ask_kept_previous(config, &call.key, &call).await? {
            return Ok(answer);
        }
        let now = now_ms();
        self.check_home(config, &call.key, now)?;
        let retention = self
            .policy(config, None, call.retention_seconds)?
            .retention_ms;
        let out = self
            .ledger
            .complete(&call.key, call.generation, &call.response, retention, now)
            .map_err(|e| store_unavailable(&e))?;
        match &out {
            CompleteOutcome::FencedOut { current } => {
                log::fenced_out("complete", &call.key, call.generation, current)
            }
            CompleteOutcome::Stored => {
                self.waiters.wake(&call.key);
                // A completion's retention may be shorter than its claim's:
                // the record then expires earlier than the alarm the claim
                // set (the ledger moved its `sweep_at`), so the alarm moves
                // too — never late. Nothing is read or set when the alarm is
                // known to be early enough.
                self.arm_by(now.saturating_add(retention)).await;
            }
        }
        Ok(answered(out))
    }
}
