//! Time on the object's clock: what every lease, expiry and count of the
//! ledger is measured in.
//!
//! What must stay true here: a time is always the caller-supplied `now` of
//! the *object's* clock, in epoch milliseconds (see [`super`]).

/// Epoch milliseconds on the object's clock.
pub type Millis = i64;

/// The earlier of two times that may each be absent (none: the other).
pub fn earliest<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    a.into_iter().chain(b).min()
}
