//! The configuration check: everything the Worker reads from its
//! environment at start, judged at once, for `npm run check:config`.
//!
//! Role: one function ([`inspect`]) that reads an environment exactly as
//! the gateway and its objects read theirs — every variable
//! ([`Config::errors`], the same parsers as [`Config::from_lookup`]),
//! `API_TOKENS` and `OPERATOR_TOKENS` ([`Tokens::parse`]), `TENANT_SHARDS` and the proxy mode
//! sharding needs ([`sharding_needs_origin`], also the gateway's rule at
//! admission), `TENANT_JURISDICTIONS` (its values; a change of a tenant's
//! jurisdiction needs the tenant's data, so the Worker refuses it and the
//! check only reminds, [`JURISDICTIONS_STAY`]), the `ANALYTICS` binding ([`analytics::binding`]),
//! the ledger's and the origin's bindings ([`bindings`]: `TENANT_LEDGER` a
//! Durable Object namespace, declared of the `TenantLedger` class; `ORIGIN`,
//! if named, a service binding) — and
//! reports every problem instead of stopping at the first. Exported to
//! JavaScript as `checkConfiguration(env, declared)`, which
//! `scripts/check-config/entry.mjs` calls in workerd (through Miniflare,
//! offline) with the bindings wrangler would give the deployed script
//! (each Durable Object binding a namespace of a stand-in class) and the
//! Durable Object bindings as the configuration declares them (the class
//! a namespace is of is not visible at run time).
//! It is never on the gateway's routes.
//!
//! What must stay true here:
//! - Nothing is decided here that the Worker does not decide the same way
//!   at start: each rule is the one the Worker runs, called, not copied.
//! - A secret's value is never part of the report (the errors name the
//!   variable and what is wrong, as the Worker's `500 misconfigured` does).

use serde::Deserialize;
use serde_json::json;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use worker::Env;

use super::origin::Origin;
use super::settings::{NO_TOKENS, SHARDING_NEEDS_ORIGIN};
use crate::config::{Config, ConfigError};
use crate::contract::auth::{TokenMap, Tokens, OPERATOR_TOKENS};
use crate::platform::analytics::{self, Binding};
use crate::platform::bindings::{self, LEDGER_CLASS};
use crate::platform::{config_lookup, LEDGER_BINDING};

/// The gateway's rule at admission, for the whole map: a tenant spread over
/// several objects needs proxy mode (the embedded orders commit with the
/// one ledger they share).
pub fn sharding_needs_origin(config: &Config, has_origin: bool) -> Result<(), ConfigError> {
    match config.tenant_shards.first_sharded() {
        Some(tenant) if !has_origin => Err(ConfigError {
            variable: "TENANT_SHARDS".into(),
            message: format!("{SHARDING_NEEDS_ORIGIN} (\"{tenant}\" is sharded; no ORIGIN binding or ORIGIN_URL)"),
        }),
        _ => Ok(()),
    }
}

/// The check's reminder beside a valid `TENANT_JURISDICTIONS`: what it
/// cannot see offline (where each tenant's keys already are) the Worker
/// refuses at the tenant's first keyed request.
pub const JURISDICTIONS_STAY: &str = "TENANT_JURISDICTIONS: a tenant's jurisdiction cannot change once it has keys (added to a tenant with keys, removed or changed, its requests are refused 500 misconfigured); to move a tenant see docs/migrating.md";

/// A Durable Object binding as the configuration declares it (an entry
/// of wrangler's `durable_objects.bindings`).
#[derive(Debug, Clone, Deserialize)]
pub struct DeclaredObject {
    pub name: String,
    pub class_name: String,
}

/// The ledger's binding as the configuration declares it: a namespace of
/// the [`LEDGER_CLASS`] class (in this script or another one). Only the
/// class is judged here: whether a namespace is bound at all is
/// [`bindings::ledger_binding`]'s, the Worker's own rule.
pub fn declared_ledger_class(declared: &[DeclaredObject]) -> Result<(), ConfigError> {
    match declared.iter().find(|d| d.name == LEDGER_BINDING) {
        Some(d) if d.class_name != LEDGER_CLASS => Err(ConfigError {
            variable: LEDGER_BINDING.into(),
            message: format!(
                "bound to the class \"{}\"; the ledger is the {LEDGER_CLASS} class (class_name = \"{LEDGER_CLASS}\")",
                d.class_name
            ),
        }),
        _ => Ok(()),
    }
}

