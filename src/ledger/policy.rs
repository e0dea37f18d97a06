//! The limits a claim is made under ([`ClaimPolicy`]) and the bounds on
//! what one record may store.
//!
//! Role: what the object (from its configuration) and the embedded ledger
//! (from its options) hand each claim; the ledger only reads it.

use super::clock::Millis;

pub use crate::protocol::limits::STORED_BODY_CEILING;

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
