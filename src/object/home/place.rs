//! Which keys this object answers for: where it stands in its tenant's
//! layout (its name, and from it its shard count and its role, current or
//! retired), the retired shard's home check, and the tenant's registry
//! accepting the configured layout before the object's first keyed call.
//!
//! Role: [`Home`] is this room. It learns the object's name once and keeps
//! it: workerd hands a Durable Object its `idFromName` name on a request
//! addressed by name, but an object woken otherwise (an alarm after
//! eviction, an `idFromString` stub) may get none; a role derived only from
//! that would make a retired shard behave as a current one and claim keys
//! it must refuse (`421`). So the first name the runtime hands over is
//! verified against the object's own id (`idFromName(name) == id`) and
//! recorded in the ledger; every later instance reads it back. Before the
//! first claim or execute it has the tenant's registry accept the layout
//! ([`Home::check_layout`]; the registry's own side, deciding and
//! recording, is `reshard.rs`), learning the previous layout the registry
//! records; asking it first is `ask_previous.rs`.
//!
//! What must stay true here:
//! - The recorded name is one the runtime handed over (checked against the
//!   object's id through the `TENANT_LEDGER` binding where that binding is
//!   this class); while the name is unknown, an object of a deployment that
//!   shards tenants refuses keyed calls (`503`): it cannot tell whether it
//!   is retired.
//! - A retired shard answers only for the keys it holds: every keyed call
//!   for another key is `421 idempotency-key-moved` and changes nothing.
//! - A refused (or held) layout answers every claim and execute `500
//!   misconfigured` naming `TENANT_SHARDS` (and logs why): no key runs
//!   where an older layout may hold it. `complete` and `release` never ask:
//!   they settle a claim this object granted and create no key.
//! - A configuration that drops `"previous"` too early is not an outage:
//!   the current layout's objects ask the kept previous layout first for
//!   every keyed call (as callers do while it is named), logging
//!   `idempotency.previous_kept` once per instance.
//! - Where a key lives is the registry's record's to say, not a caller's:
//!   while it names a previous layout, a current-layout object asks that
//!   layout first for a key it does not hold unless the call says its
//!   caller already did (`ask_previous.rs`).

use std::cell::{Cell, OnceCell};
use std::rc::Rc;

use worker::{Env, State};

use crate::config::shards::{parse_object_name, Role};
use crate::config::Config;
use crate::fields;
use crate::ledger::{DoSqlStore, Ledger, Millis};
use crate::object::problems::store_unavailable;
use crate::platform::client::LedgerError;
use crate::platform::namespace::namespace_in;
use crate::platform::{log, LEDGER_BINDING};
use crate::protocol::{Problem, ProblemKind};
use crate::rpc::LayoutCall;

/// The object's place, once known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// How many objects its layout has (1 for a tenant's single object).
    pub shards: u32,
    /// It belongs to a retired layout: it answers only for keys it holds.
    pub retired: bool,
    /// Its tenant and whether it is the tenant's registry (the object named
    /// by the tenant alone); `None` for an unnamed object of a deployment
    /// that shards no tenant.
    pub tenant: Option<(String, bool)>,
    /// Its name, when known.
    pub name: Option<String>,
}

