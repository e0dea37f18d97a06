//! The versioned fetch RPC between Workers and a `TenantLedger` (docs/contract.md §3).
//!
//! Role: the wire shapes of `/rpc/v1/...` — every call is a `POST` with a JSON
//! body, every answer JSON (outcomes tagged by `"outcome"`), every refusal an
//! RFC 9457 problem. Pure: both the object and the typed client use these.
//! Each call has one home (the `tokio-rs/mini-redis` `cmd/` shape): its file
//! holds the call, its validation, its answer type and its route
//! ([`Call`]); `rpc_v1_calls!` is the one list of routes, from which
//! [`Route`], [`ROUTES`] and the object's dispatch are generated.
//!
//! May call: `protocol`, `ledger`'s outcome types. Never workers-rs.
//!
//! What must stay true here:
//! - v1 never changes incompatibly; a v2 gets its own prefix and types.
//! - Calls are validated before anything is written: a bad call changes
//!   nothing (`400 invalid-rpc`).
//! - Outcomes are the ledger's own closed enums, serialised as they are.

pub mod claim;
pub mod complete;
pub mod evict;
pub mod execute;
pub mod layout;
pub mod list;
pub mod lookup;
pub mod release;
pub mod replayed;
pub mod stats;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::protocol::validate_key;
pub use claim::{check_attempt, check_claim_windows, ClaimCall, MAX_ATTEMPT_CHARS};
pub use complete::CompleteCall;
pub use evict::EvictCall;
pub use execute::{AppRequest, AppRequestRef, ExecuteCall, ExecuteCallRef};
pub use layout::{
    HorizonAnswer, HorizonCall, JurisdictionCall, JurisdictionOutcome, LayoutCall, LayoutOutcome,
};
pub use list::ListCall;
pub use lookup::{LookupAnswer, LookupCall};
pub use release::ReleaseCall;
pub use replayed::{
    ReplayCount, ReplayedCall, ReplayedOutcome, MAX_REPLAYED_COUNT, MAX_REPLAYED_ENTRIES,
};
pub use stats::StatsCall;

/// The object's answer header naming how long a claim or execute waited.
pub const WAITED_HEADER: &str = "ledger-waited-ms";

/// The largest `wait_ms` an RPC call may carry (one hour); the object then
/// bounds it by its own `IN_FLIGHT_WAIT_MAX_SECONDS`.
pub const MAX_CALL_WAIT_MS: u64 = 3_600_000;

/// Why a ledger call did not produce an outcome, as its caller sees it.
///
/// The cases call for different answers (see `contract::answer`): only
/// `NotReached` means the object certainly did not act on the call.
#[derive(Debug, Clone, PartialEq)]
pub enum LedgerError {
    /// The call certainly never reached the object's code: no binding or
    /// stub, the request could not be built, or the runtime refused it as
    /// `overloaded` before delivering it. The only failure after which
    /// running a request without the ledger cannot run it twice.
    NotReached(String),
    /// No answer arrived (the stub's fetch threw): the object may have run
    /// the call, or part of it.
    Unreachable(String),
    /// The object answered 200 but the answer could not be decoded: the call
    /// may well have been applied.
    Undecodable(String),
    /// The object answered with a non-200 status (a problem document),
    /// and the `Retry-After` it sent with it, in seconds (an upgrading
    /// object's `503`; `None` when it sent none or one that is not a
    /// number of seconds).
    Refused {
        status: u16,
        problem: serde_json::Value,
        retry_after: Option<u32>,
    },
}

impl std::fmt::Display for LedgerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LedgerError::NotReached(m) => write!(f, "ledger not reached: {m}"),
            LedgerError::Unreachable(m) => write!(f, "ledger unreachable: {m}"),
            LedgerError::Undecodable(m) => write!(f, "undecodable ledger answer: {m}"),
            LedgerError::Refused {
                status, problem, ..
            } => {
                write!(f, "ledger refused ({status}): {problem}")
            }
        }
    }
}

impl std::error::Error for LedgerError {}

/// Delays before a claim or an execute whose answer was lost is sent again
/// (docs/contract.md §3, "A claim's lost answer"): twice, shortly, well
/// inside a lease.
pub const LOST_ANSWER_RETRY_DELAYS_MS: [u64; 2] = [50, 250];

impl LedgerError {
    /// Was the call sent and its answer lost (the stub's fetch threw: the
    /// object may have applied it)? Only such a call is sent again — a
    /// claim under its attempt (answered the same grant), an execute
    /// (answered the replay of its own run); never one the object answered,
    /// even with a problem, nor one that certainly never arrived (the
    /// runtime retries those itself).
    pub fn answer_lost(&self) -> bool {
        matches!(self, LedgerError::Unreachable(_))
    }

    /// How a repeat's failure reads once an earlier try's answer was lost:
    /// the object may have acted on that try, so the call as a whole is
    /// never "not reached" (`FAILURE_POLICY=open` must not run it
    /// unprotected).
    pub fn after_lost_answer(self) -> LedgerError {
        match self {
            LedgerError::NotReached(m) => LedgerError::Unreachable(format!(
                "{m} (after an earlier try whose answer was lost)"
            )),
            other => other,
        }
    }
}

/// The object's path for the embedded application's unprotected requests.
pub const APP_PATH: &str = "/app";

/// The header that carries an application request's target (path + query)
/// to [`APP_PATH`]: the target is never part of the object's URL.
pub const APP_TARGET_HEADER: &str = "x-ledger-app-target";

