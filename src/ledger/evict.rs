//! Evict: an operator removes one key's record, so the next request with
//! the key runs again (docs/contract.md §2.11) — the way out of a poisoned
//! answer (a stored `500`, a `400` the client can never get past) before
//! its retention ends.
//!
//! Role: the one move that deletes a record inside its window, in one
//! guarded statement and one transaction.
//!
//! What must stay true here:
//! - A completed or released record is removed; an in-flight one only once
//!   its lease has ended — plus `owner_grace_ms`, which a retired shard
//!   passes (see below) — (the guard is in the `DELETE`'s `WHERE`), else
//!   the caller hears how long it has left and nothing changes.
//! - The generation never goes back: the evicted record's generation
//!   raises the generation floor in the transaction that deletes it (as the
//!   sweep's does), so the key's next record starts above it and an owner
//!   fenced out before the eviction stays fenced out after it.
//! - An eviction is counted (`evicted`, and the per-state count it leaves)
//!   in that same transaction's write: never a count without its delete.
//! - A record past its window (expired, not yet swept) is not found, as a
//!   lookup does not find it.
//! - The floor fences only this object's records. A key evicted from an
//!   object of a retired shard layout (a reshard) is claimed next in its
//!   current object, whose generations are its own: so a retired shard
//!   evicts an in-flight record only once its owner can no longer settle
//!   (its lease plus the settle grace, the sweep's own rule), and no
//!   owner of the evicted generation is left to meet the new record.

use serde::{Deserialize, Serialize};

use super::clock::Millis;
use super::machine::Ledger;
use super::outcome::Counter;
use super::record::{view_from_row, RecordView, VIEW_COLUMNS};
use super::store::{SqlStore, StoreError};

/// What an eviction came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case", try_from = "EvictWire")]
pub enum EvictOutcome {
    /// The record was removed; this is how it stood (its state, generation
    /// and stored status: what the operator's log line names).
    Evicted { record: RecordView },
    /// An owner holds a live lease: nothing changed; it ends in
    /// `retry_after_ms`.
    InFlight {
        generation: i64,
        retry_after_ms: i64,
    },
    /// No record for this key within its window: nothing changed.
    NotFound,
}

/// RPC v1's flat answer as it is read back (see `outcome::wire`: no
/// derived tagged deserializer).
#[derive(Deserialize)]
struct EvictWire {
    outcome: String,
    record: Option<RecordView>,
    generation: Option<i64>,
    retry_after_ms: Option<i64>,
}

impl TryFrom<EvictWire> for EvictOutcome {
    type Error = String;

    fn try_from(w: EvictWire) -> Result<EvictOutcome, String> {
        let missing = |field: &str| format!("missing field `{field}`");
        match w.outcome.as_str() {
            "evicted" => Ok(EvictOutcome::Evicted {
                record: w.record.ok_or_else(|| missing("record"))?,
            }),
            "in_flight" => Ok(EvictOutcome::InFlight {
                generation: w.generation.ok_or_else(|| missing("generation"))?,
                retry_after_ms: w.retry_after_ms.ok_or_else(|| missing("retry_after_ms"))?,
            }),
            "not_found" => Ok(EvictOutcome::NotFound),
            other => Err(format!(
                "unknown outcome `{other}`, expected one of `evicted`, `in_flight`, `not_found`"
            )),
        }
    }
}

impl<S: SqlStore> Ledger<S> {
    /// Removes `key`'s record if it is completed or released, or in flight
    /// with its lease ended `owner_grace_ms` ago or more, and within its
    /// window; raises the generation floor to its generation and counts
    /// it, in the same transaction.
    /// Rows (`bench/cost.mjs`): one `DELETE` of the record (its index entry
    /// with it) and the `ledger_state` row written (floor and counts) — 2
    /// written, 3 read; a refusal writes nothing and reads the record once
    /// more to say why.
    pub fn evict(
        &self,
        key: &str,
        owner_grace_ms: Millis,
        now: Millis,
    ) -> Result<EvictOutcome, StoreError> {
        let owner_grace_ms = owner_grace_ms.max(0);
        let out = self.transaction_counting(true, || {
            self.upgrade_key_first(key)?;
            // Guard: within its window, and no live lease (nor one ended
            // less than the owner's grace ago) — a running owner's record is
            // never evicted (it may still complete).
            let rows = self.store.query(
                &format!(
                    "DELETE FROM idempotency_records
                     WHERE key = ?1 AND expires_at > ?2
                       AND NOT (state = 'in_flight' AND lease_expires_at + ?3 > ?2)
                     RETURNING {VIEW_COLUMNS}"
                ),
                &[key.into(), now.into(), owner_grace_ms.into()],
            )?;
            let Some(row) = rows.first() else {
                return self.not_evicted(key, owner_grace_ms, now);
            };
            let mut record = view_from_row(row, 0, key.to_string())?;
            // Replays not yet written would have landed on this record.
            record.replays += self.pending.borrow().record_replays(key, record.generation);
            let mut tally = self.tally();
            tally.add(Counter::of_state(record.state), -1, now);
            tally.add(Counter::Evicted, 1, now);
            tally.swept(record.generation, now);
            Ok(EvictOutcome::Evicted { record })
        })?;
        self.flush_after_commit(now);
        Ok(out)
    }

    /// Why nothing was evicted: an owner that may still settle (and how
    /// long until it no longer may), or no record within its window.
    fn not_evicted(
        &self,
        key: &str,
        owner_grace_ms: Millis,
        now: Millis,
    ) -> Result<EvictOutcome, StoreError> {
        Ok(match self.read(key)? {
            Some(r) if r.expires_at > now && r.lease_live(now - owner_grace_ms) => {
                let owner_done = r.lease_expires_at.map_or(now, |end| end + owner_grace_ms);
                EvictOutcome::InFlight {
                    generation: r.generation,
                    retry_after_ms: (owner_done - now).max(1),
                }
            }
            _ => EvictOutcome::NotFound,
        })
    }
}
