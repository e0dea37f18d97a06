//! The upgrade from schema 1, in bounded steps: its records set aside, then
//! moved a batch at a time (by each request and alarm), and any one key
//! moved at once when its owner settles it.
//!
//! Role: the one large upgrade — every other schema step is a few columns
//! in one small transaction (`super`). What must stay true here: each step
//! is one transaction, bounded in records and bytes, that moves records
//! and deletes them from the set-aside table together; a key is never in
//! both tables; every record keeps its generation, lease and response.

use super::tables::{
    has_table, state_table, IN_FLIGHT_INDEX, RECORDS, RECORD_COLUMNS, SCHEMA_VERSION, SWEEP_INDEX,
};
use crate::ledger::outcome::Counter;
use crate::ledger::store::{RowExt, SqlStore, StoreError};

/// Where schema 1's records wait while they are moved (see
/// [`upgrade_v1`]): the table exists exactly while an upgrade from schema 1
/// is under way.
pub const V1_RECORDS: &str = "idempotency_records_v1";

/// Schema 1 → 8, its first step (one transaction, the caller's, bounded
/// whatever the object holds): the v1 records table is set aside (renamed,
/// which rewrites no row), this version's tables are created, and the
/// counters are moved from `ledger_counters` rows into the state row, with
/// `now` as the upgrade's time (schema 1 kept no layout history). The
/// per-state counts and the expiry horizon start at 0: each
/// [`upgrade_v1_step`] moves a bounded batch of records and adds what it
/// moved. Copying every record in one transaction, as this once did,
/// doubled the database's peak and could outlast a request's CPU limit on
/// a large object, leaving it unable to start at all.
pub(super) fn upgrade_v1(store: &impl SqlStore, now: i64) -> Result<(), StoreError> {
    store.execute(
        &format!("ALTER TABLE idempotency_records RENAME TO {V1_RECORDS}"),
        &[],
    )?;
    store.execute(RECORDS, &[])?;
    store.execute(SWEEP_INDEX, &[])?;
    store.execute(IN_FLIGHT_INDEX, &[])?;
    store.execute(&state_table(), &[])?;
    let had_counters = has_table(store, "ledger_counters")?;
    let value = |c: Counter| match c {
        Counter::InFlight | Counter::Completed | Counter::Released => "0".to_string(),
        _ if had_counters => format!(
            "COALESCE((SELECT value FROM ledger_counters WHERE name = '{}'), 0)",
            c.name()
        ),
        _ => "0".to_string(),
    };
    let names: Vec<&str> = Counter::ALL.iter().map(|c| c.name()).collect();
    let values: Vec<String> = Counter::ALL.iter().map(|c| value(*c)).collect();
    store.execute(
        &format!(
            "INSERT INTO ledger_state (id, schema_version, v1_upgraded_at, expires_by, {})
             SELECT 1, ?, ?, 0, {}",
            names.join(", "),
            values.join(", ")
        ),
        &[SCHEMA_VERSION.into(), now.into()],
    )?;
    if had_counters {
        store.execute("DROP TABLE ledger_counters", &[])?;
    }
    Ok(())
}

/// Records an upgrade step looks at, at most.
pub const UPGRADE_STEP_RECORDS: i64 = 2_000;

/// Bytes of stored bodies an upgrade step moves, at most (one record more
/// when a single one is larger).
pub const UPGRADE_STEP_BYTES: i64 = 8 * 1_048_576;

/// Is an upgrade from schema 1 under way (records still set aside)?
pub fn upgrading_v1(store: &impl SqlStore) -> Result<bool, StoreError> {
    has_table(store, V1_RECORDS)
}

