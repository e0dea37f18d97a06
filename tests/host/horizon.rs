//! The expiry horizon a reshard waits for (docs/sharding.md, issue 25): an
//! object keeps, in its state row, an expiry at or after every one it
//! granted beyond its reshard window, written in the granting transaction
//! and only when it grows by more than its slack.

use crate::support::*;
use idempotency_ledger::ledger::{ClaimOutcome, Ledger, HORIZON_GAP_MS, HORIZON_SLACK_MS};

/// The reshard window the object's configuration covers.
const WINDOW_MS: i64 = RETENTION_MS + 2 * LEASE_MS;
const YEAR_MS: i64 = 31_536_000_000;
const T0: i64 = 1_800_000_000_000;

fn kept_a_year() -> idempotency_ledger::ledger::ClaimPolicy {
    let mut p = policy();
    p.retention_ms = YEAR_MS;
    p
}

fn stored_horizon(file: &LedgerFile) -> i64 {
    file.open().expires_by().unwrap()
}

#[test]
fn the_configured_retention_never_writes_the_horizon() {
    let file = LedgerFile::new("horizon-free");
    let l = file.open_failing();
    l.track_expiries_beyond(Some(WINDOW_MS));
    // The state row cannot be written: grants within the window never need it.
    l.store().failing.set(true);
    for i in 0..20 {
        let key = format!("k-{i}");
        assert!(matches!(
            l.claim(&key, &fp("a"), &policy(), T0 + i).unwrap(),
            ClaimOutcome::Claimed { .. }
        ));
        l.complete(&key, 1, &response("x"), RETENTION_MS, T0 + i + 5)
            .unwrap();
    }
    assert_eq!(l.expires_by().unwrap(), 0);
    // A year's retention must be written with its grant: the claim fails
    // with the row rather than grant an expiry nobody knows of.
    assert!(l.claim("long", &fp("a"), &kept_a_year(), T0 + 100).is_err());
    assert!(l.lookup("long", T0 + 100).unwrap().is_none());
}

#[test]
fn a_longer_retention_raises_the_horizon_in_its_own_transaction_once_per_slack() {
    let file = LedgerFile::new("horizon-raised");
    let l = file.open();
    l.track_expiries_beyond(Some(WINDOW_MS));
    l.claim("long", &fp("a"), &kept_a_year(), T0).unwrap();
    let raised = T0 + YEAR_MS + HORIZON_SLACK_MS;
    assert_eq!(l.expires_by().unwrap(), raised);
    assert_eq!(stored_horizon(&file), raised, "written with the grant");
    // Its completion, and more such keys within the slack, write nothing more.
    let l = file.open_failing();
    l.track_expiries_beyond(Some(WINDOW_MS));
    l.store().failing.set(true);
    l.complete("long", 1, &response("y"), YEAR_MS, T0 + 10)
        .unwrap();
    l.claim("long-2", &fp("b"), &kept_a_year(), T0 + 60_000)
        .unwrap();
    // Past the slack the next one raises it again.
    let later = T0 + HORIZON_SLACK_MS + 1;
    assert!(l.claim("long-3", &fp("c"), &kept_a_year(), later).is_err());
    l.store().failing.set(false);
    l.claim("long-3", &fp("c"), &kept_a_year(), later).unwrap();
    assert_eq!(stored_horizon(&file), later + YEAR_MS + HORIZON_SLACK_MS);
    // A completion with a longer retention than its claim raises it too.
    let l = file.open();
    l.track_expiries_beyond(Some(WINDOW_MS));
    l.claim("short-claim", &fp("d"), &policy(), later).unwrap();
    l.complete("short-claim", 1, &response("z"), 2 * YEAR_MS, later + 1)
        .unwrap();
    assert_eq!(
        stored_horizon(&file),
        later + 1 + 2 * YEAR_MS + HORIZON_SLACK_MS
    );
}

#[test]
fn a_retired_object_raises_it_with_every_grant_and_a_rolled_back_grant_never() {
    let file = LedgerFile::new("horizon-retired");
    let l = file.open();
    l.track_expiries_beyond(Some(WINDOW_MS));
    l.claim("held", &fp("a"), &policy(), T0).unwrap();
    l.release("held", 1, T0 + 1).unwrap();
    assert_eq!(stored_horizon(&file), 0);
    // Retired: a reclaim of the key it holds may outlast its layout's window.
    l.track_expiries_beyond(Some(0));
    let at = T0 + 1_000;
    l.claim("held", &fp("a"), &policy(), at).unwrap();
    assert_eq!(
        stored_horizon(&file),
        at + RETENTION_MS.max(LEASE_MS) + HORIZON_SLACK_MS
    );
    // An embedded run that fails takes its grant, and the horizon, back.
    let fresh = LedgerFile::new("horizon-rollback");
    let l: Ledger<_> = fresh.open();
    l.track_expiries_beyond(Some(WINDOW_MS));
    let failed = l.execute(
        "rolled-back",
        &fp("e"),
        &kept_a_year(),
        &capture(),
        T0,
        |_| {
            Err::<idempotency_ledger::protocol::AppResponse, _>(
                idempotency_ledger::ledger::StoreError::Sql("the app failed".into()),
            )
        },
    );
    assert!(failed.is_err());
    assert_eq!(l.expires_by().unwrap(), 0);
    assert_eq!(stored_horizon(&fresh), 0);
}

