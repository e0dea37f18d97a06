//! Resharding never forgets a live key (docs/contract.md §8): before its
//! first keyed call, an object of the configured layout has the tenant's
//! registry accept that layout (`config::reshard` decides); the registry
//! — the object named by the tenant alone — records the history and also
//! answers RPC `layout` for the tenant's other objects.
//!
//! What must stay true here:
//! - A refused (or held) layout answers every claim and execute `500
//!   misconfigured` naming `TENANT_SHARDS` (and logs why): no key runs
//!   where an older layout may hold it. `complete` and `release` never ask:
//!   they settle a claim this object granted and create no key.
//! - Unsharded tenants pay nothing: their object is their registry, and a
//!   layout equal to the recorded one (or to "one object" when nothing is
//!   recorded) is accepted from memory.
//! - A retired object (the previous layout) takes no new key, so it needs
//!   no acceptance; it logs `idempotency.reshard_pending` whenever it
//!   refuses a key while it still holds records.
//! - Before a change forgets the previous layout, the registry asks each
//!   of its objects for its expiry horizon (`horizon`, `Ledger::horizon`):
//!   the latest expiry of any record it holds, whatever retention and
//!   configuration granted it, so `previous` stays needed until then.
//! - A configuration that drops `"previous"` before then is not an outage:
//!   the registry keeps the recorded previous layout in force, and the
//!   current layout's objects ask it first for every keyed call (as callers
//!   do while it is named), logging `idempotency.previous_kept` once per
//!   instance. No key runs where that layout may hold it.

use super::calls::store_unavailable;
use super::LedgerObject;
use crate::config::reshard::{decide, Evidence, LayoutDecision};
use crate::config::shards::{object_name, shard_of, Layout};
use crate::config::Config;
use crate::fields;
use crate::object::waiting::WaitReport;
use crate::platform::client::LedgerError;
use crate::platform::{log, now_ms};
use crate::protocol::Problem;
use crate::protocol::ProblemKind;
use crate::rpc::{Call, HorizonCall, LayoutCall};

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

/// A previous layout's object refused a call passed on to it: its problem,
/// as the caller would have had it asking that object itself.
fn passed_on(problem: &serde_json::Value) -> Problem {
    let kind = problem["type"]
        .as_str()
        .and_then(|t| t.rsplit('/').next())
        .and_then(ProblemKind::from_slug)
        .unwrap_or(ProblemKind::StoreUnavailable);
    let detail = problem["detail"].as_str().unwrap_or_default();
    let mut passed = Problem::new(kind, detail);
    if let Some(members) = problem.as_object() {
        for (name, value) in members {
            if !matches!(name.as_str(), "type" | "title" | "status" | "detail") {
                passed = passed.with(name, value.clone());
            }
        }
    }
    passed
}

fn refused(reason: &str) -> Problem {
    log::error(
        "idempotency.misconfigured",
        fields! {"variable" => "TENANT_SHARDS", "error" => reason},
    );
    Problem::misconfigured("TENANT_SHARDS")
}

impl LedgerObject {
    /// Before this object's first claim or execute: its tenant's registry
    /// accepts the configured layout, or every claim and execute is refused.
    pub(super) async fn check_layout(&self, config: &Config) -> Result<(), Problem> {
        if self.layout_accepted.get() {
            return Ok(());
        }
        let place = self.place(config)?;
        let Some((tenant, is_registry)) = place.tenant.clone().filter(|_| !place.retired) else {
            self.layout_accepted.set(true);
            return Ok(());
        };
        self.check_in_jurisdiction(config, &tenant, place.name.as_deref().unwrap_or(&tenant))?;
        let asked = config.tenant_shards.layout(&tenant);
        let upgraded_from_v1 = self
            .ledger
            .v1_upgraded_at()
            .map_err(|e| store_unavailable(&e))?
            .is_some();
        let call = LayoutCall {
            shards: asked.shards,
            previous: asked.previous,
            window_ms: window_ms(config),
            upgraded_from_v1,
        };
        let kept = if is_registry {
            self.registry_jurisdiction(config, &tenant).await?;
            self.decide_layout(config, &tenant, &call).await?
        } else {
            let registry = self
                .tenant_object(config, &tenant)
                .map_err(|e| self.registry_failed(&e))?;
            let answer = registry
                .call(&call)
                .await
                .map_err(|e| self.registry_failed(&e))?
                .outcome;
            answer
                .previous_in_force
                .map(|m| (m, answer.reason.unwrap_or_default()))
        };
        if let Some((previous, reason)) = kept {
            // Once per object instance: the configuration is ahead of what
            // the tenant's records allow.
            log::warn(
                "idempotency.previous_kept",
                fields! {"variable" => "TENANT_SHARDS", "previous" => previous, "reason" => reason},
            );
            self.previous_in_force.set(Some(previous));
        }
        self.layout_accepted.set(true);
        Ok(())
    }

