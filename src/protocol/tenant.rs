//! Tenant ids: who a ledger belongs to (docs/contract.md §2.1).
//!
//! Role: the one rule for what a tenant id may be, shared by the token map
//! (`API_TOKENS`), the shard layouts (`TENANT_SHARDS`) and every edge that
//! names a tenant's object. Pure.
//!
//! What must stay true here: a tenant id is 1–64 of `[A-Za-z0-9._-]`, so it
//! can never carry a path separator into an object name other than the
//! shard suffix the shard layouts add (`{tenant}/shard-{i}-of-{n}`).

/// The longest tenant id.
pub const MAX_TENANT_ID_LEN: usize = 64;

/// Is this a valid tenant id (1–64 of `[A-Za-z0-9._-]`)?
pub fn is_valid_tenant_id(id: &str) -> bool {
    (1..=MAX_TENANT_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}
