//! The small storage seam between the ledger and a SQLite engine, and the
//! two engines behind it, side by side.
//!
//! Role: let the same ledger SQL run on Durable Object SQLite (in workerd,
//! [`durable`]: `TenantLedger`, your own Rust object, `EmbeddedLedger`) and
//! on rusqlite (host tests, benchmarks: [`rusqlite`], feature
//! `host-sqlite`). The ledger speaks only this trait.
//!
//! What must stay true here:
//! - `query` runs exactly one statement and returns every row it produced
//!   (statements with `RETURNING` included), never a lazy cursor: Durable
//!   Object cursors must be drained before the next await anyway.
//! - `atomically` runs its closure as one transaction: all of its writes
//!   commit, or (when it returns `Err`) none do. Nested calls join the
//!   outermost transaction.

#[cfg(target_arch = "wasm32")]
pub mod durable;
#[cfg(feature = "host-sqlite")]
pub mod rusqlite;
pub mod seam;

pub use seam::{Row, RowExt, SizeEstimate, SqlStore, SqlValue, StoreError};
