//! The object's stepwise schema upgrade: how an instance starts on an older
//! database, and how an upgrade from schema 1 goes on across requests and
//! alarms (docs/contract.md §4).
//!
//! Role: the one room for "is this object's schema ready, and if not, what
//! moves it on": [`start`] (as the instance is built: migrate, then as many
//! bounded steps as fit), [`Upgrade::still_under_way`] (a few more steps
//! by each request and alarm while an upgrade is under way). The
//! ledger's own upgrade (`Ledger::migrate_within`,
//! `Ledger::continue_upgrade`) does the moving; this file decides when.
//!
//! What must stay true here:
//! - Each step is bounded (at most 2,000 records or 8 MiB of bodies), so no
//!   request or alarm runs unbounded CPU.
//! - While the upgrade is not done an alarm is kept a moment ahead, so it
//!   goes on with no traffic; a failed step is logged and taken again.
//! - While it is under way only `complete` and `release` are served (see
//!   `LedgerObject::ready`); the instance forgets its alarm belief once it
//!   is done, so the next write checks the alarm again.

use std::cell::Cell;

use super::alarm::Alarm;
use crate::fields;
use crate::ledger::schema::SCHEMA_VERSION;
use crate::ledger::{Ledger, SqlStore};
use crate::orders;
use crate::platform::{log, now_ms};

/// Upgrade steps (each at most 2,000 records or 8 MiB of bodies) an
/// instance takes as it starts, by each request while an upgrade from
/// schema 1 is under way, and by each alarm (bounded CPU each).
const UPGRADE_STEPS_ON_START: u32 = 16;
pub(super) const UPGRADE_STEPS_PER_REQUEST: u32 = 4;
pub(super) const UPGRADE_STEPS_PER_ALARM: u32 = 64;

/// An upgrade from schema 1 still under way, or none.
pub struct Upgrade {
    /// Records are still being moved (see `Ledger::continue_upgrade`):
    /// calls are answered `503` with `Retry-After` while each request and
    /// alarm takes a few more steps.
    under_way: Cell<bool>,
}

/// Brings a new instance's schema (and the orders table) up to date, as
/// far as [`UPGRADE_STEPS_ON_START`] steps go. Answers whether the schema
/// can be used (`Err` refuses every call) and the upgrade still under way,
/// if any.
pub(super) fn start<S: SqlStore>(ledger: &Ledger<S>) -> (Result<(), String>, Upgrade) {
    let mut upgrading = false;
    let ready = ledger
        .migrate_within(now_ms(), UPGRADE_STEPS_ON_START)
        .and_then(|(found, done)| {
            upgrading = !done;
            let from = found.upgraded_from();
            if let Some(from) = from {
                log::warn(
                    "idempotency.schema_upgraded",
                    fields! {"from" => from, "to" => SCHEMA_VERSION},
                );
            }
            orders::migrate(ledger.store())
        })
        .map_err(|e| e.to_string());
    let upgrade = Upgrade {
        under_way: Cell::new(upgrading),
    };
    (ready, upgrade)
}

impl Upgrade {
    /// Is an upgrade still under way once `steps` more steps are taken
    /// (none taken when there is none)? While it is, `alarm` is kept a
    /// moment ahead, so the upgrade goes on with no traffic; a step that
    /// fails is logged and taken again by the next request or alarm.
    pub(super) async fn still_under_way<S: SqlStore>(
        &self,
        ledger: &Ledger<S>,
        alarm: &Alarm,
        steps: u32,
    ) -> bool {
        if !self.under_way.get() {
            return false;
        }
        match ledger.continue_upgrade(steps) {
            Ok(true) => {
                self.under_way.set(false);
                alarm.forget();
                log::warn(
                    "idempotency.schema_upgrade_done",
                    fields! {"from" => 1, "to" => SCHEMA_VERSION},
                );
                false
            }
            Ok(false) => {
                alarm.soon().await;
                true
            }
            Err(e) => {
                log::error(
                    "idempotency.schema_upgrade_step_failed",
                    fields! {"error" => e.to_string()},
                );
                alarm.soon().await;
                true
            }
        }
    }
}