/// What the Worker would make of an environment.
#[derive(Debug, Default)]
pub struct Inspection {
    /// Each invalid variable or binding (the Worker answers `500
    /// misconfigured`, or for `ANALYTICS` logs an error and serves without
    /// metrics).
    pub errors: Vec<ConfigError>,
    /// Required but absent (secrets the caller may not have given).
    pub missing: Vec<ConfigError>,
    /// Allowed but unwise settings, as the Worker logs them.
    pub warnings: Vec<String>,
}

/// Reads `env` as the gateway and its objects read theirs at start;
/// `declared`: its Durable Object bindings as the configuration declares
/// them.
pub fn inspect(env: &Env, declared: &[DeclaredObject]) -> Inspection {
    let get = config_lookup(env);
    let mut report = Inspection {
        errors: Config::errors(&get),
        ..Inspection::default()
    };
    let ledger = bindings::ledger_binding(env).and_then(|()| declared_ledger_class(declared));
    for binding in [ledger, bindings::origin_binding(env)] {
        if let Err(e) = binding {
            report.errors.push(e);
        }
    }
    if let Ok(config) = Config::from_lookup(&get) {
        report.warnings = config.warnings();
        if !config.tenant_jurisdictions.is_empty() {
            report.warnings.push(JURISDICTIONS_STAY.into());
        }
        let has_origin = Origin::from_env(env, &config).is_some();
        if let Err(e) = sharding_needs_origin(&config, has_origin) {
            report.errors.push(e);
        }
    }
    // Each map judged alone, then (both valid) no token in both: the
    // Worker's `Tokens::parse`, which stops at the first.
    let api = get("API_TOKENS");
    let operator = get(OPERATOR_TOKENS);
    let api_ok = match api.as_deref().map(TokenMap::parse) {
        None => {
            report.missing.push(ConfigError {
                variable: "API_TOKENS".into(),
                message: NO_TOKENS.into(),
            });
            false
        }
        Some(Err(e)) => {
            report.errors.push(e);
            false
        }
        Some(Ok(_)) => true,
    };
    match operator
        .as_deref()
        .map(|raw| TokenMap::parse_as(OPERATOR_TOKENS, raw))
    {
        Some(Err(e)) => report.errors.push(e),
        Some(Ok(_)) if api_ok => {
            if let Err(e) = Tokens::parse(api.as_deref().unwrap_or_default(), operator.as_deref()) {
                report.errors.push(e);
            }
        }
        _ => {}
    }
    if analytics::binding(env) == Binding::NotADataset {
        report.errors.push(ConfigError {
            variable: analytics::ANALYTICS_BINDING.into(),
            message: analytics::NOT_A_DATASET.into(),
        });
    }
    report
}

/// `checkConfiguration(env, declared)`: [`inspect`] as JSON text,
/// `{"errors": [{"variable", "message"}], "missing": [...], "warnings":
/// [...]}`; `declared` is the JSON text of the configuration's
/// `durable_objects.bindings` (`[{"name", "class_name"}]`).
#[wasm_bindgen(js_name = checkConfiguration)]
pub fn check_configuration(env: JsValue, declared: &str) -> String {
    let declared: Vec<DeclaredObject> = match serde_json::from_str(declared) {
        Ok(list) => list,
        Err(e) => {
            return json!({
                "errors": [{"variable": "durable_objects", "message": format!("the bindings could not be read: {e}")}],
                "missing": [],
                "warnings": [],
            })
            .to_string()
        }
    };
    let report = inspect(&env.unchecked_into::<Env>(), &declared);
    let problems = |list: &[ConfigError]| {
        list.iter()
            .map(|e| json!({"variable": e.variable, "message": e.message}))
            .collect::<Vec<_>>()
    };
    json!({
        "errors": problems(&report.errors),
        "missing": problems(&report.missing),
        "warnings": report.warnings,
    })
    .to_string()
}
