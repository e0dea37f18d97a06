//! What every RPC v1 call is ([`Call`]), where it is sent ([`Route`], the
//! one route table) and the checks the calls share.
//!
//! Role: the bottom of `rpc/`: each call's file (`claim.rs`, …) implements
//! [`Call`] with its own route; the object's dispatch is a plain `match`
//! over [`Route`] (`object::tenant_ledger`), which the compiler checks is
//! complete.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::protocol::validate_key;

/// The object's answer header naming how long a claim or execute waited.
pub const WAITED_HEADER: &str = "ledger-waited-ms";

/// The request header of a keyed call whose caller already asked the
/// key's object in the tenant's previous layout (its value: that layout's
/// object count) and was answered `421`: a current-layout object then does
/// not ask it again. Without it (or naming another layout), a current-layout
/// object that does not hold the key asks the previous layout the tenant's
/// registry records itself, first (docs/contract.md §8). A header, not a
/// call field: objects older than it ignore it (they refuse unknown fields).
pub const PREVIOUS_ASKED_HEADER: &str = "ledger-previous-asked";

/// The request header naming the attempt an `execute` belongs to (1–64 of
/// `[A-Za-z0-9_-]`, as `ClaimCall::attempt`; a fresh random id per
/// request): sent again because its answer was lost, an execute whose run
/// the ledger kept only as a tombstone (over the byte quota or the stored
/// body ceiling) is answered that run's own response while its object
/// still holds it in memory, instead of the tombstone's replay
/// (docs/contract.md §3). A header: objects older than it ignore it.
pub const ATTEMPT_HEADER: &str = "ledger-attempt";

/// The largest `wait_ms` an RPC call may carry (one hour); the object then
/// bounds it by its own `IN_FLIGHT_WAIT_MAX_SECONDS`.
pub const MAX_CALL_WAIT_MS: u64 = 3_600_000;

/// The object's path for the embedded application's unprotected requests.
pub const APP_PATH: &str = "/app";

/// The header that carries an application request's target (path + query)
/// to [`APP_PATH`]: the target is never part of the object's URL.
pub const APP_TARGET_HEADER: &str = "x-ledger-app-target";

/// Every v1 route lives under this prefix.
pub const RPC_V1_PREFIX: &str = "/rpc/v1/";

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

pub(crate) fn check_lease(lease: Option<&str>) -> Result<(), String> {
    match lease {
        Some(token) if !crate::ledger::lease::is_lease_token(token) => Err(format!(
            "lease must be the token a claim answered ({} lowercase hex characters)",
            2 * crate::ledger::lease::LEASE_TOKEN_BYTES
        )),
        _ => Ok(()),
    }
}

pub(crate) fn check_wait(wait_ms: Option<u64>) -> Result<(), String> {
    match wait_ms {
        Some(ms) if ms > MAX_CALL_WAIT_MS => {
            Err(format!("wait_ms must be between 0 and {MAX_CALL_WAIT_MS}"))
        }
        _ => Ok(()),
    }
}

/// The v1 routes, each with its path under [`RPC_V1_PREFIX`]: [`Route`] and
/// [`ROUTES`] are written from this one list.
macro_rules! route_table {
    ($($route:ident => $path:literal;)*) => {
        /// The v1 operations.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Route {
            $($route,)*
        }

        /// The one route table: each operation and its path under
        /// [`RPC_V1_PREFIX`].
        pub const ROUTES: [(Route, &str); [$(Route::$route),*].len()] =
            [$((Route::$route, $path)),*];
    };
}
route_table! {
    Claim => "/rpc/v1/claim";
    Complete => "/rpc/v1/complete";
    Release => "/rpc/v1/release";
    Lookup => "/rpc/v1/lookup";
    List => "/rpc/v1/list";
    Stats => "/rpc/v1/stats";
    Execute => "/rpc/v1/execute";
    Replayed => "/rpc/v1/replayed";
    Layout => "/rpc/v1/layout";
    Horizon => "/rpc/v1/horizon";
    Jurisdiction => "/rpc/v1/jurisdiction";
    Evict => "/rpc/v1/evict";
}

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
    /// Is this call sent again while its answer is lost (docs/contract.md
    /// §3, "A claim's lost answer")? Only a call whose repeat the object
    /// answers as the first — a claim under its attempt, an execute — and
    /// that does not wait (a lost answer there most likely means its object
    /// went away while it was parked).
    fn repeatable(&self) -> bool {
        false
    }
    /// Reads the call from its body (JSON, unknown fields refused).
    fn parse(body: &[u8]) -> Result<Self, String>
    where
        Self: DeserializeOwned,
    {
        serde_json::from_slice(body).map_err(|e| format!("the call body is not valid: {e}"))
    }
}
