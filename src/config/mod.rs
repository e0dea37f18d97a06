//! Configuration: the `[vars]` and secrets of docs/contract.md §5, parsed and validated.
//!
//! Role: turn the strings the runtime hands us (wrangler.toml `[vars]`,
//! `wrangler dev --var`, secrets) into typed settings, once per isolate. Pure:
//! the caller supplies a lookup function.
//!
//! What must stay true here:
//! - An absent variable takes its documented default; a present but invalid
//!   one is an error naming the variable — never a silent default.
//! - `set-cookie` can never be a stored response header.
//! - `API_TOKENS` has no built-in fallback: without it nobody is authorised.

pub mod console;
pub mod defaults;
mod headers;
pub mod jurisdictions;
pub mod reshard;
pub mod settlement;
pub mod shards;
pub mod vars;
pub mod waiting;

use crate::ledger::STORED_BODY_CEILING;
use crate::protocol::limits::{check_claim_windows, MAX_WINDOW_SECONDS};
use crate::protocol::CapturePolicy;
pub use console::ConsoleSettings;
use headers::{headers, key_header, policies};
pub use headers::{FailurePolicy, LogLevel};
pub use jurisdictions::{Jurisdiction, JurisdictionMap};
pub use shards::ShardMap;
use vars::{boolean, err, number, secret};
pub use vars::{ConfigError, SecretString};
pub use waiting::{WaitSettings, MAX_WAITERS, MAX_WAIT_SECONDS};

/// Every setting of docs/contract.md §5 except the tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub retention_seconds: u64,
    pub lease_seconds: u64,
    pub max_request_body_bytes: usize,
    pub max_stored_body_bytes: usize,
    pub sweep_batch: usize,
    /// Alarms are coalesced onto this grid (`SWEEP_INTERVAL_SECONDS`): at
    /// most one sweep per interval unless a batch is full, so an expired
    /// record outlives its window by at most this long.
    pub sweep_interval_seconds: u64,
    pub idempotency_required: bool,
    /// The request header the key is read from, lowercased
    /// (`IDEMPOTENCY_KEY_HEADER`, default `idempotency-key`); its value is
    /// parsed by the key's rules whatever its name.
    pub idempotency_key_header: String,
    /// Uppercase method names.
    pub protected_methods: Vec<String>,
    /// Lowercase header names, in configured order.
    pub fingerprint_headers: Vec<String>,
    /// Lowercase header names; never `set-cookie`.
    pub stored_response_headers: Vec<String>,
    pub release_on_5xx: bool,
    /// A tenant's API token may evict its keys too
    /// (`EVICT_WITH_API_TOKENS`; off: an operator's token only).
    pub evict_with_api_tokens: bool,
    pub max_keys_per_tenant: u64,
    /// Bytes one object's SQLite database may reach before new keys get
    /// `429` (`MAX_DB_BYTES_PER_OBJECT`).
    pub max_db_bytes_per_object: u64,
    pub failure_policy: FailurePolicy,
    pub origin_timeout_seconds: u64,
    /// Base URL of the origin in proxy mode, if configured by variable.
    pub origin_url: Option<String>,
    pub log_level: LogLevel,
    /// Bytes of completed records the gateway isolate keeps to answer
    /// replays itself (`0`: off).
    pub replay_cache_bytes: usize,
    /// Secret that signs every forwarded request (`ORIGIN_SIGNING_SECRET`).
    pub origin_signing_secret: Option<SecretString>,
    /// Key that makes log hashes keyed HMACs (`LOG_HASH_KEY`).
    pub log_hash_key: Option<SecretString>,
    /// Waiting for an in-flight result (`IN_FLIGHT_WAIT_SECONDS`,
    /// `IN_FLIGHT_WAIT_MAX_SECONDS`, `IN_FLIGHT_MAX_WAITERS`).
    pub wait: WaitSettings,
    /// Tenants spread over several objects by key hash (`TENANT_SHARDS`).
    pub tenant_shards: ShardMap,
    /// Where the operator console is served (`CONSOLE`, `CONSOLE_HOST`).
    pub console: ConsoleSettings,
    /// Tenants whose objects are created in a jurisdiction
    /// (`TENANT_JURISDICTIONS`).
    pub tenant_jurisdictions: JurisdictionMap,
}

/// `REPLAY_CACHE_BYTES` by default: 8 MiB of a 128 MB isolate.
pub const DEFAULT_REPLAY_CACHE_BYTES: u64 = defaults::REPLAY_CACHE_BYTES;

/// The most an isolate may spend on replays (a Worker isolate has 128 MB).
pub const MAX_REPLAY_CACHE_BYTES: u64 = 64 * 1_048_576;

/// A SQLite-backed Durable Object's storage limit (10 GB).
pub const PLATFORM_DB_BYTES: u64 = 10_000_000_000;

/// `MAX_DB_BYTES_PER_OBJECT` by default: 9 GB, so the largest write a claim
/// and its completion can add (a record with a 1.9 MB body, its indexes and
/// the journal) always fits under the platform's limit.
pub const DEFAULT_MAX_DB_BYTES: u64 = defaults::MAX_DB_BYTES_PER_OBJECT;

