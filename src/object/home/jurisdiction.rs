//! Tenants kept in a jurisdiction (`TENANT_JURISDICTIONS`, docs/contract.md
//! §8 "Jurisdictions"): this object's calls to its tenant's other objects
//! go through the tenant's jurisdiction, and a change of that jurisdiction
//! is refused before any key runs where the tenant's keys are not.
//!
//! Role: route this object's calls to its tenant's other objects by the
//! tenant's jurisdiction ([`Home::tenant_object`]), and apply the
//! rule of a changed jurisdiction before the first claim or execute.
//!
//! An unrestricted object and an object of jurisdiction J with the same
//! name are different objects, so a changed configuration would otherwise
//! open an empty ledger beside the full one. The rule
//! (`config::jurisdictions::decide`) is applied where every configuration
//! of the tenant meets: the tenant's **unrestricted object** (the object
//! named by the tenant alone, reached without a jurisdiction). It records
//! the jurisdiction on a new tenant's first use there, and refuses one
//! that would leave keys behind. The tenant's registry (its object named by
//! the tenant alone, in its jurisdiction) asks it once — then records the
//! same jurisdiction in its own state row and answers from it.
//!
//! What must stay true here:
//! - Before its first claim or execute (from `check_layout`), an object of
//!   a tenant kept in jurisdiction J checks that it *is* in J: its id must be
//!   the id J's namespace gives its name. A caller that does not route by
//!   the jurisdiction (a client without the `jurisdiction` option) reaching
//!   the unrestricted object is refused, never served there.
//! - A refusal answers every claim and execute `500 misconfigured` naming
//!   `TENANT_JURISDICTIONS` and logs why; `complete` and `release` are
//!   never refused (they settle a claim this object granted).
//! - Tenants without a jurisdiction pay no row and no call: their registry
//!   is their unrestricted object, and the recorded jurisdiction is a
//!   column of the state row it reads anyway.

use super::place::Home;
use crate::config::jurisdictions::{decide, JurisdictionDecision};
use crate::config::{Config, Jurisdiction};
use crate::fields;
use crate::object::problems::store_unavailable;
use crate::platform::client::{LedgerClient, LedgerError};
use crate::platform::namespace::namespace_in;
use crate::platform::{log, LEDGER_BINDING};
use crate::protocol::Problem;
use crate::rpc::JurisdictionCall;

/// Every claim and execute refused: why, logged; `500 misconfigured`.
fn refused(reason: &str) -> Problem {
    log::error(
        "idempotency.misconfigured",
        fields! {"variable" => "TENANT_JURISDICTIONS", "error" => reason},
    );
    Problem::misconfigured("TENANT_JURISDICTIONS")
}

impl Home {
    /// The client of one of this tenant's objects (`name`: the tenant's
    /// object name, or a shard's), in the tenant's jurisdiction.
    pub(in crate::object) fn tenant_object(
        &self,
        config: &Config,
        name: &str,
    ) -> Result<LedgerClient, LedgerError> {
        let jurisdiction = config.tenant_jurisdictions.of_object(name);
        LedgerClient::for_object_in(&self.env, LEDGER_BINDING, name, jurisdiction)
    }

    /// Before this object's first claim or execute: an object of a tenant
    /// kept in a jurisdiction is in it (see the module doc).
    pub(in crate::object) fn check_in_jurisdiction(
        &self,
        config: &Config,
        tenant: &str,
        name: &str,
    ) -> Result<(), Problem> {
        let Some(jurisdiction) = config.tenant_jurisdictions.of(tenant) else {
            return Ok(());
        };
        let namespace =
            namespace_in(&self.env, LEDGER_BINDING, Some(jurisdiction)).map_err(|_| {
                refused("the runtime cannot create objects in the tenant's jurisdiction")
            })?;
        let expected = namespace
            .id_from_name(name)
            .map(|id| id.to_string())
            .map_err(|e| refused(&e.to_string()))?;
        if expected != self.state.id().to_string() {
            return Err(refused(&format!(
                "this object is not in the tenant's jurisdiction \"{jurisdiction}\": the caller does not route by TENANT_JURISDICTIONS (give the JS package the `jurisdiction` option)"
            )));
        }
        Ok(())
    }

    /// As the tenant's registry (its own first keyed call, or a shard's
    /// `layout`): the configured jurisdiction agrees with where the
    /// tenant's keys live, or every claim and execute is refused.
    pub(in crate::object) async fn registry_jurisdiction(
        &self,
        config: &Config,
        tenant: &str,
    ) -> Result<(), Problem> {
        let asked = config.tenant_jurisdictions.of(tenant);
        let own = self
            .ledger
            .recorded_jurisdiction()
            .map_err(|e| store_unavailable(&e))?;
        let Some(jurisdiction) = asked else {
            // Unrestricted: this registry is the tenant's unrestricted
            // object itself; what it recorded decides.
            return self.decide_jurisdiction(None);
        };
        if own.as_deref() == Some(jurisdiction.as_str()) {
            return Ok(());
        }
        if let JurisdictionDecision::Refuse(why) = decide(own.as_deref(), asked, false) {
            return Err(refused(&why));
        }
        // The first keyed call this registry sees: the tenant's
        // unrestricted object decides, then this registry remembers.
        let unrestricted = LedgerClient::for_object(&self.env, LEDGER_BINDING, tenant)
            .map_err(|e| store_unavailable(&e))?;
        let call = JurisdictionCall {
            jurisdiction: jurisdiction.as_str().to_string(),
        };
        match unrestricted.call(&call).await {
            Ok(_) => {}
            Err(LedgerError::Refused {
                status: 500,
                problem,
                ..
            }) => {
                return Err(refused(
                    problem["detail"]
                        .as_str()
                        .unwrap_or("refused by the tenant's unrestricted object"),
                ))
            }
            Err(other) => return Err(store_unavailable(&other)),
        }
        self.ledger
            .record_jurisdiction(jurisdiction.as_str())
            .map_err(|e| store_unavailable(&e))
    }

    /// As the tenant's unrestricted object: decides `asked` against what
    /// it recorded and whether it holds keys, recording a new tenant's
    /// first jurisdiction (`config::jurisdictions::decide`).
    pub(in crate::object) fn decide_jurisdiction(
        &self,
        asked: Option<Jurisdiction>,
    ) -> Result<(), Problem> {
        let unavailable = |e: crate::ledger::StoreError| store_unavailable(&e);
        let recorded = self.ledger.recorded_jurisdiction().map_err(unavailable)?;
        // Read only when it can matter: a jurisdiction not yet recorded.
        let holds_keys = recorded.is_none()
            && asked.is_some()
            && (self.ledger.holds_any().map_err(unavailable)?
                || self.ledger.layout_record().map_err(unavailable)?.is_some());
        match decide(recorded.as_deref(), asked, holds_keys) {
            JurisdictionDecision::Accept => Ok(()),
            JurisdictionDecision::Record(jurisdiction) => {
                self.ledger
                    .record_jurisdiction(jurisdiction.as_str())
                    .map_err(unavailable)?;
                log::warn(
                    "idempotency.jurisdiction_recorded",
                    fields! {"jurisdiction" => jurisdiction.as_str()},
                );
                Ok(())
            }
            JurisdictionDecision::Refuse(why) => Err(refused(&why)),
        }
    }
}
