//! Resharding never forgets a live key (docs/contract.md §8): the rule that
//! decides whether a tenant's configured layout may follow the layouts it
//! had before.
//!
//! Role: one pure decision, host-tested. The tenant's layout history is
//! kept by its *registry* — the object named by the tenant alone (its one
//! object when unsharded) — and every object of the configured layout asks
//! it once per instance before it takes a keyed call. A change that would
//! stop asking an older layout while that layout may still hold live
//! records never takes effect: dropping `"previous"` too early keeps the
//! recorded previous layout in force ([`LayoutDecision::KeepPrevious`]),
//! and any other such change is refused (`500 misconfigured` naming
//! `TENANT_SHARDS`): the keys it holds would otherwise run a second time.
//! Pure, so an offline check of a configuration can reuse it.
//!
//! What must stay true here:
//! - A layout that stops taking new keys may hold live records for one
//!   *window* (retention + lease + origin timeout + sweep interval) after
//!   it stopped. Only then may the configuration forget it.
//! - Only one previous layout at a time: a new reshard starts from the
//!   current layout once the previous one's window has passed.
//! - The history starts as "one object" (what every tenant was before
//!   `TENANT_SHARDS` named it); that layout holds live records exactly when
//!   the registry holds any.
//! - A record that outlives the window (a per-call retention, or one
//!   granted under an older, longer configuration) keeps the previous
//!   layout needed until it expires: a change that forgets the previous
//!   layout is decided only with its objects' expiry horizons — the latest
//!   expiry of any record they hold ([`LayoutDecision::AskPrevious`]) —
//!   and held until the latest.
//! - Dropping `"previous"` is never an outage: until the previous layout
//!   may be forgotten it stays in force (asked first for every key) rather
//!   than refused; only changes that cannot be made safe (a second
//!   reshard, a layout that does not start from the one in use) are.
//! - A registry upgraded from schema 1 (which kept no layout history)
//!   believes `previous`, believes a layout vouched for by an object that
//!   held v1 records, and refuses any other layout without `previous` for a
//!   window after the upgrade ([`Evidence`]).

use super::shards::Layout;
pub use crate::ledger::LayoutRecord;
use crate::ledger::Millis;

/// What the registry does with a configured layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutDecision {
    /// The layout follows the history; record this if it is new.
    Accept(Option<LayoutRecord>),
    /// It would forget a layout that may hold live keys: why.
    Refuse(String),
    /// The change forgets the previous layout (of this many objects) and
    /// its recorded window has passed, but a record there may have been
    /// given a longer retention than the window covers: ask each of its
    /// objects for its expiry horizon and decide again with the latest
    /// ([`Evidence::previous_expires_by`]).
    AskPrevious(u32),
    /// Refused until the previous layout's latest expiry: record the
    /// window stretched to it (later asks are refused from the record,
    /// without asking the previous layout again), and why.
    Hold(LayoutRecord, String),
    /// The layout drops `"previous"` while the previous layout (of this
    /// many objects) may still hold live records: it is served as if
    /// `"previous"` were still named — the recorded previous layout stays
    /// in force, asked first for every key — rather than refused. Record
    /// the window stretched to the previous layout's latest expiry when
    /// given (as [`LayoutDecision::Hold`]), and why (logged as a warning).
    KeepPrevious {
        previous: u32,
        record: Option<LayoutRecord>,
        reason: String,
    },
}

/// What the registry knows besides its record when it decides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Evidence {
    /// The registry object — the single-object layout — holds any record.
    pub registry_holds_records: bool,
    /// The latest expiry any object of the previous layout may hold (the
    /// largest of their expiry horizons), once they were asked.
    pub previous_expires_by: Option<Millis>,
    /// The registry's own ledger was upgraded from schema 1 at this time:
    /// schema 1 kept no layout history, so before a layout is recorded it
    /// is unknown.
    pub registry_upgraded_at: Option<Millis>,
    /// The asking object's ledger was upgraded from schema 1: it held
    /// records under v1, so its layout was in use then.
    pub asker_upgraded_from_v1: bool,
}