    /// [`Self::ask_kept_previous`] for a settlement (complete, release),
    /// which asks no registry to accept the layout and is never refused by
    /// it (docs/contract.md §8): only when this object does not hold the
    /// key and has not learned its layout yet does it ask the registry —
    /// a refusal only logged — so a key granted in a previous layout kept
    /// in force is settled there.
    pub(super) async fn settle_at_kept_previous<C: Call>(
        &self,
        config: &Config,
        key: &str,
        call: &C,
    ) -> Result<Option<(C::Answer, WaitReport)>, Problem> {
        if self.previous_in_force.get().is_none() && !self.layout_accepted.get() {
            let place = self.place(config)?;
            if place.retired || place.tenant.is_none() {
                return Ok(None);
            }
            let holds = self
                .ledger
                .holds(key, now_ms())
                .map_err(|e| store_unavailable(&e))?;
            if holds {
                return Ok(None);
            }
            let _ = self.check_layout(config).await;
        }
        self.ask_kept_previous(config, key, call).await
    }

    /// While the registry keeps in force a previous layout the
    /// configuration no longer names, a keyed call for `key` is first
    /// sent to the key's object in that layout — as every caller does
    /// while `"previous"` is named (`config::shards`): its answer when it
    /// holds the key; `None` when it answers `421` (the key is this
    /// object's) or no previous layout is kept.
    pub(super) async fn ask_kept_previous<C: Call>(
        &self,
        config: &Config,
        key: &str,
        call: &C,
    ) -> Result<Option<(C::Answer, WaitReport)>, Problem> {
        let Some(m) = self.previous_in_force.get() else {
            return Ok(None);
        };
        let place = self.place(config)?;
        let Some((tenant, _)) = place.tenant.as_ref().filter(|_| !place.retired) else {
            return Ok(None);
        };
        let name = object_name(tenant, shard_of(key, m), m);
        let object = self
            .tenant_object(config, &name)
            .map_err(|e| store_unavailable(&e))?;
        match object.call(call).await {
            Ok(answer) => Ok(Some((
                answer.outcome,
                WaitReport {
                    waited_ms: answer.waited_ms.map(|ms| ms as i64),
                    timed_out: false,
                },
            ))),
            Err(LedgerError::Refused { status: 421, .. }) => Ok(None),
            Err(LedgerError::Refused { problem, .. }) => Err(passed_on(&problem)),
            Err(other) => Err(store_unavailable(&other)),
        }
    }

    /// The registry refused (`500 misconfigured`): its problem, passed on
    /// as it names the variable it refused under (`TENANT_SHARDS`, or
    /// `TENANT_JURISDICTIONS` for a tenant whose keys live elsewhere; the
    /// reason is in the registry's own log line).
    fn registry_failed(&self, error: &LedgerError) -> Problem {
        match error {
            LedgerError::Refused {
                status: 500,
                problem,
                ..
            } => {
                let passed = passed_on(problem);
                log::error(
                    "idempotency.misconfigured",
                    fields! {"error" => format!("refused by the tenant's registry: {}", passed.detail)},
                );
                passed
            }
            other => store_unavailable(other),
        }
    }

