//! What one `TenantLedger` holds: its ledger over its own SQLite, its
//! configuration, and the rooms that keep its state — the schema upgrade
//! ([`Upgrade`]), the alarm ([`Alarm`]), its place in its tenant's layout
//! ([`Home`]), the requests parked on in-flight keys ([`Waiters`]) — and
//! the keyed path every claim and execute takes.
//!
//! Role: build the object once per instance; answer whether it can take
//! a call now ([`LedgerObject::ready`]: schema, upgrade, configuration,
//! the first call's recount and alarm check) and run its alarm; and give
//! the calls
//! (`calls/<call>.rs`) what several of them share: the claim policy
//! ([`LedgerObject::policy`]), what a call that may create a key asks
//! first ([`LedgerObject::previous_answer`]) and the keyed path that
//! may wait ([`LedgerObject::keyed`]: home check, attempt, wait, count).
//!
//! What must stay true here:
//! - A schema or configuration that cannot be used is kept as the reason
//!   every call is refused (`ready`, `config`), never a panic — but for
//!   the settlement (`complete`, `release`) of a claim already granted
//!   when the only invalid variables are ones no settlement reads
//!   (`config::settlement`): refusing it would run the key again.
//! - A claim or execute with `wait_ms` that meets a live lease parks (see
//!   [`super::waiting`]), and only in the key's home: a retired shard's
//!   check runs before every attempt.

use std::cell::Cell;
use std::rc::Rc;

use worker::{Env, Response, State};

use super::alarm::Alarm;
use super::home::{window_ms, Home, Place};
use super::problems::store_unavailable;
use super::unkept::Unkept;
use super::upgrade::{self, Upgrade, UPGRADE_STEPS_PER_ALARM, UPGRADE_STEPS_PER_REQUEST};
use super::waiting::{attempt_waiting, WaitReport, Waiters};
use crate::config::{Config, ConfigError};
use crate::fields;
use crate::ledger::DoSqlStore;
use crate::ledger::{ClaimPolicy, Counter, Ledger, Millis, Refusal, StoreError};
use crate::platform::env::apply_log_settings;
use crate::platform::{config_lookup, http, load_config, log, misconfigured, now_ms};
use crate::protocol::{Problem, ProblemKind};
use crate::rpc::Call;

/// What one `TenantLedger` holds.
pub struct LedgerObject {
    /// The ledger over the object's own SQLite (shared with the rooms
    /// below and the flush timer).
    pub(super) ledger: Rc<Ledger<DoSqlStore>>,
    /// Parsed once per object instance; an invalid variable refuses every call
    /// but a settlement the next field allows.
    config: Result<Config, ConfigError>,
    /// When `config` is invalid: the configuration settlements run under
    /// (`Config::for_settlement`), or the variable that refuses them too.
    settlement: Option<Result<Config, ConfigError>>,
    /// Schema creation outcome; a failure refuses every call.
    ready: Result<(), String>,
    /// An upgrade from schema 1 still under way, if any.
    upgrade: Upgrade,
    /// The alarm that drives the sweep, and the flush timer.
    pub(super) alarm: Alarm,
    /// Its place in its tenant's layout: which keys it answers for.
    pub(super) home: Home,
    /// False until this instance's first request has checked the alarm: a
    /// restarted workerd may have lost an overdue alarm (workerd #3138, #3566).
    started: Cell<bool>,
    /// Requests parked on in-flight keys (in memory: gone with the instance).
    pub(super) waiters: Waiters,
    /// Runs whose response the ledger kept only as a tombstone, for a lost
    /// answer's repeat (in memory: gone with the instance).
    pub(super) unkept: Unkept,
    /// The script has an `ANALYTICS` dataset: each RPC answer says the rows
    /// its call wrote (`ledger-rows-written`, for the gateway's data point).
    pub(super) metered: bool,
}

