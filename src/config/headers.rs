//! The variables that name headers and methods, and the two policies:
//! `IDEMPOTENCY_KEY_HEADER`, `PROTECTED_METHODS`, `FINGERPRINT_HEADERS`,
//! `STORED_RESPONSE_HEADERS`, `FAILURE_POLICY` and `LOG_LEVEL`.
//!
//! What must stay true here: each is read with its default from
//! src/config/defaults.json, and a bad value is a [`ConfigError`] naming it.

use super::defaults;
use super::vars::{choice, err, header_list, token_list, ConfigError};

/// What to do when the ledger cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Refuse with 503 `idempotency-store-unavailable` (the default).
    Closed,
    /// Run the request unprotected, and log it.
    Open,
}

/// The least severe log lines written (`LOG_LEVEL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Everything, including one line per protected request (the default).
    Info,
    /// Warnings and errors only: no per-request line.
    Warn,
    /// Errors only.
    Error,
}

/// Headers the key can never be read from: the caller's credentials, the
/// tenant the gateway sets, and what framing or the runtime owns.
const NOT_A_KEY_HEADER: &[&str] = &[
    "authorization",
    "cookie",
    "x-tenant-id",
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "prefer",
    "x-idempotency-signature",
];

/// `IDEMPOTENCY_KEY_HEADER`: one header name (an HTTP token), lowercased.
pub(super) fn key_header(get: &dyn Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    const NAME: &str = "IDEMPOTENCY_KEY_HEADER";
    let names = header_list(get, NAME, defaults::IDEMPOTENCY_KEY_HEADER)?;
    match names.as_slice() {
        [one] if NOT_A_KEY_HEADER.contains(&one.as_str()) => Err(err(
            NAME,
            format!(
                "{one:?} cannot carry the idempotency key (the gateway or the runtime owns it)"
            ),
        )),
        [one] => Ok(one.clone()),
        _ => Err(err(NAME, "must be exactly one header name")),
    }
}

/// The protected methods, fingerprinted headers and stored headers.
type HeaderSettings = (Vec<String>, Vec<String>, Vec<String>);

/// `PROTECTED_METHODS`, `FINGERPRINT_HEADERS` and
/// `STORED_RESPONSE_HEADERS` (never `set-cookie`), in that order.
pub(super) fn headers(get: &dyn Fn(&str) -> Option<String>) -> Result<HeaderSettings, ConfigError> {
    let protected_methods =
        token_list(get, "PROTECTED_METHODS", defaults::PROTECTED_METHODS, false)?
            .into_iter()
            .map(|m| m.to_ascii_uppercase())
            .collect();
    let fingerprint_headers =
        header_list(get, "FINGERPRINT_HEADERS", defaults::FINGERPRINT_HEADERS)?;
    let stored_response_headers = header_list(
        get,
        "STORED_RESPONSE_HEADERS",
        defaults::STORED_RESPONSE_HEADERS,
    )?;
    if stored_response_headers.iter().any(|h| h == "set-cookie") {
        return Err(err(
            "STORED_RESPONSE_HEADERS",
            "set-cookie can never be stored and replayed",
        ));
    }
    Ok((
        protected_methods,
        fingerprint_headers,
        stored_response_headers,
    ))
}

/// `FAILURE_POLICY` and `LOG_LEVEL`, in that order.
pub(super) fn policies(
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<(FailurePolicy, LogLevel), ConfigError> {
    let failure_policy = choice(
        get,
        "FAILURE_POLICY",
        defaults::FAILURE_POLICY,
        &[
            ("closed", FailurePolicy::Closed),
            ("open", FailurePolicy::Open),
        ],
    )?;
    let log_level = choice(
        get,
        "LOG_LEVEL",
        defaults::LOG_LEVEL,
        &[
            ("info", LogLevel::Info),
            ("warn", LogLevel::Warn),
            ("error", LogLevel::Error),
        ],
    )?;
    Ok((failure_policy, log_level))
}
