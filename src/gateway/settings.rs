//! Who is asking, and under which settings: the isolate's parsed
//! configuration and token map, and the tenant a request belongs to.
//!
//! Role: parse the variables, `API_TOKENS` and `OPERATOR_TOKENS` once per
//! isolate (variables never change within one), authenticate each request
//! and hold its token's kind to the route's rule, and gather what every
//! later phase needs about its tenant — its object layout, its
//! jurisdiction, its origin (proxy mode), and the client of its base
//! object.
//!
//! What must stay true here:
//! - The tenant comes only from the bearer token (via `API_TOKENS` or
//!   `OPERATOR_TOKENS`), never from anything the client sends. Without
//!   `API_TOKENS` nobody is let in.
//! - A token the route's [`Access`] does not admit is refused (`403`)
//!   before anything about the tenant is gathered or asked.
//! - An unusable configuration answers `500 misconfigured` naming the
//!   variable or binding (`TENANT_LEDGER`, `ORIGIN`:
//!   `platform::bindings`), for every request but `/health` and
//!   `/openapi.json`, whatever `FAILURE_POLICY` says. The metrics binding
//!   is never part of it: metrics only observe.
//! - Every object of a tenant is reached through [`Tenancy::object`], in
//!   the tenant's jurisdiction (`TENANT_JURISDICTIONS`): no read or call
//!   names an object of the tenant any other way.
//! - What is checked here is what `npm run check:config` checks
//!   ([`super::check`]): one set of rules, run by the Worker and offline.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use worker::worker_sys::web_sys;
use worker::{Env, Response};

use super::origin::Origin;
use crate::config::shards::{object_name, Layout};
use crate::config::{Config, ConfigError, Jurisdiction};
use crate::contract::admission::Access;
use crate::contract::auth::{self, TokenMap, Tokens, OPERATOR_TOKENS};
use crate::contract::listing::CursorSeal;
use crate::fields;
use crate::platform::client::{LedgerClient, LedgerError};
use crate::platform::http::{self, header};
use crate::platform::{analytics, bindings};
use crate::platform::{config_lookup, load_config, log, misconfigured, LEDGER_BINDING};
use crate::protocol::object_base;

/// Why nobody is let in without `API_TOKENS`.
pub const NO_TOKENS: &str = "the secret is not set; no token can be accepted";

/// Why a sharded tenant cannot be served without an origin (the gateway's
/// `500 misconfigured` at admission, and the check's detail).
pub const SHARDING_NEEDS_ORIGIN: &str =
    "a tenant is sharded but the gateway runs the embedded application; shard only proxy-mode tenants";

/// Per-isolate parsed settings.
pub struct Settings {
    pub config: Config,
    tokens: Option<Tokens>,
    /// The script has an `ANALYTICS` dataset: one data point per protected
    /// request (`platform::analytics`). Anything else under that name is
    /// logged once and counts as none.
    pub analytics: bool,
    /// What the key listing's cursors are sealed under
    /// (`contract::listing::CursorSeal::secret_of`).
    pub cursor_secret: Vec<u8>,
}

thread_local! {
    static SETTINGS: RefCell<Option<Result<Rc<Settings>, ConfigError>>> = const { RefCell::new(None) };
}

fn load_settings(env: &Env) -> Result<Settings, ConfigError> {
    let config = load_config(env)?;
    // The ledger's namespace and the origin's binding: a missing one is
    // refused here, for every request, never met as "not reached".
    bindings::ledger_binding(env)?;
    bindings::origin_binding(env)?;
    for warning in config.warnings() {
        log::warn("idempotency.config_warning", fields! {"warning" => warning});
    }
    let get = config_lookup(env);
    let raw_tokens = get("API_TOKENS");
    let operator_tokens = get(OPERATOR_TOKENS);
    let tokens = match raw_tokens.as_deref() {
        Some(api) => Some(Tokens::parse(api, operator_tokens.as_deref())?),
        // Nobody is let in; a bad OPERATOR_TOKENS is still named.
        None => match operator_tokens.as_deref() {
            Some(raw) => TokenMap::parse_as(OPERATOR_TOKENS, raw).map(|_| None)?,
            None => None,
        },
    };
    let cursor_secret = CursorSeal::secret_of(
        config.log_hash_key.as_ref().map(|k| k.expose()),
        raw_tokens.as_deref().unwrap_or_default(),
    );
    // Metrics only observe: an unusable binding is logged, never refused.
    let analytics = analytics::configured(env);
    Ok(Settings {
        config,
        tokens,
        analytics,
        cursor_secret,
    })
}

