//! Evicting a key (docs/contract.md §2.11): a completed or released record
//! is removed so the next request with the key runs again; an in-flight one
//! only once its lease has ended; the generation never goes back.

use crate::support::*;
use idempotency_ledger::ledger::{
    ClaimOutcome, CompleteOutcome, EvictOutcome, KeyState, Refusal, ReleaseOutcome,
};
use idempotency_ledger::protocol::StoredResponse;

const T0: i64 = 1_800_000_000_000;

fn failed() -> StoredResponse {
    StoredResponse {
        status: 500,
        headers: vec![],
        body: Some(b"boom".to_vec()),
    }
}

fn granted(out: ClaimOutcome) -> i64 {
    match out {
        ClaimOutcome::Claimed { generation, .. } => generation,
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn evicted(out: EvictOutcome) -> idempotency_ledger::ledger::RecordView {
    match out {
        EvictOutcome::Evicted { record } => record,
        other => panic!("expected an eviction, got {other:?}"),
    }
}

#[test]
fn an_evicted_completed_key_runs_again_instead_of_replaying_its_stored_500() {
    let l = ledger();
    let p = policy();
    assert_eq!(granted(l.claim("k", &fp("a"), &p, T0).unwrap()), 1);
    l.complete("k", 1, &failed(), RETENTION_MS, T0 + 10)
        .unwrap();
    // The poisoned answer replays...
    assert!(matches!(
        l.claim("k", &fp("a"), &p, T0 + 20).unwrap(),
        ClaimOutcome::Refused(Refusal::Completed { .. })
    ));
    // ...until it is evicted: the answer names what was removed.
    let record = evicted(l.evict("k", 0, T0 + 30).unwrap());
    assert_eq!(
        (record.key.as_str(), record.state, record.generation),
        ("k", KeyState::Completed, 1)
    );
    assert_eq!(record.response_status, Some(500));
    assert_eq!(record.replays, 1, "the unwritten replay is shown too");
    assert!(l.lookup("k", T0 + 30).unwrap().is_none());
    assert_eq!(count(&l, "idempotency_records"), 0);
    // The next request with the key runs again, above the evicted generation.
    assert_eq!(granted(l.claim("k", &fp("a"), &p, T0 + 40).unwrap()), 2);
    l.flush_pending().unwrap();
    let s = l.stats(T0 + 50).unwrap();
    assert_eq!(
        (s.evicted, s.records, s.completed, s.in_flight),
        (1, 1, 0, 1)
    );
    assert_eq!(s.trend.iter().map(|m| m.evicted).sum::<i64>(), 1);
    assert_eq!(s.trend[59].evicted, 1, "counted in the minute it happened");
}

#[test]
fn an_evicted_released_key_is_removed_and_reclaimed_above_its_generation() {
    let l = ledger();
    let p = policy();
    granted(l.claim("k", &fp("a"), &p, T0).unwrap());
    assert_eq!(l.release("k", 1, T0 + 5).unwrap(), ReleaseOutcome::Released);
    assert_eq!(granted(l.claim("k", &fp("a"), &p, T0 + 6).unwrap()), 2);
    l.release("k", 2, T0 + 7).unwrap();
    let record = evicted(l.evict("k", 0, T0 + 8).unwrap());
    assert_eq!((record.state, record.generation), (KeyState::Released, 2));
    assert_eq!(record.response_status, None);
    assert_eq!(granted(l.claim("k", &fp("a"), &p, T0 + 9).unwrap()), 3);
}

#[test]
fn an_in_flight_key_is_evicted_only_once_its_lease_has_ended() {
    let l = ledger();
    let p = policy();
    granted(l.claim("k", &fp("a"), &p, T0).unwrap());
    // A live lease: refused with the time it has left, nothing changed.
    assert_eq!(
        l.evict("k", 0, T0 + 15_000).unwrap(),
        EvictOutcome::InFlight {
            generation: 1,
            retry_after_ms: LEASE_MS - 15_000
        }
    );
    assert_eq!(l.lookup("k", T0 + 15_000).unwrap().unwrap().generation, 1);
    l.flush_pending().unwrap();
    assert_eq!(l.stats(T0 + 15_000).unwrap().evicted, 0);
    // Once the lease has ended, it goes.
    let record = evicted(l.evict("k", 0, T0 + LEASE_MS).unwrap());
    assert_eq!((record.state, record.generation), (KeyState::InFlight, 1));
    assert!(l.lookup("k", T0 + LEASE_MS).unwrap().is_none());
}

#[test]
fn a_fenced_out_owner_stays_fenced_after_its_key_is_evicted_and_reclaimed() {
    let file = LedgerFile::new("evict-fence");
    let l = file.open();
    let p = policy();
    // Owner A holds generation 1; its lease ends; the key is evicted.
    assert_eq!(granted(l.claim("k", &fp("a"), &p, T0).unwrap()), 1);
    evicted(l.evict("k", 0, T0 + LEASE_MS + 1).unwrap());
    // The object restarts before any flush: the floor was written with the
    // delete, so the key comes back above generation 1.
    drop(l);
    let l = file.open();
    assert_eq!(
        granted(l.claim("k", &fp("a"), &p, T0 + LEASE_MS + 2).unwrap()),
        2
    );
    // A, late, is refused both ways: B's claim is untouched.
    assert!(matches!(
        l.complete("k", 1, &response("A"), RETENTION_MS, T0 + LEASE_MS + 3)
            .unwrap(),
        CompleteOutcome::FencedOut { .. }
    ));
    assert!(matches!(
        l.release("k", 1, T0 + LEASE_MS + 4).unwrap(),
        ReleaseOutcome::FencedOut { .. }
    ));
    assert_eq!(
        l.complete("k", 2, &response("B"), RETENTION_MS, T0 + LEASE_MS + 5)
            .unwrap(),
        CompleteOutcome::Stored
    );
    let s = l.stats(T0 + LEASE_MS + 6).unwrap();
    assert_eq!((s.evicted, s.records, s.completed), (1, 1, 1));
}

#[test]
fn an_evicted_key_whose_owner_completes_before_the_next_claim_is_not_brought_back() {
    let l = ledger();
    let p = policy();
    granted(l.claim("k", &fp("a"), &p, T0).unwrap());
    evicted(l.evict("k", 0, T0 + LEASE_MS).unwrap());
    // The owner's late completion finds no record: it creates none.
    assert!(matches!(
        l.complete("k", 1, &response("A"), RETENTION_MS, T0 + LEASE_MS + 1)
            .unwrap(),
        CompleteOutcome::FencedOut { current: None }
    ));
    assert_eq!(count(&l, "idempotency_records"), 0);
    assert_eq!(
        granted(l.claim("k", &fp("a"), &p, T0 + LEASE_MS + 2).unwrap()),
        2
    );
}

#[test]
fn an_unknown_or_expired_key_is_not_found_and_nothing_changes() {
    let l = ledger();
    let p = policy();
    assert_eq!(l.evict("nobody", 0, T0).unwrap(), EvictOutcome::NotFound);
    granted(l.claim("k", &fp("a"), &p, T0).unwrap());
    l.complete("k", 1, &response("A"), RETENTION_MS, T0 + 1)
        .unwrap();
    // Past its window (not swept yet): as a lookup, not found.
    let later = T0 + 1 + RETENTION_MS;
    assert!(l.lookup("k", later).unwrap().is_none());
    assert_eq!(l.evict("k", 0, later).unwrap(), EvictOutcome::NotFound);
    assert_eq!(count(&l, "idempotency_records"), 1, "left to the sweep");
    l.flush_pending().unwrap();
    let s = l.stats(later).unwrap();
    assert_eq!((s.evicted, s.swept), (0, 0));
    // Evicting twice: the second finds nothing.
    let l = ledger();
    granted(l.claim("k", &fp("a"), &p, T0).unwrap());
    l.release("k", 1, T0 + 1).unwrap();
    evicted(l.evict("k", 0, T0 + 2).unwrap());
    assert_eq!(l.evict("k", 0, T0 + 3).unwrap(), EvictOutcome::NotFound);
    l.flush_pending().unwrap();
    assert_eq!(l.stats(T0 + 3).unwrap().evicted, 1);
}

#[test]
fn evict_outcomes_keep_a_flat_rpc_shape() {
    use serde_json::json;
    let wire = |o: &EvictOutcome| serde_json::to_value(o).unwrap();
    let back = |v: serde_json::Value| serde_json::from_value::<EvictOutcome>(v);
    let busy = EvictOutcome::InFlight {
        generation: 3,
        retry_after_ms: 1_500,
    };
    assert_eq!(
        wire(&busy),
        json!({"outcome": "in_flight", "generation": 3, "retry_after_ms": 1_500})
    );
    assert_eq!(back(wire(&busy)).unwrap(), busy);
    assert_eq!(
        wire(&EvictOutcome::NotFound),
        json!({"outcome": "not_found"})
    );
    assert_eq!(
        back(json!({"outcome": "not_found"})).unwrap(),
        EvictOutcome::NotFound
    );
    let l = ledger();
    granted(l.claim("k", &fp("a"), &policy(), T0).unwrap());
    l.release("k", 1, T0 + 1).unwrap();
    let gone = l.evict("k", 0, T0 + 2).unwrap();
    let v = wire(&gone);
    assert_eq!(v["outcome"], "evicted");
    assert_eq!(v["record"]["state"], "released");
    assert_eq!(back(v).unwrap(), gone);
    assert!(back(json!({"outcome": "evicted"})).is_err());
    assert!(back(json!({"outcome": "gone"})).is_err());
}

#[test]
fn with_an_owner_grace_an_in_flight_key_waits_for_its_lease_and_the_grace() {
    // A retired shard passes the settle grace: its evicted key is claimed
    // next in another object, so no owner of it may be left to settle.
    let l = ledger();
    granted(l.claim("k", &fp("a"), &policy(), T0).unwrap());
    const GRACE: i64 = 30_000;
    assert_eq!(
        l.evict("k", GRACE, T0 + LEASE_MS + 10_000).unwrap(),
        EvictOutcome::InFlight {
            generation: 1,
            retry_after_ms: GRACE - 10_000
        }
    );
    assert_eq!(count(&l, "idempotency_records"), 1);
    // A completed record has no owner left: the grace does not hold it.
    let done = ledger();
    granted(done.claim("k", &fp("a"), &policy(), T0).unwrap());
    done.complete("k", 1, &failed(), RETENTION_MS, T0 + 1)
        .unwrap();
    evicted(done.evict("k", GRACE, T0 + 2).unwrap());
    // Once the lease and the grace have passed, it goes.
    let record = evicted(l.evict("k", GRACE, T0 + LEASE_MS + GRACE).unwrap());
    assert_eq!((record.state, record.generation), (KeyState::InFlight, 1));
}
