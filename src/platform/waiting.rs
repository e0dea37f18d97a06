//! The object's side of waiting for an in-flight result (`wait_ms` on
//! `claim` and `execute`).
//!
//! Role: run a claim (or execute) again each time its waiter is woken —
//! by [`Waiters::wake`] after `complete`, `release` or a finished run, or by
//! its one timer at the owner's lease end or its own deadline
//! ([`next_wake`]) — until it is no longer refused as in flight or the
//! budget is spent. No polling loop: between wakes a waiter awaits a
//! oneshot and a single `setTimeout` (worker 0.8.7 `Delay`, which clears
//! its timer when dropped).
//!
//! What must stay true here:
//! - Every attempt is the ordinary ledger call at that moment's clock, so
//!   a waiter that finds the key released or its lease ended claims it
//!   (taking over at the next generation) exactly as a new retry would.
//! - A waiter beyond `IN_FLIGHT_MAX_WAITERS` is answered at once.
//! - Nothing is awaited but the waiter's own oneshot and timer: no storage
//!   call, so the object's input gate stays open for every other request.

use std::time::Duration;

use futures_util::future::select;
use worker::Delay;

use crate::contract::waiting::next_wake;
use crate::ledger::Millis;
use crate::platform::now_ms;
use crate::protocol::Problem;
use crate::waiters::Waiters;

/// How a call that was allowed to wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitReport {
    /// Milliseconds spent parked (None: never parked).
    pub waited_ms: Option<Millis>,
    /// Parked, then answered `in_flight` when the budget ran out.
    pub timed_out: bool,
}

/// Runs `attempt` (at the current clock) until it is not refused as in
/// flight, the budget `budget_ms` is spent, or no waiter may be parked.
/// `lease_remaining` says whether an outcome is "in flight, lease ends in
/// … ms".
pub async fn attempt_waiting<T>(
    waiters: &Waiters,
    key: &str,
    budget_ms: u64,
    mut attempt: impl FnMut(Millis) -> Result<T, Problem>,
    lease_remaining: impl Fn(&T) -> Option<Millis>,
) -> Result<(T, WaitReport), Problem> {
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
