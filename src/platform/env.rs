//! The runtime environment: the clock, fresh attempt ids, the variables,
//! the binding name, and the one answer for a configuration that cannot be
//! used.
//!
//! Role: what the gateway and the object both read from workerd, once.
//!
//! What must stay true here: variables are read through one lookup
//! (secrets and `[vars]` alike, whatever JSON type wrangler gave them), and a configuration error is logged
//! naming the variable and answered `500 misconfigured` without its value.

#[cfg(feature = "workers-rs")]
use js_sys::{Function, Reflect};
#[cfg(feature = "workers-rs")]
use wasm_bindgen::JsCast;
#[cfg(feature = "workers-rs")]
use wasm_bindgen::JsValue;

#[cfg(feature = "workers-rs")]
use crate::config::{Config, ConfigError};
#[cfg(feature = "workers-rs")]
use crate::fields;
#[cfg(feature = "workers-rs")]
use crate::platform::{http, log};
#[cfg(feature = "workers-rs")]
use crate::protocol::Problem;

/// The Durable Object binding name the gateway and clients use.
#[cfg(feature = "workers-rs")]
pub const LEDGER_BINDING: &str = "TENANT_LEDGER";

/// Milliseconds on this isolate's clock (the object's clock inside an object).
pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

#[cfg(feature = "workers-rs")]
/// A fresh claim attempt id (`ClaimCall::attempt`): a random UUID from
/// the runtime's `crypto.randomUUID()`, unguessable, so no other caller
/// can present it; `None` if the runtime has none (the claim is then sent
/// unnamed, and a lost answer is not retried).
pub fn new_attempt() -> Option<String> {
    let crypto = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto")).ok()?;
    let uuid: Function = Reflect::get(&crypto, &JsValue::from_str("randomUUID"))
        .ok()?
        .dyn_into()
        .ok()?;
    uuid.call0(&crypto).ok()?.as_string()
}

/// Reads a variable or secret from `env` (a secret and a `[vars]` entry
/// are the same property of `env`; workerd refuses a name that is both).
#[cfg(feature = "workers-rs")]
pub fn config_lookup(env: &worker::Env) -> impl Fn(&str) -> Option<String> + '_ {
    move |name| variable_text(env.as_ref(), name)
}

/// A variable's text: a string as it is; a number, boolean or table
/// (wrangler's JSON variables: `LEASE_SECONDS = 30` unquoted, `TENANT_SHARDS
/// = { acme = 8 }`) as its JSON text, which every parser then accepts or
/// refuses naming it. worker 0.8.7's `Env::var` fails on anything but a
/// string, which read it as unset: a silent default.
#[cfg(feature = "workers-rs")]
pub fn variable_text(env: &JsValue, name: &str) -> Option<String> {
    let value = Reflect::get(env, &JsValue::from_str(name)).ok()?;
    if value.is_undefined() || value.is_null() {
        return None;
    }
    if let Some(text) = value.as_string() {
        return Some(text);
    }
    js_sys::JSON::stringify(&value)
        .ok()
        .and_then(|text| text.as_string())
}

/// Parses the configuration and applies its log settings to this isolate
/// (`LOG_LEVEL`, `LOG_HASH_KEY`); the gateway and the object both start so.
#[cfg(feature = "workers-rs")]
pub fn load_config(env: &worker::Env) -> Result<Config, ConfigError> {
    let config = Config::from_lookup(&config_lookup(env))?;
    apply_log_settings(&config);
    Ok(config)
}

/// Applies `config`'s log settings (`LOG_LEVEL`, `LOG_HASH_KEY`) to this
/// isolate.
#[cfg(feature = "workers-rs")]
pub fn apply_log_settings(config: &Config) {
    log::set_level(config.log_level);
    log::set_hash_key(config.log_hash_key.as_ref().map(|k| k.expose()));
}

/// A configuration that cannot be used, as the gateway and the object both
/// answer it: one error line naming the variable (`idempotency.misconfigured`)
/// and `500 misconfigured`, which names the variable but never its value.
#[cfg(feature = "workers-rs")]
pub fn misconfigured(variable: &str, message: &str) -> worker::Response {
    log::error(
        "idempotency.misconfigured",
        fields! {"variable" => variable, "error" => message},
    );
    http::problem(&Problem::misconfigured(variable))
}
