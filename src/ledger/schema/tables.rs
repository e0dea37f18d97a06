//! The tables this version writes: the records, their two indexes and the
//! one `ledger_state` row, as `CREATE … IF NOT EXISTS` statements that
//! every step of the upgrade (`super`, `v1.rs`) creates its tables with.

use crate::ledger::outcome::Counter;
use crate::ledger::store::{SqlStore, StoreError};

/// The schema this code writes (`ledger_state.schema_version`).
pub const SCHEMA_VERSION: i64 = 10;

/// The records table (also the target of the v1 → v2 copy).
pub(super) const RECORDS: &str = "CREATE TABLE IF NOT EXISTS idempotency_records (
        key              TEXT PRIMARY KEY NOT NULL,
        state            TEXT NOT NULL CHECK (state IN ('in_flight', 'completed', 'released')),
        generation       INTEGER NOT NULL CHECK (generation >= 1),
        fingerprint      TEXT NOT NULL,     -- overall digest (hex)
        components       TEXT NOT NULL,     -- JSON [{name, digest}], names what differed
        created_at       INTEGER NOT NULL,  -- first claim of this record
        claimed_at       INTEGER NOT NULL,  -- last claim or takeover
        lease_expires_at INTEGER,           -- in_flight only
        completed_at     INTEGER,
        expires_at       INTEGER NOT NULL,  -- the record leaves its window here
        sweep_at         INTEGER NOT NULL,  -- <= expires_at: when the sweep may look
        response_status  INTEGER,
        response_headers TEXT,              -- JSON [[name, value]]
        response_body    BLOB,              -- NULL with retained = 0 is a tombstone
        retained         INTEGER,
        replays          INTEGER NOT NULL DEFAULT 0,
        lease_attempt    TEXT,              -- the claim attempt holding the lease (schema 6)
        lease_took_over  INTEGER NOT NULL DEFAULT 0, -- its grant was a takeover
        lease_token      TEXT               -- the grant's lease token (schema 10)
    ) WITHOUT ROWID";

pub(super) const SWEEP_INDEX: &str = "CREATE INDEX IF NOT EXISTS idempotency_records_sweep_at
        ON idempotency_records (sweep_at)";

/// The records in flight, in the `sweep_at` index's order (schema 7): the
/// `in_flight` listing walks it (`ledger::list`). Partial, so a completed
/// or released record has no entry here. Its name is the one the listing
/// names (`INDEXED BY`), so a missing index is an error, never a scan.
pub const IN_FLIGHT_INDEX_NAME: &str = "idempotency_records_in_flight";

pub(super) const IN_FLIGHT_INDEX: &str = "CREATE INDEX IF NOT EXISTS idempotency_records_in_flight
        ON idempotency_records (sweep_at) WHERE state = 'in_flight'";

/// The columns every version's records table has, in order (the v1 → 6
/// copy leaves the claim attempt unnamed).
pub(super) const RECORD_COLUMNS: &str =
    "key, state, generation, fingerprint, components, created_at, \
     claimed_at, lease_expires_at, completed_at, expires_at, response_status, response_headers, \
     response_body, retained, replays";

/// The one row of object-wide state: the schema version, every counter,
/// the generation floor (every generation at or below it has been swept, so
/// a new record starts above it), when the per-state counts were last
/// recounted from the records, and the object's own name (the tenant and
/// its place in a shard layout) as first seen and verified, so its role
/// never depends on the runtime handing the name over again; the expiry
/// horizon (schema 3, see the module doc), when the object's ledger was
/// upgraded from schema 1 (NULL: created by schema 2 or later) — schema 1
/// kept no layout history, so from then on it is unknown (`config::reshard`)
/// — the per-minute trend (schema 4, JSON, see `trend`), and, in a
/// tenant's unrestricted object, the jurisdiction its keys live in
/// (schema 8, NULL: none recorded).
pub(super) fn state_table() -> String {
    let counters: String = Counter::ALL
        .iter()
        .map(|c| format!(",\n        {} INTEGER NOT NULL DEFAULT 0", c.name()))
        .collect();
    format!(
        "CREATE TABLE IF NOT EXISTS ledger_state (
        id               INTEGER PRIMARY KEY CHECK (id = 1),
        schema_version   INTEGER NOT NULL,
        generation_floor INTEGER NOT NULL DEFAULT 0,
        recounted_at     INTEGER NOT NULL DEFAULT 0,
        object_name      TEXT,
        layout_shards    INTEGER,  -- the tenant's layout history, kept by its
        layout_previous  INTEGER,  -- registry (config::reshard): the layout,
        layout_since     INTEGER,  -- when it was recorded, and how long a
        layout_window    INTEGER,  -- layout it replaced may hold live keys
        expires_by       INTEGER NOT NULL DEFAULT 0,
        v1_upgraded_at   INTEGER,
        jurisdiction     TEXT,     -- where the tenant's keys live (schema 8)
        trend            TEXT NOT NULL DEFAULT '{{}}'{counters}
    )"
    )
}

pub(super) fn has_table(store: &impl SqlStore, name: &str) -> Result<bool, StoreError> {
    let rows = store.query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?",
        &[name.into()],
    )?;
    Ok(!rows.is_empty())
}
