//! Listing: a tenant's keys a page at a time (docs/contract.md §2.7), and a
//! sharded tenant's pages merged into one order.
//!
//! Role: walk the records through the `sweep_at` index, see `schema`, with
//! a keyset cursor `(sweep_at, key)`: newest first (descending); or, for
//! `in_flight`, oldest first (the stuck ones first) through the partial
//! index of the records in flight, in the same order, so that walk never
//! reads a completed or released record however many the object holds.
//! `sweep_at` is the record's claim time plus the retention, so the walk
//! is claim order whenever the retention is the configured one.
//!
//! What must stay true here:
//! - Read-only, and bounded by the page: a page scans at most
//!   [`SCAN_FACTOR`] × `limit` index entries (a state filter, or expired
//!   records the sweep has not reached, may leave a page short of `limit`
//!   while the walk goes on), stopping as soon as it holds `limit` keys;
//!   a window that held no key at all is read twice to find its end. The
//!   cursor is a position, never an offset: a page costs the same rows deep
//!   in the walk as at its start. (No window function: its temporary rows
//!   are billed as rows read, three per entry.) The `in_flight` walk's
//!   entries are records in flight only: its page reads at most
//!   2 × [`SCAN_FACTOR`] × `limit` rows and one probe whatever else the
//!   object holds, and `limit` + 2 when no record in flight is past its
//!   window (docs/contract.md §2.7).
//! - A page shows exactly what `lookup` would show of each key (records
//!   past their window are left out; pending replays are added), and it
//!   says where its walk stopped: every record between the page's start and
//!   that position was looked at, so the next page, started there, neither
//!   repeats nor skips a record whose position did not move meanwhile.
//! - A merged page (several objects) holds only keys at or before the
//!   earliest position an object stopped at, so no object's unscanned
//!   records are passed over.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::clock::Millis;
use super::machine::Ledger;
use super::outcome::KeyState;
use super::record::{view_from_row, RecordView, VIEW_COLUMNS};
use super::schema::IN_FLIGHT_INDEX_NAME;
use super::store::{RowExt, SqlStore, StoreError};

pub use crate::protocol::limits::{DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT};

/// A page scans at most this many times its `limit` of records (index
/// entries), whatever it finds there.
pub const SCAN_FACTOR: u32 = 4;

/// Largest magnitude a position's `sweep_at` may have: integers cross into
/// Durable Object SQLite as JavaScript numbers (exact up to 2^53).
pub const MAX_POSITION_MS: i64 = 9_007_199_254_740_991;

/// A place in the walk: a record's `sweep_at` and its key (the index order).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Position {
    pub sweep_at: Millis,
    pub key: String,
}

/// The order a listing walks in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// Latest `sweep_at` first: every state, `completed`, `released`.
    NewestFirst,
    /// Earliest `sweep_at` first: `in_flight`, so a stuck key comes first.
    OldestFirst,
}

impl Walk {
    /// The walk a listing of `state` takes.
    pub fn of(state: Option<KeyState>) -> Walk {
        match state {
            Some(KeyState::InFlight) => Walk::OldestFirst,
            _ => Walk::NewestFirst,
        }
    }

    /// `a` against `b` in walk order (`Less`: `a` comes first).
    pub fn order(self, a: &Position, b: &Position) -> Ordering {
        let index = (a.sweep_at, a.key.as_str()).cmp(&(b.sweep_at, b.key.as_str()));
        match self {
            Walk::OldestFirst => index,
            Walk::NewestFirst => index.reverse(),
        }
    }
}

/// What one page asks for (validated by its caller: `rpc::ListCall`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// Only records in this state; `None`: every state.
    pub state: Option<KeyState>,
    /// Most keys the page holds (1..=[`MAX_LIST_LIMIT`]).
    pub limit: u32,
    /// Start after this position; `None`: at the walk's beginning.
    pub after: Option<Position>,
}

impl ListQuery {
    /// Index entries this page scans at most.
    pub fn scan_budget(&self) -> u32 {
        self.limit.clamp(1, MAX_LIST_LIMIT) * SCAN_FACTOR
    }
}

/// One listed key: what `lookup` shows of it, and its place in the walk.
/// On the wire one flat object (the lookup's fields and `sweep_at`), read
/// and written through [`ListedKeyWire`]: serde's `flatten` would read it
/// through its buffering `Content` deserializer (tens of KiB of wasm, the
/// same machinery `ledger::outcome` avoids).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ListedKeyWire", into = "ListedKeyWire")]
pub struct ListedKey {
    pub record: RecordView,
    /// The record's `sweep_at` (epoch ms): with its key, its position.
    pub sweep_at: Millis,
}

