//! The gateway's replay cache: completed records answered from isolate
//! memory, without the hop to the tenant's object (docs/contract.md §2.9).
//!
//! Role: a completed record is immutable until it expires, so once the
//! object has answered `completed` for (tenant, key), the gateway may answer
//! the next identical request itself. Pure: the caller supplies the clock
//! (the object's `expires_at` and the gateway's `now` are both epoch ms).
//!
//! What must stay true here:
//! - An entry is served only while `now < expires_at − 1 s` (the margin
//!   covers clock skew between the gateway and the object) and for at most
//!   [`MAX_ENTRY_AGE_MS`] after the object answered it (a record an
//!   operator evicts, docs/contract.md §2.11, is gone from every isolate's
//!   cache within that; the evicting isolate forgets it at once), and only for the
//!   same tenant, the same key and the exact same fingerprint digest; a miss
//!   or a mismatch goes to the object, so `422 differs` and counters stay
//!   right.
//! - The cache holds at most `capacity` bytes of entries (oldest inserted
//!   first out); an entry larger than an eighth of it is never kept.
//! - Every replay served here is counted and handed back by
//!   [`ReplayCache::take_pending`] to be written to the object's `stats`
//!   (RPC `replayed`). Counts not yet handed back are lost only if the
//!   isolate is evicted first.

use std::collections::{HashMap, VecDeque};

use crate::ledger::Millis;
use crate::protocol::StoredResponse;

/// How long before `expires_at` an entry stops being served.
pub const EXPIRY_MARGIN_MS: Millis = 1_000;

/// How long after the object answered `completed` an entry is served: a
/// completed record is immutable until it expires or is evicted, and an
/// eviction reaches the isolates that did not send it only this way. A
/// replayed key then costs each isolate one hop to its object a minute.
pub const MAX_ENTRY_AGE_MS: Millis = 60_000;

/// Replays counted for one tenant before they are due to be written.
pub const FLUSH_AFTER_REPLAYS: i64 = 32;

/// Age of the oldest uncounted replay before the counts are due.
pub const FLUSH_AFTER_MS: Millis = 1_000;

/// Fixed per-entry overhead counted against the capacity.
const ENTRY_OVERHEAD: usize = 128;

type CacheKey = (String, String);

struct Entry {
    /// Insertion number: `order` names an entry by key and number, so a
    /// replaced entry's old place in the queue never evicts the new one.
    seq: u64,
    digest: String,
    generation: i64,
    response: StoredResponse,
    /// Served until the earlier of the record's expiry (less the margin)
    /// and [`MAX_ENTRY_AGE_MS`] after it was inserted.
    expires_at: Millis,
    serve_until: Millis,
    size: usize,
}

/// Replays of one tenant not yet written to its object.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct PendingReplays {
    /// (key, generation) → replays served.
    by_key: HashMap<(String, i64), i64>,
    total: i64,
    /// Completions given up on (always due at once: they are rare and loud).
    complete_failed: i64,
    since: Option<Millis>,
}

/// One record's uncounted replays: key, generation, count.
pub type ReplayTally = (String, i64, i64);

/// What one tenant's object has not been told yet.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tallies {
    pub replays: Vec<ReplayTally>,
    pub complete_failed: i64,
}

impl Tallies {
    pub fn is_empty(&self) -> bool {
        self.replays.is_empty() && self.complete_failed == 0
    }
}

/// A completed record as the object answered it.
#[derive(Debug, Clone, Copy)]
pub struct Replayable<'a> {
    /// The generation that completed it.
    pub generation: i64,
    pub response: &'a StoredResponse,
    /// When it leaves its retention window (the object's clock).
    pub expires_at: Millis,
}

/// The isolate's cache of completed records.
pub struct ReplayCache {
    capacity: usize,
    bytes: usize,
    entries: HashMap<CacheKey, Entry>,
    order: VecDeque<(CacheKey, u64)>,
    next_seq: u64,
    pending: HashMap<String, PendingReplays>,
}

fn size_of(tenant: &str, key: &str, digest: &str, r: &StoredResponse) -> usize {
    ENTRY_OVERHEAD
        + tenant.len()
        + key.len()
        + digest.len()
        + r.headers
            .iter()
            .map(|(n, v)| n.len() + v.len())
            .sum::<usize>()
        + r.body.as_ref().map_or(0, Vec::len)
}