impl LedgerObject {
    pub(super) fn new(state: State, env: Env) -> Self {
        log::install_panic_hook();
        let ledger = Rc::new(Ledger::new(DoSqlStore::new(&state)));
        // A large schema-1 database upgrades in bounded steps: as many as
        // fit here, the rest by the requests and alarms that follow.
        let (ready, upgrade) = upgrade::start(&ledger);
        let config = load_config(&env);
        let settlement = config
            .is_err()
            .then(|| Config::for_settlement(&config_lookup(&env)));
        if let Some(Ok(settling)) = &settlement {
            // The log settings a settlement's lines are written under.
            apply_log_settings(settling);
        }
        // A current layout's window covers what it grants with the
        // configured retention; longer expiries raise the horizon the
        // registry asks for before a reshard forgets this layout (a
        // retired object's place lowers the cover to 0). A settlement's
        // configuration holds every value the window is made of.
        if let Some(config) = config
            .as_ref()
            .ok()
            .or(settlement.as_ref().and_then(|s| s.as_ref().ok()))
        {
            ledger.track_expiries_beyond(Some(window_ms(config)));
        }
        let max_waiters = config.as_ref().map_or(0, |c| c.wait.max_waiters);
        // An unusable binding is logged (once per isolate) and counts as none.
        let metered = crate::platform::analytics::configured(&env);
        let alarm = Alarm::new(Rc::clone(&ledger), &state, &config);
        LedgerObject {
            metered,
            home: Home::new(Rc::clone(&ledger), state, env),
            waiters: Waiters::new(max_waiters),
            unkept: Unkept::default(),
            alarm,
            ledger,
            config,
            settlement,
            ready,
            upgrade,
            started: Cell::new(false),
        }
    }

    /// One alarm: a few more steps of an upgrade still under way, else the
    /// sweep.
    pub(super) async fn alarm(&self) -> worker::Result<Response> {
        let upgrade = &self.upgrade;
        if upgrade
            .still_under_way(&self.ledger, &self.alarm, UPGRADE_STEPS_PER_ALARM)
            .await
        {
            return Response::ok("upgrading");
        }
        self.alarm.sweep(&self.config).await
    }

    /// The object's configuration once it can take calls, or the refusal:
    /// a schema that failed, an upgrade from schema 1 still under way (a
    /// few more bounded steps each request) unless the call `settles` a
    /// claim (docs/contract.md §4: `complete` and `release` are served
    /// during the upgrade, every other call waits), an invalid variable.
    /// An instance's first call once the upgrade is done also recounts and
    /// checks the alarm.
    pub(super) async fn ready(&self, settles: bool) -> Result<&Config, Response> {
        if let Err(e) = &self.ready {
            log::error("idempotency.schema_error", fields! {"error" => e});
            return Err(http::problem(&Problem::of(ProblemKind::StoreUnavailable)));
        }
        let upgrading = self
            .upgrade
            .still_under_way(&self.ledger, &self.alarm, UPGRADE_STEPS_PER_REQUEST)
            .await;
        if upgrading && !settles {
            return Err(http::problem(
                &Problem::new(
                    ProblemKind::StoreUnavailable,
                    "the ledger is upgrading its schema in place; retry in a moment",
                )
                .with_header("retry-after", "1"),
            ));
        }
        // An invalid variable refuses every new claim. A settlement creates
        // no key: it is served unless a variable it reads is invalid — then
        // the object could not tell its place in the tenant's layout (which
        // key it may answer for), how long to keep the answer, nor keep its
        // expiry horizon (docs/contract.md §4).
        let config = match (&self.config, &self.settlement) {
            (Ok(c), _) => c,
            (Err(e), Some(Ok(settling))) if settles => {
                log::error(
                    "idempotency.misconfigured",
                    fields! {"variable" => e.variable, "error" => e.message, "served" => "a settlement of a claim already granted"},
                );
                settling
            }
            (Err(_), Some(Err(read))) if settles => {
                return Err(misconfigured(&read.variable, &read.message))
            }
            (Err(e), _) => return Err(misconfigured(&e.variable, &e.message)),
        };
        // Counting the records while some are still set aside would count
        // only those moved: the first call after the upgrade does it.
        if !upgrading && !self.started.replace(true) {
            if let Err(e) = self.ledger.recount_on_start(now_ms()) {
                log::warn(
                    "idempotency.recount_failed",
                    fields! {"error" => e.to_string()},
                );
            }
            self.alarm.check().await;
        }
        Ok(config)
    }