/// [`ListedKey`] as one flat JSON object.
#[derive(Serialize, Deserialize)]
struct ListedKeyWire {
    key: String,
    state: super::outcome::KeyState,
    generation: i64,
    created_at: String,
    expires_at: String,
    lease_expires_at: Option<String>,
    response_status: Option<u16>,
    retained: Option<bool>,
    replays: i64,
    sweep_at: Millis,
}

impl From<ListedKeyWire> for ListedKey {
    fn from(w: ListedKeyWire) -> ListedKey {
        ListedKey {
            record: RecordView {
                key: w.key,
                state: w.state,
                generation: w.generation,
                created_at: w.created_at,
                expires_at: w.expires_at,
                lease_expires_at: w.lease_expires_at,
                response_status: w.response_status,
                retained: w.retained,
                replays: w.replays,
            },
            sweep_at: w.sweep_at,
        }
    }
}

impl From<ListedKey> for ListedKeyWire {
    fn from(k: ListedKey) -> ListedKeyWire {
        let r = k.record;
        ListedKeyWire {
            key: r.key,
            state: r.state,
            generation: r.generation,
            created_at: r.created_at,
            expires_at: r.expires_at,
            lease_expires_at: r.lease_expires_at,
            response_status: r.response_status,
            retained: r.retained,
            replays: r.replays,
            sweep_at: k.sweep_at,
        }
    }
}

impl ListedKey {
    pub fn position(&self) -> Position {
        Position {
            sweep_at: self.sweep_at,
            key: self.record.key.clone(),
        }
    }
}

/// One page: its keys in walk order, and where the walk stopped (`None`:
/// nothing is left after this page).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListPage {
    pub keys: Vec<ListedKey>,
    pub next: Option<Position>,
}

/// A page from one object of a sharded tenant, and whether that object
/// belongs to the current layout (its record wins over a previous
/// layout's record of the same key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectPage {
    pub page: ListPage,
    pub current: bool,
}

impl ListPage {
    /// A sharded tenant's page from each object's page for the same query
    /// (each started after the same position): the keys of all of them up
    /// to the earliest position an object that is not done stopped at, in
    /// walk order, at most `limit`, one record per key (the current
    /// layout's, while resharding); `next` is that earliest position, or
    /// the last key's when the page is full. Every object returned every
    /// key it holds up to its own stopping point, so none is passed over.
    pub fn merge(pages: Vec<ObjectPage>, limit: u32, walk: Walk) -> ListPage {
        let bound = pages
            .iter()
            .filter_map(|p| p.page.next.as_ref())
            .min_by(|a, b| walk.order(a, b))
            .cloned();
        let mut chosen: HashMap<String, (ListedKey, bool)> = HashMap::new();
        for ObjectPage { page, current } in pages {
            for key in page.keys {
                let within = bound
                    .as_ref()
                    .is_none_or(|b| walk.order(&key.position(), b) != Ordering::Greater);
                if !within {
                    continue;
                }
                let replace = match chosen.get(&key.record.key) {
                    None => true,
                    // The current layout's record wins; otherwise the first.
                    Some((_, held_current)) => current && !held_current,
                };
                if replace {
                    chosen.insert(key.record.key.clone(), (key, current));
                }
            }
        }
        let mut keys: Vec<ListedKey> = chosen.into_values().map(|(k, _)| k).collect();
        keys.sort_by(|a, b| walk.order(&a.position(), &b.position()));
        let limit = limit.clamp(1, MAX_LIST_LIMIT) as usize;
        if keys.len() > limit {
            keys.truncate(limit);
            let next = keys.last().map(ListedKey::position);
            return ListPage { keys, next };
        }
        ListPage { keys, next: bound }
    }
}

/// The statements of one walk, by their role in a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkSql {
    /// The page's keys: of the window of at most `?3` index entries after
    /// the position (`?1`, `?2`), the records listed — inside their window
    /// at `?4`, in state `?5` when one is asked for — at most `?6` of them.
    /// The outer `LIMIT` stops the scan as soon as enough are found.
    /// Columns: key, sweep_at, then [`VIEW_COLUMNS`].
    pub keys: String,
    /// Is there any entry after the position (`?1`, `?2`)? One entry read.
    pub any_after: String,
    /// The window's last entry (the `?3`-th after the position), read
    /// only when the window held no key: a bounded skip inside one window,
    /// never a page's offset.
    pub window_end: String,
}

