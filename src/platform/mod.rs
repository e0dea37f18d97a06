//! The workers-rs edges both deployables share (wasm32 only): the typed
//! RPC v1 client, the conversion between the core's response values and
//! workers-rs responses, logs, and the runtime environment.
//!
//! May call: `protocol`, `ledger`'s outcome types, `rpc`, `config`. Never
//! `contract` (the gateway's decisions), `object` or `gateway`: both of
//! those stand on this floor.
//!
//! What must stay true here: nothing decides idempotency semantics; it
//! carries requests and renders values that were decided elsewhere.

pub mod analytics;
pub mod client;
pub mod env;
pub mod http;
pub mod log;

pub use env::{config_lookup, load_config, misconfigured, now_ms, LEDGER_BINDING};
