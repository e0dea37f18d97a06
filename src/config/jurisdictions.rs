//! Tenants kept in a jurisdiction (`TENANT_JURISDICTIONS`): every object
//! of such a tenant — each shard of each layout, its registry — is created
//! through `namespace.jurisdiction(J)` (docs/contract.md §5,
//! docs/configuration.md "Jurisdictions").
//!
//! Role: the operator's map, parsed and validated ([`JurisdictionMap`]),
//! and the one rule every edge asks: the jurisdiction of an object, by its
//! name ([`JurisdictionMap::of_object`]). Pure. The JS package applies the
//! same values (its `JURISDICTIONS`).
//!
//! What must stay true here:
//! - A jurisdiction is one the platform knows (`eu`, `fedramp`,
//!   `fedramp-high`, `us`); anything else is refused at configuration time
//!   naming the tenant and the value — never an object created unrestricted.
//! - The map is keyed by the tenant's object name (`protocol::object_base`),
//!   as [`super::ShardMap`] is, so an object finds its tenant's jurisdiction
//!   from its own name, shard suffix or not.
//! - An unrestricted object and an object of jurisdiction J with the same
//!   name are different objects: a change of a tenant's jurisdiction is
//!   refused where both configurations meet (the tenant's unrestricted
//!   object, `crate::object::home::jurisdiction`), never silently served from an
//!   empty ledger.

use std::collections::HashMap;

use super::shards::parse_object_name;

/// A Durable Object jurisdiction (`DurableObjectNamespace.jurisdiction(J)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Jurisdiction {
    Eu,
    Fedramp,
    FedrampHigh,
    Us,
}

impl Jurisdiction {
    /// Every jurisdiction, in the order messages list them.
    pub const ALL: [Jurisdiction; 4] = [
        Jurisdiction::Eu,
        Jurisdiction::Fedramp,
        Jurisdiction::FedrampHigh,
        Jurisdiction::Us,
    ];

    /// The platform's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Jurisdiction::Eu => "eu",
            Jurisdiction::Fedramp => "fedramp",
            Jurisdiction::FedrampHigh => "fedramp-high",
            Jurisdiction::Us => "us",
        }
    }

    /// The jurisdiction named `name` exactly (lowercase), if any.
    pub fn parse(name: &str) -> Option<Jurisdiction> {
        Jurisdiction::ALL.into_iter().find(|j| j.as_str() == name)
    }
}

impl std::fmt::Display for Jurisdiction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// "eu, fedramp, fedramp-high, us", for messages.
fn known() -> String {
    Jurisdiction::ALL.map(Jurisdiction::as_str).join(", ")
}

/// The operator's `TENANT_JURISDICTIONS`: tenant → jurisdiction (absent:
/// unrestricted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JurisdictionMap {
    tenants: HashMap<String, Jurisdiction>,
}

impl JurisdictionMap {
    /// Parses `{"acme-eu": "eu"}`; an error names the tenant and the value.
    pub fn parse(raw: &str) -> Result<JurisdictionMap, String> {
        let value: serde_json::Value =
            serde_json::from_str(raw).map_err(|e| format!("not valid JSON: {e}"))?;
        let Some(map) = value.as_object() else {
            return Err("must be a JSON object of tenant → jurisdiction".into());
        };
        let mut tenants = HashMap::new();
        for (tenant, v) in map {
            if !crate::protocol::is_valid_tenant_id(tenant) {
                return Err(format!(
                    "{tenant:?} is not a valid tenant id ({})",
                    crate::protocol::TENANT_RULE
                ));
            }
            let jurisdiction = v.as_str().and_then(Jurisdiction::parse).ok_or_else(|| {
                format!("{tenant:?}: {v} is not a jurisdiction (one of {})", known())
            })?;
            tenants.insert(crate::protocol::object_base(tenant), jurisdiction);
        }
        Ok(JurisdictionMap { tenants })
    }

    /// The jurisdiction of the tenant whose object name is `base`.
    pub fn of(&self, base: &str) -> Option<Jurisdiction> {
        self.tenants.get(base).copied()
    }

    /// The jurisdiction of the object named `name` (a tenant's object or a
    /// shard's, `{base}/shard-{i}-of-{n}`): its tenant's.
    pub fn of_object(&self, name: &str) -> Option<Jurisdiction> {
        self.of(&parse_object_name(name).tenant)
    }

    /// No tenant is kept in a jurisdiction.
    pub fn is_empty(&self) -> bool {
        self.tenants.is_empty()
    }
}

/// What the tenant's unrestricted object — the one object every
/// configuration of the tenant reaches — makes of the jurisdiction a
/// configuration names for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JurisdictionDecision {
    /// The configuration agrees with where the tenant's keys live.
    Accept,
    /// A new tenant's first use of this jurisdiction: record it, then accept.
    Record(Jurisdiction),
    /// The configuration would serve the tenant from objects that do not
    /// hold its keys: every claim and execute is refused, naming why.
    Refuse(String),
}

/// The one rule for a change of a tenant's jurisdiction: `recorded` is
/// the jurisdiction the tenant's unrestricted object recorded (its keys
/// live there), `asked` the configured one (`None`: unrestricted), and
/// `holds_keys` whether that unrestricted object holds any record or a
/// recorded shard layout (the tenant has keys outside any jurisdiction).
/// A tenant may be given a jurisdiction only while it has no unrestricted
/// key; once recorded, only that jurisdiction serves it.
pub fn decide(
    recorded: Option<&str>,
    asked: Option<Jurisdiction>,
    holds_keys: bool,
) -> JurisdictionDecision {
    let how = "restore its TENANT_JURISDICTIONS entry, or move the tenant (docs/migrating.md, \"Moving a tenant to another jurisdiction\")";
    match (recorded, asked) {
        (None, None) => JurisdictionDecision::Accept,
        (Some(was), None) => JurisdictionDecision::Refuse(format!(
            "the tenant's keys live in jurisdiction \"{was}\", but TENANT_JURISDICTIONS no longer names it for the tenant: {how}"
        )),
        (Some(was), Some(now)) if was == now.as_str() => JurisdictionDecision::Accept,
        (Some(was), Some(now)) => JurisdictionDecision::Refuse(format!(
            "the tenant's keys live in jurisdiction \"{was}\", but TENANT_JURISDICTIONS names \"{now}\": {how}"
        )),
        (None, Some(now)) if holds_keys => JurisdictionDecision::Refuse(format!(
            "the tenant has keys outside any jurisdiction, but TENANT_JURISDICTIONS names \"{now}\": {how}"
        )),
        (None, Some(now)) => JurisdictionDecision::Record(now),
    }
}
