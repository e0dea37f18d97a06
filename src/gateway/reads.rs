//! The tenant-scoped reads: key introspection, the key listing and stats
//! (docs/contract.md §2.7), and where a tenant's keys live; and the one
//! operator write beside them, evicting a key (§2.11), which finds its
//! record as introspection does.
//!
//! Role: find the object (or objects) that answer for a key or for the
//! whole tenant, and render what they say.
//!
//! What must stay true here:
//! - While a tenant is resharded, the previous layout answers first for the
//!   keys it holds (docs/contract.md §8); an eviction goes there first too,
//!   then to the key's current object.
//! - An eviction drops the key from this isolate's replay cache before it
//!   asks: this isolate never replays an evicted answer.
//! - A sharded tenant's stats are the sum over every object of its current
//!   and previous layouts; its listing merges every such object's page
//!   into one order (`ListPage::merge`).
//! - A listing's parameters are read before anything is asked or counted:
//!   a bad one changes nothing.

use worker::Response;

use super::replays::{count_replays, with_replays};
use super::settings::Tenancy;
use crate::contract::listing::{self, ListRequest};
use crate::contract::{admission, answer};
use crate::fields;
use crate::ledger::EvictOutcome;
use crate::ledger::{ListPage, ObjectPage, Stats, Walk};
use crate::platform::client::{LedgerClient, LedgerError};
use crate::platform::{http, log};
use crate::rpc::{EvictCall, LookupCall};

/// A failed read: logged, and answered as the object answered it (a
/// problem it rendered) or `503`.
pub fn store_unavailable(error: &LedgerError) -> Response {
    log::error(
        "idempotency.store_unavailable",
        fields! {"error" => error.to_string()},
    );
    http::app(answer::read_failure(error))
}

/// The client of `key`'s object and, while the tenant is resharded, of its
/// object in the previous layout (then the current one's calls say the
/// previous layout was asked first: every caller of this asks it first).
/// An unsharded tenant's key lives in the tenant's one object (its base).
/// Both in the tenant's jurisdiction.
pub fn key_homes(
    who: &Tenancy,
    key: &str,
) -> Result<(LedgerClient, Option<LedgerClient>), LedgerError> {
    let (base, layout) = (who.base(), who.layout);
    if !layout.is_sharded() {
        return base.cloned().map_err(Clone::clone).map(|c| (c, None));
    }
    let like = |client: LedgerClient| match base {
        Ok(base) => client.metered_like(base),
        Err(_) => client,
    };
    let current = like(who.object(&layout.home(&who.objects, key))?);
    let previous = layout
        .previous_home(&who.objects, key)
        .map(|name| who.object(&name).map(like))
        .transpose()?;
    // Every keyed call of the gateway asks the previous layout first, so
    // its calls to the current one say so: that object does not ask again.
    let current = match layout.previous {
        Some(m) => current.after_asking_previous(m),
        None => current,
    };
    Ok((current, previous))
}

/// `GET /v1/idempotency-keys/{key}`. Replays answered by this isolate are
/// counted before any read.
pub async fn introspect(who: &Tenancy, encoded: &str) -> Response {
    match who.base() {
        Ok(base) => {
            count_replays(base, &who.tenant, who.config().replay_cache_bytes).await;
            introspect_at(who, encoded).await
        }
        Err(e) => store_unavailable(e),
    }
}

/// `GET /v1/idempotency/stats`, after the replays this isolate answered
/// are counted.
pub async fn stats(who: &Tenancy) -> Response {
    match who.base() {
        Ok(base) => {
            count_replays(base, &who.tenant, who.config().replay_cache_bytes).await;
            stats_at(base, who).await
        }
        Err(e) => store_unavailable(e),
    }
}

/// `GET /v1/idempotency-keys?state=&limit=&cursor=`: one page of the
/// tenant's keys, after the replays this isolate answered are counted.
pub async fn list(who: &Tenancy, query: &str) -> Response {
    let seal = listing::CursorSeal::new(&who.settings.cursor_secret, &who.tenant);
    let request = match listing::parse_list_query(query, &seal) {
        Ok(r) => r,
        Err(p) => return http::problem(&p),
    };
    match who.base() {
        Ok(base) => {
            count_replays(base, &who.tenant, who.config().replay_cache_bytes).await;
            match list_at(base, who, &request).await {
                Ok(page) => http::app(listing::list_answer(request.state, &page, &seal)),
                Err(e) => store_unavailable(&e),
            }
        }
        Err(e) => store_unavailable(e),
    }
}

