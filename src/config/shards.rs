//! Sharding a tenant over several objects by key hash (`TENANT_SHARDS`).
//!
//! Role: the layout rules, as pure functions — which object holds a key
//! ([`shard_of`], [`object_name`]), what an object is ([`parse_object_name`]),
//! the operator's map ([`ShardMap`]), and, while a tenant is being
//! resharded, which layout answers ([`Role`]).
//!
//! What must stay true here:
//! - A key lives in exactly one object of a layout: `shard_of` is a pure
//!   function of the key and the shard count (the first 8 bytes of the
//!   key's SHA-256, big-endian, modulo N). It never changes: changing it
//!   would move every key of every sharded tenant.
//! - One shard (the default) is today's single object, named by the tenant's
//!   object name alone (`protocol::object_base`: a v1.3 tenant id itself),
//!   so nothing moves for an unsharded tenant.
//! - Layouts of different N never share an object (`{base}/shard-{i}-of-{n}`),
//!   so resharding never mixes two layouts' records in one database.
//! - Names here are built on the tenant's object name, never on the raw
//!   tenant id: [`ShardMap`] is keyed by it, as an object parses it out of
//!   its own name. A tenant id goes through `protocol::object_base` first
//!   ([`shard_object_name`], [`ShardMap::layout_of_tenant`]).
//! - A shard's name has one spelling (decimal, no sign, no leading zero):
//!   [`parse_object_name`] reads `acme/shard-01-of-2` as no shard of
//!   `acme`, so no second "shard 1" can take keys.
//! - While a tenant is resharded (`{"shards": N, "previous": M}`), the
//!   previous layout stays **authoritative for the keys it holds** and takes
//!   no new key: an object of the previous layout answers `421
//!   idempotency-key-moved` for a key it does not hold, and callers then ask
//!   the key's object in the current layout. An object decides this from its
//!   own name and the configuration, so a gateway still running the old
//!   configuration (a deploy rolling out) can never create the key in the
//!   old layout while a new gateway creates it in the new one.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

/// The most objects one tenant may be spread over (its home is
/// `protocol::limits`).
pub use crate::protocol::limits::MAX_SHARDS;

/// The shard of `key` among `shards` (0-based).
pub fn shard_of(key: &str, shards: u32) -> u32 {
    let digest = Sha256::digest(key.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(first) % u64::from(shards.max(1))) as u32
}

/// The object name of shard `index` of a layout of `shards` objects built
/// on `base`: the tenant's object name (`protocol::object_base(tenant)`),
/// never a tenant id itself — from a tenant id, [`shard_object_name`].
pub fn object_name(base: &str, index: u32, shards: u32) -> String {
    if shards <= 1 {
        base.to_string()
    } else {
        format!("{base}/shard-{index}-of-{shards}")
    }
}

/// The object name of shard `index` of `tenant` (a tenant id, mapped by
/// `protocol::object_base`, always) spread over `shards`: the JS package's
/// `shardObjectName`.
pub fn shard_object_name(tenant: &str, index: u32, shards: u32) -> String {
    object_name(&crate::protocol::object_base(tenant), index, shards)
}

/// A parsed object name: its tenant and its place in a layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectPlace {
    pub tenant: String,
    pub shards: u32,
}

/// A shard index or count spelled the one way [`object_name`] writes it:
/// decimal digits, no sign, no leading zero (`0` alone is zero).
fn canonical_number(digits: &str) -> Option<u32> {
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

/// Reads an object name written by [`object_name`]; a name without a
/// shard suffix is the tenant's single object (1 shard). The suffix has
/// one spelling: `acme/shard-01-of-2` or `acme/shard-+1-of-2` is not a
/// shard of `acme` but a one-object name of its own (no tenant's objects
/// are named so: `protocol::object_base` never writes a `/`).
pub fn parse_object_name(name: &str) -> ObjectPlace {
    let parsed = name.rsplit_once("/shard-").and_then(|(tenant, rest)| {
        let (index, shards) = rest.split_once("-of-")?;
        let (index, shards) = (canonical_number(index)?, canonical_number(shards)?);
        (index < shards && shards > 1).then(|| ObjectPlace {
            tenant: tenant.to_string(),
            shards,
        })
    });
    parsed.unwrap_or_else(|| ObjectPlace {
        tenant: name.to_string(),
        shards: 1,
    })
}

/// One tenant's layout: its shard count, and the previous count while it
/// is being resharded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub shards: u32,
    pub previous: Option<u32>,
}

impl Layout {
    pub const SINGLE: Layout = Layout {
        shards: 1,
        previous: None,
    };

