//! The rows one call's own statements wrote (`ledger-rows-written`).
//!
//! Role: measure a call's future by the store's running total of rows
//! written, around each of its polls only. A Durable Object's calls share
//! one instance and interleave at their awaits (a parked `Prefer: wait`
//! claim lets every other call and the flush timer run), but a statement
//! runs synchronously inside the poll of the future that issued it: the
//! total's growth during the call's polls is exactly its own rows, and
//! what others write while it waits never lands in its sum.
//!
//! What must stay true here: the sum belongs to the one call that is
//! measured (kept in its own future, never in the object), and nothing
//! else is polled inside its poll — true of the object's calls, which
//! spawn nothing and whose wakes are queued as microtasks, never run in
//! place.

use std::future::{poll_fn, Future};

/// Runs `call` and answers its output with the rows written during its
/// polls, by `written` (the store's running total of rows written; `None`
/// when the engine cannot tell, then the sum is 0).
pub async fn rows_written_by<F: Future>(
    written: impl Fn() -> Option<u64>,
    call: F,
) -> (F::Output, u64) {
    let mut call = std::pin::pin!(call);
    let mut rows = 0u64;
    let output = poll_fn(|cx| {
        let before = written();
        let poll = call.as_mut().poll(cx);
        if let (Some(before), Some(after)) = (before, written()) {
            rows = rows.saturating_add(after.saturating_sub(before));
        }
        poll
    })
    .await;
    (output, rows)
}
