//! The ledger state machine: claim, complete, release, lookup, list, stats,
//! sweep, evict.
//!
//! Role: the product's heart. Runs on any [`SqlStore`] (Durable Object SQLite
//! in workerd, rusqlite on the host) and knows nothing of HTTP or workers-rs.
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
//!   the caller's generation. A completed record's response is never replaced.
//! - A record is deleted only by the sweep, once `expires_at <= now`, or by
//!   an operator's eviction (`evict`), never while its lease is live.
//! - A new record starts above every generation the object has swept or
//!   evicted (the generation floor), so a zombie owner of a swept or
//!   evicted record stays fenced out.
//! - Time is always the caller-supplied `now` of the *object's* clock.
//! - No operation writes a counter row of its own: counts are gathered per
//!   transaction, merged into [`pending`] once it commits, and written in
//!   one row when due.

mod claim;
mod counters;
mod evict;
mod execute;
mod horizon;
pub mod list;
pub use horizon::{HORIZON_GAP_MS, HORIZON_SLACK_MS};
pub mod outcome;
pub mod pending;
mod quota;
pub mod record;
pub mod schema;
mod settle;
pub mod stats;
pub mod store;
pub mod sweep;
pub mod trend;

#[cfg(feature = "host-sqlite")]
pub mod rusqlite_store;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

pub use evict::EvictOutcome;
pub use list::{ListPage, ListQuery, ListedKey, ObjectPage, Position, Walk};
pub use outcome::{
    Claim, ClaimOutcome, CompleteOutcome, Counter, ExecuteOutcome, KeyState, RecordState, Refusal,
    ReleaseOutcome,
};
use pending::Pending;
pub use record::{rfc3339, RecordView};
use record::{Record, SELECT_RECORD};
pub use stats::Stats;
pub use store::{Row, RowExt, SizeEstimate, SqlStore, SqlValue, StoreError};
pub use sweep::SweepOutcome;
pub use trend::TrendMinute;

/// Epoch milliseconds on the object's clock.
pub type Millis = i64;

/// Largest response body the ledger stores: a Durable Object SQLite row
/// holds at most 2 MB, and the record's other columns need room too.
/// `MAX_STORED_BODY_BYTES` and RPC `complete` are both bounded by it.
pub const STORED_BODY_CEILING: usize = 1_900_000;

/// How far past the byte quota (`MAX_DB_BYTES_PER_OBJECT`) each record's
/// writes may take the database (docs/contract.md §4): the last claim
/// admitted below the quota (a record and its index entry), and each
/// completion past it (a tombstone: no body, no headers), grow it by at
/// most twice the bytes they bind plus [`SizeEstimate::GROWTH_PER_ROW`]
/// per row (a page split per b-tree level) — within this for a key, a
/// fingerprint and its components of up to 32 KiB together. So `db_bytes`
/// stays at most the quota + this × (1 + the records in flight when the
/// quota was reached), plus what an embedded application writes itself.
pub const QUOTA_OVERSHOOT_PER_RECORD: u64 = 128 * 1024;

/// The earlier of two times that may each be absent (none: the other).
pub fn earliest<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    a.into_iter().chain(b).min()
}

/// The limits a claim is made under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimPolicy {
    /// How long an owner may run before a retry may take over.
    pub lease_ms: Millis,
    /// How long a record is kept after its last claim or its completion.
    pub retention_ms: Millis,
    /// Records one object may hold; a new key beyond this is refused.
    pub max_keys: u64,
    /// How long after its lease ends an owner may still complete (the
    /// origin timeout: a proxied owner waits that long for its origin). A
    /// record is kept at least this long past its lease, so no owner that
    /// may still complete ever finds its record swept.
    pub settle_grace_ms: Millis,
    /// Bytes one object's database may reach before new keys (and
    /// rebirths, reclaims and takeovers) are refused and completions stop
    /// keeping their bodies (`MAX_DB_BYTES_PER_OBJECT`), so a write never
    /// meets the platform's own limit (10 GB per object); see
    /// [`QUOTA_OVERSHOOT_PER_RECORD`]. Engines that cannot tell their size
    /// are not held to it.
    pub max_db_bytes: u64,
}

impl ClaimPolicy {
    /// When a record claimed (or taken over) at `now` leaves its retention
    /// window: never before its lease ends plus the settle grace, so
    /// neither the sweep nor an expiry can free a key whose owner may still
    /// be running or completing.
    pub fn in_flight_expires_at(&self, now: Millis) -> Millis {
        let owner_done = self.lease_ms.saturating_add(self.settle_grace_ms.max(0));
        now.saturating_add(self.retention_ms.max(owner_done))
    }

