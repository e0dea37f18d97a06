//! Resharding never forgets a live key (docs/contract.md §8): before its
//! first keyed call, an object of the configured layout has the tenant's
//! registry accept that layout (`config::reshard` decides); the registry
//! — the object named by the tenant alone — records the history and also
//! answers RPC `layout` for the tenant's other objects.
//!
//! What must stay true here:
//! - A refused layout answers every keyed call `500 misconfigured` naming
//!   `TENANT_SHARDS` (and logs why): no key runs where an older layout may
//!   hold it.
//! - Unsharded tenants pay nothing: their object is their registry, and a
//!   layout equal to the recorded one (or to "one object" when nothing is
//!   recorded) is accepted from memory.
//! - A retired object (the previous layout) takes no new key, so it needs
//!   no acceptance; it logs `idempotency.reshard_pending` whenever it
//!   refuses a key while it still holds records.

use super::dispatch::store_unavailable;
use super::TenantLedger;
use crate::config::reshard::{decide, LayoutDecision};
use crate::config::shards::Layout;
use crate::config::Config;
use crate::fields;
use crate::platform::client::{LedgerClient, LedgerError};
use crate::platform::{log, now_ms, LEDGER_BINDING};
use crate::protocol::Problem;
use crate::rpc::LayoutCall;

/// How long a layout that stops taking keys may hold live records.
pub fn window_ms(config: &Config) -> i64 {
    let seconds = config
        .retention_seconds
        .max(config.lease_seconds)
        .saturating_add(config.lease_seconds)
        .saturating_add(config.origin_timeout_seconds)
        .saturating_add(config.sweep_interval_seconds);
    (seconds.min(i64::MAX as u64 / 1000) as i64) * 1000
}

fn refused(reason: &str) -> Problem {
    log::error(
        "idempotency.misconfigured",
        fields! {"variable" => "TENANT_SHARDS", "error" => reason},
    );
    Problem::misconfigured("TENANT_SHARDS")
}

impl TenantLedger {
    /// Before this object's first keyed call: its tenant's registry accepts
    /// the configured layout, or every keyed call is refused.
    pub(super) async fn check_layout(&self, config: &Config) -> Result<(), Problem> {
        if self.layout_accepted.get() {
            return Ok(());
        }
        let place = self.place(config)?;
        let Some((tenant, is_registry)) = place.tenant.clone().filter(|_| !place.retired) else {
            self.layout_accepted.set(true);
            return Ok(());
        };
        let asked = config.tenant_shards.layout(&tenant);
        let call = LayoutCall {
            shards: asked.shards,
            previous: asked.previous,
            window_ms: window_ms(config),
        };
        if is_registry {
            self.decide_layout(&call)?;
        } else {
            let registry = LedgerClient::for_object(&self.env, LEDGER_BINDING, &tenant)
                .map_err(|e| self.registry_failed(&e))?;
            registry
                .call(&call)
                .await
                .map_err(|e| self.registry_failed(&e))?;
        }
        self.layout_accepted.set(true);
        Ok(())
    }

    fn registry_failed(&self, error: &LedgerError) -> Problem {
        match error {
            LedgerError::Refused {
                status: 500,
                problem,
            } => refused(
                problem["detail"]
                    .as_str()
                    .unwrap_or("refused by the tenant's registry"),
            ),
            other => store_unavailable(other),
        }
    }

    /// As the tenant's registry: decides `call` against the recorded
    /// history, and records the layout when it is new.
    pub(super) fn decide_layout(&self, call: &LayoutCall) -> Result<(), Problem> {
        let asked = Layout {
            shards: call.shards,
            previous: call.previous,
        };
        let recorded = self
            .ledger
            .layout_record()
            .map_err(|e| store_unavailable(&e))?;
        let unchanged = match recorded {
            Some(r) => r.shards == asked.shards && r.previous == asked.previous,
            None => asked == Layout::SINGLE,
        };
        if unchanged {
            return Ok(());
        }
        let holds = self.ledger.holds_any().map_err(|e| store_unavailable(&e))?;
        match decide(recorded, asked, now_ms(), call.window_ms, holds) {
            LayoutDecision::Accept(Some(record)) => {
                self.ledger
                    .record_layout(&record)
                    .map_err(|e| store_unavailable(&e))?;
                log::warn(
                    "idempotency.layout_recorded",
                    fields! {"shards" => record.shards, "previous" => record.previous},
                );
                Ok(())
            }
            LayoutDecision::Accept(None) => Ok(()),
            LayoutDecision::Refuse(reason) => Err(refused(&reason)),
        }
    }

    /// A retired object refusing a key it does not hold while it still
    /// holds records: the reshard is not over yet.
    pub(super) fn reshard_pending(&self) {
        if self.ledger.holds_any().unwrap_or(false) {
            log::error("idempotency.reshard_pending", serde_json::Map::new());
        }
    }
}
