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
    let forget_previous = || forget(&r, record(asked), evidence.previous_expires_by, now);
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

/// A change that stops asking the previous layout, once its recorded
/// window has passed: only after the latest expiry its objects granted
/// (`accepted` records the asked layout).
fn forget(
    r: &LayoutRecord,
    accepted: Option<LayoutRecord>,
    previous_expires_by: Option<Millis>,
    now: Millis,
) -> LayoutDecision {
    match (r.previous, previous_expires_by) {
        (None, _) => LayoutDecision::Accept(accepted),
        (Some(m), None) => LayoutDecision::AskPrevious(m),
        (Some(m), Some(latest)) if latest > now => LayoutDecision::Hold(
            LayoutRecord {
                window_ms: latest.saturating_sub(r.since),
                ..*r
            },
            format!(
                "the previous layout ({m} objects) holds a record kept until {latest} (epoch ms), longer than the retention window; keep \"previous\" until then"
            ),
        ),
        (Some(_), Some(_)) => LayoutDecision::Accept(accepted),
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
