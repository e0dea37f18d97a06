//! The operator console's placement, asked by the JS entry
//! (`worker/entry.mjs`) before it answers a `/console` path, and the
//! console host's rule for the application (docs/operations.md#console).
//!
//! Role: apply `config::console` to a request — its URL's host and the
//! gateway's mode (proxy mode when there is an origin) — so the rule lives
//! in Rust alone; the console's files stay in JS.
//!
//! What must stay true here:
//! - An unusable configuration serves no console: the request goes on to
//!   the gateway, which answers `500 misconfigured` naming the variable.
//! - The console's own host (`CONSOLE_HOST`) never reaches the application.

use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use worker::Env;

use super::origin::Origin;
use super::settings::settings;
use crate::config::console::host_of;
use crate::protocol::{Problem, ProblemKind};

/// `consoleServed(env, url)`: whether the console answers a request for
/// `url` (a `/console` path) under this environment.
#[wasm_bindgen(js_name = consoleServed)]
pub fn console_served(env: JsValue, url: String) -> bool {
    let env = env.unchecked_into::<Env>();
    let Ok(settings) = settings(&env) else {
        return false;
    };
    let proxied = Origin::from_env(&env, &settings.config).is_some();
    settings.config.console.serves(host_of(&url), proxied)
}

/// Whether `url` is on the console's own host, which serves no application.
pub fn on_console_host(env: &Env, url: &str) -> bool {
    settings(env).is_ok_and(|s| s.config.console.is_console_host(host_of(url)))
}

/// The answer to an application path on the console's own host.
pub fn not_on_console_host() -> Problem {
    Problem::new(
        ProblemKind::NotFound,
        "this host serves the operator console and the gateway's reads only",
    )
}