/// `SWEEP_BATCH`'s bounds (also the embedded ledger's `sweep(batch)`).
pub const SWEEP_BATCH: std::ops::RangeInclusive<u64> = 1..=10_000;

/// `SWEEP_INTERVAL_SECONDS`'s bounds (also the embedded ledger's
/// `sweepIntervalSeconds`).
pub const SWEEP_INTERVAL_SECONDS: std::ops::RangeInclusive<u64> = 1..=3_600;

/// The smallest byte quota accepted (64 KiB: an empty ledger is ~40 KiB).
pub const MIN_MAX_DB_BYTES: u64 = 65_536;

/// `RETENTION_SECONDS` and `LEASE_SECONDS`: a record must outlive its
/// owner's lease, otherwise the sweep (or an expiry) frees a key whose
/// first run is still going, and a retry runs it a second time.
fn windows(get: &dyn Fn(&str) -> Option<String>) -> Result<(u64, u64), ConfigError> {
    let retention_seconds = number(
        get,
        "RETENTION_SECONDS",
        defaults::RETENTION_SECONDS,
        1,
        MAX_WINDOW_SECONDS,
    )?;
    let lease_seconds = number(get, "LEASE_SECONDS", defaults::LEASE_SECONDS, 1, 86_400)?;
    let ms = |s: u64| (s as i64).saturating_mul(1000);
    if check_claim_windows(ms(lease_seconds), ms(retention_seconds)).is_err() {
        return Err(err(
            "RETENTION_SECONDS and LEASE_SECONDS",
            format!(
                "RETENTION_SECONDS ({retention_seconds}) is shorter than LEASE_SECONDS ({lease_seconds}): a record must outlive its lease"
            ),
        ));
    }
    Ok((retention_seconds, lease_seconds))
}

pub use crate::protocol::limits::MAX_REQUEST_BODY_CEILING;

/// `MAX_REQUEST_BODY_BYTES` and `MAX_STORED_BODY_BYTES`.
fn body_limits(get: &dyn Fn(&str) -> Option<String>) -> Result<(usize, usize), ConfigError> {
    let ceiling = MAX_REQUEST_BODY_CEILING;
    let request = number(
        get,
        "MAX_REQUEST_BODY_BYTES",
        defaults::MAX_REQUEST_BODY_BYTES,
        0,
        ceiling,
    )?;
    let ceiling = STORED_BODY_CEILING as u64;
    let stored = number(
        get,
        "MAX_STORED_BODY_BYTES",
        defaults::MAX_STORED_BODY_BYTES,
        0,
        ceiling,
    )?;
    Ok((request as usize, stored as usize))
}

/// `MAX_KEYS_PER_TENANT` and `MAX_DB_BYTES_PER_OBJECT`.
fn quotas(get: &dyn Fn(&str) -> Option<String>) -> Result<(u64, u64), ConfigError> {
    let keys = number(
        get,
        "MAX_KEYS_PER_TENANT",
        defaults::MAX_KEYS_PER_TENANT,
        1,
        1_000_000_000_000,
    )?;
    let (default, min, max) = (DEFAULT_MAX_DB_BYTES, MIN_MAX_DB_BYTES, PLATFORM_DB_BYTES);
    let bytes = number(get, "MAX_DB_BYTES_PER_OBJECT", default, min, max)?;
    Ok((keys, bytes))
}