impl Place {
    fn of(name: &str, config: &Config) -> Place {
        let parsed = parse_object_name(name);
        Place {
            shards: parsed.shards,
            retired: config.tenant_shards.role_of(name) == Role::Retired,
            tenant: Some((parsed.tenant.clone(), parsed.tenant == name)),
            name: Some(name.to_string()),
        }
    }
}

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
pub(super) fn passed_on(problem: &serde_json::Value) -> Problem {
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

/// Every claim and execute refused: why, logged; `500 misconfigured`.
pub(super) fn refused(reason: &str) -> Problem {
    log::error(
        "idempotency.misconfigured",
        fields! {"variable" => "TENANT_SHARDS", "error" => reason},
    );
    Problem::misconfigured("TENANT_SHARDS")
}

/// This object's identity and its place in its tenant's layout, learned
/// once per instance: which keys it answers for.
pub struct Home {
    /// The object's ledger (shared with the object).
    pub(super) ledger: Rc<Ledger<DoSqlStore>>,
    /// The runtime's state: the object's id (and the name it carries).
    pub(super) state: State,
    /// The object's bindings (to verify its name against its id, and to
    /// reach the tenant's other objects).
    pub(super) env: Env,
    /// Its place in its tenant's layout, once known.
    place: OnceCell<Place>,
    /// The tenant's registry accepted the configured layout; checked once
    /// per instance.
    pub(super) layout_accepted: Cell<bool>,
    /// The previous layout (its shard count) the tenant's registry keeps in
    /// force although the configuration dropped `"previous"` too early:
    /// keyed calls ask it first.
    pub(super) previous_in_force: Cell<Option<u32>>,
    /// The previous layout (its shard count) the tenant's registry records,
    /// learned with the layout's acceptance: it may hold keys, so a keyed
    /// call for a key this object does not hold asks it first unless the
    /// call says its caller did (`ask_previous.rs`) — whatever this
    /// object's or its caller's configuration says.
    pub(super) registry_previous: Cell<Option<u32>>,
}

impl Home {
    pub fn new(ledger: Rc<Ledger<DoSqlStore>>, state: State, env: Env) -> Home {
        Home {
            ledger,
            state,
            env,
            place: OnceCell::new(),
            layout_accepted: Cell::new(false),
            previous_in_force: Cell::new(None),
            registry_previous: Cell::new(None),
        }
    }

    /// The object's place, learned on first use (see the module doc).
    pub fn place(&self, config: &Config) -> Result<&Place, Problem> {
        if let Some(place) = self.place.get() {
            return Ok(place);
        }
        let recorded = self
            .ledger
            .object_name()
            .map_err(|e| store_unavailable(&e))?;
        let name = match (self.state.id().name(), recorded) {
            (Some(given), recorded) => {
                if recorded.as_deref() != Some(given.as_str()) {
                    self.verify_name(&given, config);
                    if let Err(e) = self.ledger.record_name(&given) {
                        log::warn(
                            "idempotency.name_not_recorded",
                            fields! {"error" => e.to_string()},
                        );
                    }
                }
                Some(given)
            }
            (None, recorded) => recorded,
        };
        let place = match name {
            Some(name) => Place::of(&name, config),
            // Unknown, and no tenant is sharded: it is a tenant's one object.
            None if config.tenant_shards == Default::default() => Place {
                shards: 1,
                retired: false,
                tenant: None,
                name: None,
            },
            None => {
                log::error("idempotency.object_unnamed", serde_json::Map::new());
                return Err(Problem::new(
                    ProblemKind::StoreUnavailable,
                    "this ledger object does not know its name yet, so it cannot tell its place in a sharded layout; the request was not run",
                ));
            }
        };
        if place.retired {
            // Every expiry a retired object grants may outlast the window
            // its layout was recorded with: all of them raise its horizon.
            self.ledger.track_expiries_beyond(Some(0));
        }
        Ok(self.place.get_or_init(|| place))
    }

    /// Checks the runtime's name against the object's id where it can: the
    /// `TENANT_LEDGER` binding, when it is this class's namespace, must make
    /// this id from this name. The name itself comes from the runtime (only
    /// an `idFromName` id carries one), so a binding that names another
    /// class (a proxy in front of the ledger) cannot refute it: that is
    /// logged, and the runtime's name stands.
    /// (In the tenant's jurisdiction, `TENANT_JURISDICTIONS`: an object of
    /// a jurisdiction has the id that jurisdiction's namespace makes.)
    fn verify_name(&self, name: &str, config: &Config) {
        let jurisdiction = config.tenant_jurisdictions.of_object(name);
        let expected = namespace_in(&self.env, LEDGER_BINDING, jurisdiction)
            .map_err(|e| worker::Error::RustError(e.to_string()))
            .and_then(|ns| ns.id_from_name(name).map(|id| id.to_string()));
        match expected {
            Ok(id) if id == self.state.id().to_string() => {}
            _ => log::warn("idempotency.object_name_unverified", serde_json::Map::new()),
        }
    }

    /// A retired shard (the tenant is being resharded, see
    /// `config::shards`) answers only for the keys it holds: for any other
    /// key a claim, execute, complete or release is refused with `421
    /// idempotency-key-moved` and changes nothing (so every caller routes a
    /// keyed call the same way: previous layout first, on 421 the current),
    /// so no caller — not even a gateway still running the old
    /// configuration — can create a key here while another creates it in
    /// its current object.
    pub(in crate::object) fn check_home(
        &self,
        config: &Config,
        key: &str,
        now: Millis,
    ) -> Result<(), Problem> {
        if !self.place(config)?.retired {
            return Ok(());
        }
        if self
            .ledger
            .holds(key, now)
            .map_err(|e| store_unavailable(&e))?
        {
            return Ok(());
        }
        self.reshard_pending();
        Err(Problem::of(ProblemKind::KeyMoved))
    }

    /// Before this object's first claim or execute: its tenant's registry
    /// accepts the configured layout, or every claim and execute is refused.
    pub(in crate::object) async fn check_layout(&self, config: &Config) -> Result<(), Problem> {
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
        let (kept, previous) = if is_registry {
            self.registry_jurisdiction(config, &tenant).await?;
            let decided = self.decide_layout(config, &tenant, &call).await?;
            (decided.kept, decided.previous)
        } else {
            let registry = self
                .tenant_object(config, &tenant)
                .map_err(|e| self.registry_failed(&e))?;
            let answer = registry
                .call(&call)
                .await
                .map_err(|e| self.registry_failed(&e))?
                .outcome;
            let kept = answer
                .previous_in_force
                .map(|m| (m, answer.reason.unwrap_or_default()));
            (kept, answer.previous.or(answer.previous_in_force))
        };
        self.registry_previous.set(previous);
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

    /// A retired object refusing a key it does not hold while it still
    /// holds records: the reshard is not over yet.
    pub(in crate::object) fn reshard_pending(&self) {
        if self.ledger.holds_any().unwrap_or(false) {
            log::error("idempotency.reshard_pending", serde_json::Map::new());
        }
    }
}