impl ReplayCache {
    /// A cache of at most `capacity` bytes (`0` keeps nothing).
    pub fn new(capacity: usize) -> ReplayCache {
        ReplayCache {
            capacity,
            bytes: 0,
            entries: HashMap::new(),
            order: VecDeque::new(),
            next_seq: 0,
            pending: HashMap::new(),
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.capacity > 0
    }

    /// Bytes held by entries.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn remove(&mut self, k: &CacheKey) {
        if let Some(e) = self.entries.remove(k) {
            self.bytes -= e.size;
        }
    }

    /// The stored response for (tenant, key) if it may be served now to a
    /// request with fingerprint `digest`; counts the replay when served.
    pub fn serve(
        &mut self,
        tenant: &str,
        key: &str,
        digest: &str,
        now: Millis,
    ) -> Option<StoredResponse> {
        let k = (tenant.to_string(), key.to_string());
        let entry = self.entries.get(&k)?;
        if now >= entry.expires_at - EXPIRY_MARGIN_MS || now >= entry.serve_until {
            self.remove(&k);
            return None;
        }
        if entry.digest != digest {
            return None;
        }
        let (generation, response) = (entry.generation, entry.response.clone());
        let pending = self.pending.entry(k.0).or_default();
        *pending.by_key.entry((k.1, generation)).or_insert(0) += 1;
        pending.total += 1;
        pending.since.get_or_insert(now);
        Some(response)
    }

    /// Keeps a record the object answered `completed` for. Entries already
    /// inside the expiry margin, or too large, are not kept.
    pub fn insert(
        &mut self,
        tenant: &str,
        key: &str,
        digest: &str,
        record: Replayable<'_>,
        now: Millis,
    ) {
        let Replayable {
            generation,
            response,
            expires_at,
        } = record;
        let size = size_of(tenant, key, digest, response);
        if !self.is_enabled() || size > self.capacity / 8 || now >= expires_at - EXPIRY_MARGIN_MS {
            return;
        }
        let k = (tenant.to_string(), key.to_string());
        self.remove(&k);
        while self.bytes + size > self.capacity {
            let Some((oldest, seq)) = self.order.pop_front() else {
                break;
            };
            if self.entries.get(&oldest).is_some_and(|e| e.seq == seq) {
                self.remove(&oldest);
            }
        }
        // `order` may name entries already removed or replaced; they are
        // skipped when popped, and the queue is compacted when it grows far
        // past the live entries.
        if self.order.len() > 4 * self.entries.len() + 64 {
            let entries = &self.entries;
            self.order
                .retain(|(k, seq)| entries.get(k).is_some_and(|e| e.seq == *seq));
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.push_back((k.clone(), seq));
        self.bytes += size;
        self.entries.insert(
            k,
            Entry {
                seq,
                digest: digest.to_string(),
                generation,
                response: response.clone(),
                expires_at,
                serve_until: now.saturating_add(MAX_ENTRY_AGE_MS),
                size,
            },
        );
    }

    /// Drops (tenant, key)'s entry, if any: its record was evicted.
    pub fn forget(&mut self, tenant: &str, key: &str) {
        self.remove(&(tenant.to_string(), key.to_string()));
    }

    /// Are this tenant's served replays due to be written?
    pub fn is_due(&self, tenant: &str, now: Millis) -> bool {
        self.pending.get(tenant).is_some_and(|p| {
            p.complete_failed > 0
                || p.total >= FLUSH_AFTER_REPLAYS
                || p.since.is_some_and(|s| now - s >= FLUSH_AFTER_MS)
        })
    }

    /// Counts a completion this isolate gave up on, for `tenant`'s stats.
    pub fn count_complete_failure(&mut self, tenant: &str, now: Millis) {
        let pending = self.pending.entry(tenant.to_string()).or_default();
        pending.complete_failed += 1;
        pending.since.get_or_insert(now);
    }

    /// Takes this tenant's uncounted replays and failures (empty if none).
    pub fn take_pending(&mut self, tenant: &str) -> Tallies {
        self.pending
            .remove(tenant)
            .map(|p| Tallies {
                replays: p
                    .by_key
                    .into_iter()
                    .map(|((key, generation), n)| (key, generation, n))
                    .collect(),
                complete_failed: p.complete_failed,
            })
            .unwrap_or_default()
    }

    /// Puts counts back after they could not be written.
    pub fn restore_pending(&mut self, tenant: &str, tallies: Tallies, now: Millis) {
        if tallies.is_empty() {
            return;
        }
        let pending = self.pending.entry(tenant.to_string()).or_default();
        for (key, generation, n) in tallies.replays {
            *pending.by_key.entry((key, generation)).or_insert(0) += n;
            pending.total += n;
        }
        pending.complete_failed += tallies.complete_failed;
        pending.since.get_or_insert(now);
    }
}
