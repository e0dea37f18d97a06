//! The per-minute trend in `stats` (`ledger::trend`): 60 minutes, oldest
//! first, each outcome in the minute it happened, written with the
//! counters in their one row, kept across a restart, rolled back with the
//! transaction that counted it, summed minute by minute over shards.

use crate::support::*;
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::{
    ClaimPolicy, ExecuteOutcome, Ledger, SqlStore, Stats, StoreError, TrendMinute,
};
use idempotency_ledger::orders;

const MINUTE: i64 = 60_000;
/// A time at the start of a minute, so `T0 + k * MINUTE` is minute k.
const T0: i64 = 1_800_000_000_000 - 1_800_000_000_000 % MINUTE;

type L = Ledger<RusqliteStore>;

/// The trend minute `k` minutes after T0's.
fn at(stats: &Stats, k: i64) -> &TrendMinute {
    let start = idempotency_ledger::ledger::rfc3339(T0 + k * MINUTE);
    stats
        .trend
        .iter()
        .find(|m| m.minute == start)
        .unwrap_or_else(|| panic!("minute {start} in the trend"))
}

fn counts(m: &TrendMinute) -> [i64; 7] {
    [
        m.claims,
        m.replays,
        m.in_use,
        m.reused,
        m.takeovers,
        m.fenced_out,
        m.swept,
    ]
}

