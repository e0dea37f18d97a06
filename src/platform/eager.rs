//! A future run to its end at once when it can be, and handed to the
//! runtime only when it must wait.
//!
//! Why: a wasm-bindgen `async` export answers with a promise even when its
//! future never waits — `future_to_promise` builds a `Promise` and its
//! executor closure, queues a task, and polls it from a microtask
//! (`queueMicrotask`, ~8 % of a fresh key's CPU in `npm run bench:profile`).
//! [`eager`] polls the future once, on the spot: if it is done, its value
//! is the answer, with no promise at all; if not, the same future goes on
//! under `future_to_promise` and the answer is that promise (JavaScript
//! `await`s either alike).
//!
//! What must stay true here: every waker the future ever registers wakes
//! its task. Some futures register a waker only on their first poll
//! (workers-rs 0.8.7's `Delay` hands its first `cx.waker()` to
//! `setTimeout` and never takes a later one), so the first poll cannot use
//! a no-op waker: it uses a [`Relay`], which the future keeps for its whole
//! life and which forwards each wake to the waker of whoever polls it now.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// `future`'s value if it finishes without waiting, else a promise of it.
#[cfg(all(target_arch = "wasm32", feature = "workers-rs"))]
pub fn eager(
    future: impl Future<Output = wasm_bindgen::JsValue> + 'static,
) -> wasm_bindgen::JsValue {
    match poll_now(future) {
        Now::Done(value) => value,
        Now::Later(rest) => {
            worker::wasm_bindgen_futures::future_to_promise(async move { Ok(rest.await) }).into()
        }
    }
}

/// A future polled once: its value, or what is left of it.
pub enum Now<F: Future> {
    Done(F::Output),
    /// Still waiting: poll it on (any executor; it wakes whoever polls it).
    Later(Relayed<F>),
}

/// Polls `future` once, on the spot, with a [`Relay`] for its waker.
pub fn poll_now<F: Future>(future: F) -> Now<F> {
    let relay = Arc::new(Relay::default());
    let waker = Waker::from(Arc::clone(&relay));
    let mut future = Box::pin(future);
    match future.as_mut().poll(&mut Context::from_waker(&waker)) {
        Poll::Ready(value) => Now::Done(value),
        Poll::Pending => Now::Later(Relayed {
            future,
            relay,
            waker,
        }),
    }
}

/// The one waker the future sees: forwards a wake to the task polling it
/// (none yet between the first poll and the task's first, which polls
/// anyway).
#[derive(Default)]
struct Relay {
    polling: Mutex<Option<Waker>>,
}

impl Wake for Relay {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // wasm32 is single-threaded: the lock is never contended.
        let polling = self.polling.lock().ok().and_then(|w| w.clone());
        if let Some(waker) = polling {
            waker.wake();
        }
    }
}

/// The rest of a future [`poll_now`] could not finish, polled through its
/// relay.
pub struct Relayed<F> {
    future: Pin<Box<F>>,
    relay: Arc<Relay>,
    waker: Waker,
}

impl<F: Future> Future for Relayed<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        if let Ok(mut polling) = this.relay.polling.lock() {
            if !polling.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *polling = Some(cx.waker().clone());
            }
        }
        this.future
            .as_mut()
            .poll(&mut Context::from_waker(&this.waker))
    }
}
