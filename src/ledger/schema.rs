//! The ledger's tables, created idempotently when an object starts.
//!
//! Role: the one place the schema is written down. The state machine in
//! `ledger::mod` relies on every constraint here.
//!
//! What must stay true here:
//! - One row per key; the tenant scope is the Durable Object itself, so no
//!   tenant column exists (a key can never be seen by another tenant).
//! - `expires_at` is indexed: the sweep deletes through that index only.
//! - Times are epoch milliseconds (safe as JavaScript numbers).

/// Statements run in order by `Ledger::migrate`. Each is idempotent.
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS idempotency_records (
        key              TEXT PRIMARY KEY NOT NULL,
        state            TEXT NOT NULL CHECK (state IN ('in_flight', 'completed', 'released')),
        generation       INTEGER NOT NULL CHECK (generation >= 1),
        fingerprint      TEXT NOT NULL,     -- overall digest (hex)
        components       TEXT NOT NULL,     -- JSON [{name, digest}], names what differed
        created_at       INTEGER NOT NULL,  -- first claim of this record
        claimed_at       INTEGER NOT NULL,  -- last claim or takeover
        lease_expires_at INTEGER,           -- in_flight only
        completed_at     INTEGER,
        expires_at       INTEGER NOT NULL,  -- sweep deletes at or after this
        response_status  INTEGER,
        response_headers TEXT,              -- JSON [[name, value]]
        response_body    BLOB,              -- NULL with retained = 0 is a tombstone
        retained         INTEGER,
        replays          INTEGER NOT NULL DEFAULT 0
    )",
    "CREATE INDEX IF NOT EXISTS idempotency_records_expires_at
        ON idempotency_records (expires_at)",
    "CREATE TABLE IF NOT EXISTS ledger_counters (
        name  TEXT PRIMARY KEY NOT NULL,
        value INTEGER NOT NULL
    )",
];