/// Every v1 route lives under this prefix.
pub const RPC_V1_PREFIX: &str = "/rpc/v1/";

/// Longest lease or retention a caller may ask for (one year).
pub const MAX_WINDOW_SECONDS: u64 = 31_536_000;

pub(crate) fn check_window(name: &str, v: Option<u64>) -> Result<(), String> {
    match v {
        Some(s) if s == 0 || s > MAX_WINDOW_SECONDS => {
            Err(format!("{name} must be between 1 and {MAX_WINDOW_SECONDS}"))
        }
        _ => Ok(()),
    }
}

pub(crate) fn check_key(key: &str) -> Result<(), String> {
    validate_key(key).map_err(|e| e.to_string())
}

pub(crate) fn check_fingerprint(fingerprint: &crate::protocol::Fingerprint) -> Result<(), String> {
    if !fingerprint.is_well_formed() {
        return Err("fingerprint is not well formed (digest must match its components)".into());
    }
    Ok(())
}

pub(crate) fn check_generation(generation: i64) -> Result<(), String> {
    if generation < 1 {
        return Err("generation must be at least 1".into());
    }
    Ok(())
}

pub(crate) fn check_wait(wait_ms: Option<u64>) -> Result<(), String> {
    match wait_ms {
        Some(ms) if ms > MAX_CALL_WAIT_MS => {
            Err(format!("wait_ms must be between 0 and {MAX_CALL_WAIT_MS}"))
        }
        _ => Ok(()),
    }
}

/// The one list of v1 calls: each route, its path under [`RPC_V1_PREFIX`]
/// and the call sent there. Everything that names every route is generated
/// from it: [`Route`] and [`ROUTES`] here, the object's dispatch
/// (`object::tenant_ledger`). `$then` is a macro that receives the list.
macro_rules! rpc_v1_calls {
    ($then:ident) => {
        $then! {
            Claim => "/rpc/v1/claim", $crate::rpc::ClaimCall;
            Complete => "/rpc/v1/complete", $crate::rpc::CompleteCall;
            Release => "/rpc/v1/release", $crate::rpc::ReleaseCall;
            Lookup => "/rpc/v1/lookup", $crate::rpc::LookupCall;
            List => "/rpc/v1/list", $crate::rpc::ListCall;
            Stats => "/rpc/v1/stats", $crate::rpc::StatsCall;
            Execute => "/rpc/v1/execute", $crate::rpc::ExecuteCall;
            Replayed => "/rpc/v1/replayed", $crate::rpc::ReplayedCall;
            Layout => "/rpc/v1/layout", $crate::rpc::LayoutCall;
            Horizon => "/rpc/v1/horizon", $crate::rpc::HorizonCall;
            Jurisdiction => "/rpc/v1/jurisdiction", $crate::rpc::JurisdictionCall;
            Evict => "/rpc/v1/evict", $crate::rpc::EvictCall;
        }
    };
}
#[allow(unused_imports)] // used by the object (wasm32 only)
pub(crate) use rpc_v1_calls;

/// [`Route`] and [`ROUTES`] from the list.
macro_rules! route_table {
    ($($route:ident => $path:literal, $call:ty;)*) => {
        /// The v1 operations.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Route {
            $($route,)*
        }

        /// The one route table: each operation and its path under
        /// [`RPC_V1_PREFIX`].
        pub const ROUTES: [(Route, &str); [$(Route::$route),*].len()] =
            [$((Route::$route, $path)),*];

        // Each call's own `Call::ROUTE` agrees with the list (checked at
        // compile time).
        const _: () = {
            $(assert!(matches!(<$call as Call>::ROUTE, Route::$route));)*
        };
    };
}
rpc_v1_calls!(route_table);

impl Route {
    /// Does this call settle a claim the object already granted
    /// (`complete`, `release`)? Those touch only that key's record and
    /// create none, so no operation (a schema upgrade, a layout the
    /// registry refuses or holds) ever refuses them (docs/contract.md §4, §8).
    pub fn settles(self) -> bool {
        matches!(self, Route::Complete | Route::Release)
    }

    /// Resolves a request path such as `/rpc/v1/claim`.
    pub fn from_path(path: &str) -> Option<Route> {
        ROUTES.iter().find(|(_, p)| *p == path).map(|(r, _)| *r)
    }

    pub fn path(self) -> &'static str {
        ROUTES
            .iter()
            .find(|(r, _)| *r == self)
            .map_or(RPC_V1_PREFIX, |(_, p)| p)
    }
}

/// One RPC v1 call: its route, its answer, and the checks the object runs
/// before anything is written. The typed client sends any `Call`; the
/// object parses, validates and applies it on one path.
pub trait Call: Serialize {
    /// Where the call is sent.
    const ROUTE: Route;
    /// What a `200` answer carries.
    type Answer: Serialize + DeserializeOwned;
    /// Refuses a call that must change nothing (`400 invalid-rpc`).
    fn validate(&self) -> Result<(), String>;
    /// How long the call may wait for an in-flight key (claim, execute).
    fn wait_ms(&self) -> Option<u64> {
        None
    }
    /// Reads the call from its body (JSON, unknown fields refused).
    fn parse(body: &[u8]) -> Result<Self, String>
    where
        Self: DeserializeOwned,
    {
        serde_json::from_slice(body).map_err(|e| format!("the call body is not valid: {e}"))
    }
}
