//! The gateway isolate's replay cache (`contract::replay_cache`) and the
//! writing of the replays it answers to each tenant's object.
//!
//! Role: hold one [`ReplayCache`] per isolate and carry its counts (the
//! replays it answered, and completions given up on) to the object over RPC
//! `replayed`: after the response (`ctx.wait_until`) once
//! they are due, and before any `stats` or key lookup of that tenant, so
//! what those show is exact.
//!
//! What must stay true here: a count is written once — taken from the cache
//! before its call, put back only if the call failed (a failure after the
//! object applied it can at worst count those replays twice, never lose
//! them silently: it is logged as `idempotency.replay_count_failed`).

use std::cell::RefCell;

use worker::Context;

use crate::contract::replay_cache::{ReplayCache, Tallies};
use crate::fields;
use crate::platform::client::LedgerClient;
use crate::platform::{log, now_ms};
use crate::rpc::{ReplayCount, ReplayedCall, MAX_REPLAYED_COUNT, MAX_REPLAYED_ENTRIES};

thread_local! {
    /// Completed records this isolate may replay itself (`REPLAY_CACHE_BYTES`).
    static REPLAYS: RefCell<Option<ReplayCache>> = const { RefCell::new(None) };
}

/// Runs `f` on the isolate's replay cache, created with `capacity` bytes on
/// first use (the variables never change within an isolate).
pub fn with_replays<T>(capacity: usize, f: impl FnOnce(&mut ReplayCache) -> T) -> T {
    REPLAYS.with(|cell| {
        f(cell
            .borrow_mut()
            .get_or_insert_with(|| ReplayCache::new(capacity)))
    })
}

/// Writes the replays this isolate answered for `tenant` to its object
/// (RPC `replayed`), so its `stats` are exact. Counts that cannot be written
/// are kept for the next attempt.
pub async fn count_replays(client: &LedgerClient, tenant: &str, capacity: usize) {
    let mut tallies = with_replays(capacity, |c| c.take_pending(tenant));
    while !tallies.is_empty() {
        let at = tallies.replays.len().min(MAX_REPLAYED_ENTRIES);
        let rest = Tallies {
            replays: tallies.replays.split_off(at),
            complete_failed: 0,
        };
        let call = ReplayedCall {
            replays: tallies
                .replays
                .iter()
                .map(|(key, generation, count)| ReplayCount {
                    key: key.clone(),
                    generation: *generation,
                    count: (*count).min(MAX_REPLAYED_COUNT),
                })
                .collect(),
            complete_failed: tallies.complete_failed.min(MAX_REPLAYED_COUNT),
        };
        if let Err(e) = client.replayed(&call).await {
            log::warn(
                "idempotency.replay_count_failed",
                fields! {"error" => e.to_string(), "tenant" => log::short_hash(tenant)},
            );
            tallies.replays.extend(rest.replays);
            with_replays(capacity, |c| c.restore_pending(tenant, tallies, now_ms()));
            return;
        }
        tallies = rest;
    }
}

/// Writes `tenant`'s cache-served replays after the response, when they are due.
/// `base` is the tenant's object that takes its counts (shard 0 when sharded;
/// `None`: not reachable, the counts wait).
pub fn count_replays_when_due<'a>(
    ctx: &Context,
    base: impl FnOnce() -> Option<&'a LedgerClient>,
    tenant: &str,
    capacity: usize,
) {
    if !with_replays(capacity, |c| c.is_due(tenant, now_ms())) {
        return;
    }
    let Some(client) = base() else { return };
    let (client, tenant) = (client.clone(), tenant.to_string());
    ctx.wait_until(async move {
        count_replays(&client, &tenant, capacity).await;
    });
}
