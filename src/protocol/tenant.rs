//! Tenant ids: who a ledger belongs to (docs/contract.md §2.1), and the one
//! rule that names a tenant's Durable Objects.
//!
//! Role: what a tenant id may be, shared by the token map (`API_TOKENS`),
//! the shard layouts (`TENANT_SHARDS`) and every edge that names a
//! tenant's object; and [`object_base`], the name of its (first) object,
//! which the shard layouts extend with `/shard-{i}-of-{n}`. Pure. The JS
//! package applies the same rule (its `isTenantId`, `tenantObjectName`); both are pinned by
//! tests/fixtures/tenants.json.
//!
//! What must stay true here:
//! - A tenant id is 1–256 bytes of UTF-8 with no control character
//!   (U+0000–U+001F, U+007F–U+009F).
//! - An id valid before v1.4 (1–64 of `[A-Za-z0-9._-]`) names its object
//!   itself, so a deployment that upgrades keeps every key in the object
//!   that holds it.
//! - Any other id is `~` and its UTF-8 bytes, each outside
//!   `[A-Za-z0-9._-]` written `%XX` (uppercase hex): one name per id, never
//!   a v1.3 name (those have no `~`), never holding a `/`, so the shard
//!   suffix stays unambiguous.
//! - A name is some tenant's only when [`tenant_of_object_base`] reads it
//!   back to the id that [`object_base`] maps to it: one tenant per name,
//!   one spelling per tenant.

/// The longest tenant id, in UTF-8 bytes.
pub const MAX_TENANT_ID_BYTES: usize = 256;

/// The ids valid before v1.4, which name their objects themselves.
const V13_MAX_LEN: usize = 64;

/// What a valid tenant id is, for messages.
pub const TENANT_RULE: &str = "1-256 bytes of UTF-8 without control characters";

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')
}

/// Was this id valid before v1.4 (1–64 of `[A-Za-z0-9._-]`)?
fn is_v13_tenant_id(id: &str) -> bool {
    (1..=V13_MAX_LEN).contains(&id.len()) && id.bytes().all(unreserved)
}

/// Is this a valid tenant id (1–256 bytes of UTF-8, no control character)?
pub fn is_valid_tenant_id(id: &str) -> bool {
    (1..=MAX_TENANT_ID_BYTES).contains(&id.len()) && !id.chars().any(char::is_control)
}

/// The name of a tenant's (first) object: the id itself when it was valid
/// before v1.4, else `~` and its bytes, escaped.
pub fn object_base(tenant: &str) -> String {
    if is_v13_tenant_id(tenant) {
        return tenant.to_string();
    }
    let mut name = String::with_capacity(1 + tenant.len() * 3);
    name.push('~');
    for b in tenant.bytes() {
        if unreserved(b) {
            name.push(b as char);
        } else {
            name.push_str(&format!("%{b:02X}"));
        }
    }
    name
}

/// The tenant whose objects are built on `base` (`object_base(tenant) ==
/// base`), or `None` when no tenant's are: [`object_base`] read backwards.
pub fn tenant_of_object_base(base: &str) -> Option<String> {
    if is_v13_tenant_id(base) {
        return Some(base.to_string());
    }
    let escaped = base.strip_prefix('~')?.as_bytes();
    let mut bytes = Vec::with_capacity(escaped.len());
    let mut i = 0;
    while i < escaped.len() {
        let b = escaped[i];
        if b == b'%' {
            let hex = escaped.get(i + 1..i + 3)?;
            if !hex
                .iter()
                .all(|h| h.is_ascii_digit() || (b'A'..=b'F').contains(h))
            {
                return None;
            }
            bytes.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else if unreserved(b) {
            bytes.push(b);
            i += 1;
        } else {
            return None;
        }
    }
    let tenant = String::from_utf8(bytes).ok()?;
    (is_valid_tenant_id(&tenant) && object_base(&tenant) == base).then_some(tenant)
}
