//! Structured logs (docs/contract.md §6): one JSON line per event.
//!
//! Role: the only place log lines are written, so that no raw key, token or
//! body can slip into one: identifiers pass through [`short_hash`] first.
//!
//! Panics: worker 0.8.7 installs its own panic hook from its private
//! `#[wasm_bindgen(start)]` (`src/init.rs`: the default hook, a "Critical"
//! console error, and the flag that makes the isolate re-initialise). A
//! second start function of ours would compete with that one, so
//! [`install_panic_hook`] runs once per isolate on first use instead and
//! *chains* to the hook it finds: a panic first writes one JSON line
//! (`idempotency.panic`), then workers-rs does what it always does.

use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::{Map, Value};

use crate::config::LogLevel;

/// The isolate's `LOG_LEVEL` (info until a configuration is loaded). Both
/// the gateway and the object set it from the same variables.
static LEVEL: AtomicU8 = AtomicU8::new(0);

fn rank(level: LogLevel) -> u8 {
    match level {
        LogLevel::Info => 0,
        LogLevel::Warn => 1,
        LogLevel::Error => 2,
    }
}

/// Sets the least severe level written from now on in this isolate.
pub fn set_level(level: LogLevel) {
    LEVEL.store(rank(level), Ordering::Relaxed);
}

fn enabled(level: LogLevel) -> bool {
    rank(level) >= LEVEL.load(Ordering::Relaxed)
}
use sha2::{Digest, Sha256};

thread_local! {
    /// `LOG_HASH_KEY`, once a configuration has been loaded.
    static HASH_KEY: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Makes [`short_hash`] a keyed HMAC from now on in this isolate (or plain
/// SHA-256 again with `None`).
pub fn set_hash_key(key: Option<&str>) {
    HASH_KEY.with(|k| *k.borrow_mut() = key.map(str::to_string));
}

/// The first 12 hex characters of the SHA-256 of `value` — or, with
/// `LOG_HASH_KEY`, of its HMAC-SHA256 under that key, so that a guessable
/// tenant (`acme`) or key (`order-1`) cannot be recovered from the logs by
/// hashing guesses. Enough to correlate log lines either way.
pub fn short_hash(value: &str) -> String {
    let mut hex = HASH_KEY.with(|k| match k.borrow().as_deref() {
        Some(key) => crate::protocol::digest::hmac_hex(key.as_bytes(), value.as_bytes()),
        None => crate::protocol::digest::to_hex(&Sha256::digest(value.as_bytes())),
    });
    hex.truncate(12);
    hex
}

/// Is a line at info level written? (Callers skip building its fields when not.)
pub fn info_enabled() -> bool {
    enabled(LogLevel::Info)
}

/// Writes one JSON line at info level.
pub fn info(event: &str, fields: Map<String, Value>) {
    if !enabled(LogLevel::Info) {
        return;
    }
    worker::console_log!("{}", line(event, fields));
}

/// Writes one JSON line at warning level.
pub fn warn(event: &str, fields: Map<String, Value>) {
    if !enabled(LogLevel::Warn) {
        return;
    }
    worker::console_warn!("{}", line(event, fields));
}

/// Writes one JSON line at error level.
pub fn error(event: &str, fields: Map<String, Value>) {
    worker::console_error!("{}", line(event, fields));
}

/// The error line for a refused completion or release: a superseded owner
/// tried to finish a key it no longer owns (docs/contract.md §6).
pub fn fenced_out(
    operation: &str,
    key: &str,
    generation: i64,
    current: &Option<crate::ledger::RecordState>,
) {
    let mut fields = Map::new();
    fields.insert("operation".into(), Value::String(operation.into()));
    fields.insert("key".into(), Value::String(short_hash(key)));
    fields.insert("generation".into(), Value::from(generation));
    fields.insert(
        "current".into(),
        serde_json::to_value(current).unwrap_or(Value::Null),
    );
    error("idempotency.fenced_out", fields);
}

/// Makes every panic in this isolate write one JSON error line
/// (`{"event":"idempotency.panic","message","location"}`) before the hook
/// that was installed already runs. Idempotent: only the first call installs.
pub fn install_panic_hook() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".to_string());
            let location = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()));
            let mut fields = Map::new();
            fields.insert("message".into(), Value::String(message));
            fields.insert(
                "location".into(),
                location.map_or(Value::Null, Value::String),
            );
            error("idempotency.panic", fields);
            previous(info);
        }));
    });
}

fn line(event: &str, mut fields: Map<String, Value>) -> String {
    fields.insert("event".into(), Value::String(event.into()));
    Value::Object(fields).to_string()
}

/// Builds a field map: `fields!{"outcome" => "replayed", "status" => 200}`.
#[macro_export]
macro_rules! fields {
    ($($k:expr => $v:expr),* $(,)?) => {{
        let mut m = serde_json::Map::new();
        $( m.insert($k.to_string(), serde_json::json!($v)); )*
        m
    }};
}