/// One bounded step of the upgrade from schema 1 (one transaction, the
/// caller's): moves the oldest records set aside — at most
/// [`UPGRADE_STEP_RECORDS`], and no more than [`UPGRADE_STEP_BYTES`] of
/// bodies — into this version's table (`sweep_at` is the record's
/// `expires_at`), deletes them there (so the database never holds two
/// copies of much), and adds their per-state counts and latest expiry to
/// the state row. Once none is left the v1 table is dropped. `true` when
/// the upgrade is done. Safe to repeat: a step interrupted rolls back whole.
pub fn upgrade_v1_step(store: &impl SqlStore) -> Result<bool, StoreError> {
    if !upgrading_v1(store)? {
        return Ok(true);
    }
    // Bodies are measured by length(), which reads no blob content.
    let rows = store.query(
        &format!(
            "SELECT rowid, COALESCE(length(response_body), 0), state, expires_at
             FROM {V1_RECORDS} ORDER BY rowid LIMIT ?"
        ),
        &[UPGRADE_STEP_RECORDS.into()],
    )?;
    if rows.is_empty() {
        store.execute(&format!("DROP TABLE {V1_RECORDS}"), &[])?;
        return Ok(true);
    }
    let (mut last, mut bytes, mut latest) = (0i64, 0i64, 0i64);
    let mut counts = [0i64; 3];
    for (i, row) in rows.iter().enumerate() {
        let size = row.int(1)?;
        if i > 0 && bytes + size > UPGRADE_STEP_BYTES {
            break;
        }
        bytes += size;
        last = row.int(0)?;
        latest = latest.max(row.int(3)?);
        match row.text(2)?.as_str() {
            "in_flight" => counts[0] += 1,
            "completed" => counts[1] += 1,
            _ => counts[2] += 1,
        }
    }
    store.execute(
        &format!(
            "INSERT INTO idempotency_records ({RECORD_COLUMNS}, sweep_at)
             SELECT {RECORD_COLUMNS}, expires_at FROM {V1_RECORDS} WHERE rowid <= ?"
        ),
        &[last.into()],
    )?;
    store.execute(
        &format!("DELETE FROM {V1_RECORDS} WHERE rowid <= ?"),
        &[last.into()],
    )?;
    store.execute(
        "UPDATE ledger_state SET in_flight = in_flight + ?, completed = completed + ?,
             released = released + ?, expires_by = MAX(expires_by, ?)
         WHERE id = 1",
        &[
            counts[0].into(),
            counts[1].into(),
            counts[2].into(),
            latest.into(),
        ],
    )?;
    Ok(false)
}

/// Does the table set aside by an upgrade from schema 1 still hold `key`
/// with a record not yet past its window (at `now`)? False when no
/// upgrade is under way.
pub fn v1_holds(store: &impl SqlStore, key: &str, now: i64) -> Result<bool, StoreError> {
    if !upgrading_v1(store)? {
        return Ok(false);
    }
    let rows = store.query(
        &format!("SELECT 1 FROM {V1_RECORDS} WHERE key = ? AND expires_at > ?"),
        &[key.into(), now.into()],
    )?;
    Ok(!rows.is_empty())
}

/// Moves one key's record set aside by the upgrade from schema 1 into
/// this version's table ahead of the steps (one transaction, the
/// caller's: the settlement that needs it), and adds it to the state row as
/// a step would. Settling a claim the object granted never waits for the
/// rest of the upgrade, and no other key is touched. `true` when it moved
/// one (none when no upgrade is under way or the key is not set aside).
pub fn upgrade_v1_key(store: &impl SqlStore, key: &str) -> Result<bool, StoreError> {
    if !upgrading_v1(store)? {
        return Ok(false);
    }
    let rows = store.query(
        &format!("SELECT state, expires_at FROM {V1_RECORDS} WHERE key = ?"),
        &[key.into()],
    )?;
    let Some(row) = rows.first() else {
        return Ok(false);
    };
    // The counter named by the record's state (never a value interpolated).
    let counter = match row.text(0)?.as_str() {
        "in_flight" => "in_flight",
        "completed" => "completed",
        _ => "released",
    };
    let expires_at = row.int(1)?;
    // Guard: this key only; the step that would have moved it later finds
    // it gone from the v1 table.
    store.execute(
        &format!(
            "INSERT INTO idempotency_records ({RECORD_COLUMNS}, sweep_at)
             SELECT {RECORD_COLUMNS}, expires_at FROM {V1_RECORDS} WHERE key = ?"
        ),
        &[key.into()],
    )?;
    store.execute(
        &format!("DELETE FROM {V1_RECORDS} WHERE key = ?"),
        &[key.into()],
    )?;
    store.execute(
        &format!(
            "UPDATE ledger_state SET {counter} = {counter} + 1, expires_by = MAX(expires_by, ?)
             WHERE id = 1"
        ),
        &[expires_at.into()],
    )?;
    Ok(true)
}