    /// The earliest a record claimed at `now` can expire (its `sweep_at`):
    /// completed at once, it keeps the retention from now; any later
    /// completion, or the lease, only puts its expiry later.
    pub fn sweep_at(&self, now: Millis) -> Millis {
        now.saturating_add(self.retention_ms)
    }
}

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

/// The ledger over one tenant's SQLite database.
pub struct Ledger<S> {
    store: S,
    /// Committed counts not yet written (see [`pending`]).
    pending: RefCell<Pending>,
    /// Counts of the transaction level in progress, merged into its
    /// enclosing level (or `pending`) only if it commits: an inner
    /// transaction that rolls back takes its counts with it.
    in_transaction: RefCell<Pending>,
    /// Counts this transaction wrote inside itself
    /// ([`Ledger::count_in_transaction`]), applied to `stored` only once
    /// the outermost level committed.
    written: RefCell<Pending>,
    depth: Cell<u32>,
    /// Write the counts of every transaction that wrote a record inside
    /// that transaction (see [`Ledger::count_in_transaction`]).
    counts_in_transaction: bool,
    /// The `ledger_state` row as last read or written.
    stored: RefCell<Option<Stored>>,
    /// Expiries granted later than `now` + this raise the horizon (see
    /// [`Ledger::track_expiries_beyond`]); `None`: never.
    horizon_cover: Cell<Option<Millis>>,
    /// An upgrade from schema 1 still has records set aside (as its last
    /// step found): a settlement moves its key first
    /// ([`schema::upgrade_v1_key`]). False costs a settlement nothing.
    v1_set_aside: Cell<bool>,
}

impl<S: SqlStore> Ledger<S> {
    pub fn new(store: S) -> Ledger<S> {
        Ledger {
            store,
            pending: RefCell::new(Pending::default()),
            in_transaction: RefCell::new(Pending::default()),
            written: RefCell::new(Pending::default()),
            depth: Cell::new(0),
            counts_in_transaction: false,
            stored: RefCell::new(None),
            horizon_cover: Cell::new(None),
            v1_set_aside: Cell::new(false),
        }
    }

    /// When this ledger was upgraded from schema 1 (which kept no layout
    /// history), if it was.
    pub fn v1_upgraded_at(&self) -> Result<Option<Millis>, StoreError> {
        self.with_stored(|s| s.v1_upgraded_at)
    }

    /// A ledger whose counts follow only what committed even when its
    /// caller encloses the ledger's transaction in one of its own (the
    /// embedded ledger: your `transactionSync` around `execute`). Every
    /// transaction that wrote a record writes its counts in that same
    /// transaction — one more row written (the `ledger_state` row) per new
    /// key — so a rollback anywhere takes them back; counts of outcomes
    /// that wrote nothing (replays, 409s, 422s) are batched as usual. The
    /// quota and `stats` re-read the row, so an enclosing rollback never
    /// leaves a count the database does not hold.
    pub fn count_in_transaction(mut self) -> Ledger<S> {
        self.counts_in_transaction = true;
        self
    }

    /// Runs `body` as one transaction level (a savepoint when nested);
    /// the counts it gathered (see [`Ledger::tally`]) count only if it
    /// commits, and only once every enclosing level has.
    fn transaction<T, E: From<StoreError>>(
        &self,
        body: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.transaction_counting(self.counts_in_transaction, body)
    }

    /// [`Ledger::transaction`], writing the level's counts inside it when
    /// `in_transaction` and it wrote a record (the sweep always does: the
    /// generation floor it raises must never outlive its deletes in memory
    /// only).
    fn transaction_counting<T, E: From<StoreError>>(
        &self,
        in_transaction: bool,
        body: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let depth = self.depth.get();
        self.depth.set(depth + 1);
        let enclosing = std::mem::take(&mut *self.in_transaction.borrow_mut());
        let enclosing_written = std::mem::take(&mut *self.written.borrow_mut());
        let result = self.store.atomically(|| {
            let value = body()?;
            let wrote = self.in_transaction.borrow().follows_a_write();
            // A raised horizon is written with the grant, always.
            let raised = self.in_transaction.borrow().expires_by.is_some();
            if (in_transaction && wrote) || raised {
                let counted = std::mem::take(&mut *self.in_transaction.borrow_mut());
                self.write_pending(&counted)?;
                self.written.borrow_mut().merge(counted);
            }
            Ok(value)
        });
        self.depth.set(depth);
        let counted = std::mem::replace(&mut *self.in_transaction.borrow_mut(), enclosing);
        let written = std::mem::replace(&mut *self.written.borrow_mut(), enclosing_written);
        if result.is_ok() {
            if depth == 0 {
                self.pending.borrow_mut().merge(counted);
                self.stored_add(&written);
            } else {
                self.in_transaction.borrow_mut().merge(counted);
                self.written.borrow_mut().merge(written);
            }
        }
        result
    }

