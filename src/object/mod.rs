//! The `TenantLedger` Durable Object: one per tenant, owning that tenant's
//! ledger and the embedded orders table in its own SQLite database.
//!
//! Which entry runs in production, and why: the deployed script's main
//! module is `worker/entry.mjs`, not worker-build's generated shim. Its
//! `TenantLedger` is a JS class that builds the Rust class below (the
//! shim's export, behind the shim's `Proxy`), reads each request's body
//! with one native `await request.arrayBuffer()`, and calls
//! [`TenantLedger::serve_read`] (`serveRead`, called through
//! `RustTenantLedger.prototype.serveRead` on the proxied instance): the
//! answer comes back at once when the call needs nothing asynchronous
//! (`platform::eager`), sparing wasm-bindgen's promise plumbing for the
//! body and the answer. Once a trap has set
//! `globalThis.__worker_init_state.criticalError`, it calls through the
//! shim's proxy instead, which re-instantiates the module first. Its
//! `alarm` is the Rust `alarm`. The Rust `DurableObject::fetch` serves the
//! same path (`serve`) for a script that uses the shim's class as it is
//! (`tests/e2e/workers/faulty-ledger.mjs` and `v1-ledger.mjs` wrap it and
//! call its `fetch`). Both reach one request path of plain function
//! calls: [`tenant_ledger`]'s `serve` → `dispatch` → `calls::<call>`.
//!
//! The rooms, from the entry down (each uses only the rooms below it):
//! - [`tenant_ledger`] — the class: its `fetch` / `serveRead` / `alarm`
//!   entry points and the one request path (serve → dispatch → the
//!   call's function): the embedded application's unprotected requests,
//!   and every RPC v1 call parsed → validated → applied. `dispatch` is a
//!   plain `match` over the closed `rpc::Route` enum.
//! - `calls` — one function per RPC call, in its own file (beside
//!   `rpc/<call>.rs`): what it does to this object once validated.
//! - [`ledger_object`] — what one object holds ([`LedgerObject`]): its
//!   ledger, configuration and the rooms below; whether it can take a call
//!   now (`ready`); its alarm; the keyed path claims and executes share.
//! - `upgrade` — the stepwise schema upgrade: as the instance starts, and
//!   a few steps more by each request and alarm while it is under way.
//! - [`home`] — which keys this object answers for, one room: its place
//!   in its tenant's layout (`Home`: its name and role, recorded once so it
//!   never depends on the runtime handing it over; the retired shard's home
//!   check; the registry accepting the layout before the first keyed
//!   call), the registry deciding and recording a layout (`reshard`), and
//!   a tenant kept in a jurisdiction (`jurisdiction`: its objects' calls to
//!   each other go through it, and a change of it is refused).
//! - [`alarm`] — the sweep, the alarm that drives it, the flush timer.
//! - [`waiting`] — requests parked on an in-flight key: the registry and
//!   the loop that claims again when they wake.
//! - [`meter`] — the rows one call's own statements wrote, however its
//!   awaits interleave with other calls'.
//! - `problems` — the two problems the object answers on its own.
//!
//! The ledger's store over a Durable Object's SQLite is the ledger's
//! (`ledger::store::durable`, beside the rusqlite one): the object, your
//! own Rust object and `EmbeddedLedger` all build a `Ledger` over it.
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
pub mod unkept;
pub mod waiting;

/// The Durable Object store's former path (`object::do_store`), kept for
/// library users: it lives beside the rusqlite one, `ledger::store::durable`.
#[cfg(target_arch = "wasm32")]
pub use crate::ledger::store::durable as do_store;

#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
pub mod alarm;
#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
mod calls;
#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
pub mod home;
#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
pub mod ledger_object;
#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
mod problems;
#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
pub mod tenant_ledger;
#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
mod upgrade;

#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
pub use ledger_object::LedgerObject;
#[cfg(all(target_arch = "wasm32", feature = "tenant-ledger"))]
pub use tenant_ledger::TenantLedger;