#[test]
fn library_ledgers_keep_no_horizon() {
    let file = LedgerFile::new("horizon-none");
    let l = file.open_failing();
    l.store().failing.set(true);
    l.claim("long", &fp("a"), &kept_a_year(), T0).unwrap();
    assert_eq!(l.expires_by().unwrap(), 0);
}

#[test]
fn the_horizon_covers_every_record_whatever_configuration_granted_it() {
    // Issue 33: keys granted under RETENTION_SECONDS=600 (a window that
    // covered them, so nothing was tracked), then the configuration lowered
    // to 10 s. The horizon a registry reads must still cover them.
    const OLD_RETENTION_MS: i64 = 600_000;
    let file = LedgerFile::new("horizon-lowered");
    let l = file.open();
    l.track_expiries_beyond(Some(OLD_RETENTION_MS + 16_000));
    let mut old = policy();
    old.retention_ms = OLD_RETENTION_MS;
    l.claim("done", &fp("a"), &old, T0).unwrap();
    l.complete("done", 1, &response("x"), OLD_RETENTION_MS, T0 + 5)
        .unwrap();
    l.claim("running", &fp("b"), &old, T0 + 10).unwrap();
    assert_eq!(
        l.expires_by().unwrap(),
        0,
        "within its window then: untracked"
    );
    // The next instance runs the lowered configuration.
    let l = file.open();
    l.track_expiries_beyond(Some(10_000 + 6_000));
    // One index read: the latest sweep_at plus the gap.
    let horizon = l.horizon().unwrap();
    assert_eq!(horizon, old.sweep_at(T0 + 10) + HORIZON_GAP_MS);
    assert!(
        horizon >= old.in_flight_expires_at(T0 + 10),
        "the key in flight"
    );
    assert!(horizon >= T0 + 5 + OLD_RETENTION_MS, "the completed key");
    // A tracked expiry beyond every record still counts.
    l.claim("long", &fp("c"), &kept_a_year(), T0 + 20).unwrap();
    assert_eq!(l.horizon().unwrap(), T0 + 20 + YEAR_MS + HORIZON_SLACK_MS);
    // An empty ledger has no horizon.
    assert_eq!(
        LedgerFile::new("horizon-empty").open().horizon().unwrap(),
        0
    );
}

#[test]
fn a_completion_far_from_its_claim_raises_the_horizon_and_the_usual_one_writes_nothing() {
    let file = LedgerFile::new("horizon-late");
    let l = file.open_failing();
    l.track_expiries_beyond(Some(WINDOW_MS));
    l.claim("soon", &fp("a"), &policy(), T0).unwrap();
    l.claim("late", &fp("b"), &policy(), T0).unwrap();
    // The state row cannot be written: a completion within the gap of its
    // claim, with the claim's retention, never needs it.
    l.store().failing.set(true);
    l.complete("soon", 1, &response("x"), RETENTION_MS, T0 + HORIZON_GAP_MS)
        .unwrap();
    assert_eq!(l.horizon().unwrap(), T0 + RETENTION_MS + HORIZON_GAP_MS);
    // An owner that completes later (no takeover since): its expiry is past
    // what the latest sweep_at bounds, so it is written with the completion
    // — or the completion fails with the row.
    let late = T0 + HORIZON_GAP_MS + 1;
    assert!(l
        .complete("late", 1, &response("y"), RETENTION_MS, late)
        .is_err());
    assert!(matches!(
        l.lookup("late", late).unwrap().map(|r| r.state),
        Some(idempotency_ledger::ledger::KeyState::InFlight)
    ));
    l.store().failing.set(false);
    l.complete("late", 1, &response("y"), RETENTION_MS, late)
        .unwrap();
    assert_eq!(
        stored_horizon(&file),
        late + RETENTION_MS + HORIZON_SLACK_MS
    );
    assert!(l.horizon().unwrap() >= late + RETENTION_MS);
    // A fenced-out completion changes nothing and raises nothing.
    assert!(l
        .complete("late", 1, &response("z"), 2 * YEAR_MS, late + 1)
        .is_ok());
    assert_eq!(
        stored_horizon(&file),
        late + RETENTION_MS + HORIZON_SLACK_MS
    );
}