    /// The counts of the transaction in progress.
    fn tally(&self) -> std::cell::RefMut<'_, Pending> {
        self.in_transaction.borrow_mut()
    }

    /// The store underneath, for colocated application tables.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Creates the ledger's tables, or upgrades an earlier schema in place
    /// (one transaction); says what it found. An upgrade from schema 1
    /// records time 0 as its time: for ledgers that are never a tenant's
    /// layout registry (library mode, the embedded `Ledger`); `TenantLedger`
    /// uses [`Ledger::migrate_at`] with its clock.
    pub fn migrate(&self) -> Result<schema::Found, StoreError> {
        self.migrate_at(0)
    }

    /// [`Ledger::migrate`], an upgrade from schema 1 recording `now` as
    /// the time the layout history became unknown (`config::reshard`), and
    /// carried to its end (every step of an upgrade from schema 1, each a
    /// transaction of its own).
    pub fn migrate_at(&self, now: Millis) -> Result<schema::Found, StoreError> {
        let (found, _) = self.migrate_within(now, u32::MAX)?;
        Ok(found)
    }

    /// Creates or upgrades the schema (one transaction), then takes at
    /// most `steps` bounded steps of an upgrade from schema 1 (see
    /// [`schema::upgrade_v1_step`]); `true` when no upgrade is left. An
    /// object that starts on a large schema-1 database serves once the
    /// steps it takes across requests and alarms are done
    /// ([`Ledger::continue_upgrade`]).
    pub fn migrate_within(
        &self,
        now: Millis,
        steps: u32,
    ) -> Result<(schema::Found, bool), StoreError> {
        let found = self
            .store
            .atomically(|| schema::migrate(&self.store, now))?;
        *self.stored.borrow_mut() = None;
        let done = self.continue_upgrade(steps)?;
        Ok((found, done))
    }

    /// Takes at most `steps` steps of an upgrade from schema 1 under way;
    /// `true` once none is left (at once when none was).
    pub fn continue_upgrade(&self, steps: u32) -> Result<bool, StoreError> {
        for _ in 0..steps {
            let done = self
                .store
                .atomically(|| schema::upgrade_v1_step(&self.store))?;
            *self.stored.borrow_mut() = None;
            self.v1_set_aside.set(!done);
            if done {
                return Ok(true);
            }
        }
        let upgrading = schema::upgrading_v1(&self.store)?;
        self.v1_set_aside.set(upgrading);
        Ok(!upgrading)
    }

    /// Inside a settlement's transaction, while an upgrade from schema 1
    /// is under way: moves `key`'s record out of the set-aside table first
    /// (that key alone), so the claim the object granted is settled
    /// whatever the upgrade has not moved yet.
    fn upgrade_key_first(&self, key: &str) -> Result<(), StoreError> {
        if self.v1_set_aside.get() && schema::upgrade_v1_key(&self.store, key)? {
            // The state row changed under the copy kept in memory.
            self.forget_stored();
        }
        Ok(())
    }

    fn read(&self, key: &str) -> Result<Option<Record>, StoreError> {
        let rows = self.store.query(SELECT_RECORD, &[key.into()])?;
        rows.first().map(Record::from_row).transpose()
    }

    fn current_state(&self, key: &str) -> Result<Option<RecordState>, StoreError> {
        Ok(self.read(key)?.map(|r| RecordState {
            state: r.state,
            generation: r.generation,
        }))
    }

    /// The record for `key`, unless absent or past its retention window.
    /// Read-only: replays not yet written are added from memory.
    pub fn lookup(&self, key: &str, now: Millis) -> Result<Option<RecordView>, StoreError> {
        let pending = self.pending.borrow();
        Ok(self.read(key)?.filter(|r| r.expires_at > now).map(|r| {
            let unwritten = pending.record_replays(key, r.generation);
            let mut view = r.view(key);
            view.replays += unwritten;
            view
        }))
    }
}