/// `ORIGIN_URL`: an http(s) base URL without query or fragment, or none.
fn origin_url(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<String>, ConfigError> {
    match get("ORIGIN_URL").map(|s| s.trim().to_string()) {
        None => Ok(None),
        Some(s) if s.is_empty() => Ok(None),
        Some(s) if s.starts_with("http://") || s.starts_with("https://") => {
            if s.contains('?') || s.contains('#') {
                return Err(err(
                    "ORIGIN_URL",
                    "a base URL may not carry a query or fragment",
                ));
            }
            Ok(Some(s))
        }
        Some(s) => Err(err("ORIGIN_URL", format!("{s:?} is not an http(s) URL"))),
    }
}

impl Config {
    /// Parses every variable through `get` (which returns `None` for unset).
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let (protected_methods, fingerprint_headers, stored_response_headers) = headers(get)?;
        let (failure_policy, log_level) = policies(get)?;
        let (retention_seconds, lease_seconds) = windows(get)?;
        let (max_request_body_bytes, max_stored_body_bytes) = body_limits(get)?;
        let (max_keys_per_tenant, max_db_bytes_per_object) = quotas(get)?;
        Ok(Config {
            retention_seconds,
            lease_seconds,
            max_request_body_bytes,
            max_stored_body_bytes,
            sweep_batch: number(
                get,
                "SWEEP_BATCH",
                defaults::SWEEP_BATCH,
                *SWEEP_BATCH.start(),
                *SWEEP_BATCH.end(),
            )? as usize,
            sweep_interval_seconds: number(
                get,
                "SWEEP_INTERVAL_SECONDS",
                defaults::SWEEP_INTERVAL_SECONDS,
                *SWEEP_INTERVAL_SECONDS.start(),
                *SWEEP_INTERVAL_SECONDS.end(),
            )?,
            idempotency_required: boolean(
                get,
                "IDEMPOTENCY_REQUIRED",
                defaults::IDEMPOTENCY_REQUIRED,
            )?,
            idempotency_key_header: key_header(get)?,
            protected_methods,
            fingerprint_headers,
            stored_response_headers,
            release_on_5xx: boolean(get, "RELEASE_ON_5XX", defaults::RELEASE_ON_5XX)?,
            evict_with_api_tokens: boolean(
                get,
                "EVICT_WITH_API_TOKENS",
                defaults::EVICT_WITH_API_TOKENS,
            )?,
            max_keys_per_tenant,
            max_db_bytes_per_object,
            failure_policy,
            origin_timeout_seconds: number(
                get,
                "ORIGIN_TIMEOUT_SECONDS",
                defaults::ORIGIN_TIMEOUT_SECONDS,
                1,
                86_400,
            )?,
            origin_url: origin_url(get)?,
            log_level,
            origin_signing_secret: secret(get, "ORIGIN_SIGNING_SECRET", 32)?,
            log_hash_key: secret(get, "LOG_HASH_KEY", 16)?,
            replay_cache_bytes: number(
                get,
                "REPLAY_CACHE_BYTES",
                DEFAULT_REPLAY_CACHE_BYTES,
                0,
                MAX_REPLAY_CACHE_BYTES,
            )? as usize,
            wait: waiting::from_lookup(get)?,
            tenant_shards: match get("TENANT_SHARDS").map(|s| s.trim().to_string()) {
                None => ShardMap::default(),
                Some(s) if s.is_empty() => ShardMap::default(),
                Some(s) => ShardMap::parse(&s).map_err(|m| err("TENANT_SHARDS", m))?,
            },
            console: ConsoleSettings::from_lookup(get)?,
            tenant_jurisdictions: match get("TENANT_JURISDICTIONS").map(|s| s.trim().to_string()) {
                None => JurisdictionMap::default(),
                Some(s) if s.is_empty() => JurisdictionMap::default(),
                Some(s) => {
                    JurisdictionMap::parse(&s).map_err(|m| err("TENANT_JURISDICTIONS", m))?
                }
            },
        })
    }

    /// Every variable [`Config::from_lookup`] refuses, not only the first
    /// (`npm run check:config` lists them all): after each refusal the
    /// variables it names read as unset, and the rest are parsed again.
    /// Empty when the configuration parses.
    pub fn errors(get: &dyn Fn(&str) -> Option<String>) -> Vec<ConfigError> {
        let mut unset: Vec<String> = Vec::new();
        let mut errors = Vec::new();
        loop {
            let masked = |name: &str| {
                if unset.iter().any(|u| u == name) {
                    None
                } else {
                    get(name)
                }
            };
            let Err(e) = Config::from_lookup(&masked) else {
                return errors;
            };
            // A refusal names one variable, or two joined by " and ".
            let named: Vec<String> = e.variable.split(" and ").map(str::to_string).collect();
            let known = named.iter().all(|n| unset.contains(n));
            errors.push(e);
            if known {
                // Refused with its variables unset: nothing more to learn.
                return errors;
            }
            unset.extend(named);
        }
    }

    /// The configuration a settlement (`complete`, `release` of a claim
    /// already granted) runs under: every variable as configured, those
    /// invalid ones no settlement reads
    /// ([`settlement::NOT_READ_BY_SETTLEMENTS`]) read as unset. `Err`: the
    /// first invalid variable a settlement does read. Equal to
    /// [`Config::from_lookup`] when every variable is valid.
    pub fn for_settlement(get: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let unset = settlement::unread_by_settlements(&Config::errors(get))?;
        Config::from_lookup(&|name| {
            if unset.iter().any(|u| u == name) {
                None
            } else {
                get(name)
            }
        })
    }

    /// Settings that are allowed but unwise, as log-ready sentences.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.origin_timeout_seconds >= self.lease_seconds {
            w.push(format!(
                "ORIGIN_TIMEOUT_SECONDS ({}) is not below LEASE_SECONDS ({}): a slow owner can outlive its lease and be taken over while still running",
                self.origin_timeout_seconds, self.lease_seconds
            ));
        }
        w
    }

    pub fn is_protected(&self, method: &str) -> bool {
        self.protected_methods.iter().any(|m| m == method)
    }

    pub fn capture_policy(&self) -> CapturePolicy {
        CapturePolicy {
            stored_headers: self.stored_response_headers.clone(),
            max_stored_body_bytes: self.max_stored_body_bytes,
        }
    }

    pub fn lease_ms(&self) -> i64 {
        (self.lease_seconds as i64).saturating_mul(1000)
    }

    pub fn retention_ms(&self) -> i64 {
        (self.retention_seconds as i64).saturating_mul(1000)
    }
}
