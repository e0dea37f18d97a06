//! `object::meter`: a call's rows are those its own statements wrote,
//! however its awaits interleave with other calls' (docs/operations.md
//! "Metrics": `ledger-rows-written`).

use std::cell::Cell;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use idempotency_ledger::object::meter::rows_written_by;

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// Pending until `open` is set (a parked waiter's oneshot).
async fn gate(open: Rc<Cell<bool>>) {
    poll_fn(|_| {
        if open.get() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

#[test]
fn a_parked_call_is_charged_only_its_own_rows_not_those_written_while_it_waits() {
    // The store's running total of rows written, as `billed_rows` keeps it.
    let total = Rc::new(Cell::new(100u64));
    let write = |n: u64| total.set(total.get() + n);
    let open = Rc::new(Cell::new(false));
    let counter = || Some(total.get());

    // A: writes 2 rows, parks, writes 1 more once woken.
    let parked = rows_written_by(counter, async {
        write(2);
        gate(Rc::clone(&open)).await;
        write(1);
        "claimed"
    });
    // B: another call, 5 rows, runs while A is parked.
    let other = rows_written_by(counter, async {
        write(5);
        "fresh"
    });
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let (mut parked, mut other) = (pin!(parked), pin!(other));
    assert!(parked.as_mut().poll(&mut cx).is_pending());
    assert_eq!(other.as_mut().poll(&mut cx), Poll::Ready(("fresh", 5)));
    write(7); // the flush timer, between polls
    open.set(true);
    assert_eq!(parked.as_mut().poll(&mut cx), Poll::Ready(("claimed", 3)));
    // The running total's difference would have charged A with 15.
    assert_eq!(total.get() - 100, 15);
}

#[test]
fn an_engine_that_cannot_count_reports_zero() {
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let call = pin!(rows_written_by(|| None, async { 1 }));
    assert_eq!(call.poll(&mut cx), Poll::Ready((1, 0)));
}
