//! The gateway's replay cache: it never serves an expired record, another
//! tenant's record, a replay for a different fingerprint, an entry older
//! than a minute or one whose key was evicted, stays within its byte
//! budget, and hands back every replay it served.

use idempotency_ledger::contract::replay_cache::{
    ReplayCache, Replayable, EXPIRY_MARGIN_MS, FLUSH_AFTER_MS, FLUSH_AFTER_REPLAYS,
    MAX_ENTRY_AGE_MS,
};
use idempotency_ledger::protocol::StoredResponse;

fn stored(body: &[u8]) -> StoredResponse {
    StoredResponse {
        status: 201,
        headers: vec![("content-type".into(), "application/json".into())],
        body: Some(body.to_vec()),
    }
}

const EXPIRES: i64 = 100_000;

/// Inserts a generation-1 record of acme's expiring at `EXPIRES`, at `now`.
fn put(c: &mut ReplayCache, key: &str, response: &StoredResponse, now: i64) {
    let record = Replayable {
        generation: 1,
        response,
        expires_at: EXPIRES,
    };
    c.insert("acme", key, "d", record, now);
}

fn cache_with(tenant: &str, key: &str, digest: &str, body: &[u8]) -> ReplayCache {
    let mut c = ReplayCache::new(1 << 20);
    let response = stored(body);
    let record = Replayable {
        generation: 1,
        response: &response,
        expires_at: EXPIRES,
    };
    c.insert(tenant, key, digest, record, 1_000);
    c
}

#[test]
fn serves_the_stored_response_for_the_same_tenant_key_and_fingerprint() {
    let mut c = cache_with("acme", "k", "d1", b"{\"id\":1}");
    assert_eq!(
        c.serve("acme", "k", "d1", 2_000),
        Some(stored(b"{\"id\":1}"))
    );
}

#[test]
fn never_serves_another_tenant_another_key_or_another_fingerprint() {
    let mut c = cache_with("acme", "k", "d1", b"x");
    assert_eq!(c.serve("globex", "k", "d1", 2_000), None);
    assert_eq!(c.serve("acme", "k2", "d1", 2_000), None);
    assert_eq!(
        c.serve("acme", "k", "d2", 2_000),
        None,
        "a mismatch goes to the object"
    );
    assert_eq!(
        c.serve("acme", "k", "d1", 2_000),
        Some(stored(b"x")),
        "still there"
    );
    assert!(c.take_pending("globex").is_empty());
    assert_eq!(
        c.take_pending("acme").replays,
        vec![("k".to_string(), 1, 1)]
    );
}

#[test]
fn never_serves_within_a_second_of_expiry_or_after() {
    let mut c = ReplayCache::new(1 << 20);
    let response = stored(b"x");
    let record = Replayable {
        generation: 1,
        response: &response,
        expires_at: EXPIRES,
    };
    // Inserted within its last minute: its expiry ends it, not its age.
    c.insert("acme", "k", "d1", record, EXPIRES - MAX_ENTRY_AGE_MS / 2);
    let last = EXPIRES - EXPIRY_MARGIN_MS - 1;
    assert!(c.serve("acme", "k", "d1", last).is_some());
    assert_eq!(c.serve("acme", "k", "d1", last + 1), None);
    assert_eq!(c.serve("acme", "k", "d1", EXPIRES + 5), None);
    assert!(c.is_empty(), "an expired entry is dropped");
    // An entry already inside the margin is never kept.
    let response = stored(b"x");
    put(&mut c, "late", &response, EXPIRES - EXPIRY_MARGIN_MS);
    assert!(c.is_empty());
}