impl WalkSql {
    /// The statements of `walk`. Public for the host tests that read their
    /// plans.
    pub fn of(walk: Walk) -> WalkSql {
        // Guard: the in-flight walk names the partial index of the records
        // in flight and its condition, so it never reads a completed or
        // released record's entry (and a missing index is an error, not a
        // scan of the table).
        let (cmp, dir, from) = match walk {
            Walk::NewestFirst => ("<", "DESC", "idempotency_records WHERE".to_string()),
            Walk::OldestFirst => (
                ">",
                "ASC",
                format!("idempotency_records INDEXED BY {IN_FLIGHT_INDEX_NAME} WHERE state = 'in_flight' AND"),
            ),
        };
        let after = format!("FROM {from} (sweep_at, key) {cmp} (?1, ?2)");
        let order = format!("ORDER BY sweep_at {dir}, key {dir}");
        WalkSql {
            keys: format!(
                "SELECT key, sweep_at, {VIEW_COLUMNS}
                 FROM (SELECT key, sweep_at, {VIEW_COLUMNS},
                              expires_at > ?4 AND (?5 IS NULL OR state = ?5) AS hit
                       {after} {order} LIMIT ?3)
                 WHERE hit LIMIT ?6"
            ),
            any_after: format!("SELECT 1 {after} LIMIT 1"),
            window_end: format!("SELECT key, sweep_at {after} {order} LIMIT 1 OFFSET ?3 - 1"),
        }
    }
}

impl<S: SqlStore> Ledger<S> {
    /// One page of this object's records (see the module doc). Read-only:
    /// replays not yet written are added from memory, as `lookup` does.
    ///
    /// Where the walk goes on (`next`): after the page's last key when the
    /// page is full; after its last key too when the window held fewer
    /// (the window's entries past it, none listed, are looked at again by
    /// the next page: nothing is skipped) unless no entry follows it; and
    /// when the window held no key at all, after the window's last entry
    /// (its reads are then the window's twice, the most a page costs),
    /// unless the window was the rest of the walk.
    pub fn list(&self, query: &ListQuery, now: Millis) -> Result<ListPage, StoreError> {
        let walk = Walk::of(query.state);
        let sql = WalkSql::of(walk);
        let limit = query.limit.clamp(1, MAX_LIST_LIMIT) as usize;
        let budget = i64::from(query.scan_budget());
        // The walk's beginning: before every position a record can hold.
        let start = match walk {
            Walk::NewestFirst => MAX_POSITION_MS,
            Walk::OldestFirst => -MAX_POSITION_MS,
        };
        let (after_ms, after_key) = match &query.after {
            Some(p) => (p.sweep_at, p.key.as_str()),
            None => (start, ""),
        };
        let rows = self.store.query(
            &sql.keys,
            &[
                after_ms.into(),
                after_key.into(),
                budget.into(),
                now.into(),
                query.state.map(KeyState::as_str).into(),
                (limit as i64 + 1).into(),
            ],
        )?;
        let mut keys = Vec::with_capacity(rows.len().min(limit));
        let pending = self.pending.borrow();
        for row in rows.iter().take(limit) {
            let key = row.text(0)?;
            let sweep_at = row.int(1)?;
            let mut record = view_from_row(row, 2, key)?;
            record.replays += pending.record_replays(&record.key, record.generation);
            keys.push(ListedKey { record, sweep_at });
        }
        drop(pending);
        let next = match keys.last().map(ListedKey::position) {
            // One key more than the page holds: the walk goes on.
            Some(last) if rows.len() > limit => Some(last),
            Some(last) => {
                let more = self.store.query(
                    &sql.any_after,
                    &[last.sweep_at.into(), last.key.as_str().into()],
                )?;
                (!more.is_empty()).then_some(last)
            }
            None => self
                .store
                .query(
                    &sql.window_end,
                    &[after_ms.into(), after_key.into(), budget.into()],
                )?
                .first()
                .map(|row| {
                    Ok::<_, StoreError>(Position {
                        key: row.text(0)?,
                        sweep_at: row.int(1)?,
                    })
                })
                .transpose()?,
        };
        Ok(ListPage { keys, next })
    }
}
