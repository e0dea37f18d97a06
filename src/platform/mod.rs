//! The workers-rs edges (wasm32 only): thin translations between HTTP and the
//! pure core. Nothing here decides idempotency semantics; it carries requests
//! to the ledger and renders its closed outcomes.
//!
//! Always available (library use): [`client`] (typed RPC v1 client),
//! [`do_store`] (the ledger over your own Durable Object's SQLite), [`http`]
//! (rendering replays and problems), [`log`]. Behind default features:
//! `gateway` (the `#[event(fetch)]` Worker) and `tenant-ledger` (the
//! `TenantLedger` class).

pub mod client;
pub mod do_store;
#[cfg(feature = "gateway")]
pub mod gateway;
pub mod http;
pub mod log;
#[cfg(feature = "gateway")]
pub mod origin;
#[cfg(feature = "gateway")]
pub mod protected;
#[cfg(feature = "gateway")]
pub mod replays;
#[cfg(feature = "tenant-ledger")]
pub mod tenant_ledger;
#[cfg(feature = "tenant-ledger")]
pub mod waiting;

/// The Durable Object binding name the gateway and clients use.
pub const LEDGER_BINDING: &str = "TENANT_LEDGER";

/// Milliseconds on this isolate's clock (the object's clock inside an object).
pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

/// Reads the configuration variables from `env` (vars or secrets).
pub fn config_lookup(env: &worker::Env) -> impl Fn(&str) -> Option<String> + '_ {
    move |name| {
        env.secret(name)
            .or_else(|_| env.var(name))
            .ok()
            .map(|v| v.to_string())
    }
}

/// A configuration that cannot be used, as the gateway and the object both
/// answer it: one error line naming the variable (`idempotency.misconfigured`)
/// and `500 misconfigured`, which names the variable but never its value.
pub fn misconfigured(variable: &str, message: &str) -> worker::Response {
    log::error(
        "idempotency.misconfigured",
        crate::fields! {"variable" => variable, "error" => message},
    );
    http::problem(&crate::contract::admission::misconfigured(variable))
}