#[test]
fn stays_within_its_byte_budget_oldest_out_first() {
    let mut c = ReplayCache::new(8 * 1024);
    let response = stored(&[7u8; 700]);
    for i in 0..40 {
        put(&mut c, &format!("k{i}"), &response, 1_000);
        assert!(c.bytes() <= 8 * 1024, "after {i}: {}", c.bytes());
    }
    assert!(c.serve("acme", "k39", "d", 2_000).is_some(), "newest kept");
    assert!(
        c.serve("acme", "k0", "d", 2_000).is_none(),
        "oldest evicted"
    );
    // Re-inserting a key replaces it without evicting it through its old place.
    for _ in 0..100 {
        put(&mut c, "k39", &response, 1_000);
    }
    assert!(c.serve("acme", "k39", "d", 2_000).is_some());
    assert!(c.bytes() <= 8 * 1024);
    // An entry over an eighth of the budget is never kept.
    let big = stored(&[1u8; 1100]);
    put(&mut c, "big", &big, 1_000);
    assert!(c.serve("acme", "big", "d", 2_000).is_none());
}

#[test]
fn a_zero_budget_keeps_nothing() {
    let mut c = ReplayCache::new(0);
    assert!(!c.is_enabled());
    let response = stored(b"x");
    put(&mut c, "k", &response, 1_000);
    assert!(c.serve("acme", "k", "d", 2_000).is_none());
}

#[test]
fn served_replays_are_due_by_count_or_age_and_handed_back_exactly_once() {
    let mut c = cache_with("acme", "k", "d1", b"x");
    for _ in 0..FLUSH_AFTER_REPLAYS - 1 {
        c.serve("acme", "k", "d1", 2_000).unwrap();
    }
    assert!(!c.is_due("acme", 2_000));
    assert!(c.is_due("acme", 2_000 + FLUSH_AFTER_MS), "by age");
    c.serve("acme", "k", "d1", 2_000).unwrap();
    assert!(c.is_due("acme", 2_000), "by count");
    let taken = c.take_pending("acme");
    assert_eq!(
        taken.replays,
        vec![("k".to_string(), 1, FLUSH_AFTER_REPLAYS)]
    );
    assert!(c.take_pending("acme").is_empty(), "taken once");
    assert!(!c.is_due("acme", 10_000));
    // A failed write puts them back.
    c.restore_pending("acme", taken, 3_000);
    assert_eq!(
        c.take_pending("acme").replays,
        vec![("k".to_string(), 1, FLUSH_AFTER_REPLAYS)]
    );
}

#[test]
fn a_completion_given_up_on_is_due_at_once_and_handed_back() {
    let mut c = ReplayCache::new(0);
    c.count_complete_failure("acme", 1_000);
    assert!(c.is_due("acme", 1_000), "rare and loud: written at once");
    let taken = c.take_pending("acme");
    assert_eq!((taken.replays.len(), taken.complete_failed), (0, 1));
    c.restore_pending("acme", taken, 1_000);
    assert_eq!(c.take_pending("acme").complete_failed, 1);
    assert!(c.take_pending("acme").is_empty());
}

#[test]
fn an_entry_is_served_at_most_a_minute_after_the_object_answered_it() {
    // Inserted at 1 000: an eviction elsewhere is seen here by 61 000.
    let mut c = cache_with("acme", "k", "d1", b"x");
    assert!(c
        .serve("acme", "k", "d1", 1_000 + MAX_ENTRY_AGE_MS - 1)
        .is_some());
    assert_eq!(c.serve("acme", "k", "d1", 1_000 + MAX_ENTRY_AGE_MS), None);
    assert!(c.is_empty(), "an aged entry is dropped");
    // The object answers `completed` again: served again for a minute.
    put(&mut c, "k", &stored(b"x"), 70_000);
    assert!(c.serve("acme", "k", "d", 70_001).is_some());
}

#[test]
fn a_forgotten_key_is_never_served_again_and_others_stay() {
    let mut c = cache_with("acme", "k", "d1", b"x");
    put(&mut c, "other", &stored(b"y"), 1_000);
    c.forget("acme", "k");
    c.forget("globex", "other");
    assert_eq!(c.serve("acme", "k", "d1", 2_000), None);
    assert!(c.serve("acme", "other", "d", 2_000).is_some());
    assert_eq!(c.len(), 1);
}
