//! Resharding never forgets a live key (docs/contract.md §8): the rule that
//! decides whether a tenant's configured layout may follow the layouts it
//! had before.
//!
//! Role: one pure decision, host-tested. The tenant's layout history is
//! kept by its *registry* — the object named by the tenant alone (its one
//! object when unsharded) — and every object of the configured layout asks
//! it once per instance before it takes a keyed call. A change that would
//! stop asking an older layout while that layout may still hold live
//! records is refused (`500 misconfigured` naming `TENANT_SHARDS`): the
//! keys it holds would otherwise run a second time.
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
}

/// Decides whether `asked` may follow `recorded` (None: never recorded, the
/// tenant's single object) at `now`. `registry_holds_records`: the
/// registry object — the single-object layout — holds any record.
pub fn decide(
    recorded: Option<LayoutRecord>,
    asked: Layout,
    now: Millis,
    window_ms: Millis,
    registry_holds_records: bool,
) -> LayoutDecision {
    let record = |layout: Layout| {
        Some(LayoutRecord {
            shards: layout.shards,
            previous: layout.previous,
            since: now,
            window_ms,
        })
    };
    let (current, previous, live_until) = match recorded {
        Some(r) => (r.shards, r.previous, r.since.saturating_add(r.window_ms)),
        None => (1, None, 0),
    };
    let previous_live = previous.is_some() && now < live_until;
    if asked.shards == current && asked.previous == previous {
        return LayoutDecision::Accept(None);
    }
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
            LayoutDecision::Accept(record(asked))
        }
        // Finish resharding: forget the previous layout once its window passed.
        None if asked.shards == current => {
            if previous_live {
                return LayoutDecision::Refuse(format!(
                    "the previous layout ({} objects) may still hold live keys; keep \"previous\" until its retention window has passed",
                    previous.unwrap_or(1)
                ));
            }
            LayoutDecision::Accept(record(asked))
        }
        // A new layout without the one in use as its previous.
        None => {
            let current_live = recorded.is_some() || registry_holds_records;
            if current_live {
                return LayoutDecision::Refuse(format!(
                    "the tenant's keys live in {current} object(s); change the shard count with \"previous\": {current} and keep it for a retention window"
                ));
            }
            LayoutDecision::Accept(record(asked))
        }
        Some(p) => LayoutDecision::Refuse(format!(
            "\"previous\" is {p}, but the layout in use has {current} object(s)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Millis = 100_000;

    fn layout(shards: u32, previous: Option<u32>) -> Layout {
        Layout { shards, previous }
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
            decide(None, layout(1, None), 0, W, true),
            LayoutDecision::Accept(None)
        );
    }

    #[test]
    fn sharding_without_previous_is_refused_while_the_single_object_holds_records() {
        assert!(matches!(
            decide(None, layout(4, None), 0, W, true),
            LayoutDecision::Refuse(_)
        ));
        // A tenant with no records yet may start sharded.
        assert_eq!(
            decide(None, layout(4, None), 5, W, false),
            LayoutDecision::Accept(rec(4, None, 5))
        );
    }

    #[test]
    fn a_reshard_goes_through_previous_and_may_finish_only_after_its_window() {
        let started = decide(None, layout(4, Some(1)), 1_000, W, true);
        assert_eq!(started, LayoutDecision::Accept(rec(4, Some(1), 1_000)));
        let during = rec(4, Some(1), 1_000);
        assert_eq!(
            decide(during, layout(4, Some(1)), 2_000, W, true),
            LayoutDecision::Accept(None)
        );
        assert!(matches!(
            decide(during, layout(4, None), 1_000 + W - 1, W, true),
            LayoutDecision::Refuse(_)
        ));
        assert_eq!(
            decide(during, layout(4, None), 1_000 + W, W, true),
            LayoutDecision::Accept(rec(4, None, 1_000 + W))
        );
    }

    #[test]
    fn dropping_or_skipping_previous_is_refused() {
        let sharded = rec(4, None, 0);
        // Back to one object, or on to 8, without naming the 4 in use.
        assert!(matches!(
            decide(sharded, layout(1, None), 10 * W, W, false),
            LayoutDecision::Refuse(_)
        ));
        assert!(matches!(
            decide(sharded, layout(8, None), 10 * W, W, false),
            LayoutDecision::Refuse(_)
        ));
        // A previous that is not the layout in use.
        assert!(matches!(
            decide(sharded, layout(8, Some(2)), 10 * W, W, false),
            LayoutDecision::Refuse(_)
        ));
        // A second reshard while the first is in its window.
        let during = rec(4, Some(1), 0);
        assert!(matches!(
            decide(during, layout(8, Some(4)), W - 1, W, true),
            LayoutDecision::Refuse(_)
        ));
        assert_eq!(
            decide(during, layout(8, Some(4)), W, W, true),
            LayoutDecision::Accept(rec(8, Some(4), W))
        );
        // Going back to one object the proper way.
        assert_eq!(
            decide(sharded, layout(1, Some(4)), 10 * W, W, false),
            LayoutDecision::Accept(rec(1, Some(4), 10 * W))
        );
    }
}
