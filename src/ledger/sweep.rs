//! The bounded sweep (docs/contract.md §4): deleting records past their
//! window, a batch at a time.
//!
//! What must stay true here: the sweep deletes at most `batch` records,
//! only with `expires_at <= now` and no live lease, found through the
//! `sweep_at` index, and writes the record counts and the generation floor
//! in the same transaction.

use serde::{Deserialize, Serialize};

use super::clock::{earliest, Millis};
use super::machine::Ledger;
use super::outcome::{Counter, KeyState};
use super::store::{RowExt, SqlStore, StoreError};

/// How often the alarm recounts the records per state (one read per
/// record): the per-state counts are otherwise kept by counting.
pub const RECOUNT_AFTER_MS: Millis = 3_600_000;

/// An object instance that starts holding at most this many records
/// recounts them at once (at most this many rows read), so counts its
/// previous instance had not written yet (a restart, an eviction) are
/// healed before anything reads them; a larger object waits for the
/// alarm's hourly recount.
pub const RECOUNT_ON_START_RECORDS: i64 = 10_000;

/// What one sweep batch did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepOutcome {
    pub deleted: usize,
    /// The batch was full: more expired records may remain.
    pub batch_full: bool,
    /// When the next record may expire, if any (see
    /// [`Ledger::next_sweep_at`]).
    pub next_expires_at: Option<Millis>,
    /// When the records per state are next recounted, while any are held
    /// (see [`Ledger::next_recount_at`]).
    #[serde(default)]
    pub next_recount_at: Option<Millis>,
}

/// The most records whose `sweep_at` has passed that
/// [`Ledger::next_sweep_at`] reads; with that many, the sweep is simply due.
pub const DUE_SCAN: i64 = 32;

/// How soon the alarm fires again after a full sweep batch (more expired
/// records may be waiting).
pub const FULL_BATCH_REARM_MS: Millis = 500;

impl SweepOutcome {
    /// Where the alarm goes after this batch: again within a second when
    /// the batch was full, else on the grid at the next expiry or the next
    /// recount, whichever comes first, or nowhere (no record left). The one
    /// rule of `TenantLedger`'s alarm and the embedded ledger's
    /// (`Ledger.alarm()` in JS asks the core for it).
    pub fn next_alarm_at(&self, now: Millis, interval_ms: Millis) -> Option<Millis> {
        if self.batch_full {
            return Some(now.saturating_add(FULL_BATCH_REARM_MS));
        }
        earliest(self.next_expires_at, self.next_recount_at)
            .map(|at| alarm_for(at, now, interval_ms))
    }
}

/// The alarm that sweeps a record which may expire at `at`: the grid point
/// at or after it, and never now or earlier.
pub fn alarm_for(at: Millis, now: Millis, interval_ms: Millis) -> Millis {
    on_grid(at.max(now.saturating_add(1)), interval_ms)
}

/// The first point of the `interval_ms` grid at or after `t`: the object
/// sets its alarms there, so every record expiring within one interval is
/// swept by one alarm.
pub fn on_grid(t: Millis, interval_ms: Millis) -> Millis {
    let interval = interval_ms.max(1);
    t.div_euclid(interval)
        .saturating_add(i64::from(t.rem_euclid(interval) != 0))
        .saturating_mul(interval)
}

impl<S: SqlStore> Ledger<S> {
    /// When the next sweep is due after `now`: the earliest time a record
    /// held may expire. Never after the earliest `expires_at` (each record's
    /// `sweep_at` is at or before its expiry). Bounded reads whatever the
    /// backlog: at most [`DUE_SCAN`] of the records whose `sweep_at` has
    /// passed (expired ones not yet swept, and runs a late completion kept
    /// within their retention) — when that many are there, the sweep is
    /// due now — and one index seek for the next `sweep_at` ahead.
    pub fn next_sweep_at(&self, now: Millis) -> Result<Option<Millis>, StoreError> {
        let rows = self.store.query(
            "SELECT due.least, due.n,
                    (SELECT MIN(sweep_at) FROM idempotency_records WHERE sweep_at > ?1)
             FROM (SELECT MIN(expires_at) AS least, COUNT(*) AS n
                   FROM (SELECT expires_at FROM idempotency_records
                         WHERE sweep_at <= ?1 ORDER BY sweep_at LIMIT ?2)) AS due",
            &[now.into(), DUE_SCAN.into()],
        )?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        // A full scan of due records: some beyond it may expire sooner.
        let due = if row.int(1)? >= DUE_SCAN {
            Some(now)
        } else {
            row.opt_int(0)?
        };
        Ok(earliest(due, row.opt_int(2)?))
    }

