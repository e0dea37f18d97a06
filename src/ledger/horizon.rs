//! The expiry horizon: a time at or after the expiry of every record this
//! ledger holds, whatever configuration granted it — what a tenant's
//! registry asks before a reshard forgets a layout (docs/contract.md §8).
//!
//! Role: keep the horizon at no extra row per request (most grants expire
//! within [`HORIZON_GAP_MS`] of their `sweep_at`; the rest raise a stored
//! horizon in their own transaction) and answer it in one index read.
//!
//! What must stay true here: every record's expiry is within
//! [`HORIZON_GAP_MS`] of its `sweep_at` or at most the stored horizon.

use super::clock::Millis;
use super::machine::Ledger;
use super::store::{RowExt, SqlStore, StoreError};

/// How far past a grant's expiry a raised horizon is set, so a steady
/// stream of long retentions raises it (one row) at most once an hour.
pub const HORIZON_SLACK_MS: Millis = 3_600_000;

/// How far a record's expiry may lie past its `sweep_at` without raising
/// the horizon: a completion within this long of its claim, with the
/// claim's retention (the default lease and origin timeout add up to 90 s),
/// or a claim whose lease and origin timeout outlast its retention by no
/// more. Longer ones raise the horizon (at most once per
/// [`HORIZON_SLACK_MS`]), so the latest `sweep_at` plus this gap — one
/// index read — bounds every other record's expiry.
pub const HORIZON_GAP_MS: Millis = 120_000;

impl<S: SqlStore> Ledger<S> {
    /// Keeps the expiry horizon ([`Ledger::expires_by`]) for a tenant's
    /// reshard: every expiry this ledger grants later than `now` + `cover`,
    /// or more than [`HORIZON_GAP_MS`] past its record's `sweep_at`, raises
    /// it, in the granting transaction. A current layout's object passes its
    /// reshard window (which covers what it grants with the configured
    /// retention, so that costs nothing), a retired one 0; `None` (the
    /// default: library mode, the embedded `Ledger`) keeps none.
    pub fn track_expiries_beyond(&self, cover: Option<Millis>) {
        self.horizon_cover.set(cover);
    }

    /// At or after every expiry this ledger granted beyond its cover (see
    /// [`Ledger::track_expiries_beyond`]), and every expiry it held when
    /// it was upgraded from an earlier schema; 0 if none.
    pub fn expires_by(&self) -> Result<Millis, StoreError> {
        self.with_stored(|s| s.expires_by)
    }

    /// At or after the expiry of every record this ledger holds, whatever
    /// retention and configuration granted it: the latest `sweep_at` (one
    /// read of its index) plus [`HORIZON_GAP_MS`], or
    /// [`Ledger::expires_by`] for the expiries tracked beyond that gap
    /// (see [`Ledger::track_expiries_beyond`]); 0 for an empty ledger that
    /// promised none. For the rare ask of a tenant's registry before a
    /// reshard forgets this object's layout (`config::reshard`).
    pub fn horizon(&self) -> Result<Millis, StoreError> {
        let rows = self
            .store
            .query("SELECT MAX(sweep_at) FROM idempotency_records", &[])?;
        let latest_sweep = rows.first().map(|r| r.opt_int(0)).transpose()?.flatten();
        let held = latest_sweep.map_or(0, |s| s.saturating_add(HORIZON_GAP_MS));
        Ok(held.max(self.expires_by()?))
    }

    /// A grant inside a transaction sets a record's expiry to `expires_at`
    /// and leaves its `sweep_at` at `sweep_at` (or lower): raises the
    /// horizon in that transaction if the expiry is beyond the horizon and
    /// either beyond the cover (see [`Ledger::track_expiries_beyond`]) or
    /// more than [`HORIZON_GAP_MS`] past `sweep_at` — so every record's
    /// expiry stays within the gap of its `sweep_at` or under the horizon
    /// ([`Ledger::horizon`]).
    pub(super) fn note_expiry(
        &self,
        expires_at: Millis,
        sweep_at: Millis,
        now: Millis,
    ) -> Result<(), StoreError> {
        let Some(cover) = self.horizon_cover.get() else {
            return Ok(());
        };
        if expires_at <= now.saturating_add(cover)
            && expires_at <= sweep_at.saturating_add(HORIZON_GAP_MS)
        {
            return Ok(());
        }
        let known = self
            .with_stored(|s| s.expires_by)?
            .max(self.written.borrow().expires_by.unwrap_or(0))
            .max(self.tally().expires_by.unwrap_or(0));
        if expires_at > known {
            self.tally()
                .raise_horizon(expires_at.saturating_add(HORIZON_SLACK_MS));
        }
        Ok(())
    }
}
