//! The reshard decision (`config::reshard::decide`, docs/contract.md §8):
//! which layout change the tenant's registry accepts, holds, keeps
//! `previous` in force for, or refuses — a pure function of the recorded
//! layout, the asked one, the clock, the window and the evidence.

use idempotency_ledger::config::reshard::*;
use idempotency_ledger::config::shards::Layout;
use idempotency_ledger::ledger::Millis;

const W: Millis = 100_000;

fn layout(shards: u32, previous: Option<u32>) -> Layout {
    Layout { shards, previous }
}

/// What the registry knows: whether it holds records, and the
/// previous layout's latest expiry once asked (`Some(0)`: nothing kept
/// beyond the window).
fn ev(holds: bool) -> Evidence {
    Evidence {
        registry_holds_records: holds,
        previous_expires_by: Some(0),
        ..Evidence::default()
    }
}

fn rec(shards: u32, previous: Option<u32>, since: Millis) -> Option<LayoutRecord> {
    Some(LayoutRecord {
        shards,
        previous,
        since,
        window_ms: W,
    })
}

#[test]
fn an_unsharded_tenant_needs_no_record() {
    assert_eq!(
        decide(None, layout(1, None), 0, W, ev(true)),
        LayoutDecision::Accept(None)
    );
}

#[test]
fn sharding_without_previous_is_refused_while_the_single_object_holds_records() {
    assert!(matches!(
        decide(None, layout(4, None), 0, W, ev(true)),
        LayoutDecision::Refuse(_)
    ));
    // A tenant with no records yet may start sharded.
    assert_eq!(
        decide(None, layout(4, None), 5, W, ev(false)),
        LayoutDecision::Accept(rec(4, None, 5))
    );
}

#[test]
fn a_reshard_goes_through_previous_and_may_finish_only_after_its_window() {
    let started = decide(None, layout(4, Some(1)), 1_000, W, ev(true));
    assert_eq!(started, LayoutDecision::Accept(rec(4, Some(1), 1_000)));
    let during = rec(4, Some(1), 1_000);
    assert_eq!(
        decide(during, layout(4, Some(1)), 2_000, W, ev(true)),
        LayoutDecision::Accept(None)
    );
    assert!(matches!(
        decide(during, layout(4, None), 1_000 + W - 1, W, ev(true)),
        LayoutDecision::KeepPrevious {
            previous: 1,
            record: None,
            ..
        }
    ));
    assert_eq!(
        decide(during, layout(4, None), 1_000 + W, W, ev(true)),
        LayoutDecision::Accept(rec(4, None, 1_000 + W))
    );
}

#[test]
fn dropping_or_skipping_previous_is_refused() {
    let sharded = rec(4, None, 0);
    // Back to one object, or on to 8, without naming the 4 in use.
    assert!(matches!(
        decide(sharded, layout(1, None), 10 * W, W, ev(false)),
        LayoutDecision::Refuse(_)
    ));
    assert!(matches!(
        decide(sharded, layout(8, None), 10 * W, W, ev(false)),
        LayoutDecision::Refuse(_)
    ));
    // A previous that is not the layout in use.
    assert!(matches!(
        decide(sharded, layout(8, Some(2)), 10 * W, W, ev(false)),
        LayoutDecision::Refuse(_)
    ));
    // A second reshard while the first is in its window.
    let during = rec(4, Some(1), 0);
    assert!(matches!(
        decide(during, layout(8, Some(4)), W - 1, W, ev(true)),
        LayoutDecision::Refuse(_)
    ));
    assert_eq!(
        decide(during, layout(8, Some(4)), W, W, ev(true)),
        LayoutDecision::Accept(rec(8, Some(4), W))
    );
    // Going back to one object the proper way.
    assert_eq!(
        decide(sharded, layout(1, Some(4)), 10 * W, W, ev(false)),
        LayoutDecision::Accept(rec(1, Some(4), 10 * W))
    );
}

#[test]
fn a_record_kept_longer_than_the_window_keeps_previous_named_until_it_expires() {
    // One object held a key given a retention of 10 windows; the
    // reshard to 2 started at 1_000.
    let during = rec(2, Some(1), 1_000);
    let unasked = Evidence {
        registry_holds_records: true,
        ..Evidence::default()
    };
    let kept_until = 1_000 + 10 * W;
    let asked = |latest| Evidence {
        previous_expires_by: Some(latest),
        ..unasked
    };
    // The window has passed: the previous layout's objects are asked.
    assert_eq!(
        decide(during, layout(2, None), 1_000 + W, W, unasked),
        LayoutDecision::AskPrevious(1)
    );
    // Their horizon is later: the previous layout stays in force, the
    // window stretched to it.
    let held = LayoutRecord {
        window_ms: 10 * W,
        ..during.unwrap()
    };
    assert!(matches!(
        decide(during, layout(2, None), 1_000 + W, W, asked(kept_until)),
        LayoutDecision::KeepPrevious { previous: 1, record: Some(r), .. } if r == held
    ));
    // From then on the record keeps it by itself, without asking again.
    assert!(matches!(
        decide(Some(held), layout(2, None), kept_until - 1, W, unasked),
        LayoutDecision::KeepPrevious {
            previous: 1,
            record: None,
            ..
        }
    ));
    // So does a second reshard, which would forget the single object too.
    assert!(matches!(
        decide(during, layout(4, Some(2)), 1_000 + W, W, asked(kept_until)),
        LayoutDecision::Hold(..)
    ));
    // Once the latest expiry has passed, previous may go.
    assert_eq!(
        decide(Some(held), layout(2, None), kept_until, W, unasked),
        LayoutDecision::AskPrevious(1)
    );
    assert_eq!(
        decide(
            Some(held),
            layout(2, None),
            kept_until,
            W,
            asked(kept_until)
        ),
        LayoutDecision::Accept(rec(2, None, kept_until))
    );
    // A layout that names no previous forgets nothing: nobody is asked.
    assert_eq!(
        decide(rec(2, None, 0), layout(4, Some(2)), 1, W, unasked),
        LayoutDecision::Accept(rec(4, Some(2), 1))
    );
}

