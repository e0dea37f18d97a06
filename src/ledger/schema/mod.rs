//! The ledger's tables (schema version 10), and the in-place upgrade of an
//! object written by an earlier version (1 to 9).
//!
//! Role: the one place the schema is written down. The state machine in
//! `ledger::mod` relies on every constraint here. Billed rows decided the
//! shape: the platform bills one row written per table row and per index
//! entry a write touches, so
//! - `idempotency_records` is `WITHOUT ROWID`, keyed by `key`: a new record
//!   is one table row plus its `sweep_at` index entry (a rowid table with
//!   a text primary key would add a hidden index entry);
//! - the index is on `sweep_at` — the earliest time the record may expire,
//!   set by its claim (claim time + retention) — not on `expires_at`, which
//!   its completion moves (completion time + retention): a completion then
//!   writes only its row;
//! - every counter lives in the single `ledger_state` row, written once per
//!   flush (see `pending`), never per operation;
//! - so does the object's *expiry horizon* (`expires_by`, schema 3): at or
//!   after every expiry it granted that neither its layout's reshard window
//!   nor the latest `sweep_at` plus `HORIZON_GAP_MS` covers (a per-call
//!   retention longer than the configured one, a completion long after its
//!   claim, or any grant while its layout is retired; `config::reshard`,
//!   `Ledger::horizon`). It is written in the granting transaction, and
//!   only when it grows by more than its slack — never with the configured
//!   retention and a completion soon after its claim;
//! - and so does the per-minute trend (`trend`, schema 4: the last hour's
//!   outcome counts by minute, see `trend`), written in the counters' own
//!   row write: it costs no row;
//! - and so does every counter added since (`quota_tombstones`, schema
//!   5; `evicted`, schema 9): one column of that row, added in place;
//! - the claim attempt that holds a record's lease (`lease_attempt`,
//!   `lease_took_over`, schema 6: see `Ledger::claim_as`) is two columns
//!   of the record's own row, written by the grant's own statement, and
//!   never indexed: it costs no row;
//! - the records in flight have an index of their own (schema 7), partial
//!   — `WHERE state = 'in_flight'` — so a listing of `in_flight` reaches
//!   them without walking the completed ones (docs/contract.md §2.7): a
//!   record holds an entry there only while it is in flight, so a grant
//!   that puts it in flight (a new key through `claim`, a reclaim) writes
//!   one more index entry, and so does a takeover (it moves `sweep_at`);
//!   its settlement (completion or release) removes the entry, which the
//!   platform does not bill (bench/cost.mjs measures both). A key new to
//!   `execute` is written already completed: no entry;
//! - the lease token of a record's latest grant (`lease_token`, schema
//!   10: see `ledger::lease`) is one column of the record's own row,
//!   written by the grant's own statement, kept by its settlement (a
//!   repeated settlement is told it landed) and never indexed: it costs
//!   no row;
//! - the jurisdiction a tenant's keys live in (`jurisdiction`, schema 8:
//!   see `crate::config::jurisdictions`), recorded by the tenant's
//!   unrestricted object, is one column of the state row, read with it:
//!   checking it costs no row.
//!
//! What must stay true here:
//! - One row per key; the tenant scope is the Durable Object itself, so no
//!   tenant column exists (a key can never be seen by another tenant).
//! - `sweep_at <= expires_at` for every record, and `sweep_at` is indexed:
//!   the sweep finds candidates through that index only, and the alarm set
//!   at the earliest `sweep_at` is never late.
//! - Times are epoch milliseconds (safe as JavaScript numbers).
//! - An upgrade runs in one transaction on the object's first start with
//!   the new code and keeps every record (its generation, lease, stored
//!   response and replays) and every counter; running it twice changes
//!   nothing.

mod tables;
mod v1;

use super::store::{RowExt, SqlStore, StoreError};
use tables::{has_table, state_table, IN_FLIGHT_INDEX, RECORDS, SWEEP_INDEX};
pub use tables::{IN_FLIGHT_INDEX_NAME, SCHEMA_VERSION};
use v1::upgrade_v1;
pub use v1::{
    upgrade_v1_key, upgrade_v1_step, upgrading_v1, v1_holds, UPGRADE_STEP_BYTES,
    UPGRADE_STEP_RECORDS, V1_RECORDS,
};

/// What an object holds when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Nothing yet: a new object.
    Empty,
    /// Schema version 1 (`ledger_counters`, a rowid records table).
    V1,
    /// Schema version 2 (no expiry horizon, no upgrade time).
    V2,
    /// Schema version 3 (no per-minute trend).
    V3,
    /// Schema version 4 (no `quota_tombstones` counter).
    V4,
    /// Schema version 5 (no claim attempt on records).
    V5,
    /// Schema version 6 (no index of the records in flight).
    V6,
    /// Schema version 7 (no recorded jurisdiction).
    V7,
    /// Schema version 8 (no `evicted` counter).
    V8,
    /// Schema version 9 (no lease token on records).
    V9,
    /// This version's schema.
    Current,
    /// A version newer than this code knows: refuse to touch it.
    Newer(i64),
}

