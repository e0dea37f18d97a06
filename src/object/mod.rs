//! The `TenantLedger` Durable Object: one per tenant, owning that tenant's
//! ledger and the embedded orders table in its own SQLite database.
//!
//! The rooms:
//! - [`tenant_ledger`] — the class: what the object holds, its `fetch` /
//!   `alarm` entry points, and the one request path (fetch → serve →
//!   route → call): the embedded application's unprotected requests, and
//!   every RPC v1 call parsed → validated → applied.
//! - `calls` — one file per RPC call (beside `rpc/<call>.rs`): what it
//!   does to this object once validated.
//! - [`alarm`] — the sweep and the alarm that drives it.
//! - [`place`] — the object's name and its role in its tenant's layout,
//!   recorded once so it never depends on the runtime handing it over.
//! - [`reshard`] — the tenant's registry accepting (or refusing) the
//!   configured layout before an object's first keyed call.
//! - [`jurisdiction`] — a tenant kept in a jurisdiction: its objects'
//!   calls to each other go through it, and a change of it is refused.
//! - [`waiting`] — requests parked on an in-flight key: the registry and
//!   the loop that claims again when they wake.
//! - [`meter`] — the rows one call's own statements wrote, however its
//!   awaits interleave with other calls'.
//! - [`do_store`] — the ledger's [`SqlStore`](crate::ledger::SqlStore)
//!   over a Durable Object's SQLite (also for library mode: your own
//!   object with the ledger embedded).
//!
//! May call: `ledger`, `orders`, `rpc`, `config`, `protocol`, `platform`.
//! Never `contract` or `gateway`: the object answers RPC calls, it makes no
//! gateway decision.
//!
//! What must stay true here:
//! - The object's own clock (`Date.now()` inside the object) sets every
//!   lease and expiry; callers never supply times.
//! - Calls are parsed and validated before anything is written; a bad call
//!   is a 400/404/405 problem and changes nothing.
//! - Requests are single-threaded per object and the ledger work between
//!   awaits is synchronous, so a claim is never interleaved with another.
//! - Sweep runs only in `alarm()`, never on the request path.

pub mod meter;
pub mod waiting;

#[cfg(target_arch = "wasm32")]
pub mod do_store;

#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
pub mod alarm;
#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
mod calls;
#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
pub mod jurisdiction;
#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
pub mod place;
#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
pub mod reshard;
#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
pub mod tenant_ledger;

#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
pub use tenant_ledger::{LedgerObject, TenantLedger};