fn trend_column(l: &L) -> String {
    l.store()
        .connection()
        .query_row("SELECT trend FROM ledger_state", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn sixty_minutes_oldest_first_ending_with_the_current_one_zeros_where_nothing_happened() {
    let l = ledger();
    let now = T0 + 59 * MINUTE + 30_000;
    let s = l.stats(now).unwrap();
    assert_eq!(s.trend.len(), 60);
    assert_eq!(s.trend[0].minute, idempotency_ledger::ledger::rfc3339(T0));
    assert_eq!(
        s.trend[59].minute,
        idempotency_ledger::ledger::rfc3339(T0 + 59 * MINUTE),
        "the last is the current minute's start"
    );
    assert!(s.trend[59].minute.ends_with(":00.000Z"));
    assert!(s.trend.iter().all(|m| counts(m) == [0; 7]));
    let minutes: Vec<&String> = s.trend.iter().map(|m| &m.minute).collect();
    let mut sorted = minutes.clone();
    sorted.sort();
    assert_eq!(minutes, sorted);
}

#[test]
fn each_outcome_counts_in_the_minute_it_happened() {
    let l = ledger();
    let p = policy();
    let short_lease = ClaimPolicy {
        lease_ms: 1_000,
        ..policy()
    };
    let short_lived = ClaimPolicy {
        lease_ms: 1_000,
        retention_ms: 2_000,
        ..policy()
    };
    // Minute 1: two claims, a replay, a 409, a 422.
    l.claim("a", &fp("a"), &p, T0 + MINUTE).unwrap();
    l.complete("a", 1, &response("a"), RETENTION_MS, T0 + MINUTE)
        .unwrap();
    l.claim("a", &fp("a"), &p, T0 + MINUTE + 1).unwrap();
    l.claim("a", &fp("other"), &p, T0 + MINUTE + 2).unwrap();
    l.claim("b", &fp("b"), &p, T0 + MINUTE + 3).unwrap();
    l.claim("b", &fp("b"), &p, T0 + MINUTE + 4).unwrap();
    // Minute 2: two claims; minute 3: a takeover (a claim too) and the
    // superseded owner fenced out.
    l.claim("c", &fp("c"), &short_lease, T0 + 2 * MINUTE)
        .unwrap();
    l.claim("d", &fp("d"), &short_lived, T0 + 2 * MINUTE)
        .unwrap();
    l.claim("c", &fp("c"), &short_lease, T0 + 3 * MINUTE)
        .unwrap();
    l.complete("c", 1, &response("late"), RETENTION_MS, T0 + 3 * MINUTE)
        .unwrap();
    // Minute 5: the sweep deletes "d", past its window (and nothing else).
    let swept = l.sweep(T0 + 5 * MINUTE, 100).unwrap();
    assert_eq!(swept.deleted, 1);
    let s = l.stats(T0 + 10 * MINUTE).unwrap();
    assert_eq!(counts(at(&s, 1)), [2, 1, 1, 1, 0, 0, 0]);
    assert_eq!(counts(at(&s, 2)), [2, 0, 0, 0, 0, 0, 0]);
    assert_eq!(counts(at(&s, 3)), [1, 0, 0, 0, 1, 1, 0]);
    assert_eq!(counts(at(&s, 5)), [0, 0, 0, 0, 0, 0, 1]);
    // Within the hour, the trend adds up to the counters.
    let total = |f: fn(&TrendMinute) -> i64| s.trend.iter().map(f).sum::<i64>();
    assert_eq!(total(|m| m.claims), s.claims);
    assert_eq!(total(|m| m.replays), s.replays);
    assert_eq!(total(|m| m.in_use), s.in_use);
    assert_eq!(total(|m| m.reused), s.reused);
    assert_eq!(total(|m| m.takeovers), s.takeovers);
    assert_eq!(total(|m| m.fenced_out), s.fenced_out);
    assert_eq!(total(|m| m.swept), s.swept);
}

#[test]
fn the_trend_is_written_in_the_counters_row_write_and_kept_across_a_restart() {
    let file = LedgerFile::new("trend");
    let l = file.open();
    for i in 0..5 {
        l.claim(&format!("k{i}"), &fp("x"), &policy(), T0 + i * MINUTE)
            .unwrap();
    }
    let changes = |l: &L| -> i64 {
        l.store()
            .connection()
            .query_row("SELECT total_changes()", [], |r| r.get(0))
            .unwrap()
    };
    let before = changes(&l);
    l.flush_pending().unwrap();
    assert_eq!(
        changes(&l) - before,
        1,
        "one row written: the counters' own"
    );
    assert_eq!(
        trend_column(&l),
        format!(
            "{{{}}}",
            (0..5)
                .map(|i| format!("\"{}\":[1,0,0,0,0,0,0,0]", T0 / MINUTE + i))
                .collect::<Vec<_>>()
                .join(",")
        )
    );
    let shown = l.stats(T0 + 6 * MINUTE).unwrap().trend;
    drop(l);
    let again = file.open();
    assert_eq!(again.stats(T0 + 6 * MINUTE).unwrap().trend, shown);
    // A second flush adds to what is stored, minute by minute.
    again
        .claim("k9", &fp("x"), &policy(), T0 + 4 * MINUTE + 1)
        .unwrap();
    again.flush_pending().unwrap();
    let s = again.stats(T0 + 6 * MINUTE).unwrap();
    assert_eq!(at(&s, 4).claims, 2);
    drop(again);
    assert_eq!(
        at(&file.open().stats(T0 + 6 * MINUTE).unwrap(), 4).claims,
        2
    );
}

#[test]
fn minutes_older_than_the_hour_fall_out_of_the_stored_trend() {
    let l = ledger();
    l.claim("old", &fp("x"), &policy(), T0).unwrap();
    l.flush_pending().unwrap();
    l.claim("new", &fp("x"), &policy(), T0 + 70 * MINUTE)
        .unwrap();
    l.flush_pending().unwrap();
    assert_eq!(
        trend_column(&l),
        format!("{{\"{}\":[1,0,0,0,0,0,0,0]}}", T0 / MINUTE + 70)
    );
    let s = l.stats(T0 + 70 * MINUTE).unwrap();
    assert_eq!(s.trend.iter().map(|m| m.claims).sum::<i64>(), 1);
    assert_eq!(s.claims, 2, "the counters keep everything");
}

#[test]
fn replays_a_gateway_reports_count_in_the_minute_they_are_reported() {
    let l = ledger();
    l.claim("k", &fp("k"), &policy(), T0).unwrap();
    l.complete("k", 1, &response("k"), RETENTION_MS, T0)
        .unwrap();
    l.write_reported(&[("k", 1, 4)], 0, T0 + 7 * MINUTE)
        .unwrap();
    let s = l.stats(T0 + 8 * MINUTE).unwrap();
    assert_eq!(at(&s, 0).replays, 0);
    assert_eq!(at(&s, 7).replays, 4);
    assert_eq!(s.replays, 4);
}

const ORDER: &str = r#"{"sku":"SKU-1","quantity":2}"#;

#[test]
fn an_enclosing_rollback_takes_the_trend_counts_it_wrote_with_it() {
    let l = ledger().count_in_transaction();
    let rolled_back: Result<(), StoreError> = l.store().atomically(|| {
        let out = l.execute("k1", &fp(ORDER), &policy(), &capture(), T0, |store| {
            orders::create(store, ORDER.as_bytes(), T0)
        })?;
        assert!(matches!(out, ExecuteOutcome::Ran { .. }));
        Err(StoreError::Sql("the caller's transaction failed".into()))
    });
    assert!(rolled_back.is_err());
    assert_eq!(at(&l.stats(T0 + MINUTE).unwrap(), 0).claims, 0);
    // What commits afterwards is counted once, in its own minute.
    l.execute(
        "k2",
        &fp(ORDER),
        &policy(),
        &capture(),
        T0 + MINUTE,
        |store| orders::create(store, ORDER.as_bytes(), T0 + MINUTE),
    )
    .unwrap();
    let s = l.stats(T0 + 2 * MINUTE).unwrap();
    assert_eq!((at(&s, 0).claims, at(&s, 1).claims), (0, 1));
    assert_eq!(
        trend_column(&l),
        format!("{{\"{}\":[1,0,0,0,0,0,0,0]}}", T0 / MINUTE + 1)
    );
}

#[test]
fn a_sharded_tenants_trend_is_summed_minute_by_minute() {
    let (a, b) = (ledger(), ledger());
    a.claim("a", &fp("a"), &policy(), T0 + 20 * MINUTE).unwrap();
    b.claim("b", &fp("b"), &policy(), T0 + 20 * MINUTE).unwrap();
    b.claim("b2", &fp("b"), &policy(), T0 + 69 * MINUTE)
        .unwrap();
    // The objects answer either side of a minute's turn.
    let mut total = Stats::default();
    total.add(&a.stats(T0 + 69 * MINUTE + 59_999).unwrap());
    total.add(&b.stats(T0 + 70 * MINUTE).unwrap());
    assert_eq!(total.trend.len(), 60);
    assert_eq!(at(&total, 20).claims, 2);
    assert_eq!(at(&total, 69).claims, 1);
    assert_eq!(at(&total, 70).claims, 0);
    assert_eq!(
        total.trend[59].minute,
        idempotency_ledger::ledger::rfc3339(T0 + 70 * MINUTE)
    );
}

/// src/ledger/outcome/trended.json is the one list of the trended counts:
/// the trend's slots (`Counter::TRENDED`, compiled from it by build.rs), a
/// stats minute's fields and the stats counters all follow it, so a count
/// added there and missing from `TrendMinute` or `Stats` fails here.
#[test]
fn the_trended_counts_are_those_of_trended_json_in_the_trend_and_in_stats() {
    let home: serde_json::Value =
        serde_json::from_str(include_str!("../../src/ledger/outcome/trended.json")).unwrap();
    let names: Vec<&str> = home["trended"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let slots: Vec<&str> = idempotency_ledger::ledger::outcome::Counter::TRENDED
        .iter()
        .map(|c| c.name())
        .collect();
    assert_eq!(slots, names, "the trend's slots, in the file's order");
    let minute = serde_json::to_value(TrendMinute::default()).unwrap();
    let mut fields: Vec<&str> = minute
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = names.clone();
    expected.push("minute");
    fields.sort_unstable();
    expected.sort_unstable();
    assert_eq!(
        fields, expected,
        "a stats minute has a field per trended count"
    );
    let stats = serde_json::to_value(Stats::default()).unwrap();
    for name in &names {
        assert!(stats.get(name).is_some(), "stats counts {name}");
    }
}
