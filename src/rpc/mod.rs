//! The versioned fetch RPC between Workers and a `TenantLedger` (docs/contract.md §3).
//!
//! Role: the wire shapes of `/rpc/v1/...` — every call is a `POST` with a JSON
//! body, every answer JSON (outcomes tagged by `"outcome"`), every refusal an
//! RFC 9457 problem. Pure: both the object and the typed client use these.
//! Each call has one home (the `tokio-rs/mini-redis` `cmd/` shape): its file
//! holds the call, its validation, its answer type and its route
//! ([`Call`]). The rooms: one file per call above [`call`] (what every
//! call is, the one route table [`ROUTES`], the checks calls share) and
//! [`error`] (how a caller sees a call fail); this file names them. The
//! object's dispatch is a plain `match` over [`Route`]
//! (`object::tenant_ledger`), which the compiler checks is complete.
//!
//! May call: `protocol`, `ledger`'s outcome types. Never workers-rs.
//!
//! What must stay true here:
//! - v1 never changes incompatibly; a v2 gets its own prefix and types.
//! - Calls are validated before anything is written: a bad call changes
//!   nothing (`400 invalid-rpc`).
//! - Outcomes are the ledger's own closed enums, serialised as they are.

pub mod call;
pub mod claim;
pub mod complete;
pub mod error;
pub mod evict;
pub mod execute;
pub mod layout;
pub mod list;
pub mod lookup;
pub mod release;
pub mod replayed;
pub mod stats;

/// The window limits' home is `protocol::limits`; named here too, as before.
pub use crate::protocol::limits::{check_claim_windows, MAX_WINDOW_SECONDS};
pub use call::{
    Call, Route, APP_PATH, APP_TARGET_HEADER, ATTEMPT_HEADER, MAX_CALL_WAIT_MS,
    PREVIOUS_ASKED_HEADER, ROUTES, RPC_V1_PREFIX, WAITED_HEADER,
};
pub use claim::{check_attempt, ClaimCall, MAX_ATTEMPT_CHARS};
pub use complete::CompleteCall;
pub use error::{LedgerError, LOST_ANSWER_RETRY_DELAYS_MS};
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

// Each call is sent to its own route (checked at compile time): the one
// place that sees both the route table and every call.
const _: () = {
    assert!(matches!(ClaimCall::ROUTE, Route::Claim));
    assert!(matches!(CompleteCall::ROUTE, Route::Complete));
    assert!(matches!(ReleaseCall::ROUTE, Route::Release));
    assert!(matches!(LookupCall::ROUTE, Route::Lookup));
    assert!(matches!(ListCall::ROUTE, Route::List));
    assert!(matches!(StatsCall::ROUTE, Route::Stats));
    assert!(matches!(ExecuteCall::ROUTE, Route::Execute));
    assert!(matches!(ReplayedCall::ROUTE, Route::Replayed));
    assert!(matches!(LayoutCall::ROUTE, Route::Layout));
    assert!(matches!(HorizonCall::ROUTE, Route::Horizon));
    assert!(matches!(JurisdictionCall::ROUTE, Route::Jurisdiction));
    assert!(matches!(EvictCall::ROUTE, Route::Evict));
};
