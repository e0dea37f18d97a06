//! idempotency-ledger: the Idempotency-Key contract for Cloudflare Workers,
//! with each tenant's ledger in its own SQLite-backed Durable Object.
//!
//! The folder tree is the architecture, floor by floor (each floor uses
//! only the floors below it):
//! 1. [`protocol`] — pure wire pieces: key parsing, fingerprint, stored
//!    response and wire status rules, RFC 9457 problems (rendered from the
//!    catalog `docs/problems.json`), tenant ids, request targets, digests.
//! 2. [`ledger`] — the pure state machine (claim / complete / release /
//!    execute / sweep) over a small [`ledger::SqlStore`] trait;
//!    host-tested on rusqlite. [`orders`] — the embedded tenant-local
//!    application, colocated with the ledger so its rows commit in the
//!    ledger's transaction.
//! 3. [`config`] — the `[vars]` and secrets (docs/contract.md §5), parsed
//!    and validated. [`rpc`] — RPC v1 between Workers and the object, one
//!    file per call.
//! 4. [`contract`] — every gateway decision as pure functions: admission
//!    and authentication, the answer for each ledger outcome, proxy mode's
//!    complete / release / keep, the replay cache, the origin signature.
//! 5. `platform` (wasm32) — the edges both deployables share: the typed
//!    RPC client, HTTP conversion, logs, the environment (all but the
//!    clock behind the `workers-rs` feature).
//! 6. [`object`] — the `TenantLedger` Durable Object (its waiting registry
//!    is pure and host-tested; the rest is wasm32) — and `gateway` (wasm32)
//!    — the `#[event(fetch)]` Worker — and [`embedded`] (wasm32) — the
//!    ledger exported to JavaScript for your own TypeScript Durable Object
//!    (`idempotency-ledger/ledger`).
//!
//! Cargo features draw the same line: `tenant-ledger` builds the object's
//! class, `gateway` the Worker, `js-ledger` the exported `EmbeddedLedger`,
//! `workers-rs` the edges over workers-rs (`platform`, `DoSqlStore::new`);
//! with default features off the crate is the pure core, and with
//! `workers-rs` alone a library (the ledger inside your own Durable Object,
//! the typed client). `js-ledger` alone is the slim wasm of
//! `idempotency-ledger/ledger`: the core, the store over `js_sys`, the
//! binding, and no workers-rs at all.
//!
//! Size (the wasm is what a deploy uploads; docs/development.md, "Where
//! the wasm's bytes go"): JSON is parsed with `serde_json::from_slice`
//! everywhere (one reader type, so one copy of each deserializer), and
//! outcome enums are read through one flat struct (`ledger::outcome`).

pub mod config;
pub mod contract;
pub mod ledger;
pub mod object;
pub mod orders;
pub mod protocol;
pub mod rpc;

pub mod platform;

#[cfg(all(target_arch = "wasm32", feature = "gateway"))]
pub mod gateway;

#[cfg(all(target_arch = "wasm32", feature = "js-ledger"))]
pub mod embedded;
