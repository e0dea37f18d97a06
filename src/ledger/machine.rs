//! The [`Ledger`] itself: the store it runs on, the counts it keeps, and
//! the transactions every operation runs in.
//!
//! Role: the one struct every operation's file (`claim.rs`, `settle.rs`,
//! `sweep.rs`, …) adds its methods to; here: building it, its transaction
//! levels and how counts follow only what committed, the schema's creation
//! and stepwise upgrade, and reading one record.
//!
//! What must stay true here: see [`super`] (each transition in one
//! `atomically` call; counts merged only once their transaction commits).

use std::cell::{Cell, RefCell};

use super::clock::Millis;
use super::pending::Pending;
use super::record::{Record, RecordView, SELECT_RECORD};
use super::schema;
use super::state::Stored;
use super::store::{SqlStore, StoreError};

/// The ledger over one tenant's SQLite database.
pub struct Ledger<S> {
    pub(super) store: S,
    /// Committed counts not yet written (see [`pending`]).
    pub(super) pending: RefCell<Pending>,
    /// Counts of the transaction level in progress, merged into its
    /// enclosing level (or `pending`) only if it commits: an inner
    /// transaction that rolls back takes its counts with it.
    in_transaction: RefCell<Pending>,
    /// Counts this transaction wrote inside itself
    /// ([`Ledger::count_in_transaction`]), applied to `stored` only once
    /// the outermost level committed.
    pub(super) written: RefCell<Pending>,
    pub(super) depth: Cell<u32>,
    /// Write the counts of every transaction that wrote a record inside
    /// that transaction (see [`Ledger::count_in_transaction`]).
    pub(super) counts_in_transaction: bool,
    /// The `ledger_state` row as last read or written.
    pub(super) stored: RefCell<Option<Stored>>,
    /// Expiries granted later than `now` + this raise the horizon (see
    /// [`Ledger::track_expiries_beyond`]); `None`: never.
    pub(super) horizon_cover: Cell<Option<Millis>>,
    /// An upgrade from schema 1 still has records set aside (as its last
    /// step found): a settlement moves its key first
    /// ([`schema::upgrade_v1_key`]). False costs a settlement nothing.
    pub(super) v1_set_aside: Cell<bool>,
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
    pub(super) fn transaction<T, E: From<StoreError>>(
        &self,
        body: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.transaction_counting(self.counts_in_transaction, body)
    }

    /// [`Ledger::transaction`], writing the level's counts inside it when
    /// `in_transaction` and it wrote a record (the sweep always does: the
    /// generation floor it raises must never outlive its deletes in memory
    /// only).
    pub(super) fn transaction_counting<T, E: From<StoreError>>(
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
    pub(super) fn tally(&self) -> std::cell::RefMut<'_, Pending> {
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
    pub(super) fn upgrade_key_first(&self, key: &str) -> Result<(), StoreError> {
        if self.v1_set_aside.get() && schema::upgrade_v1_key(&self.store, key)? {
            // The state row changed under the copy kept in memory.
            self.forget_stored();
        }
        Ok(())
    }

    pub(super) fn read(&self, key: &str) -> Result<Option<Record>, StoreError> {
        let rows = self.store.query(SELECT_RECORD, &[key.into()])?;
        rows.first().map(Record::from_row).transpose()
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
