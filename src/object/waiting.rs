//! Requests parked on an in-flight key until its owner settles it: the
//! registry, the wake rule and the loop (`wait_ms` on `claim` and `execute`).
//!
//! Role: a waiter parks ([`Waiters::park`]) and awaits its [`Parked`]
//! future; `complete`, `release` and a run that finished in the object wake
//! every waiter of that key ([`Waiters::wake`]). [`attempt_waiting`] runs a
//! claim (or execute) again each time its waiter is woken — by a wake, or
//! by its one timer at the owner's lease end or its own deadline
//! ([`next_wake`]) — until it is no longer refused as in flight or the
//! budget is spent. No polling loop. The registry and the wake rule are
//! pure Rust (a `futures-channel` oneshot per waiter) and host-tested; only
//! the loop's timer is workers-rs (worker 0.8.7 `Delay`, which clears its
//! `setTimeout` when dropped).
//!
//! What must stay true here:
//! - Every attempt is the ordinary ledger call at that moment's clock, so a
//!   waiter that finds the key released or its lease ended claims it
//!   (taking over at the next generation) exactly as a new retry would.
//! - A wait never outlives the owner's lease (a waiter wakes at the lease's
//!   end at the latest) nor its budget.
//! - At most `max` waiters are parked per registry (one object); beyond it
//!   `park` refuses at once, and the caller answers `409`.
//! - A waiter leaves the registry when it is woken or when its future is
//!   dropped (its deadline passed, its request was cancelled), so the count
//!   never leaks. Waking one key never touches another key's waiters.
//! - Nothing here survives the object: an evicted or restarted object has
//!   no waiters, and its callers see a failed call (the gateway answers a
//!   waiting request whose call failed with `409`).
//! - Nothing is awaited but the waiter's own oneshot and timer: no storage
//!   call, so the object's input gate stays open for every other request.
//!
//! How this meets workers-rs 0.8.7 (read in worker-macros `async_export.rs`
//! and wasm-bindgen-futures): every Durable Object method is a wasm-bindgen
//! `async fn(&self)` turned into a JS promise; the object's requests share
//! one instance (shared `&self` borrows), and a woken waker queues the
//! task as a microtask in the same isolate. A Durable Object's requests
//! share one I/O context, so request B's `complete` may resolve request A's
//! parked future.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use futures_channel::oneshot;

use crate::ledger::Millis;

#[derive(Default)]
struct Registry {
    max: usize,
    parked: usize,
    next_id: u64,
    by_key: HashMap<String, Vec<(u64, oneshot::Sender<()>)>>,
}

/// The waiters of one object.
#[derive(Clone, Default)]
pub struct Waiters {
    registry: Rc<RefCell<Registry>>,
}

/// One parked waiter: resolves when its key is woken.
pub struct Parked {
    registry: Rc<RefCell<Registry>>,
    key: String,
    id: u64,
    woken: oneshot::Receiver<()>,
}

impl Waiters {
    /// A registry that parks at most `max` waiters at once.
    pub fn new(max: usize) -> Waiters {
        Waiters {
            registry: Rc::new(RefCell::new(Registry {
                max,
                ..Registry::default()
            })),
        }
    }

    /// Parks a waiter on `key`; `None` when `max` waiters are parked already.
    pub fn park(&self, key: &str) -> Option<Parked> {
        let mut r = self.registry.borrow_mut();
        if r.parked >= r.max {
            return None;
        }
        r.parked += 1;
        r.next_id += 1;
        let id = r.next_id;
        let (tx, rx) = oneshot::channel();
        r.by_key.entry(key.to_string()).or_default().push((id, tx));
        Some(Parked {
            registry: self.registry.clone(),
            key: key.to_string(),
            id,
            woken: rx,
        })
    }

    /// Wakes every waiter parked on `key`; returns how many.
    pub fn wake(&self, key: &str) -> usize {
        let woken = {
            let mut r = self.registry.borrow_mut();
            let Some(waiters) = r.by_key.remove(key) else {
                return 0;
            };
            r.parked -= waiters.len();
            waiters
        };
        let n = woken.len();
        for (_, tx) in woken {
            // A receiver already dropped has nobody left to wake.
            let _ = tx.send(());
        }
        n
    }

    /// Waiters parked now, over every key.
    pub fn parked(&self) -> usize {
        self.registry.borrow().parked
    }
}

impl Future for Parked {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Woken (Ok) or its sender gone (Canceled): either way, claim again.
        Pin::new(&mut self.woken).poll(cx).map(|_| ())
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        let mut r = self.registry.borrow_mut();
        let Some(waiters) = r.by_key.get_mut(&self.key) else {
            return;
        };
        let before = waiters.len();
        waiters.retain(|(id, _)| *id != self.id);
        let removed = before - waiters.len();
        if waiters.is_empty() {
            r.by_key.remove(&self.key);
        }
        r.parked -= removed;
    }
}

/// When a waiter parked at `now` wakes by itself, in ms from now: at the
/// lease's end (one ms after, so the claim sees it ended) or at its
/// deadline, whichever is first. `None`: the deadline has passed, stop.
pub fn next_wake(now: Millis, deadline: Millis, lease_remaining_ms: Millis) -> Option<Millis> {
    if now >= deadline {
        return None;
    }
    Some((deadline - now).min(lease_remaining_ms.max(0).saturating_add(1)))
}

/// How a call that was allowed to wait ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitReport {
    /// Milliseconds spent parked (None: never parked).
    pub waited_ms: Option<Millis>,
    /// Parked, then answered `in_flight` when the budget ran out.
    pub timed_out: bool,
}

/// An answer that never waited (every call but a waiting claim or execute).
pub fn answered<T>(answer: T) -> (T, WaitReport) {
    (answer, WaitReport::default())
}

/// Runs `attempt` (at the current clock) until it is not refused as in
/// flight, the budget `budget_ms` is spent, or no waiter may be parked.
/// `lease_remaining` says whether an outcome is "in flight, lease ends in
/// … ms".
#[cfg(all(target_arch = "wasm32", feature = "workers-rs"))]
pub async fn attempt_waiting<T>(
    waiters: &Waiters,
    key: &str,
    budget_ms: u64,
    mut attempt: impl FnMut(Millis) -> Result<T, crate::protocol::Problem>,
    lease_remaining: impl Fn(&T) -> Option<Millis>,
) -> Result<(T, WaitReport), crate::protocol::Problem> {
    use futures_util::future::select;
    use std::time::Duration;
    use worker::Delay;

    use crate::platform::now_ms;

    let start = now_ms();
    let deadline = start.saturating_add(budget_ms.min(i64::MAX as u64) as i64);
    let mut parked_once = false;
    loop {
        let now = now_ms();
        let outcome = attempt(now)?;
        let report = |timed_out| WaitReport {
            waited_ms: parked_once.then_some(now - start),
            timed_out,
        };
        let Some(remaining) = lease_remaining(&outcome) else {
            return Ok((outcome, report(false)));
        };
        let Some(wake_in) = next_wake(now, deadline, remaining) else {
            return Ok((outcome, report(parked_once)));
        };
        // Over the bound: answered at once (a waiter that already waited
        // and cannot park again has run out of waiting, too).
        let Some(parked) = waiters.park(key) else {
            return Ok((outcome, report(parked_once)));
        };
        parked_once = true;
        let timer = Delay::from(Duration::from_millis(wake_in.max(1) as u64));
        // Whichever comes first; the other is dropped (the timer cleared,
        // the waiter unregistered).
        let _ = select(parked, timer).await;
    }
}
