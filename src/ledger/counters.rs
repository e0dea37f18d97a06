//! Counters: what the ledger counts, and when the counts are written.
//!
//! Role: operations gather their counts in memory ([`super::pending`]);
//! this is where they are read back (stored plus pending) and written —
//! all counters in the one `ledger_state` row, in one statement, plus one
//! row per record whose `replays` moved.
//!
//! What must stay true here:
//! - Counters are named by [`Counter`], never by a string literal, so a
//!   typo cannot silently lose a count.
//! - A pending count is written once: taken before its write, merged back
//!   only if the write failed.
//! - The stored row is read once per instance, then kept in step with each
//!   flush in memory (nothing else writes it).

use super::clock::Millis;
use super::machine::Ledger;
use super::outcome::Counter;
use super::pending::Pending;
use super::state::{LayoutRecord, Stored};
use super::store::{RowExt, SqlStore, SqlValue, StoreError};
use super::trend;

impl<S: SqlStore> Ledger<S> {
    /// Reads `f` off the `ledger_state` row (read from SQLite on first
    /// use, then borrowed from memory: never copied).
    pub(crate) fn with_stored<T>(&self, f: impl FnOnce(&Stored) -> T) -> Result<T, StoreError> {
        if self.stored.borrow().is_none() {
            let stored = self.read_stored()?;
            *self.stored.borrow_mut() = Some(stored);
        }
        self.stored
            .borrow()
            .as_ref()
            .map(f)
            .ok_or_else(|| StoreError::Decode("the ledger_state row is not loaded".into()))
    }

    /// Drops the `ledger_state` row kept in memory: the next use reads it.
    pub(super) fn forget_stored(&self) {
        *self.stored.borrow_mut() = None;
    }

    fn read_stored(&self) -> Result<Stored, StoreError> {
        let names: Vec<&str> = Counter::ALL.iter().map(|c| c.name()).collect();
        let rows = self.store.query(
            &format!(
                "SELECT generation_floor, recounted_at, object_name, layout_shards,
                        layout_previous, layout_since, layout_window, expires_by,
                        v1_upgraded_at, trend, jurisdiction, {}
                 FROM ledger_state WHERE id = 1",
                names.join(", ")
            ),
            &[],
        )?;
        let row = rows
            .first()
            .ok_or_else(|| StoreError::Decode("the ledger_state row is missing".into()))?;
        let mut stored = Stored {
            generation_floor: row.int(0)?,
            recounted_at: row.int(1)?,
            object_name: row.opt_text(2)?,
            layout: match (row.opt_int(3)?, row.opt_int(5)?, row.opt_int(6)?) {
                (Some(shards), Some(since), Some(window_ms)) => Some(LayoutRecord {
                    shards: shards.clamp(1, i64::from(u32::MAX)) as u32,
                    previous: row
                        .opt_int(4)?
                        .map(|p| p.clamp(1, i64::from(u32::MAX)) as u32),
                    since,
                    window_ms,
                }),
                _ => None,
            },
            expires_by: row.int(7)?,
            v1_upgraded_at: row.opt_int(8)?,
            trend: trend::from_json(&row.text(9)?)?,
            jurisdiction: row.opt_text(10)?,
            ..Stored::default()
        };
        for (i, c) in Counter::ALL.iter().enumerate() {
            stored.counters.insert(*c, row.int(i + 11)?);
        }
        Ok(stored)
    }

    /// The object's name as it was recorded (see [`Ledger::record_name`]).
    pub fn object_name(&self) -> Result<Option<String>, StoreError> {
        self.with_stored(|s| s.object_name.clone())
    }

    /// Records the object's name, once: later starts read it back even if
    /// the runtime does not hand the name over (one row, once per object).
    pub fn record_name(&self, name: &str) -> Result<(), StoreError> {
        if self.with_stored(|s| s.object_name.as_deref() == Some(name))? {
            return Ok(());
        }
        self.store.execute(
            "UPDATE ledger_state SET object_name = ? WHERE id = 1",
            &[name.into()],
        )?;
        if let Some(stored) = self.stored.borrow_mut().as_mut() {
            stored.object_name = Some(name.to_string());
        }
        Ok(())
    }

    /// The tenant's layout as recorded here (this object being its registry).
    pub fn layout_record(&self) -> Result<Option<LayoutRecord>, StoreError> {
        self.with_stored(|s| s.layout)
    }

