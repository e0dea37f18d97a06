//! Waiting for an in-flight result instead of answering `409` at once.
//!
//! Role: the gateway's side of the wait, as pure functions — what a client
//! asked for (`Prefer: wait=N`, RFC 7240), how long a request may wait
//! ([`WaitPlan`], bounded by the operator's `config::WaitSettings`) and what
//! it says it applied (`Preference-Applied`). The parking itself lives in
//! the object (`object::waiting`).
//!
//! What must stay true here:
//! - A wait never outlives the owner's lease: a waiter wakes at the lease's
//!   end at the latest and claims again, so it takes the key over exactly
//!   as a retry arriving at that moment would.
//! - A wait never outlives its budget: past its deadline a waiter answers
//!   what a claim answers then (`409` if the key is still in flight).
//! - A `Prefer` the server cannot read is ignored, as RFC 7240 §2 says
//!   (no `400`): the request then waits the operator's default.

use crate::config::WaitSettings;

/// The response header that names the preferences a server honoured.
pub const PREFERENCE_APPLIED: &str = "Preference-Applied";

/// How much longer than its budget the gateway waits for a waiting call's
/// answer before it gives up on it (`409`): the object answers by its
/// deadline, so only a lost object (evicted, restarted, wedged) gets here.
pub const WAIT_ANSWER_GRACE_MS: u64 = 5_000;

/// How long one gateway request may wait, and what it tells the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitPlan {
    /// The budget sent to the object as `wait_ms` (0: answer `409` at once).
    pub wait_ms: u64,
    /// `Some(seconds)` when the client asked (`Prefer: wait`): the value of
    /// `Preference-Applied: wait=…` if the request waited.
    pub asked: Option<u64>,
}

impl WaitPlan {
    /// The plan for a request whose `Prefer` asked `preferred` seconds.
    pub fn new(preferred: Option<u64>, settings: &WaitSettings) -> WaitPlan {
        let seconds = preferred
            .unwrap_or(settings.default_seconds)
            .min(settings.max_seconds);
        WaitPlan {
            wait_ms: seconds.saturating_mul(1000),
            asked: preferred.map(|_| seconds),
        }
    }

    /// `Preference-Applied`, when the client asked and the request did wait.
    pub fn applied(&self, waited: bool) -> Option<(&'static str, String)> {
        match (self.asked, waited) {
            (Some(seconds), true) => Some((PREFERENCE_APPLIED, format!("wait={seconds}"))),
            _ => None,
        }
    }
}

/// The `wait` preference of the `Prefer` header values (RFC 7240 §4.3:
/// `wait = "wait" BWS "=" BWS delta-seconds`), in seconds. Several `Prefer`
/// headers arrive joined by commas. Only the first `wait` counts (§2); a
/// value that is not delta-seconds makes it unreadable and ignored.
/// Absurdly long values saturate (the plan bounds them anyway).
pub fn prefer_wait(header: Option<&str>) -> Option<u64> {
    let header = header?;
    for preference in split_outside_quotes(header, ',') {
        // The preference's own token=value comes before any `;` parameter.
        let head = split_outside_quotes(preference, ';')
            .into_iter()
            .next()
            .unwrap_or_default();
        let (name, value) = match head.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (head.trim(), None),
        };
        if !name.eq_ignore_ascii_case("wait") {
            continue;
        }
        let value = value?;
        // A quoted word is allowed by the grammar of preferences.
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        return Some(value.parse::<u64>().unwrap_or(u64::MAX));
    }
    None
}

/// Splits on `sep` where it is not inside a quoted string.
fn split_outside_quotes(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == sep && !quoted => {
                parts.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}
