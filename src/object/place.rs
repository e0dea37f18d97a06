//! Where this object stands in its tenant's layout: its name, and from it
//! its shard count and its role (current or retired shard).
//!
//! Role: learn the object's name once and keep it. workerd hands a Durable
//! Object its `idFromName` name on a request addressed by name, but an
//! object woken otherwise (an alarm after eviction, an `idFromString`
//! stub) may get none; a role derived only from that would make a retired
//! shard behave as a current one and claim keys it must refuse (`421`). So
//! the first name the runtime hands over is verified against the object's
//! own id (`idFromName(name) == id`) and recorded in the ledger; every
//! later instance reads it back.
//!
//! What must stay true here: the recorded name is one the runtime handed
//! over (checked against the object's id through the `TENANT_LEDGER`
//! binding where that binding is this class); while the name is unknown,
//! an object of a deployment that shards tenants refuses keyed calls
//! (`503`): it cannot tell whether it is retired.

use super::calls::store_unavailable;
use super::LedgerObject;
use crate::config::shards::{parse_object_name, Role};
use crate::config::Config;
use crate::fields;
use crate::platform::client::namespace_in;
use crate::platform::{log, LEDGER_BINDING};
use crate::protocol::{Problem, ProblemKind};

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

impl LedgerObject {
    /// The object's place, learned on first use (see the module doc).
    pub(super) fn place(&self, config: &Config) -> Result<&Place, Problem> {
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
}