#[test]
fn a_layout_history_lost_with_schema_1_is_unknown_for_a_window() {
    const U: Millis = 50_000;
    let upgraded = Evidence {
        registry_upgraded_at: Some(U),
        ..Evidence::default()
    };
    // A tenant mid-reshard at the upgrade keeps serving: its previous
    // is believed, and counts its window from now.
    assert_eq!(
        decide(None, layout(4, Some(2)), U + 1, W, upgraded),
        LayoutDecision::Accept(rec(4, Some(2), U + 1))
    );
    assert!(matches!(
        decide(rec(4, Some(2), U + 1), layout(4, None), U + W, W, ev(false)),
        LayoutDecision::KeepPrevious { previous: 2, .. }
    ));
    // ... unless the single object it would forget holds records.
    let holding = Evidence {
        registry_holds_records: true,
        ..upgraded
    };
    assert!(matches!(
        decide(None, layout(4, Some(2)), U + 1, W, holding),
        LayoutDecision::Refuse(_)
    ));
    // A layout without previous that nothing vouches for may be a
    // change from a v1 layout nobody recorded: refused for a window
    // after the upgrade.
    assert!(matches!(
        decide(None, layout(4, None), U + W - 1, W, upgraded),
        LayoutDecision::Refuse(_)
    ));
    assert_eq!(
        decide(None, layout(4, None), U + W, W, upgraded),
        LayoutDecision::Accept(rec(4, None, U + W))
    );
    // Asked by an object that held records under v1, it is the layout
    // that was in use: believed at once, and recorded.
    let vouched = Evidence {
        asker_upgraded_from_v1: true,
        ..upgraded
    };
    assert_eq!(
        decide(None, layout(4, None), U + 1, W, vouched),
        LayoutDecision::Accept(rec(4, None, U + 1))
    );
    // A registry created after the upgrade knows no v1 history: as before.
    assert_eq!(
        decide(None, layout(4, None), U + 1, W, Evidence::default()),
        LayoutDecision::Accept(rec(4, None, U + 1))
    );
    // An unsharded tenant is untouched by the upgrade.
    assert_eq!(
        decide(None, Layout::SINGLE, U + 1, W, holding),
        LayoutDecision::Accept(None)
    );
}

#[test]
fn dropping_previous_early_keeps_it_in_force_instead_of_refusing_the_tenant() {
    // Issue 33: 600 s lowered to 10 s (the asker's window now 16 s), the
    // reshard recorded at 1_000; previous dropped 18 s later. The window
    // has passed, so the previous layout is asked: it still holds a key
    // for 574 s. The tenant keeps being served through it.
    const NEW_W: Millis = 16_000;
    let during = rec(2, Some(1), 1_000).map(|r| LayoutRecord {
        window_ms: NEW_W,
        ..r
    });
    let dropped = 1_000 + 18_000;
    let unasked = ev(true);
    let unasked = Evidence {
        previous_expires_by: None,
        ..unasked
    };
    assert_eq!(
        decide(during, layout(2, None), dropped, NEW_W, unasked),
        LayoutDecision::AskPrevious(1)
    );
    let latest = dropped + 574_000;
    let asked = Evidence {
        previous_expires_by: Some(latest),
        ..unasked
    };
    let LayoutDecision::KeepPrevious {
        previous,
        record: Some(record),
        reason,
    } = decide(during, layout(2, None), dropped, NEW_W, asked)
    else {
        panic!("kept in force");
    };
    assert_eq!(previous, 1);
    assert_eq!(record.since + record.window_ms, latest);
    assert_eq!((record.shards, record.previous), (2, Some(1)));
    assert!(reason.contains(&latest.to_string()), "{reason}");
    // Until then every ask keeps it, without asking the previous layout.
    assert!(matches!(
        decide(Some(record), layout(2, None), latest - 1, NEW_W, unasked),
        LayoutDecision::KeepPrevious {
            previous: 1,
            record: None,
            ..
        }
    ));
    // The layout that names previous is the recorded one: accepted as is.
    assert_eq!(
        decide(Some(record), layout(2, Some(1)), latest - 1, NEW_W, unasked),
        LayoutDecision::Accept(None)
    );
    // Afterwards the previous layout is asked once more, and forgotten.
    assert_eq!(
        decide(Some(record), layout(2, None), latest, NEW_W, unasked),
        LayoutDecision::AskPrevious(1)
    );
    assert_eq!(
        decide(Some(record), layout(2, None), latest, NEW_W, ev(true)),
        LayoutDecision::Accept(rec(2, None, latest).map(|r| LayoutRecord {
            window_ms: NEW_W,
            ..r
        }))
    );
    // What cannot be made safe is still refused: a second reshard (two
    // previous layouts), or a layout that never named the one in use.
    assert!(matches!(
        decide(Some(record), layout(4, Some(2)), latest - 1, NEW_W, unasked),
        LayoutDecision::Refuse(_)
    ));
    assert!(matches!(
        decide(Some(record), layout(4, None), latest - 1, NEW_W, unasked),
        LayoutDecision::Refuse(_)
    ));
    assert!(matches!(
        decide(None, layout(2, None), dropped, NEW_W, ev(true)),
        LayoutDecision::Refuse(_)
    ));
}
