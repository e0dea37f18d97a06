//! The configuration a settlement runs under: `complete` and `release` of
//! a claim already granted, when some variable is invalid.
//!
//! Role: decide whether an object whose configuration does not parse may
//! still settle the claims it granted before (docs/contract.md §4), and
//! under which values. Refusing a settlement is not safe: the owner's
//! answer is lost, its lease ends, and a retry after the fix runs the key
//! a second time.
//!
//! What must stay true here:
//! - Only a variable no settlement reads may be invalid
//!   ([`NOT_READ_BY_SETTLEMENTS`], an allow-list: a variable added later
//!   refuses settlements until it is judged and listed). Every value a
//!   settlement does read — where keys live (`TENANT_SHARDS`,
//!   `TENANT_JURISDICTIONS`), how long an answer is kept and the horizon
//!   a reshard waits for (`RETENTION_SECONDS`, `LEASE_SECONDS`,
//!   `ORIGIN_TIMEOUT_SECONDS`, `SWEEP_INTERVAL_SECONDS`), the byte quota
//!   (`MAX_DB_BYTES_PER_OBJECT`), the log hash key — is the configured
//!   one, never a default.
//! - New claims and executes are still refused (`500 misconfigured`): a
//!   settlement creates no key.

use super::vars::ConfigError;

/// Variables that no `complete` or `release` reads (the gateway's own,
/// or what only a new claim uses): one of them invalid does not keep an
/// object from settling the claims it already granted.
pub const NOT_READ_BY_SETTLEMENTS: &[&str] = &[
    "MAX_REQUEST_BODY_BYTES",
    "MAX_STORED_BODY_BYTES",
    "SWEEP_BATCH",
    "IDEMPOTENCY_REQUIRED",
    "IDEMPOTENCY_KEY_HEADER",
    "PROTECTED_METHODS",
    "FINGERPRINT_HEADERS",
    "STORED_RESPONSE_HEADERS",
    "RELEASE_ON_5XX",
    "MAX_KEYS_PER_TENANT",
    "FAILURE_POLICY",
    "ORIGIN_URL",
    "LOG_LEVEL",
    "REPLAY_CACHE_BYTES",
    "ORIGIN_SIGNING_SECRET",
    "IN_FLIGHT_WAIT_SECONDS",
    "IN_FLIGHT_WAIT_MAX_SECONDS",
    "IN_FLIGHT_MAX_WAITERS",
    "CONSOLE",
    "CONSOLE_HOST",
    "EVICT_WITH_API_TOKENS",
];

/// Of a configuration's refusals (`Config::errors`): the variables a
/// settlement reads as unset, all of them [`NOT_READ_BY_SETTLEMENTS`];
/// `Err`, the first refusal naming a variable a settlement reads.
pub fn unread_by_settlements(errors: &[ConfigError]) -> Result<Vec<String>, ConfigError> {
    let named = |e: &ConfigError| -> Vec<String> {
        e.variable.split(" and ").map(str::to_string).collect()
    };
    if let Some(read) = errors.iter().find(|e| {
        named(e)
            .iter()
            .any(|v| !NOT_READ_BY_SETTLEMENTS.contains(&v.as_str()))
    }) {
        return Err(read.clone());
    }
    Ok(errors.iter().flat_map(named).collect())
}
