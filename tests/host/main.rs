//! Host tests: the ledger core and the embedded application on real SQLite
//! (rusqlite), through the same `SqlStore` seam the Durable Object uses.

mod support;

mod attempt;
mod config;
mod contract;
mod eager;
mod evict;
mod execute;
mod fencing;
mod fingerprint;
mod fuzz;
mod horizon;
mod key;
mod lease;
mod ledger;
mod list;
mod meter;
mod migration;
mod model;
mod nesting;
mod outcome;
mod pending;
mod problems;
mod protocol_model;
mod quota;
mod replay_cache;
mod reshard;
mod response;
mod rpc;
mod shard_map;
mod signature;
mod sweep;
mod trend;
mod unkept;
mod vectors;
mod waiting;