/// Decides whether `asked` may follow `recorded` (None: never recorded) at
/// `now`; `window_ms` is the asker's window (retention + lease + origin
/// timeout + sweep interval).
pub fn decide(
    recorded: Option<LayoutRecord>,
    asked: Layout,
    now: Millis,
    window_ms: Millis,
    evidence: Evidence,
) -> LayoutDecision {
    let record = |layout: Layout| {
        Some(LayoutRecord {
            shards: layout.shards,
            previous: layout.previous,
            since: now,
            window_ms,
        })
    };
    let Some(r) = recorded else {
        return decide_unrecorded(asked, now, window_ms, evidence, record(asked));
    };
    let (current, previous) = (r.shards, r.previous);
    let live_until = r.since.saturating_add(r.window_ms);
    let previous_live = previous.is_some() && now < live_until;
    if asked.shards == current && asked.previous == previous {
        return LayoutDecision::Accept(None);
    }
    // A change that stops asking the previous layout, once its recorded
    // window has passed: only after the latest expiry its objects granted.
    let forget_previous = || {
        match (previous, evidence.previous_expires_by) {
        (None, _) => LayoutDecision::Accept(record(asked)),
        (Some(m), None) => LayoutDecision::AskPrevious(m),
        (Some(m), Some(latest)) if latest > now => LayoutDecision::Hold(
            LayoutRecord {
                window_ms: latest.saturating_sub(r.since),
                ..r
            },
            format!(
                "the previous layout ({m} objects) holds a record kept until {latest} (epoch ms), longer than the retention window; keep \"previous\" until then"
            ),
        ),
        (Some(_), Some(_)) => LayoutDecision::Accept(record(asked)),
    }
    };
    match asked.previous {
        // Start resharding from the layout in use.
        Some(p) if p == current && asked.shards != current => {
            if previous_live {
                return LayoutDecision::Refuse(format!(
                    "a reshard from {} objects is still in its window; keep {{\"shards\": {current}, \"previous\": {}}} until it has passed",
                    previous.unwrap_or(1),
                    previous.unwrap_or(1)
                ));
            }
            forget_previous()
        }
        // Finish resharding: forget the previous layout once its window
        // passed and its objects' records have all expired. Before that,
        // the recorded previous layout stays in force: no outage, and no
        // key runs where the previous layout may hold it.
        None if asked.shards == current => {
            let Some(m) = previous else {
                return forget_previous();
            };
            let early = |record, held: Option<String>| LayoutDecision::KeepPrevious {
                previous: m,
                record,
                reason: held.unwrap_or_else(|| format!(
                    "the previous layout ({m} objects) may still hold live keys until {live_until} (epoch ms); keep \"previous\" until then"
                )) + "; meanwhile it is kept in force, as if still named",
            };
            if previous_live {
                return early(None, None);
            }
            match forget_previous() {
                LayoutDecision::Hold(record, reason) => early(Some(record), Some(reason)),
                other => other,
            }
        }
        // A new layout without the one in use as its previous.
        None => LayoutDecision::Refuse(format!(
            "the tenant's keys live in {current} object(s); change the shard count with \"previous\": {current} and keep it for a retention window"
        )),
        Some(p) => LayoutDecision::Refuse(format!(
            "\"previous\" is {p}, but the layout in use has {current} object(s)"
        )),
    }
}

/// Nothing recorded: the tenant's single object — or, for a ledger
/// upgraded from schema 1, a history nobody knows. `accepted` records
/// `asked` as from now.
fn decide_unrecorded(
    asked: Layout,
    now: Millis,
    window_ms: Millis,
    evidence: Evidence,
    accepted: Option<LayoutRecord>,
) -> LayoutDecision {
    if asked == Layout::SINGLE {
        return LayoutDecision::Accept(None);
    }
    let single_live = || {
        LayoutDecision::Refuse(format!(
            "the tenant's keys live in its one object; change the shard count with \"previous\": 1 and keep it for a retention window (asked: {} objects{})",
            asked.shards,
            asked.previous.map(|p| format!(", previous {p}")).unwrap_or_default()
        ))
    };
    match asked.previous {
        // Start resharding from the single object.
        Some(1) => LayoutDecision::Accept(accepted),
        // A reshard under way that no registry recorded: one started under
        // schema 1 (no v2 object of either layout ever asked, so only v1
        // records can be there). Believed — its previous layout is asked
        // first — unless the single object, which it would forget, holds
        // records.
        Some(_) if evidence.registry_holds_records => single_live(),
        Some(_) => LayoutDecision::Accept(accepted),
        None if evidence.registry_holds_records => single_live(),
        // Asked by an object that held records under schema 1: its layout
        // was in use then.
        None if evidence.asker_upgraded_from_v1 => LayoutDecision::Accept(accepted),
        // The registry was upgraded from schema 1 and nothing vouches for
        // this layout: it may be a change from a v1 layout nobody recorded.
        None => match evidence.registry_upgraded_at {
            Some(upgraded) if now < upgraded.saturating_add(window_ms) => LayoutDecision::Refuse(format!(
                "the tenant's layout before this object's upgrade from schema 1 (at {upgraded}, epoch ms) is unknown; {} objects without \"previous\" is accepted once an object that held records before the upgrade asks, or a retention window after the upgrade",
                asked.shards
            )),
            _ => LayoutDecision::Accept(accepted),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