    /// Records the tenant's layout (one row, on a layout change only).
    pub fn record_layout(&self, record: &LayoutRecord) -> Result<(), StoreError> {
        self.store.execute(
            "UPDATE ledger_state SET layout_shards = ?, layout_previous = ?, layout_since = ?,
                 layout_window = ?
             WHERE id = 1",
            &[
                i64::from(record.shards).into(),
                record.previous.map(i64::from).into(),
                record.since.into(),
                record.window_ms.into(),
            ],
        )?;
        if let Some(stored) = self.stored.borrow_mut().as_mut() {
            stored.layout = Some(*record);
        }
        Ok(())
    }

    /// Does this ledger hold `key` — a record not yet past its window? (A
    /// retired shard answers only for the keys it holds.) While an upgrade
    /// from schema 1 is under way, a record still set aside counts too.
    pub fn holds(&self, key: &str, now: Millis) -> Result<bool, StoreError> {
        if self
            .read(key)?
            .is_some_and(|record| !record.is_expired(now))
        {
            return Ok(true);
        }
        Ok(self.v1_set_aside.get() && super::schema::v1_holds(&self.store, key, now)?)
    }

    /// The jurisdiction the tenant's keys live in, as its unrestricted
    /// object recorded it (`crate::config::jurisdictions`); `None`: none
    /// recorded. Read with the state row: no row of its own.
    pub fn recorded_jurisdiction(&self) -> Result<Option<String>, StoreError> {
        self.with_stored(|s| s.jurisdiction.clone())
    }

    /// Records where the tenant's keys live (one row, once per tenant).
    pub fn record_jurisdiction(&self, jurisdiction: &str) -> Result<(), StoreError> {
        self.store.execute(
            "UPDATE ledger_state SET jurisdiction = ? WHERE id = 1",
            &[jurisdiction.into()],
        )?;
        if let Some(stored) = self.stored.borrow_mut().as_mut() {
            stored.jurisdiction = Some(jurisdiction.to_string());
        }
        Ok(())
    }

    /// Does this object hold any record at all (live or not yet swept)?
    /// One row read.
    pub fn holds_any(&self) -> Result<bool, StoreError> {
        Ok(!self
            .store
            .query("SELECT 1 FROM idempotency_records LIMIT 1", &[])?
            .is_empty())
    }

    /// A counter as it stands: stored plus pending.
    pub fn count_of(&self, counter: Counter) -> Result<i64, StoreError> {
        let stored = self.with_stored(|s| s.counters.get(&counter).copied().unwrap_or(0))?;
        Ok(stored + self.pending.borrow().delta(counter) + self.tally().delta(counter))
    }

    /// The number of records the quota counts (kept as counters so a claim
    /// never scans the table).
    pub fn held_records(&self) -> Result<i64, StoreError> {
        let mut held = 0;
        for c in [Counter::InFlight, Counter::Completed, Counter::Released] {
            held += self.count_of(c)?;
        }
        Ok(held)
    }

    /// Every generation at or below this has been swept: new records start
    /// above it.
    pub(super) fn generation_floor(&self) -> Result<i64, StoreError> {
        let stored = self.with_stored(|s| s.generation_floor)?;
        let pending = self.pending.borrow().swept_generation.unwrap_or(0);
        let in_transaction = self.tally().swept_generation.unwrap_or(0);
        Ok(stored.max(pending).max(in_transaction))
    }

    /// Adds `n` replays of `key` (completed at `generation`) that were
    /// answered without asking the ledger (a gateway's replay cache). They
    /// are written with the next flush, like the ledger's own.
    pub fn add_replays(&self, key: &str, generation: i64, n: i64, now: Millis) {
        self.pending
            .borrow_mut()
            .add_replays(key, generation, n, now);
    }

    /// Writes counts reported from elsewhere — replays a gateway answered
    /// from its cache (`(key, generation, n)`) and its failed completions —
    /// at once, in a transaction of their own and apart from what is
    /// pending: if the write fails none of them is kept, so a caller that
    /// is told so and sends them again has them counted once, never twice.
    pub fn write_reported(
        &self,
        replays: &[(&str, i64, i64)],
        complete_failed: i64,
        now: Millis,
    ) -> Result<(), StoreError> {
        let mut counts = Pending::default();
        for (key, generation, n) in replays {
            counts.add_replays(key, *generation, *n, now);
        }
        if complete_failed > 0 {
            counts.add(Counter::CompleteFailed, complete_failed, now);
        }
        if counts.is_empty() {
            return Ok(());
        }
        self.store.atomically(|| self.write_pending(&counts))?;
        self.stored_add(&counts);
        Ok(())
    }