/// The isolate's settings, parsed on first use.
pub fn settings(env: &Env) -> Result<Rc<Settings>, ConfigError> {
    SETTINGS.with(|cell| {
        cell.borrow_mut()
            .get_or_insert_with(|| load_settings(env).map(Rc::new))
            .clone()
    })
}

/// One authenticated request's tenant and what the gateway knows of it.
pub struct Tenancy {
    pub settings: Rc<Settings>,
    /// The tenant id, as `API_TOKENS` (or `OPERATOR_TOKENS`) names it
    /// (logged only as a hash).
    pub tenant: String,
    /// The name of the tenant's (first) object, by the one rule
    /// ([`object_base`]): every object name of the tenant's layouts is
    /// built on it.
    pub objects: String,
    /// The application behind the gateway (proxy mode), if any.
    pub origin: Option<Origin>,
    /// The tenant's objects: one, or a shard layout (`TENANT_SHARDS`).
    pub layout: Layout,
    /// The jurisdiction every object of the tenant is in
    /// (`TENANT_JURISDICTIONS`; `None`: unrestricted).
    pub jurisdiction: Option<Jurisdiction>,
    /// The object that takes the tenant's counts (its only object, or shard
    /// 0), made on first use ([`Tenancy::base`]): a replay this isolate
    /// answers from its cache needs no stub.
    base: OnceCell<Result<LedgerClient, LedgerError>>,
    base_name: String,
    env: Env,
}

impl Tenancy {
    /// The isolate's configuration.
    pub fn config(&self) -> &Config {
        &self.settings.config
    }

    /// The client of the tenant's base object; an `Err` is a ledger that
    /// was certainly not reached.
    pub fn base(&self) -> Result<&LedgerClient, &LedgerError> {
        self.base
            .get_or_init(|| {
                let base = self.object(&self.base_name);
                if self.settings.analytics {
                    base.map(LedgerClient::metered)
                } else {
                    base
                }
            })
            .as_ref()
    }

    /// The client of the tenant's object named `name` (one of its layouts'
    /// objects), in the tenant's jurisdiction.
    pub fn object(&self, name: &str) -> Result<LedgerClient, LedgerError> {
        LedgerClient::for_object_in(&self.env, LEDGER_BINDING, name, self.jurisdiction)
    }

    /// Authenticates `req`, holds its token to the route's `access`, and
    /// gathers its tenant's layout, origin and base object; a refusal is
    /// the answer to send (401, 403, or 500 misconfigured).
    pub fn admit(req: &web_sys::Request, env: &Env, access: Access) -> Result<Tenancy, Response> {
        let settings = settings(env).map_err(|e| misconfigured(&e.variable, &e.message))?;
        let config = &settings.config;
        let Some(tokens) = &settings.tokens else {
            return Err(misconfigured("API_TOKENS", NO_TOKENS));
        };
        let caller = auth::identify(header(req, "authorization").as_deref(), tokens)
            .map_err(|p| http::problem(&p))?;
        if !access.admits(caller.kind, config) {
            log::warn(
                "idempotency.token_refused",
                fields! {"tenant" => log::short_hash(&caller.tenant), "kind" => caller.kind.as_str()},
            );
            return Err(http::problem(&access.refusal()));
        }
        let tenant = caller.tenant;
        let origin = Origin::from_env(env, config);
        // A tenant spread over several objects (TENANT_SHARDS): only in proxy
        // mode — the embedded orders must commit with the one ledger they share.
        let objects = object_base(&tenant);
        let layout = config.tenant_shards.layout(&objects);
        if layout.is_sharded() && origin.is_none() {
            return Err(misconfigured("TENANT_SHARDS", SHARDING_NEEDS_ORIGIN));
        }
        let base_name = object_name(&objects, 0, layout.shards);
        let jurisdiction = config.tenant_jurisdictions.of(&objects);
        Ok(Tenancy {
            settings: settings.clone(),
            tenant,
            objects,
            origin,
            layout,
            jurisdiction,
            base: OnceCell::new(),
            base_name,
            env: env.clone(),
        })
    }
}