    /// Deletes at most `batch` records with `expires_at <= now`, found
    /// through the `sweep_at` index, writes the counts (the sweep's own and whatever
    /// was pending), recounts the records per state when that is due, and
    /// says when the next one expires.
    pub fn sweep(&self, now: Millis, batch: usize) -> Result<SweepOutcome, StoreError> {
        // The counts — the generation floor among them — are written in the
        // transaction that deletes: a floor kept only in memory could be lost
        // with the instance, and a swept key reborn at a generation a stale
        // owner still holds.
        let deleted = self.transaction_counting(true, || {
            // Guard: expires_at <= now — nothing inside its window is
            // deleted — and no live lease: a running owner's record is never
            // swept (the claim keeps expires_at >= the lease's end, so this
            // only matters for records written before that rule).
            let rows = self.store.query(
                "DELETE FROM idempotency_records
                 WHERE key IN (SELECT key FROM idempotency_records
                               WHERE sweep_at <= ?1 AND expires_at <= ?1
                                 AND NOT (state = 'in_flight' AND lease_expires_at > ?1)
                               ORDER BY sweep_at LIMIT ?2)
                 RETURNING state, generation",
                &[now.into(), (batch as i64).into()],
            )?;
            let mut tally = self.tally();
            for row in &rows {
                let state = KeyState::parse(&row.text(0)?).ok_or_else(|| {
                    StoreError::Decode("a swept record has no known state".into())
                })?;
                tally.add(Counter::of_state(state), -1, now);
                tally.add(Counter::Swept, 1, now);
                tally.swept(row.int(1)?, now);
            }
            Ok::<_, StoreError>(rows.len())
        })?;
        self.flush_pending()?;
        self.recount_when_due(now)?;
        Ok(SweepOutcome {
            deleted,
            batch_full: deleted >= batch,
            next_expires_at: self.next_sweep_at(now)?,
            next_recount_at: self.next_recount_at(now)?,
        })
    }

    /// When the alarm's recount of the records per state is next due
    /// ([`RECOUNT_AFTER_MS`] after the last — or from now, for an object
    /// never recounted — and never before `now`), while the counts say
    /// records are held; `None` otherwise. Read from memory (the
    /// `ledger_state` row, once per instance). The alarm is set for it as
    /// for an expiry, so a count an eviction lost heals within the hour
    /// even when no record expires for a day. (Never "at once": a new
    /// object's first records would otherwise bring a recount alarm, and
    /// its reads, within a minute of every start.)
    pub fn next_recount_at(&self, now: Millis) -> Result<Option<Millis>, StoreError> {
        if self.held_records()? <= 0 {
            return Ok(None);
        }
        let last = self.with_stored(|s| s.recounted_at)?;
        let from = if last == 0 { now } else { last };
        Ok(Some(
            from.saturating_add(RECOUNT_AFTER_MS)
                .max(now.saturating_add(1)),
        ))
    }

    /// Counts the records per state from the records themselves (one read
    /// per record) at most every [`RECOUNT_AFTER_MS`], so a count an
    /// eviction lost heals.
    fn recount_when_due(&self, now: Millis) -> Result<(), StoreError> {
        if now - self.with_stored(|s| s.recounted_at)? < RECOUNT_AFTER_MS {
            return Ok(());
        }
        self.recount(now, true)
    }

    /// On an object instance's first request: recounts the records per
    /// state if the object is small (see [`RECOUNT_ON_START_RECORDS`]).
    pub fn recount_on_start(&self, now: Millis) -> Result<(), StoreError> {
        if self.held_records()? > RECOUNT_ON_START_RECORDS {
            return Ok(());
        }
        self.recount(now, false)
    }

    /// Sets the per-state record counts from the records themselves. The
    /// alarm's hourly recount always writes (it records when it ran); a
    /// start-up recount writes only a count that was wrong, so a healthy
    /// object's start costs no row.
    fn recount(&self, now: Millis, scheduled: bool) -> Result<(), StoreError> {
        self.flush_pending()?;
        let mut counts = [0i64; 3];
        for row in self.store.query(
            "SELECT state, COUNT(*) FROM idempotency_records GROUP BY state",
            &[],
        )? {
            let n = row.int(1)?;
            match KeyState::parse(&row.text(0)?) {
                Some(KeyState::InFlight) => counts[0] = n,
                Some(KeyState::Completed) => counts[1] = n,
                Some(KeyState::Released) => counts[2] = n,
                None => {}
            }
        }
        let states = [Counter::InFlight, Counter::Completed, Counter::Released];
        let known =
            self.with_stored(|s| states.map(|c| s.counters.get(&c).copied().unwrap_or(0)))?;
        if !scheduled && known == counts {
            return Ok(());
        }
        self.store.execute(
            "UPDATE ledger_state SET in_flight = ?, completed = ?, released = ?, recounted_at = ?
             WHERE id = 1",
            &[
                counts[0].into(),
                counts[1].into(),
                counts[2].into(),
                now.into(),
            ],
        )?;
        // The row as written, kept in memory (nothing else writes it).
        if let Some(stored) = self.stored.borrow_mut().as_mut() {
            for (c, n) in states.into_iter().zip(counts) {
                stored.counters.insert(c, n);
            }
            stored.recounted_at = now;
        }
        Ok(())
    }
}