    /// The object's place in its tenant's layout (see [`Home::place`]).
    pub(super) fn place(&self, config: &Config) -> Result<&Place, Problem> {
        self.home.place(config)
    }

    pub(super) fn policy(
        &self,
        config: &Config,
        lease_seconds: Option<u64>,
        retention_seconds: Option<u64>,
    ) -> Result<ClaimPolicy, Problem> {
        let shards = self.home.place(config)?.shards;
        // MAX_KEYS_PER_TENANT stays a tenant's quota: each of a sharded
        // tenant's N objects holds at most its N-th part (rounded up).
        Ok(ClaimPolicy {
            lease_ms: lease_seconds.map_or(config.lease_ms(), |s| s as i64 * 1000),
            retention_ms: retention_seconds.map_or(config.retention_ms(), |s| s as i64 * 1000),
            // A proxied owner waits up to ORIGIN_TIMEOUT_SECONDS for its origin.
            settle_grace_ms: (config.origin_timeout_seconds as i64).saturating_mul(1000),
            max_keys: config.max_keys_per_tenant.div_ceil(u64::from(shards)),
            max_db_bytes: config.max_db_bytes_per_object,
        })
    }

    /// What a call that may create a key (`claim`, `execute`) asks first:
    /// the tenant's registry accepts the layout ([`Home::check_layout`]),
    /// then the previous layout the registry records answers for `key` if
    /// it holds it, unless the caller already asked it (`asked`,
    /// [`Home::ask_previous_first`]): its answer, or `None` when the key is
    /// this object's.
    pub(super) async fn previous_answer<C: Call>(
        &self,
        config: &Config,
        key: &str,
        call: &C,
        asked: Option<u32>,
    ) -> Result<Option<(C::Answer, WaitReport)>, Problem> {
        self.home.check_layout(config).await?;
        self.home.ask_previous_first(config, key, call, asked).await
    }

    /// Runs a claim or execute on `key` at the object's clock: in its home
    /// (see [`Home::check_home`]), waiting up to `wait_ms` (bounded by
    /// `IN_FLIGHT_WAIT_MAX_SECONDS`) while it is refused as in flight, and
    /// counting the wait. `refusal` names an outcome's refusal, if any.
    pub(super) async fn keyed<T>(
        &self,
        config: &Config,
        key: &str,
        wait_ms: Option<u64>,
        mut attempt: impl FnMut(Millis) -> Result<T, StoreError>,
        refusal: impl Fn(&T) -> Option<&Refusal>,
    ) -> Result<(T, WaitReport), Problem> {
        let budget = config.wait.bound_ms(wait_ms.unwrap_or(0));
        let (out, report) = attempt_waiting(
            &self.waiters,
            key,
            budget,
            |now| {
                self.home.check_home(config, key, now)?;
                attempt(now).map_err(|e| store_unavailable(&e))
            },
            |out| refusal(out).and_then(Refusal::lease_remaining),
        )
        .await?;
        let replayed = matches!(refusal(&out), Some(Refusal::Completed { .. }));
        self.count_wait(&report, replayed);
        Ok((out, report))
    }

    /// Counts one call that was allowed to wait (in memory, like refusals).
    fn count_wait(&self, report: &WaitReport, replayed: bool) {
        if report.waited_ms.is_none() {
            return;
        }
        let now = now_ms();
        self.ledger.add_count(Counter::Waited, 1, now);
        if replayed {
            self.ledger.add_count(Counter::WaitedReplayed, 1, now);
        }
        if report.timed_out {
            self.ledger.add_count(Counter::WaitedTimedOut, 1, now);
        }
    }
}
