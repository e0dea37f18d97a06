//! `platform::eager`'s polling: a future done at once is answered at once;
//! one that waits goes on, and a waker it took on its first poll only (as
//! workers-rs's `Delay` does with `setTimeout`) still wakes whoever polls
//! it later.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use idempotency_ledger::platform::eager::{poll_now, Now};

/// Ready once `fired` is set; keeps the waker of its first poll alone.
struct FirstPollOnly {
    fired: Rc<Cell<bool>>,
    kept: Rc<RefCell<Option<Waker>>>,
    polls: Rc<Cell<u32>>,
}

impl Future for FirstPollOnly {
    type Output = &'static str;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<&'static str> {
        self.polls.set(self.polls.get() + 1);
        if self.fired.get() {
            return Poll::Ready("fired");
        }
        if self.kept.borrow().is_none() {
            *self.kept.borrow_mut() = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[derive(Default)]
struct Counting(AtomicUsize);
impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_future_that_never_waits_is_answered_on_the_first_poll() {
    let polls = Rc::new(Cell::new(0));
    let counted = Rc::clone(&polls);
    let now = poll_now(async move {
        counted.set(counted.get() + 1);
        41 + 1
    });
    assert!(matches!(now, Now::Done(42)));
    assert_eq!(polls.get(), 1, "polled exactly once");
}

#[test]
fn a_waker_taken_on_the_first_poll_wakes_the_task_that_polls_later() {
    let fired = Rc::new(Cell::new(false));
    let kept = Rc::new(RefCell::new(None));
    let polls = Rc::new(Cell::new(0));
    let future = FirstPollOnly {
        fired: Rc::clone(&fired),
        kept: Rc::clone(&kept),
        polls: Rc::clone(&polls),
    };
    let Now::Later(mut rest) = poll_now(future) else {
        panic!("a pending future was reported done");
    };
    assert_eq!(polls.get(), 1);

    // The executor that takes over polls with its own waker.
    let task = Arc::new(Counting::default());
    let waker = Waker::from(Arc::clone(&task));
    let mut cx = Context::from_waker(&waker);
    assert!(Pin::new(&mut rest).poll(&mut cx).is_pending());
    assert_eq!(task.0.load(Ordering::SeqCst), 0, "no wake yet");

    // The event fires and wakes the waker of the *first* poll.
    fired.set(true);
    kept.borrow().as_ref().expect("kept a waker").wake_by_ref();
    assert_eq!(
        task.0.load(Ordering::SeqCst),
        1,
        "the task that polls now was woken"
    );
    assert_eq!(Pin::new(&mut rest).poll(&mut cx), Poll::Ready("fired"));
    assert_eq!(polls.get(), 3);
}

#[test]
fn a_wake_before_the_task_first_polls_is_not_lost() {
    let fired = Rc::new(Cell::new(false));
    let kept = Rc::new(RefCell::new(None));
    let future = FirstPollOnly {
        fired: Rc::clone(&fired),
        kept: Rc::clone(&kept),
        polls: Rc::new(Cell::new(0)),
    };
    let Now::Later(mut rest) = poll_now(future) else {
        panic!("a pending future was reported done");
    };
    // Fired between the first poll and the task's: nobody to wake, and
    // the task's own first poll finds it done.
    fired.set(true);
    kept.borrow().as_ref().expect("kept a waker").wake_by_ref();
    let task = Arc::new(Counting::default());
    let waker = Waker::from(Arc::clone(&task));
    assert_eq!(
        Pin::new(&mut rest).poll(&mut Context::from_waker(&waker)),
        Poll::Ready("fired")
    );
}