impl Found {
    /// The earlier version an upgrade starts from (`None`: a new object,
    /// this version's schema, or a newer one — nothing to upgrade).
    pub fn upgraded_from(self) -> Option<i64> {
        match self {
            Found::V1 => Some(1),
            Found::V2 => Some(2),
            Found::V3 => Some(3),
            Found::V4 => Some(4),
            Found::V5 => Some(5),
            Found::V6 => Some(6),
            Found::V7 => Some(7),
            Found::V8 => Some(8),
            Found::V9 => Some(9),
            Found::Empty | Found::Current | Found::Newer(_) => None,
        }
    }
}

/// Which schema the database holds.
pub fn found(store: &impl SqlStore) -> Result<Found, StoreError> {
    if has_table(store, "ledger_state")? {
        let rows = store.query("SELECT schema_version FROM ledger_state WHERE id = 1", &[])?;
        let version = rows.first().map(|r| r.int(0)).transpose()?.unwrap_or(0);
        return Ok(match version {
            v if v == SCHEMA_VERSION => Found::Current,
            v if v > SCHEMA_VERSION => Found::Newer(v),
            2 => Found::V2,
            3 => Found::V3,
            4 => Found::V4,
            5 => Found::V5,
            6 => Found::V6,
            7 => Found::V7,
            8 => Found::V8,
            9 => Found::V9,
            _ => Found::V1,
        });
    }
    if has_table(store, "idempotency_records")? {
        return Ok(Found::V1);
    }
    Ok(Found::Empty)
}

/// Creates the schema, or upgrades an earlier one in place (one
/// transaction: the caller's `atomically`); `now` is the upgrade's time
/// (recorded by an upgrade from schema 1).
pub fn migrate(store: &impl SqlStore, now: i64) -> Result<Found, StoreError> {
    let was = found(store)?;
    match was {
        Found::Current => {}
        Found::Newer(v) => {
            return Err(StoreError::Sql(format!(
                "the database has ledger schema version {v}; this code knows {SCHEMA_VERSION}"
            )))
        }
        Found::Empty => create(store)?,
        Found::V1 => upgrade_v1(store, now)?,
        Found::V2 => {
            upgrade_v2(store)?;
            upgrade_v3(store)?;
            upgrade_v4(store)?;
            upgrade_v5(store)?;
            upgrade_v6(store)?;
            upgrade_v7(store)?;
            upgrade_v8(store)?;
            upgrade_v9(store)?
        }
        Found::V3 => {
            upgrade_v3(store)?;
            upgrade_v4(store)?;
            upgrade_v5(store)?;
            upgrade_v6(store)?;
            upgrade_v7(store)?;
            upgrade_v8(store)?;
            upgrade_v9(store)?
        }
        Found::V4 => {
            upgrade_v4(store)?;
            upgrade_v5(store)?;
            upgrade_v6(store)?;
            upgrade_v7(store)?;
            upgrade_v8(store)?;
            upgrade_v9(store)?
        }
        Found::V5 => {
            upgrade_v5(store)?;
            upgrade_v6(store)?;
            upgrade_v7(store)?;
            upgrade_v8(store)?;
            upgrade_v9(store)?
        }
        Found::V6 => {
            upgrade_v6(store)?;
            upgrade_v7(store)?;
            upgrade_v8(store)?;
            upgrade_v9(store)?
        }
        Found::V7 => {
            upgrade_v7(store)?;
            upgrade_v8(store)?;
            upgrade_v9(store)?
        }
        Found::V8 => {
            upgrade_v8(store)?;
            upgrade_v9(store)?
        }
        Found::V9 => upgrade_v9(store)?,
    }
    Ok(was)
}

fn create(store: &impl SqlStore) -> Result<(), StoreError> {
    store.execute(RECORDS, &[])?;
    store.execute(SWEEP_INDEX, &[])?;
    store.execute(IN_FLIGHT_INDEX, &[])?;
    store.execute(&state_table(), &[])?;
    store.execute(
        "INSERT INTO ledger_state (id, schema_version) VALUES (1, ?)",
        &[SCHEMA_VERSION.into()],
    )
}

/// The expiry horizon an upgrade starts from: the latest expiry any record
/// holds (one scan, once; earlier schemas did not keep it).
const LATEST_EXPIRY: &str = "SELECT COALESCE(MAX(expires_at), 0) FROM idempotency_records";

/// Schema 2 → 3: the state row gains the expiry horizon (the latest expiry
/// any record holds: schema 2 did not keep it) and the upgrade-from-v1
/// time (NULL: schema 2 kept the layout history). [`upgrade_v3`] follows.
fn upgrade_v2(store: &impl SqlStore) -> Result<(), StoreError> {
    store.execute(
        "ALTER TABLE ledger_state ADD COLUMN expires_by INTEGER NOT NULL DEFAULT 0",
        &[],
    )?;
    store.execute(
        "ALTER TABLE ledger_state ADD COLUMN v1_upgraded_at INTEGER",
        &[],
    )?;
    store.execute(
        &format!(
            "UPDATE ledger_state SET schema_version = 3, expires_by = ({LATEST_EXPIRY}) WHERE id = 1"
        ),
        &[],
    )
}

