//! The operator's waiting rules (docs/contract.md §2.8): how long a retry
//! that meets an in-flight key may wait for its outcome, and how many one
//! object parks.
//!
//! What must stay true here: a default wait longer than the maximum is
//! refused (it would be silently cut), and both are bounded by
//! [`MAX_WAIT_SECONDS`].

use super::defaults;
use super::vars::{err, number, ConfigError};

/// The operator's waiting rules (docs/contract.md §2.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitSettings {
    /// Seconds a request waits when it does not say (`IN_FLIGHT_WAIT_SECONDS`, default 0).
    pub default_seconds: u64,
    /// The most any request waits (`IN_FLIGHT_WAIT_MAX_SECONDS`, default 10).
    pub max_seconds: u64,
    /// Waiters one object parks at once (`IN_FLIGHT_MAX_WAITERS`, default 1,000).
    pub max_waiters: usize,
}

impl Default for WaitSettings {
    fn default() -> Self {
        WaitSettings {
            default_seconds: defaults::IN_FLIGHT_WAIT_SECONDS,
            max_seconds: defaults::IN_FLIGHT_WAIT_MAX_SECONDS,
            max_waiters: defaults::IN_FLIGHT_MAX_WAITERS as usize,
        }
    }
}

impl WaitSettings {
    /// The object's bound on a call's `wait_ms`.
    pub fn bound_ms(&self, asked_ms: u64) -> u64 {
        asked_ms.min(self.max_seconds.saturating_mul(1000))
    }
}

pub use crate::protocol::limits::MAX_WAIT_SECONDS;

/// The most waiters an operator may let one object park.
pub const MAX_WAITERS: u64 = 100_000;

/// Reads `IN_FLIGHT_WAIT_SECONDS`, `IN_FLIGHT_WAIT_MAX_SECONDS` and
/// `IN_FLIGHT_MAX_WAITERS`.
pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<WaitSettings, ConfigError> {
    let defaults = WaitSettings::default();
    let max_seconds = number(
        get,
        "IN_FLIGHT_WAIT_MAX_SECONDS",
        defaults.max_seconds,
        0,
        MAX_WAIT_SECONDS,
    )?;
    let default_seconds = number(
        get,
        "IN_FLIGHT_WAIT_SECONDS",
        defaults.default_seconds,
        0,
        MAX_WAIT_SECONDS,
    )?;
    // A default longer than the maximum would be silently cut: refuse it.
    if default_seconds > max_seconds {
        return Err(err(
            "IN_FLIGHT_WAIT_SECONDS and IN_FLIGHT_WAIT_MAX_SECONDS",
            format!(
                "IN_FLIGHT_WAIT_SECONDS ({default_seconds}) exceeds IN_FLIGHT_WAIT_MAX_SECONDS ({max_seconds})"
            ),
        ));
    }
    let max_waiters = number(
        get,
        "IN_FLIGHT_MAX_WAITERS",
        defaults.max_waiters as u64,
        0,
        MAX_WAITERS,
    )? as usize;
    Ok(WaitSettings {
        default_seconds,
        max_seconds,
        max_waiters,
    })
}
