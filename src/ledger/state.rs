//! The `ledger_state` row as the ledger keeps it in memory ([`Stored`]) and
//! the tenant's recorded layout it may carry ([`LayoutRecord`]).
//!
//! Role: the shapes [`super::counters`] reads and writes (one row per
//! object); the ledger holds the last one read or written.

use std::collections::HashMap;

use super::clock::Millis;
use super::outcome::Counter;
use super::trend;

/// The counters as the `ledger_state` row holds them (read once per
/// instance, then kept in step with every flush).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Stored {
    pub counters: HashMap<Counter, i64>,
    pub generation_floor: i64,
    pub recounted_at: Millis,
    pub object_name: Option<String>,
    /// The tenant's recorded layout, when this object is its registry.
    pub layout: Option<LayoutRecord>,
    /// The expiry horizon (see [`Ledger::expires_by`]).
    pub expires_by: Millis,
    /// When this object's ledger was upgraded from schema 1, if it was.
    pub v1_upgraded_at: Option<Millis>,
    /// The per-minute trend as written (see [`trend`]).
    pub trend: trend::Trend,
    /// Where the tenant's keys live, when this is its unrestricted object
    /// and recorded one (see [`Ledger::recorded_jurisdiction`]).
    pub jurisdiction: Option<String>,
}

/// A tenant's layout as its registry records it (see `config::reshard`,
/// which decides what may follow it): the shard count, the previous
/// count while resharding, when it was recorded, and how long a layout it
/// replaced may still hold live records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutRecord {
    pub shards: u32,
    pub previous: Option<u32>,
    pub since: Millis,
    pub window_ms: Millis,
}
