//! The bindings the Worker uses, judged as configuration: the ledger's
//! Durable Object namespace (`TENANT_LEDGER`) and, when one is given, the
//! origin's service binding (`ORIGIN`).
//!
//! Role: the one rule for both, run by the gateway when it parses its
//! settings (`gateway::settings`) and by `npm run check:config`
//! (`gateway::check`) on the bindings wrangler would give the script.
//!
//! What must stay true here:
//! - A missing or mistyped binding is a configuration error (`500
//!   misconfigured` naming it), never a ledger "not reached":
//!   `FAILURE_POLICY=open` runs a request unprotected only when the
//!   ledger was certainly not reached, and a ledger that is not bound at
//!   all is never reached by any request — every key would run again.
//! - An `ORIGIN` that is not a service binding (a variable of that name)
//!   is refused, never read as "no origin": the gateway would run its
//!   embedded application instead of the operator's.

use js_sys::{Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use worker::Env;

use crate::config::ConfigError;
use crate::platform::env::LEDGER_BINDING;

/// The class whose namespace `TENANT_LEDGER` must be (`npm run
/// check:config` checks the declared class; the runtime cannot see it).
pub const LEDGER_CLASS: &str = "TenantLedger";

/// The name of the origin's service binding (proxy mode).
pub const ORIGIN_BINDING: &str = "ORIGIN";

/// The constructor name of a binding `env` holds under `name`, if any.
fn kind_of(env: &Env, name: &str) -> Option<String> {
    let raw: &JsValue = env.as_ref();
    let value = Reflect::get(raw, &JsValue::from_str(name)).ok()?;
    if value.is_undefined() || value.is_null() {
        return None;
    }
    let kind = value
        .dyn_ref::<Object>()
        .and_then(|o| o.constructor().name().as_string())
        .unwrap_or_default();
    // A `[vars]` entry: a string, or a table wrangler hands over as an Object.
    Some(match kind.as_str() {
        "" | "Object" | "String" | "Number" | "Boolean" | "Array" => "a variable".to_string(),
        _ => kind,
    })
}

/// The names of `env`'s Durable Object namespaces (for a refusal's
/// detail: the ledger may be bound under another name).
fn namespaces(env: &Env) -> Vec<String> {
    let raw: &JsValue = env.as_ref();
    let Some(object) = raw.dyn_ref::<Object>() else {
        return Vec::new();
    };
    let mut names: Vec<String> = Object::keys(object)
        .iter()
        .filter_map(|k| k.as_string())
        .filter(|k| kind_of(env, k).as_deref() == Some("DurableObjectNamespace"))
        .collect();
    names.sort();
    names
}

/// `TENANT_LEDGER` is a Durable Object namespace (workers-rs's own check:
/// the binding's constructor is `DurableObjectNamespace`), else the error
/// that names it and what is bound instead.
pub fn ledger_binding(env: &Env) -> Result<(), ConfigError> {
    if env.durable_object(LEDGER_BINDING).is_ok() {
        return Ok(());
    }
    let found = match kind_of(env, LEDGER_BINDING) {
        Some(kind) => format!("it is {kind}, not a Durable Object namespace"),
        None => "no binding has this name".to_string(),
    };
    let others = namespaces(env);
    let hint = if others.is_empty() {
        String::new()
    } else {
        format!(" (Durable Object bindings present: {})", others.join(", "))
    };
    Err(ConfigError {
        variable: LEDGER_BINDING.into(),
        message: format!(
            "the ledger must be bound as {LEDGER_BINDING}, a Durable Object binding of the {LEDGER_CLASS} class: {found}{hint}"
        ),
    })
}

/// `ORIGIN`, when anything has that name, is a service binding; a
/// variable or another kind of binding under it is refused.
pub fn origin_binding(env: &Env) -> Result<(), ConfigError> {
    match kind_of(env, ORIGIN_BINDING) {
        None => Ok(()),
        Some(_) if env.service(ORIGIN_BINDING).is_ok() => Ok(()),
        Some(kind) => Err(ConfigError {
            variable: ORIGIN_BINDING.into(),
            message: format!(
                "{ORIGIN_BINDING} must be a service binding to the origin Worker ([[services]] binding = \"{ORIGIN_BINDING}\"), but it is {kind}; an origin reached by URL is ORIGIN_URL"
            ),
        }),
    }
}