/// Schema 3 → 4: the state row gains the per-minute trend, empty (schema 3
/// kept no counts by minute). One statement on one row, whatever the
/// object holds. [`upgrade_v4`] follows.
fn upgrade_v3(store: &impl SqlStore) -> Result<(), StoreError> {
    store.execute(
        "ALTER TABLE ledger_state ADD COLUMN trend TEXT NOT NULL DEFAULT '{}'",
        &[],
    )
}

/// Schema 4 → 5: the state row gains the `quota_tombstones` counter, at 0
/// (schema 4 stored every body it was given). One statement on one row,
/// whatever the object holds. [`upgrade_v5`] follows.
fn upgrade_v4(store: &impl SqlStore) -> Result<(), StoreError> {
    store.execute(
        "ALTER TABLE ledger_state ADD COLUMN quota_tombstones INTEGER NOT NULL DEFAULT 0",
        &[],
    )
}

/// Schema 5 → 6: records gain the claim attempt holding their lease,
/// unnamed (schema 5 kept none, so a lease granted before the upgrade is
/// answered as before: its retry meets `in_flight`). `ADD COLUMN` changes
/// the table's definition only — no record is rewritten, whatever the
/// object holds — and adds no index entry; then the version, with the
/// expiry horizon raised to the latest expiry the object holds: schemas 3
/// to 5 raised it only past the reshard window, so a record completed long
/// after its claim may lie beyond the latest `sweep_at` plus
/// `HORIZON_GAP_MS` that `Ledger::horizon` reads from now on (issue 33;
/// that statement reads every record once, as the 2 → 3 upgrade did).
/// [`upgrade_v6`] follows.
fn upgrade_v5(store: &impl SqlStore) -> Result<(), StoreError> {
    store.execute(
        "ALTER TABLE idempotency_records ADD COLUMN lease_attempt TEXT",
        &[],
    )?;
    store.execute(
        "ALTER TABLE idempotency_records ADD COLUMN lease_took_over INTEGER NOT NULL DEFAULT 0",
        &[],
    )?;
    store.execute(
        &format!(
            "UPDATE ledger_state SET schema_version = 6,
                 expires_by = MAX(expires_by, ({LATEST_EXPIRY})) WHERE id = 1"
        ),
        &[],
    )
}

/// Schema 6 → 7: the index of the records in flight (see the module doc),
/// built from the records in one statement — it reads every record once
/// and writes one entry per record in flight (few: a lease is short) —
/// then the version. No record is rewritten; `IF NOT EXISTS` makes a
/// second run a no-op. Self-contained: it needs only schema 6's table.
/// [`upgrade_v7`] follows.
fn upgrade_v6(store: &impl SqlStore) -> Result<(), StoreError> {
    store.execute(IN_FLIGHT_INDEX, &[])?;
    store.execute(
        "UPDATE ledger_state SET schema_version = 7 WHERE id = 1",
        &[],
    )
}

/// Schema 7 → 8: the state row gains the jurisdiction the tenant's keys
/// live in, NULL (schema 7 knew none: every tenant was unrestricted, so
/// its keys are where they were). One statement on one row, whatever the
/// object holds; then the version. [`upgrade_v8`] follows.
fn upgrade_v7(store: &impl SqlStore) -> Result<(), StoreError> {
    store.execute("ALTER TABLE ledger_state ADD COLUMN jurisdiction TEXT", &[])?;
    store.execute(
        "UPDATE ledger_state SET schema_version = 8 WHERE id = 1",
        &[],
    )
}

/// Schema 8 → 9: the state row gains the `evicted` counter, at 0 (schema 8
/// could not evict). One column of one row, whatever the object holds; the
/// trend's stored minutes of seven counts are read as they are (see
/// `trend`). Then the version. [`upgrade_v9`] follows.
fn upgrade_v8(store: &impl SqlStore) -> Result<(), StoreError> {
    store.execute(
        "ALTER TABLE ledger_state ADD COLUMN evicted INTEGER NOT NULL DEFAULT 0",
        &[],
    )?;
    store.execute(
        "UPDATE ledger_state SET schema_version = 9 WHERE id = 1",
        &[],
    )
}

/// Schema 9 → 10: records gain the lease token of their latest grant,
/// NULL (schema 9 minted none, so a claim granted before the upgrade is
/// settled by its generation alone, as it was granted). `ADD COLUMN`
/// changes the table's definition only — no record is rewritten, whatever
/// the object holds — and adds no index entry; then the version.
fn upgrade_v9(store: &impl SqlStore) -> Result<(), StoreError> {
    store.execute(
        "ALTER TABLE idempotency_records ADD COLUMN lease_token TEXT",
        &[],
    )?;
    store.execute(
        "UPDATE ledger_state SET schema_version = ? WHERE id = 1",
        &[SCHEMA_VERSION.into()],
    )
}
