//! The ledger state machine: claim, complete, release, lookup, list, stats,
//! sweep, evict.
//!
//! Role: the product's heart. Runs on any [`SqlStore`] (Durable Object SQLite
//! in workerd, rusqlite on the host: both in [`store`]) and knows nothing of
//! HTTP or workers-rs (but for `store::durable`'s one constructor from a
//! workers-rs `State`, behind the `workers-rs` feature).
//!
//! What must stay true here:
//! - Each transition runs inside one `atomically` call, and the statement
//!   that changes state carries its guard in its `WHERE` clause
//!   (`generation = ?`, `state = 'in_flight'`, `lease_expires_at <= ?`), so a
//!   reader sees the fence in the SQL itself.
//! - A record's generation only grows while the record exists: takeover,
//!   reclaim after release and rebirth after expiry all take generation+1, so
//!   an owner from an earlier generation can never complete a later claim.
//! - `complete` and `release` succeed only while the record is in flight at
//!   the caller's generation and, when the caller presents one, under the
//!   lease token its grant was given (`lease`): a token names one grant
//!   across every object. A completed record's response is never replaced.
//! - A record is deleted only by the sweep, once `expires_at <= now`, or by
//!   an operator's eviction (`evict`), never while its lease is live.
//! - A new record starts above every generation the object has swept or
//!   evicted (the generation floor), so a zombie owner of a swept or
//!   evicted record stays fenced out.
//! - Time is always the caller-supplied `now` of the *object's* clock.
//! - No operation writes a counter row of its own: counts are gathered per
//!   transaction, merged into [`pending`] once it commits, and written in
//!   one row when due.
//!
//! The rooms, from the face down (each file imports only files below it;
//! this file declares them and names what the crate uses):
//! - the operations, each adding its methods to [`Ledger`]: `claim`,
//!   `execute`, `settle` (complete, release), `evict`, `sweep`, `list`,
//!   `stats`, `counters` (writing the counts), `quota`, `horizon`;
//! - [`lease`] — the token that names a grant, and the grant a settlement
//!   names;
//! - [`machine`] — the `Ledger` struct: its transactions and how counts
//!   follow only what committed;
//! - [`state`], [`pending`], [`trend`] — the `ledger_state` row, the counts
//!   kept in memory, the per-minute trend;
//! - [`schema`], [`record`], [`outcome`] — the tables and their upgrade,
//!   one record as stored, the closed outcomes;
//! - [`policy`], [`clock`], [`store`] — the claim's limits, time, the SQL
//!   seam and its two engines.

mod claim;
pub mod clock;
mod counters;
mod evict;
mod execute;
mod horizon;
pub mod lease;
pub mod list;
pub mod machine;
pub mod outcome;
pub mod pending;
pub mod policy;
mod quota;
pub mod record;
pub mod schema;
mod settle;
pub mod state;
pub mod stats;
pub mod store;
pub mod sweep;
pub mod trend;

/// The rusqlite store's former path (`ledger::rusqlite_store`), kept for
/// host tests and benchmarks: the store is [`store::rusqlite`].
#[cfg(feature = "host-sqlite")]
pub use store::rusqlite as rusqlite_store;

pub use clock::{earliest, Millis};
pub use evict::EvictOutcome;
pub use horizon::{HORIZON_GAP_MS, HORIZON_SLACK_MS};
pub use lease::Grant;
pub use list::{ListPage, ListQuery, ListedKey, ObjectPage, Position, Walk};
pub use machine::Ledger;
pub use outcome::{
    Claim, ClaimOutcome, CompleteOutcome, Counter, ExecuteOutcome, KeyState, RecordState, Refusal,
    ReleaseOutcome,
};
pub use policy::{ClaimPolicy, QUOTA_OVERSHOOT_PER_RECORD, STORED_BODY_CEILING};
pub use record::{rfc3339, RecordView};
pub use state::LayoutRecord;
pub use stats::Stats;
#[cfg(target_arch = "wasm32")]
pub use store::durable::DoSqlStore;
pub use store::{Row, RowExt, SizeEstimate, SqlStore, SqlValue, StoreError};
pub use sweep::SweepOutcome;
pub use trend::TrendMinute;