    /// Adds `n` to `counter` with the next flush (counts reported by a
    /// caller, such as a gateway's failed completions).
    pub fn add_count(&self, counter: Counter, n: i64, now: Millis) {
        if n > 0 {
            self.pending.borrow_mut().add(counter, n, now);
        }
    }

    /// Are there counts not yet written? (The object flushes them on a
    /// timer.)
    pub fn has_pending(&self) -> bool {
        !self.pending.borrow().is_empty()
    }

    /// After an operation's transaction committed: writes the pending
    /// counts if due, never failing the operation (what it wrote stands,
    /// and its caller must hear so). A failed write keeps the counts in
    /// memory for the next flush.
    pub(crate) fn flush_after_commit(&self, now: Millis) {
        let _kept_for_the_next_flush = self.flush_if_due(now);
    }

    /// Writes the pending counts if enough have accumulated.
    pub fn flush_if_due(&self, now: Millis) -> Result<(), StoreError> {
        if self.pending.borrow().is_due(now) {
            self.flush_pending()?;
        }
        Ok(())
    }

    /// Writes the counts kept in memory (after, never inside, a ledger
    /// transaction). If the write fails the counts are kept for the next
    /// flush.
    pub fn flush_pending(&self) -> Result<(), StoreError> {
        // Never inside a ledger transaction: if it rolled back, the counts
        // taken for this write would be lost with it.
        if self.depth.get() > 0 || self.pending.borrow().is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        let written = self.store.atomically(|| self.write_pending(&pending));
        match written {
            Ok(()) => self.stored_add(&pending),
            Err(_) => self.pending.borrow_mut().merge(pending),
        }
        written
    }

    /// Keeps the cached row in step with a flush that committed.
    pub(super) fn stored_add(&self, pending: &Pending) {
        if let Some(stored) = self.stored.borrow_mut().as_mut() {
            for (c, n) in &pending.counters {
                *stored.counters.entry(*c).or_insert(0) += n;
            }
            if let Some(g) = pending.swept_generation {
                stored.generation_floor = stored.generation_floor.max(g);
            }
            if let Some(h) = pending.expires_by {
                stored.expires_by = stored.expires_by.max(h);
            }
            // As the write did it (see `trend::set_clause`).
            if let Some(from) = trend::kept_from(&pending.trend) {
                trend::merge(&mut stored.trend, &pending.trend);
                trend::trim(&mut stored.trend, from);
            }
        }
    }

    pub(super) fn write_pending(&self, pending: &Pending) -> Result<(), StoreError> {
        let mut sets = Vec::new();
        let mut params: Vec<SqlValue> = Vec::new();
        for c in Counter::ALL {
            let n = pending.delta(c);
            if n != 0 {
                sets.push(format!("{0} = {0} + ?", c.name()));
                params.push(n.into());
            }
        }
        if let Some(g) = pending.swept_generation {
            sets.push("generation_floor = MAX(generation_floor, ?)".to_string());
            params.push(g.into());
        }
        if let Some(h) = pending.expires_by {
            sets.push("expires_by = MAX(expires_by, ?)".to_string());
            params.push(h.into());
        }
        // The stored minutes to drop are those this instance knows of (none
        // if it has not read the row: reading it only for that would cost a
        // row; the next write drops them).
        let none = trend::Trend::new();
        let clause = match self.stored.borrow().as_ref() {
            Some(stored) => trend::set_clause(&pending.trend, &stored.trend),
            None => trend::set_clause(&pending.trend, &none),
        };
        if let Some(clause) = clause {
            sets.push(clause);
        }
        if !sets.is_empty() {
            self.store.execute(
                &format!("UPDATE ledger_state SET {} WHERE id = 1", sets.join(", ")),
                &params,
            )?;
        }
        for ((key, generation), n) in &pending.replays {
            // Guard: the record that was replayed, still completed at the
            // generation that was replayed (never a reborn record).
            self.store.execute(
                "UPDATE idempotency_records SET replays = replays + ?
                 WHERE key = ? AND generation = ? AND state = 'completed'",
                &[(*n).into(), key.as_str().into(), (*generation).into()],
            )?;
        }
        Ok(())
    }
}
