//! Refusals are read-only in SQLite; their counts reach `stats` exactly.

use crate::support::*;
use idempotency_ledger::ledger::pending::{FLUSH_AFTER_EVENTS, FLUSH_AFTER_MS};
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::{ClaimOutcome, Ledger};

fn changes(l: &Ledger<RusqliteStore>) -> u64 {
    l.store().connection().total_changes()
}

fn completed(l: &Ledger<RusqliteStore>, key: &str) {
    l.claim(key, &fp("a"), &policy(), 1_000).unwrap();
    l.complete(key, 1, &response("r"), RETENTION_MS, 1_000)
        .unwrap();
}

#[test]
fn replays_409s_and_422s_write_nothing_until_a_flush_is_due() {
    let l = ledger();
    completed(&l, "done");
    l.claim("busy", &fp("a"), &policy(), 1_000).unwrap();
    let before = changes(&l);
    for _ in 0..5 {
        assert!(matches!(
            l.claim("done", &fp("a"), &policy(), 1_100).unwrap(),
            ClaimOutcome::Refused(_)
        ));
        l.claim("done", &fp("b"), &policy(), 1_100).unwrap();
        l.claim("busy", &fp("a"), &policy(), 1_100).unwrap();
    }
    assert_eq!(changes(&l), before, "15 refusals, no row changed");
    let stats = l.stats(0).unwrap();
    assert_eq!((stats.replays, stats.reused, stats.in_use), (5, 5, 5));
    assert_eq!(l.lookup("done", 1_200).unwrap().unwrap().replays, 5);
}

#[test]
fn pending_counts_are_written_once_due_and_never_by_other_writes() {
    let l = ledger();
    completed(&l, "done");
    l.flush_pending().unwrap();
    let before = changes(&l);
    for _ in 0..FLUSH_AFTER_EVENTS - 1 {
        l.claim("done", &fp("a"), &policy(), 2_000).unwrap();
    }
    assert_eq!(changes(&l), before);
    l.claim("done", &fp("a"), &policy(), 2_000).unwrap();
    assert!(
        changes(&l) > before,
        "the last event of the bound writes the batch"
    );

    // Time bound: an old pending count is written by the next operation.
    let before = changes(&l);
    l.claim("done", &fp("a"), &policy(), 3_000).unwrap();
    assert_eq!(changes(&l), before);
    l.claim("done", &fp("a"), &policy(), 3_000 + FLUSH_AFTER_MS)
        .unwrap();
    assert!(changes(&l) > before);

    // Other writes do not carry what is pending (a new key writes its
    // record alone); the flush writes every count in one row.
    l.claim("done", &fp("a"), &policy(), 10_000).unwrap();
    let before = changes(&l);
    l.claim("other", &fp("a"), &policy(), 10_000).unwrap();
    assert_eq!(changes(&l), before + 1, "a new key writes its record only");
    l.flush_pending().unwrap();
    let on_disk: i64 = l
        .store()
        .connection()
        .query_row("SELECT replays FROM ledger_state WHERE id = 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(on_disk, i64::from(FLUSH_AFTER_EVENTS) + 3);
}

#[test]
fn replays_of_an_old_generation_never_count_on_a_reborn_record() {
    let l = ledger();
    completed(&l, "k");
    l.claim("k", &fp("a"), &policy(), 2_000).unwrap(); // pending replay of generation 1
                                                       // The record expires and is reborn (generation 2) before any flush.
    let later = 1_000 + RETENTION_MS;
    assert!(matches!(
        l.claim("k", &fp("a"), &policy(), later).unwrap(),
        ClaimOutcome::Claimed { generation: 2, .. }
    ));
    assert_eq!(l.lookup("k", later).unwrap().unwrap().replays, 0);
    assert_eq!(
        l.stats(0).unwrap().replays,
        1,
        "the tenant's count keeps it"
    );
}

#[test]
fn replays_answered_elsewhere_are_added_exactly() {
    let l = ledger();
    completed(&l, "k");
    l.add_replays("k", 1, 7, 2_000);
    l.add_replays("k", 1, 0, 2_000);
    l.add_replays("k", 1, -3, 2_000);
    assert_eq!(l.stats(0).unwrap().replays, 7);
    assert_eq!(l.lookup("k", 2_000).unwrap().unwrap().replays, 7);
}

#[test]
fn counts_reported_by_a_caller_reach_stats() {
    use idempotency_ledger::ledger::Counter;
    let l = ledger();
    l.add_count(Counter::CompleteFailed, 2, 1_000);
    l.add_count(Counter::CompleteFailed, 0, 1_000);
    l.add_count(Counter::CompleteFailed, -4, 1_000);
    assert_eq!(l.stats(0).unwrap().complete_failed, 2);
}

#[test]
fn counts_a_restart_lost_are_recounted_on_the_next_start_and_a_healthy_start_writes_nothing() {
    let file = LedgerFile::new("lost");
    {
        let l = file.open();
        l.claim("k", &fp("a"), &policy(), 1_000).unwrap();
        // Dropped before any flush: the object restarted.
    }
    let l = file.open();
    assert_eq!(l.stats(0).unwrap().in_flight, 0, "the count was lost");
    l.recount_on_start(2_000).unwrap();
    assert_eq!(l.stats(0).unwrap().in_flight, 1, "and recounted");
    let before = changes(&l);
    l.recount_on_start(3_000).unwrap();
    assert_eq!(
        changes(&l),
        before,
        "a start with the right counts writes no row"
    );
}
