//! The `TenantLedger` class: what one object holds, and its entry points.
//!
//! Role: build the object (its ledger over its own SQLite, its schema, its
//! configuration, its waiters, its place in the tenant's shard layout) and
//! hand each `fetch` to [`super::dispatch`] and each `alarm` to
//! [`super::alarm`].
//!
//! What must stay true here: a schema or configuration that cannot be used
//! refuses every call (loudly, in the log and the answer); nothing else is
//! decided here.

use std::cell::{Cell, OnceCell};
use std::rc::Rc;

use worker::{durable_object, wasm_bindgen, DurableObject, Env, Request, Response, State};

use super::do_store::DoSqlStore;
use super::place::Place;
use super::waiting::Waiters;
use crate::config::{Config, ConfigError};
use crate::ledger::Ledger;
use crate::orders;
use crate::platform::{load_config, log};

/// Upgrade steps (each at most 2,000 records or 8 MiB of bodies) an
/// instance takes as it starts, by each request while an upgrade from
/// schema 1 is under way, and by each alarm (bounded CPU each).
const UPGRADE_STEPS_ON_START: u32 = 16;
pub(super) const UPGRADE_STEPS_PER_REQUEST: u32 = 4;
const UPGRADE_STEPS_PER_ALARM: u32 = 64;

#[durable_object]
pub struct TenantLedger {
    pub(super) state: State,
    /// Shared with the flush timer (see [`super::alarm`]).
    pub(super) ledger: Rc<Ledger<DoSqlStore>>,
    /// Parsed once per object instance; an invalid variable refuses every call.
    pub(super) config: Result<Config, ConfigError>,
    /// Schema creation outcome; a failure refuses every call.
    pub(super) ready: Result<(), String>,
    /// An upgrade from schema 1 is still moving records (see
    /// `Ledger::continue_upgrade`): calls are answered `503` with
    /// `Retry-After` while each request and alarm takes a few more steps.
    pub(super) upgrading: Cell<bool>,
    /// The alarm as this instance last read or set it: `None` until
    /// checked (and again after a failed alarm), `Some(None)` for no alarm.
    pub(super) alarm_at: Cell<Option<Option<i64>>>,
    /// A flush of the pending counts is scheduled on a timer.
    pub(super) flush_armed: Rc<Cell<bool>>,
    /// False until this instance's first request has checked the alarm: a
    /// restarted workerd may have lost an overdue alarm (workerd #3138, #3566).
    pub(super) started: Cell<bool>,
    /// Requests parked on in-flight keys (in memory: gone with the instance).
    pub(super) waiters: Waiters,
    /// Its place in its tenant's layout, once known (see [`super::place`]).
    pub(super) place: OnceCell<Place>,
    /// The tenant's registry accepted the configured layout (see
    /// [`super::reshard`]); checked once per instance.
    pub(super) layout_accepted: Cell<bool>,
    /// The object's bindings (to verify its name against its id).
    pub(super) env: Env,
}

impl DurableObject for TenantLedger {
    fn new(state: State, env: Env) -> Self {
        log::install_panic_hook();
        let ledger = Rc::new(Ledger::new(DoSqlStore::new(&state)));
        // A large schema-1 database upgrades in bounded steps: as many as
        // fit here, the rest by the requests and alarms that follow.
        let upgrading = Cell::new(false);
        let ready = ledger
            .migrate_within(crate::platform::now_ms(), UPGRADE_STEPS_ON_START)
            .and_then(|(found, done)| {
                upgrading.set(!done);
                use crate::ledger::schema::{Found, SCHEMA_VERSION};
                let from = match found {
                    Found::V1 => Some(1),
                    Found::V2 => Some(2),
                    _ => None,
                };
                if let Some(from) = from {
                    log::warn(
                        "idempotency.schema_upgraded",
                        crate::fields! {"from" => from, "to" => SCHEMA_VERSION},
                    );
                }
                orders::migrate(ledger.store())
            })
            .map_err(|e| e.to_string());
        let config = load_config(&env);
        // A current layout's window covers what it grants with the
        // configured retention; longer expiries raise the horizon the
        // registry asks for before a reshard forgets this layout (a
        // retired object's place lowers the cover to 0).
        if let Ok(config) = &config {
            ledger.track_expiries_beyond(Some(super::reshard::window_ms(config)));
        }
        let max_waiters = config.as_ref().map_or(0, |c| c.wait.max_waiters);
        TenantLedger {
            place: OnceCell::new(),
            layout_accepted: Cell::new(false),
            env,
            waiters: Waiters::new(max_waiters),
            state,
            ledger,
            config,
            ready,
            upgrading,
            alarm_at: Cell::new(None),
            flush_armed: Rc::new(Cell::new(false)),
            started: Cell::new(false),
        }
    }

    async fn fetch(&self, req: Request) -> worker::Result<Response> {
        Ok(self.serve(req).await)
    }

    async fn alarm(&self) -> worker::Result<Response> {
        if self.upgrading.get() && !self.continue_upgrade(UPGRADE_STEPS_PER_ALARM).await {
            return Response::ok("upgrading");
        }
        self.sweep().await
    }
}
