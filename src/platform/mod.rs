//! The workers-rs edges both deployables share (wasm32 only, but for
//! [`eager`]'s polling, which the host tests drive): the typed
//! RPC v1 client, the conversion between the core's response values and
//! workers-rs responses, logs, the runtime environment and the bindings it
//! must hold (`bindings`: `TENANT_LEDGER`, `ORIGIN`). Everything but
//! the clock ([`env`]'s `now_ms`) and
//! [`eager`]'s polling (host-tested) is
//! behind the `workers-rs` feature: the slim `js-ledger` build has no
//! workers-rs.
//!
//! May call: `protocol`, `ledger`'s outcome types, `rpc`, `config`. Never
//! `contract` (the gateway's decisions), `object` or `gateway`: both of
//! those stand on this floor.
//!
//! What must stay true here: nothing decides idempotency semantics; it
//! carries requests and renders values that were decided elsewhere.

#[cfg(all(target_arch = "wasm32", feature = "workers-rs"))]
pub mod analytics;
#[cfg(all(target_arch = "wasm32", feature = "workers-rs"))]
pub mod bindings;
#[cfg(all(target_arch = "wasm32", feature = "workers-rs"))]
pub mod client;
pub mod eager;
#[cfg(target_arch = "wasm32")]
pub mod env;
#[cfg(all(target_arch = "wasm32", feature = "workers-rs"))]
pub mod http;
#[cfg(all(target_arch = "wasm32", feature = "workers-rs"))]
pub mod log;
#[cfg(all(target_arch = "wasm32", feature = "workers-rs"))]
pub mod namespace;
#[cfg(all(target_arch = "wasm32", feature = "workers-rs"))]
mod transport;

#[cfg(all(target_arch = "wasm32", feature = "workers-rs"))]
pub use eager::eager;
#[cfg(target_arch = "wasm32")]
pub use env::now_ms;
#[cfg(all(target_arch = "wasm32", feature = "workers-rs"))]
pub use env::{config_lookup, load_config, misconfigured, LEDGER_BINDING};