    /// As the tenant's registry: decides `call` against the recorded
    /// history, and records the layout when it is new (asking the previous
    /// layout's objects for their horizons when the change forgets it).
    /// `Some((previous, why))`: the configuration dropped `"previous"`
    /// too early and the recorded previous layout stays in force.
    pub(super) async fn decide_layout(
        &self,
        config: &Config,
        tenant: &str,
        call: &LayoutCall,
    ) -> Result<Option<(u32, String)>, Problem> {
        let asked = Layout {
            shards: call.shards,
            previous: call.previous,
        };
        let mut previous_expires_by = None;
        // Twice at most: once more after asking the previous layout (the
        // record is read again, another request may have changed it).
        for _ in 0..2 {
            let unavailable = |e: &crate::ledger::StoreError| store_unavailable(e);
            let recorded = self.ledger.layout_record().map_err(|e| unavailable(&e))?;
            let unchanged = match recorded {
                Some(r) => r.shards == asked.shards && r.previous == asked.previous,
                None => asked == Layout::SINGLE,
            };
            if unchanged {
                return Ok(None);
            }
            let evidence = Evidence {
                registry_holds_records: self.ledger.holds_any().map_err(|e| unavailable(&e))?,
                previous_expires_by: previous_expires_by.map(|(_, latest)| latest),
                registry_upgraded_at: self.ledger.v1_upgraded_at().map_err(|e| unavailable(&e))?,
                asker_upgraded_from_v1: call.upgraded_from_v1,
            };
            match decide(recorded, asked, now_ms(), call.window_ms, evidence) {
                LayoutDecision::Accept(Some(record)) => {
                    self.ledger
                        .record_layout(&record)
                        .map_err(|e| unavailable(&e))?;
                    log::warn(
                        "idempotency.layout_recorded",
                        fields! {"shards" => record.shards, "previous" => record.previous},
                    );
                    return Ok(None);
                }
                LayoutDecision::Accept(None) => return Ok(None),
                LayoutDecision::Refuse(reason) => return Err(refused(&reason)),
                LayoutDecision::Hold(record, reason) => {
                    self.ledger
                        .record_layout(&record)
                        .map_err(|e| unavailable(&e))?;
                    return Err(refused(&reason));
                }
                LayoutDecision::KeepPrevious {
                    previous,
                    record,
                    reason,
                } => {
                    if let Some(record) = record {
                        self.ledger
                            .record_layout(&record)
                            .map_err(|e| unavailable(&e))?;
                    }
                    return Ok(Some((previous, reason)));
                }
                LayoutDecision::AskPrevious(m) => match previous_expires_by {
                    Some((asked_of, _)) if asked_of == m => break,
                    _ => {
                        let latest = self.previous_horizon(config, tenant, m).await?;
                        previous_expires_by = Some((m, latest));
                    }
                },
            }
        }
        Err(refused(
            "the tenant's layout changed while it was decided; try again",
        ))
    }

    /// The latest expiry horizon among the `m` objects of the tenant's
    /// previous layout (one `horizon` call each; the registry's own when it
    /// is that layout).
    async fn previous_horizon(
        &self,
        config: &Config,
        tenant: &str,
        m: u32,
    ) -> Result<i64, Problem> {
        let mut latest = 0;
        for i in 0..m {
            let name = object_name(tenant, i, m);
            let horizon = if name == tenant {
                self.ledger.horizon().map_err(|e| store_unavailable(&e))?
            } else {
                let object = self
                    .tenant_object(config, &name)
                    .map_err(|e| store_unavailable(&e))?;
                object
                    .call(&HorizonCall {})
                    .await
                    .map_err(|e| store_unavailable(&e))?
                    .outcome
                    .expires_by
            };
            latest = latest.max(horizon);
        }
        Ok(latest)
    }

    /// A retired object refusing a key it does not hold while it still
    /// holds records: the reshard is not over yet.
    pub(super) fn reshard_pending(&self) {
        if self.ledger.holds_any().unwrap_or(false) {
            log::error("idempotency.reshard_pending", serde_json::Map::new());
        }
    }
}
