//! Listing a tenant's keys (`Ledger::list`): the walk's order, state
//! filters, the scan budget, pages that neither repeat nor skip while keys
//! are added, and a sharded tenant's merged pages.

use std::collections::HashSet;

use crate::support::*;
use idempotency_ledger::config::shards::shard_of;
use idempotency_ledger::ledger::list::{WalkSql, MAX_POSITION_MS, SCAN_FACTOR};
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::{
    KeyState, Ledger, ListPage, ListQuery, ListedKey, ObjectPage, Position, RecordView, Walk,
};

type L = Ledger<RusqliteStore>;

fn query(state: Option<KeyState>, limit: u32, after: Option<Position>) -> ListQuery {
    ListQuery {
        state,
        limit,
        after,
    }
}

/// Claims `key` at `now`, then completes, releases or keeps it in flight.
fn put(l: &L, key: &str, state: KeyState, now: i64) {
    l.claim(key, &fp(key), &policy(), now).unwrap();
    match state {
        KeyState::Completed => {
            l.complete(key, 1, &response(key), RETENTION_MS, now)
                .unwrap();
        }
        KeyState::Released => {
            l.release(key, 1, now).unwrap();
        }
        KeyState::InFlight => {}
    };
}

/// The keys of a page.
fn names(page: &ListPage) -> Vec<String> {
    page.keys.iter().map(|k| k.record.key.clone()).collect()
}

/// Every page of a walk, from its beginning to its end.
fn walk(l: &L, state: Option<KeyState>, limit: u32, now: i64) -> Vec<ListPage> {
    let mut pages = Vec::new();
    let mut after = None;
    loop {
        let page = l.list(&query(state, limit, after), now).unwrap();
        after = page.next.clone();
        pages.push(page);
        if after.is_none() || pages.len() > 10_000 {
            return pages;
        }
    }
}

fn all_keys(pages: &[ListPage]) -> Vec<String> {
    pages.iter().flat_map(names).collect()
}

#[test]
fn every_state_is_listed_newest_first_by_claim_then_key() {
    let l = ledger();
    put(&l, "first", KeyState::Completed, 1_000);
    put(&l, "second", KeyState::InFlight, 2_000);
    put(&l, "third", KeyState::Released, 3_000);
    // Two claims in the same millisecond: by key, descending.
    put(&l, "tie-a", KeyState::Completed, 4_000);
    put(&l, "tie-b", KeyState::Completed, 4_000);
    let page = l.list(&query(None, 20, None), 5_000).unwrap();
    assert_eq!(names(&page), ["tie-b", "tie-a", "third", "second", "first"]);
    assert_eq!(page.next, None, "the walk is done");
    // Each key exactly as lookup shows it.
    for listed in &page.keys {
        let looked = l.lookup(&listed.record.key, 5_000).unwrap().unwrap();
        assert_eq!(listed.record, looked);
    }
    assert_eq!(page.keys[0].sweep_at, 4_000 + RETENTION_MS);
}

#[test]
fn a_state_filter_lists_that_state_only_and_in_flight_oldest_first() {
    let l = ledger();
    for i in 0..30 {
        let state = [KeyState::Completed, KeyState::InFlight, KeyState::Released][i % 3];
        put(&l, &format!("k{i:02}"), state, 1_000 + i as i64);
    }
    let in_flight = all_keys(&walk(&l, Some(KeyState::InFlight), 4, 2_000));
    let expected: Vec<String> = (0..30)
        .filter(|i| i % 3 == 1)
        .map(|i| format!("k{i:02}"))
        .collect();
    assert_eq!(in_flight, expected, "oldest first: the stuck ones first");
    let completed = all_keys(&walk(&l, Some(KeyState::Completed), 4, 2_000));
    let mut expected: Vec<String> = (0..30)
        .filter(|i| i % 3 == 0)
        .map(|i| format!("k{i:02}"))
        .collect();
    expected.reverse();
    assert_eq!(completed, expected, "newest first");
    for page in walk(&l, Some(KeyState::Released), 3, 2_000) {
        assert!(page
            .keys
            .iter()
            .all(|k| k.record.state == KeyState::Released));
        assert!(page.keys.len() <= 3);
    }
}

