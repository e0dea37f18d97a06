//! The waiting registry (`object::waiting`, pure and host-tested): when a
//! parked waiter wakes, that waking a key resolves its waiters only, and
//! the bound on parked waiters.

use std::future::Future;
use std::pin::Pin;
use std::task::Context;

use idempotency_ledger::object::waiting::{next_wake, Parked, Waiters};
use std::task::Waker;

fn ready(p: &mut Parked) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    Pin::new(p).poll(&mut cx).is_ready()
}

#[test]
fn a_waiter_wakes_at_the_lease_end_or_its_deadline() {
    assert_eq!(next_wake(1_000, 6_000, 2_000), Some(2_001));
    assert_eq!(next_wake(1_000, 2_000, 60_000), Some(1_000));
    assert_eq!(next_wake(2_000, 2_000, 60_000), None);
    assert_eq!(next_wake(3_000, 2_000, 1), None);
    assert_eq!(next_wake(0, 10, -5), Some(1));
}

#[test]
fn waking_a_key_resolves_its_waiters_only() {
    let w = Waiters::new(10);
    let mut a1 = w.park("a").unwrap();
    let mut a2 = w.park("a").unwrap();
    let mut b = w.park("b").unwrap();
    assert_eq!(w.parked(), 3);
    assert!(!ready(&mut a1) && !ready(&mut b));
    assert_eq!(w.wake("a"), 2);
    assert!(ready(&mut a1) && ready(&mut a2));
    assert!(!ready(&mut b));
    assert_eq!(w.parked(), 1);
    assert_eq!(w.wake("a"), 0);
    assert_eq!(w.wake("nobody"), 0);
}

#[test]
fn the_bound_refuses_at_once_and_frees_on_drop() {
    let w = Waiters::new(2);
    let a = w.park("k").unwrap();
    let _b = w.park("other").unwrap();
    assert!(w.park("k").is_none());
    drop(a);
    assert_eq!(w.parked(), 1);
    let _c = w.park("k").expect("a dropped waiter frees its place");
    assert!(w.park("k").is_none());
}

#[test]
fn a_woken_waiter_dropped_later_is_not_counted_twice() {
    let w = Waiters::new(3);
    let a = w.park("k").unwrap();
    let _b = w.park("j").unwrap();
    w.wake("k");
    assert_eq!(w.parked(), 1);
    drop(a);
    assert_eq!(w.parked(), 1);
}

#[test]
fn a_zero_bound_parks_nobody() {
    assert!(Waiters::new(0).park("k").is_none());
}
