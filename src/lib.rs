//! idempotency-ledger: the Idempotency-Key contract for Cloudflare Workers,
//! with each tenant's ledger in its own SQLite-backed Durable Object.
//!
//! The folder tree is the architecture:
//! - [`protocol`] — pure wire pieces: key parsing, fingerprint, stored
//!   response, RFC 9457 problems.
//! - [`ledger`] — the pure state machine (claim / complete / release / sweep)
//!   over a small [`ledger::SqlStore`] trait; host-tested on rusqlite.
//! - [`orders`] — the embedded tenant-local application, colocated with the
//!   ledger so its rows commit in the ledger's transaction.
//! - [`contract`] — every gateway decision as pure functions: admission,
//!   the answer for each ledger outcome, proxy mode's complete / release /
//!   keep. Host-tested; the edges only convert types.
//! - [`config`] — the `[vars]` of docs/contract.md §5, parsed and validated.
//! - [`rpc`] — the versioned fetch RPC (v1) between Workers and the object.
//! - [`waiters`] — requests parked on an in-flight key until it settles.
//! - `platform` (wasm32 only) — the thin workers-rs edges: the Durable Object
//!   store, the `TenantLedger` object and the gateway Worker.

pub mod config;
pub mod contract;
pub mod ledger;
pub mod orders;
pub mod protocol;
pub mod rpc;
pub mod waiters;

#[cfg(target_arch = "wasm32")]
pub mod platform;