#[test]
fn pages_neither_repeat_nor_skip_a_key_while_keys_are_added() {
    let l = ledger();
    let mut now = 1_000;
    let mut before = Vec::new();
    for i in 0..120 {
        let state = if i % 4 == 0 {
            KeyState::InFlight
        } else {
            KeyState::Completed
        };
        let key = format!("old-{i:03}");
        put(&l, &key, state, now);
        before.push((key, state));
        now += (i % 3) as i64; // some claims share a millisecond
    }
    // Newest first: what was there when the walk began is listed exactly
    // once, however many keys arrive (they arrive before the cursor).
    let (mut seen, mut after, mut added) = (Vec::new(), None, 0);
    loop {
        let page = l.list(&query(None, 7, after), now).unwrap();
        seen.extend(names(&page));
        for _ in 0..3 {
            put(&l, &format!("new-{added:03}"), KeyState::InFlight, now);
            added += 1;
            now += 1;
        }
        after = page.next;
        if after.is_none() {
            break;
        }
    }
    let mut expected: Vec<String> = before.iter().map(|(k, _)| k.clone()).collect();
    expected.reverse();
    assert_eq!(seen, expected);

    // Oldest first (in flight): the keys that arrive during the walk come
    // after the cursor, and each is listed exactly once too.
    let (mut seen, mut after, mut arrived) = (Vec::new(), None, Vec::new());
    for round in 0.. {
        let page = l
            .list(&query(Some(KeyState::InFlight), 5, after), now)
            .unwrap();
        seen.extend(names(&page));
        if round < 10 {
            let key = format!("late-{round:02}");
            put(&l, &key, KeyState::InFlight, now);
            arrived.push(key);
            now += 1;
        }
        after = page.next;
        if after.is_none() {
            break;
        }
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no key twice: {seen:?}");
    let mut expected: Vec<String> = before
        .iter()
        .filter(|(_, s)| *s == KeyState::InFlight)
        .map(|(k, _)| k.clone())
        .collect();
    expected.extend((0..added).map(|i| format!("new-{i:03}")));
    expected.extend(arrived);
    assert_eq!(seen, expected);
}

/// Records between `start` (exclusive) and `end` (inclusive) in the walk.
fn records_between(l: &L, walk: Walk, start: &Position, end: &Position) -> i64 {
    let (lo, hi) = match walk {
        Walk::NewestFirst => (end, start),
        Walk::OldestFirst => (start, end),
    };
    let (lo_op, hi_op) = match walk {
        Walk::NewestFirst => (">=", "<"),
        Walk::OldestFirst => (">", "<="),
    };
    l.store()
        .connection()
        .query_row(
            &format!(
                "SELECT COUNT(*) FROM idempotency_records
                 WHERE (sweep_at, key) {lo_op} (?1, ?2) AND (sweep_at, key) {hi_op} (?3, ?4)"
            ),
            rusqlite::params![lo.sweep_at, lo.key, hi.sweep_at, hi.key],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn a_filtered_page_scans_at_most_its_budget_and_may_come_up_short() {
    let l = ledger();
    // Three released records, then 1,000 completed ones: newest first, the
    // released ones come last.
    for i in 0..3 {
        put(&l, &format!("freed-{i}"), KeyState::Released, 500 + i);
    }
    for i in 0..1_000 {
        put(&l, &format!("done-{i:04}"), KeyState::Completed, 1_000 + i);
    }
    let limit = 5;
    let budget = i64::from(limit * SCAN_FACTOR);
    let pages = walk(&l, Some(KeyState::Released), limit, 6_000);
    // 50 windows of 20 completed records, each answered with no key but a
    // cursor; then the three.
    assert_eq!(all_keys(&pages), ["freed-2", "freed-1", "freed-0"]);
    assert!(pages.len() >= 50, "{} pages", pages.len());
    assert!(pages[0].keys.is_empty() && pages[0].next.is_some());
    let mut start = Position {
        sweep_at: MAX_POSITION_MS,
        key: String::new(),
    };
    for page in &pages {
        if let Some(next) = &page.next {
            let scanned = records_between(&l, Walk::NewestFirst, &start, next);
            assert!(scanned <= budget, "a page looked at {scanned} records");
            assert!(scanned >= 1);
            start = next.clone();
        }
    }
}

/// `count` completed records older than every record `l` holds, each a copy
/// of the completed record `template` under its own key (one statement:
/// the ledger's own columns, as a completion wrote them).
fn seed_completed(l: &L, template: &str, count: i64) {
    l.store()
        .connection()
        .execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
             INSERT INTO idempotency_records
                 (key, state, generation, fingerprint, components, created_at, claimed_at,
                  lease_expires_at, completed_at, expires_at, sweep_at, response_status,
                  response_headers, response_body, retained, replays)
             SELECT printf('seeded-%07d', i), state, generation, fingerprint, components,
                    created_at - i, claimed_at - i, lease_expires_at, completed_at - i,
                    expires_at - i, sweep_at - i, response_status, response_headers,
                    response_body, retained, replays
             FROM n, idempotency_records WHERE key = ?1",
            rusqlite::params![template, count],
        )
        .unwrap();
}

/// The SQLite virtual-machine steps the in-flight walk's page statement
/// takes from the walk's beginning (`limit` keys): it grows with every
/// index entry and record the statement reads.
fn in_flight_page_steps(l: &L, limit: i64, now: i64) -> i32 {
    let sql = WalkSql::of(Walk::OldestFirst);
    let mut stmt = l.store().connection().prepare(&sql.keys).unwrap();
    let rows = stmt
        .query_map(
            rusqlite::params![
                -MAX_POSITION_MS,
                "",
                limit * i64::from(SCAN_FACTOR),
                now,
                "in_flight",
                limit + 1
            ],
            |_| Ok(()),
        )
        .unwrap()
        .count();
    assert!(rows as i64 <= limit + 1);
    stmt.get_status(rusqlite::StatementStatus::VmStep)
}

#[test]
fn an_in_flight_page_finds_every_key_in_flight_past_100_000_completed_ones_reading_only_those() {
    // Two tenants hold the same keys in flight — an orphan past its lease,
    // the oldest, and three held now — and one also 100,000 completed
    // records claimed before them (docs/contract.md §2.7).
    let build = |completed: i64| {
        let l = ledger();
        let mut short = policy();
        short.lease_ms = 1_000;
        l.claim("orphan", &fp("o"), &short, 1_000).unwrap();
        put(&l, "template", KeyState::Completed, 1_500);
        seed_completed(&l, "template", completed);
        for i in 0..3 {
            put(&l, &format!("busy-{i}"), KeyState::InFlight, 200_000 + i);
        }
        l
    };
    let busy = build(100_000);
    let quiet = build(0);
    let now = 300_000;
    assert_eq!(count(&busy, "idempotency_records"), 100_005);
    for l in [&busy, &quiet] {
        // The first page holds every key in flight, oldest first, the
        // orphan past its lease included, and says the walk is done.
        let page = l
            .list(&query(Some(KeyState::InFlight), 20, None), now)
            .unwrap();
        assert_eq!(names(&page), ["orphan", "busy-0", "busy-1", "busy-2"]);
        assert_eq!(page.next, None);
        // A page of one follows them one at a time, none skipped.
        assert_eq!(
            all_keys(&walk(l, Some(KeyState::InFlight), 1, now)),
            ["orphan", "busy-0", "busy-1", "busy-2"]
        );
    }
    // What a page reads does not grow with the completed records: the
    // statement takes as many steps over 100,000 of them as over none.
    for limit in [1, 2, 20, 100] {
        assert_eq!(
            in_flight_page_steps(&busy, limit, now),
            in_flight_page_steps(&quiet, limit, now),
            "limit {limit}"
        );
    }
}

#[test]
fn records_past_their_window_are_left_out_as_lookup_leaves_them() {
    let l = ledger();
    let mut short = policy();
    short.retention_ms = 1_000;
    short.lease_ms = 500;
    for i in 0..50 {
        l.claim(&format!("gone-{i:02}"), &fp("g"), &short, 1_000)
            .unwrap();
    }
    put(&l, "kept", KeyState::Completed, 1_500);
    // The 50 expired ones are not swept yet: the page skips them (and,
    // within its budget, may come up short but goes on).
    let now = 10_000;
    assert!(l.lookup("gone-00", now).unwrap().is_none());
    let pages = walk(&l, None, 3, now);
    assert_eq!(all_keys(&pages), ["kept"]);
}

#[test]
fn listed_replays_count_the_ones_not_written_yet() {
    let l = ledger();
    put(&l, "k", KeyState::Completed, 1_000);
    for i in 0..3 {
        l.claim("k", &fp("k"), &policy(), 2_000 + i).unwrap();
    }
    assert!(l.has_pending());
    let page = l.list(&query(None, 20, None), 3_000).unwrap();
    assert_eq!(page.keys[0].record.replays, 3);
    assert_eq!(page.keys[0].record, l.lookup("k", 3_000).unwrap().unwrap());
}

#[test]
fn a_listing_writes_nothing() {
    let l = ledger();
    put(&l, "k", KeyState::InFlight, 1_000);
    l.flush_pending().unwrap();
    let changes = |l: &L| -> i64 {
        l.store()
            .connection()
            .query_row("SELECT total_changes()", [], |r| r.get(0))
            .unwrap()
    };
    let before = changes(&l);
    for state in [None, Some(KeyState::InFlight), Some(KeyState::Released)] {
        l.list(&query(state, 10, None), 2_000).unwrap();
    }
    assert_eq!(changes(&l), before);
    assert!(!l.has_pending());
}

#[test]
fn every_statement_of_both_walks_seeks_its_index_and_sorts_nothing() {
    let l = ledger();
    let conn = l.store().connection();
    for walk in [Walk::NewestFirst, Walk::OldestFirst] {
        let sql = WalkSql::of(walk);
        for (name, statement, params) in [
            ("keys", sql.keys, 6),
            ("any_after", sql.any_after, 2),
            ("window_end", sql.window_end, 3),
        ] {
            let all: [&dyn rusqlite::ToSql; 6] = [&0, &"", &80, &0, &Option::<String>::None, &21];
            let mut stmt = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {statement}"))
                .unwrap();
            let plan: Vec<String> = stmt
                .query_map(&all[..params], |r| r.get::<_, String>(3))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let plan = plan.join(" | ");
            // The in-flight walk reads the index of the records in flight.
            let index = match walk {
                Walk::NewestFirst => "idempotency_records_sweep_at",
                Walk::OldestFirst => "idempotency_records_in_flight",
            };
            assert!(
                plan.contains(&format!("INDEX {index} ((sweep_at,key)")),
                "{walk:?} {name}: a range on {index}: {plan}"
            );
            assert!(
                !plan.contains("TEMP B-TREE"),
                "{walk:?} {name} sorts: {plan}"
            );
        }
    }
}

// ---- a sharded tenant -------------------------------------------------------

/// Every page of a sharded tenant's walk: each object asked after the
/// same position, the answers merged.
fn merged_walk(shards: &[L], state: Option<KeyState>, limit: u32, now: i64) -> Vec<ListPage> {
    let mut pages = Vec::new();
    let mut after = None;
    loop {
        let answers = shards
            .iter()
            .map(|s| ObjectPage {
                page: s.list(&query(state, limit, after.clone()), now).unwrap(),
                current: true,
            })
            .collect();
        let page = ListPage::merge(answers, limit, Walk::of(state));
        after = page.next.clone();
        pages.push(page);
        if after.is_none() || pages.len() > 10_000 {
            return pages;
        }
    }
}

#[test]
fn a_sharded_walk_lists_what_one_object_holding_every_key_lists() {
    let shards: Vec<L> = (0..4).map(|_| ledger()).collect();
    let one = ledger();
    for i in 0..300i64 {
        let key = format!("key-{i:03}");
        let state = match i % 10 {
            0 => KeyState::InFlight,
            1 | 2 => KeyState::Released,
            _ => KeyState::Completed,
        };
        let at = 1_000 + i / 3; // three keys per millisecond
        put(&shards[shard_of(&key, 4) as usize], &key, state, at);
        put(&one, &key, state, at);
    }
    for state in [
        None,
        Some(KeyState::InFlight),
        Some(KeyState::Completed),
        Some(KeyState::Released),
    ] {
        for limit in [1, 7, 20, 100] {
            let merged = merged_walk(&shards, state, limit, 2_000);
            let alone = walk(&one, state, 100, 2_000);
            assert_eq!(
                all_keys(&merged),
                all_keys(&alone),
                "state {state:?}, limit {limit}"
            );
            assert!(merged.iter().all(|p| p.keys.len() <= limit as usize));
        }
    }
}

fn listed(key: &str, sweep_at: i64, from: usize) -> ListedKey {
    ListedKey {
        record: RecordView {
            key: key.to_string(),
            state: KeyState::Completed,
            generation: from as i64 + 1,
            created_at: String::new(),
            expires_at: String::new(),
            lease_expires_at: None,
            response_status: Some(201),
            retained: Some(true),
            replays: 0,
        },
        sweep_at,
    }
}

fn position(v: &serde_json::Value) -> Option<Position> {
    (!v.is_null()).then(|| serde_json::from_value(v.clone()).unwrap())
}

#[test]
fn merged_pages_follow_the_shared_fixture() {
    let text = include_str!("../fixtures/list-merge.json");
    let fixture: serde_json::Value = serde_json::from_str(text).unwrap();
    for case in fixture["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let walk = match case["walk"].as_str().unwrap() {
            "newest_first" => Walk::NewestFirst,
            _ => Walk::OldestFirst,
        };
        let pages = case["pages"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(from, p)| ObjectPage {
                current: p["current"].as_bool().unwrap(),
                page: ListPage {
                    keys: p["keys"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|k| {
                            listed(
                                k["key"].as_str().unwrap(),
                                k["sweep_at"].as_i64().unwrap(),
                                from,
                            )
                        })
                        .collect(),
                    next: position(&p["next"]),
                },
            })
            .collect();
        let limit = case["limit"].as_u64().unwrap() as u32;
        let merged = ListPage::merge(pages, limit, walk);
        let got: Vec<(String, usize)> = merged
            .keys
            .iter()
            .map(|k| (k.record.key.clone(), k.record.generation as usize - 1))
            .collect();
        let want: Vec<(String, usize)> = case["merged"]["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| {
                (
                    k["key"].as_str().unwrap().to_string(),
                    k["from"].as_u64().unwrap() as usize,
                )
            })
            .collect();
        assert_eq!(got, want, "{name}");
        assert_eq!(merged.next, position(&case["merged"]["next"]), "{name}");
    }
}

#[test]
fn an_in_flight_cursor_at_a_completed_records_place_goes_on_from_there() {
    // Schema 6's in-flight walk stopped anywhere, a completed record's
    // place included (a window that held no key): such a cursor, given
    // out before the upgrade, goes on from its place in the new walk.
    let l = ledger();
    put(&l, "early", KeyState::InFlight, 1_000);
    put(&l, "done", KeyState::Completed, 2_000);
    put(&l, "late", KeyState::InFlight, 3_000);
    let done = Position {
        sweep_at: 2_000 + RETENTION_MS,
        key: "done".into(),
    };
    let page = l
        .list(&query(Some(KeyState::InFlight), 20, Some(done)), 4_000)
        .unwrap();
    assert_eq!(names(&page), ["late"]);
    assert_eq!(page.next, None);
}