    /// Spread over more than one object, now or while resharding?
    pub fn is_sharded(&self) -> bool {
        self.shards > 1 || self.previous.is_some()
    }

    /// The key's object in the current layout (`base`: the tenant's object
    /// name, `protocol::object_base(tenant)`, as in [`object_name`]).
    pub fn home(&self, base: &str, key: &str) -> String {
        object_name(base, shard_of(key, self.shards), self.shards)
    }

    /// The key's object in the previous layout, while there is one.
    pub fn previous_home(&self, base: &str, key: &str) -> Option<String> {
        self.previous
            .map(|m| object_name(base, shard_of(key, m), m))
    }

    /// Every object of the current and previous layouts (for `stats`).
    pub fn objects(&self, base: &str) -> Vec<String> {
        let mut names: Vec<String> = (0..self.shards)
            .map(|i| object_name(base, i, self.shards))
            .collect();
        if let Some(m) = self.previous {
            names.extend((0..m).map(|i| object_name(base, i, m)));
        }
        names
    }
}

/// What an object is in its tenant's configured layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// An object of the current layout: it takes new keys.
    Current,
    /// An object of any other layout (the previous one while resharding, or
    /// an older one): it answers only for keys it holds.
    Retired,
}

/// The operator's `TENANT_SHARDS`: tenant → layout (absent: one shard).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardMap {
    tenants: HashMap<String, Layout>,
}

impl ShardMap {
    /// Parses `{"acme": 8, "globex": {"shards": 8, "previous": 1}}`.
    pub fn parse(raw: &str) -> Result<ShardMap, String> {
        let value: serde_json::Value =
            serde_json::from_slice(raw.as_bytes()).map_err(|e| format!("not valid JSON: {e}"))?;
        let Some(map) = value.as_object() else {
            return Err("must be a JSON object of tenant → shard count".into());
        };
        let count = |v: &serde_json::Value, what: &str| -> Result<u32, String> {
            v.as_u64()
                .filter(|n| (1..=u64::from(MAX_SHARDS)).contains(n))
                .map(|n| n as u32)
                .ok_or_else(|| format!("{what} must be a whole number 1..={MAX_SHARDS}"))
        };
        let mut tenants = HashMap::new();
        for (tenant, v) in map {
            if !crate::protocol::is_valid_tenant_id(tenant) {
                return Err(format!("{tenant:?} is not a valid tenant id"));
            }
            let layout = match v {
                serde_json::Value::Object(o) => {
                    if let Some(extra) = o.keys().find(|k| *k != "shards" && *k != "previous") {
                        return Err(format!("{tenant}: unknown field {extra:?}"));
                    }
                    let shards = count(
                        o.get("shards").unwrap_or(&serde_json::Value::Null),
                        &format!("{tenant}.shards"),
                    )?;
                    let previous = o
                        .get("previous")
                        .map(|p| count(p, &format!("{tenant}.previous")))
                        .transpose()?;
                    if previous == Some(shards) {
                        return Err(format!("{tenant}: previous equals shards"));
                    }
                    Layout { shards, previous }
                }
                other => Layout {
                    shards: count(other, tenant)?,
                    previous: None,
                },
            };
            // Keyed by the tenant's object name (protocol::object_base): the
            // name an object parses out of its own, and the gateway's too.
            tenants.insert(crate::protocol::object_base(tenant), layout);
        }
        Ok(ShardMap { tenants })
    }

    /// The layout of the tenant whose object name is `base`
    /// (`protocol::object_base(tenant)`, as an object parses it out of its
    /// own name; one shard unless configured).
    pub fn layout(&self, base: &str) -> Layout {
        self.tenants.get(base).copied().unwrap_or(Layout::SINGLE)
    }

    /// The layout of `tenant`, a tenant id (mapped by
    /// `protocol::object_base`, always).
    pub fn layout_of_tenant(&self, tenant: &str) -> Layout {
        self.layout(&crate::protocol::object_base(tenant))
    }

    /// A tenant spread over several objects (now or while resharding), if
    /// any: sharding needs proxy mode.
    pub fn first_sharded(&self) -> Option<&str> {
        let mut sharded: Vec<&str> = self
            .tenants
            .iter()
            .filter(|(_, l)| l.is_sharded())
            .map(|(t, _)| t.as_str())
            .collect();
        sharded.sort_unstable();
        sharded.first().copied()
    }

    /// The role of the object named `name` under this map.
    pub fn role_of(&self, name: &str) -> Role {
        let place = parse_object_name(name);
        if place.shards == self.layout(&place.tenant).shards {
            Role::Current
        } else {
            Role::Retired
        }
    }
}
