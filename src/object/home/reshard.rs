//! The tenant's registry: resharding never forgets a live key
//! (docs/contract.md §8). Before its
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

use super::place::{refused, Home};
use crate::config::reshard::{decide, Evidence, LayoutDecision};
use crate::config::shards::{object_name, Layout};
use crate::config::Config;
use crate::fields;
use crate::object::problems::store_unavailable;
use crate::platform::{log, now_ms};
use crate::protocol::Problem;
use crate::rpc::{HorizonCall, LayoutCall};

/// What the registry decided of an accepted layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    /// The configuration dropped `"previous"` too early: the recorded
    /// previous layout (of this many objects) stays in force, and why.
    pub kept: Option<(u32, String)>,
    /// The previous layout the tenant's record names (or keeps in force):
    /// it may hold keys, so a current-layout object that does not hold a
    /// key asks it first, unless its caller did (`ask_previous.rs`).
    pub previous: Option<u32>,
}

impl Decided {
    fn naming(previous: Option<u32>) -> Decided {
        Decided {
            kept: None,
            previous,
        }
    }
}

impl Home {
    /// As the tenant's registry: decides `call` against the recorded
    /// history, and records the layout when it is new (asking the previous
    /// layout's objects for their horizons when the change forgets it).
    pub async fn decide_layout(
        &self,
        config: &Config,
        tenant: &str,
        call: &LayoutCall,
    ) -> Result<Decided, Problem> {
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
            let named = Decided::naming(recorded.and_then(|r| r.previous));
            if unchanged {
                return Ok(named);
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
                    return Ok(Decided::naming(record.previous));
                }
                LayoutDecision::Accept(None) => return Ok(named),
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
                    return Ok(Decided {
                        kept: Some((previous, reason)),
                        previous: Some(previous),
                    });
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
}