/// A page from the tenant's one object, or merged from every object of
/// its current (and previous) layout, each asked after the same position.
async fn list_at(
    base: &LedgerClient,
    who: &Tenancy,
    request: &ListRequest,
) -> Result<ListPage, LedgerError> {
    let call = request.call();
    if !who.layout.is_sharded() {
        return base.list(&call).await;
    }
    let mut clients = Vec::new();
    // The current layout's objects come first in `objects`.
    for (i, name) in who.layout.objects(&who.objects).iter().enumerate() {
        let current = i < who.layout.shards as usize;
        clients.push((who.object(name)?, current));
    }
    let answers = futures_util::future::join_all(clients.iter().map(|(c, _)| c.list(&call))).await;
    let mut pages = Vec::new();
    for ((_, current), answer) in clients.iter().zip(answers) {
        pages.push(ObjectPage {
            page: answer?,
            current: *current,
        });
    }
    Ok(ListPage::merge(
        pages,
        request.limit,
        Walk::of(request.state),
    ))
}

/// The record, or `404`.
async fn introspect_at(who: &Tenancy, encoded: &str) -> Response {
    let key = match admission::introspection_key(encoded) {
        Ok(k) => k,
        Err(p) => return http::problem(&p),
    };
    let (current, previous) = match key_homes(who, &key) {
        Ok(homes) => homes,
        Err(e) => return store_unavailable(&e),
    };
    // While resharding, the previous layout answers for the keys it holds.
    for client in previous.iter().chain(std::iter::once(&current)) {
        match client.lookup(&LookupCall { key: key.clone() }).await {
            Ok(found) if found.record.is_some() => {
                return http::app(answer::lookup_answer(found.record))
            }
            Ok(_) => {}
            Err(e) => return store_unavailable(&e),
        }
    }
    http::app(answer::lookup_answer(None))
}

/// `DELETE /v1/idempotency-keys/{key}`: evicts the key where it is held
/// (docs/contract.md §2.11), after the replays this isolate answered are
/// counted and its cached answer for the key dropped.
pub async fn evict(who: &Tenancy, encoded: &str) -> Response {
    let key = match admission::introspection_key(encoded) {
        Ok(k) => k,
        Err(p) => return http::problem(&p),
    };
    let base = match who.base() {
        Ok(base) => base,
        Err(e) => return store_unavailable(e),
    };
    let cache = who.config().replay_cache_bytes;
    count_replays(base, &who.tenant, cache).await;
    with_replays(cache, |c| c.forget(&who.tenant, &key));
    let (current, previous) = match key_homes(who, &key) {
        Ok(homes) => homes,
        Err(e) => return store_unavailable(&e),
    };
    // While resharding, the previous layout holds the keys it granted; a
    // key it does not hold is the current object's.
    for client in previous.iter().chain(std::iter::once(&current)) {
        match client.evict(&EvictCall { key: key.clone() }).await {
            Ok(EvictOutcome::NotFound) => {}
            Ok(outcome) => return http::app(answer::evict_answer(outcome)),
            Err(e) => return store_unavailable(&e),
        }
    }
    http::app(answer::evict_answer(EvictOutcome::NotFound))
}

/// A tenant's stats: its one object's, or the sum over every object of its
/// current (and previous) layout.
async fn stats_at(base: &LedgerClient, who: &Tenancy) -> Response {
    let limits = answer::Limits::of(who.config());
    if !who.layout.is_sharded() {
        return match base.stats().await {
            Ok(stats) => http::app(answer::stats_answer(&stats, limits)),
            Err(e) => store_unavailable(&e),
        };
    }
    let mut clients = Vec::new();
    for name in who.layout.objects(&who.objects) {
        match who.object(&name) {
            Ok(c) => clients.push(c),
            Err(e) => return store_unavailable(&e),
        }
    }
    let answers = futures_util::future::join_all(clients.iter().map(|c| c.stats())).await;
    let mut total = Stats::default();
    for answer in answers {
        match answer {
            Ok(s) => total.add(&s),
            Err(e) => return store_unavailable(&e),
        }
    }
    http::app(answer::stats_answer(&total, limits))
}
