//! Counts kept in memory and written to the one `ledger_state` row once
//! they are due, so that no operation pays a counter row of its own.
//!
//! Role: every count the ledger keeps — grants, takeovers, records per
//! state, replays, 409s, 422s, fenced-out settlements, waits, the sweep's
//! deletions and the generation floor — is added here as a delta (a record
//! that moves from in flight to completed is −1 and +1). A flush writes all
//! of them in **one row** (`UPDATE ledger_state SET … WHERE id = 1`) plus
//! one row per record whose `replays` moved. The per-minute trend
//! (`trend`) rides along: the outcomes it follows are also counted by
//! minute here, and written in the same row. Flushes happen:
//! - once [`FLUSH_AFTER_EVENTS`] events or [`FLUSH_AFTER_MS`] have
//!   accumulated, by the operation that crosses the bound;
//! - on the object's own timer, [`FLUSH_AFTER_MS`] after the first pending
//!   event (so an idle object writes its counts too);
//! - in every alarm (the sweep), in the sweep's transaction.
//!
//! `stats` and `lookup` never write: they add what is pending to what is
//! stored.
//!
//! What must stay true here:
//! - A delta is counted only once its operation committed (deltas are
//!   gathered per transaction and merged here after it commits), and
//!   written once: taken before its write, merged back only if the write
//!   failed.
//! - Counts never touch the ledger's decisions except the quota, whose
//!   record count is stored plus pending. What an eviction or restart of
//!   the object can lose is what is pending: at most [`FLUSH_AFTER_MS`] or
//!   [`FLUSH_AFTER_EVENTS`] of counts. The per-state record counts are
//!   recounted from the records by the alarm every `RECOUNT_AFTER_MS`, so
//!   a loss there heals.

use std::collections::HashMap;

use super::clock::Millis;
use super::outcome::Counter;
use super::trend::{self, Trend};

/// Events counted in memory before a flush is forced.
pub const FLUSH_AFTER_EVENTS: u32 = 256;

/// Oldest unflushed event, in milliseconds, before a flush is due.
pub const FLUSH_AFTER_MS: Millis = 2_000;

/// Counts not yet written.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pending {
    /// Deltas per counter (a state move is −1 and +1).
    pub counters: HashMap<Counter, i64>,
    /// Replays per record, by key and the generation that completed it (a
    /// record reborn at a later generation does not inherit them).
    pub replays: HashMap<(String, i64), i64>,
    /// The trended outcomes' deltas by minute (see `ledger::trend`).
    pub trend: Trend,
    /// The highest generation the sweep or an eviction deleted since the
    /// last flush.
    pub swept_generation: Option<i64>,
    /// A raised expiry horizon (`Ledger::expires_by`): written in the
    /// transaction of the grant that raised it, never left pending.
    pub expires_by: Option<Millis>,
    events: u32,
    since: Option<Millis>,
}

impl Pending {
    /// Counts one event of `counter` (and, for a replay, the record it replayed).
    pub fn count(&mut self, counter: Counter, replayed: Option<(&str, i64)>, now: Millis) {
        self.add(counter, 1, now);
        if let Some((key, generation)) = replayed {
            self.add_to_record(key, generation, 1);
        }
    }

    /// Did the operations counted here write a record (claimed, completed,
    /// released, took over, swept or evicted one)? Counts of outcomes that wrote
    /// nothing (a replay, a 409, a 422) do not.
    pub fn follows_a_write(&self) -> bool {
        self.swept_generation.is_some()
            || [
                Counter::InFlight,
                Counter::Completed,
                Counter::Released,
                Counter::Claims,
                Counter::Takeovers,
                Counter::Swept,
                Counter::Evicted,
            ]
            .iter()
            .any(|c| self.delta(*c) != 0)
    }

    /// Adds `n` (which may be negative: a record leaving a state) to a counter.
    pub fn add(&mut self, counter: Counter, n: i64, now: Millis) {
        if n == 0 {
            return;
        }
        *self.counters.entry(counter).or_insert(0) += n;
        trend::count(&mut self.trend, counter, n, now);
        self.touch(now);
    }

    /// A record moved from one state to another (or appeared: `from` None).
    pub fn moved(&mut self, from: Option<Counter>, to: Counter, now: Millis) {
        if from == Some(to) {
            return;
        }
        if let Some(from) = from {
            self.add(from, -1, now);
        }
        self.add(to, 1, now);
    }

    /// Adds replays counted elsewhere (a gateway's replay cache).
    pub fn add_replays(&mut self, key: &str, generation: i64, n: i64, now: Millis) {
        if n <= 0 {
            return;
        }
        self.add(Counter::Replays, n, now);
        self.add_to_record(key, generation, n);
    }

    /// The sweep (or an eviction) deleted a record of `generation`: new
    /// records start above it.
    pub fn swept(&mut self, generation: i64, now: Millis) {
        self.swept_generation = Some(
            self.swept_generation
                .map_or(generation, |g| g.max(generation)),
        );
        self.touch(now);
    }

    /// A grant raised the expiry horizon to `expires_by`.
    pub fn raise_horizon(&mut self, expires_by: Millis) {
        self.expires_by = Some(self.expires_by.map_or(expires_by, |h| h.max(expires_by)));
    }

    fn touch(&mut self, now: Millis) {
        self.events = self.events.saturating_add(1);
        self.since.get_or_insert(now);
    }

    fn add_to_record(&mut self, key: &str, generation: i64, n: i64) {
        *self
            .replays
            .entry((key.to_string(), generation))
            .or_insert(0) += n;
    }

    /// The pending delta of `counter`.
    pub fn delta(&self, counter: Counter) -> i64 {
        self.counters.get(&counter).copied().unwrap_or(0)
    }

    /// The pending replays of one record.
    pub fn record_replays(&self, key: &str, generation: i64) -> i64 {
        self.replays
            .get(&(key.to_string(), generation))
            .copied()
            .unwrap_or(0)
    }

    /// Events counted and not yet written.
    pub fn events(&self) -> u32 {
        self.events
    }

    pub fn is_empty(&self) -> bool {
        self.events == 0
    }

    /// Has enough accumulated that the next operation should write it?
    pub fn is_due(&self, now: Millis) -> bool {
        self.events >= FLUSH_AFTER_EVENTS
            || self
                .since
                .is_some_and(|since| now - since >= FLUSH_AFTER_MS)
    }

    /// Puts counts back (after a flush that did not commit), or adds the
    /// counts of a transaction that did.
    pub fn merge(&mut self, other: Pending) {
        for (c, n) in other.counters {
            *self.counters.entry(c).or_insert(0) += n;
        }
        for (k, n) in other.replays {
            *self.replays.entry(k).or_insert(0) += n;
        }
        trend::merge(&mut self.trend, &other.trend);
        if let Some(g) = other.swept_generation {
            self.swept_generation = Some(self.swept_generation.map_or(g, |s| s.max(g)));
        }
        if let Some(h) = other.expires_by {
            self.raise_horizon(h);
        }
        self.events = self.events.saturating_add(other.events);
        self.since = super::clock::earliest(self.since, other.since);
    }
}
