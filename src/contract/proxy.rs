//! Proxy mode: what happens to the key once the origin has answered, or
//! failed to (docs/contract.md §2.5, §2.6).
//!
//! Role: the closed decision between completing the key with the origin's
//! answer, releasing it (a retry runs again), and keeping it in flight
//! until its lease ends (the outcome is unknown) — and what the caller is
//! told in each case.
//!
//! What must stay true here:
//! - Release only when nothing can have run to completion: the origin gave
//!   no response at all, or `RELEASE_ON_5XX=true` and it answered 5xx.
//! - A timeout, a body that broke off after the headers, or a status that
//!   cannot be passed on (1xx, outside 200–599) keeps the claim: the origin
//!   ran (or may still be running), so a retry must not run it again
//!   before the lease ends.
//! - The caller whose run produced a response always gets that response,
//!   whatever the ledger then says (stored, fenced out, failed).

use super::disposition::Disposition;
use crate::config::Config;
use crate::ledger::{CompleteOutcome, KeyState, RecordState};
use crate::protocol::{is_passable_status, AppResponse, Problem, ProblemKind, StoredResponse};
use crate::rpc::LedgerError;

/// Why the origin produced no (complete) response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OriginFailure {
    /// No response at all (the fetch threw, the connection was refused).
    Unreachable,
    /// The status and headers arrived, then the body broke off: the origin
    /// ran, so the key must not be released.
    Incomplete,
    /// No complete response within `ORIGIN_TIMEOUT_SECONDS`.
    TimedOut,
}

/// The answer to a request that cannot be forwarded (a method the runtime
/// cannot send): nothing was claimed.
pub fn not_forwardable(method: &str) -> (AppResponse, Disposition) {
    (
        Problem::of(ProblemKind::MethodNotSupported)
            .arg("method", method)
            .into(),
        Disposition::MethodNotSupported,
    )
}

fn incomplete() -> Problem {
    Problem::new(
        ProblemKind::OriginResponseIncomplete,
        "the origin's answer broke off after its headers; the origin ran, so the key stays in flight until its lease ends",
    )
}

/// The answer to an origin status that cannot be passed on or stored.
pub fn not_passable(status: u16) -> AppResponse {
    invalid(status).into()
}

fn invalid(status: u16) -> Problem {
    Problem::new(
        ProblemKind::OriginInvalidResponse,
        format!("the origin answered {status}, which cannot be passed on or stored; the key stays in flight until its lease ends"),
    )
}

/// What the gateway does with a claimed key after the origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settle {
    /// Store this response under the key (at the claim's generation).
    Complete(StoredResponse),
    /// Give the key back: the next request with it runs again.
    Release,
    /// Leave the key in flight until its lease ends.
    Keep,
}

/// The decision after the origin: the ledger step, the caller's answer, and
/// the planned log outcome (see [`after_completion`] for the final one).
#[derive(Debug, Clone, PartialEq)]
pub struct AfterOrigin {
    pub settle: Settle,
    pub reply: AppResponse,
    pub outcome: Disposition,
}

/// Decides what a protected request comes to once the origin has answered
/// (`Ok`) or failed (`Err`). `takeover` says whether the claim took over an
/// expired lease.
pub fn after_origin(
    result: Result<AppResponse, OriginFailure>,
    takeover: bool,
    config: &Config,
) -> AfterOrigin {
    match result {
        Err(OriginFailure::Unreachable) => AfterOrigin {
            settle: Settle::Release,
            reply: Problem::new(
                ProblemKind::OriginUnavailable,
                "the origin could not be reached; the key was released, so a retry runs again",
            )
            .into(),
            outcome: Disposition::OriginUnavailable,
        },
        Err(OriginFailure::TimedOut) => AfterOrigin {
            settle: Settle::Keep,
            reply: Problem::new(
                ProblemKind::OriginTimeout,
                format!(
                    "the origin did not answer within {} seconds; the outcome is unknown, so the key stays in flight until its lease ends",
                    config.origin_timeout_seconds
                ),
            )
            .into(),
            outcome: Disposition::OriginTimeout,
        },
        Err(OriginFailure::Incomplete) => AfterOrigin {
            settle: Settle::Keep,
            reply: incomplete().into(),
            outcome: Disposition::OriginResponseIncomplete,
        },
        Ok(response) if !is_passable_status(response.status) => AfterOrigin {
            settle: Settle::Keep,
            reply: invalid(response.status).into(),
            outcome: Disposition::OriginInvalidResponse,
        },
        Ok(response) if response.status >= 500 && config.release_on_5xx => AfterOrigin {
            settle: Settle::Release,
            reply: response,
            outcome: Disposition::Released5xx,
        },
        Ok(response) => AfterOrigin {
            settle: Settle::Complete(StoredResponse::capture(
                &response,
                &config.capture_policy(),
            )),
            reply: response,
            outcome: Disposition::ran(takeover),
        },
    }
}

/// The final log outcome once the completion has been tried: a superseded
/// owner is `fenced_out`, a completion that could not be stored is
/// `complete_failed`; otherwise the planned outcome stands.
pub fn after_completion(
    planned: Disposition,
    completion: Result<&CompleteOutcome, &LedgerError>,
) -> Disposition {
    match completion {
        Ok(CompleteOutcome::Stored) => planned,
        Ok(CompleteOutcome::FencedOut { .. }) => Disposition::FencedOut,
        Err(_) => Disposition::CompleteFailed,
    }
}

/// The answer to an unprotected request whose origin failed: a problem
/// that promises nothing about any key. (Its response streams through; a
/// status that cannot be passed on is [`not_passable`].)
pub fn unprotected_answer(failure: OriginFailure) -> AppResponse {
    match failure {
        OriginFailure::Incomplete => incomplete().into(),
        OriginFailure::Unreachable => Problem::new(
            ProblemKind::OriginUnavailable,
            "the origin could not be reached",
        )
        .into(),
        OriginFailure::TimedOut => Problem::new(
            ProblemKind::OriginTimeout,
            "the origin did not answer in time",
        )
        .into(),
    }
}

pub use crate::protocol::limits::SETTLE_RETRY_DELAYS_MS;

/// May a failed completion or release be tried again? When nothing came
/// back (the object may or may not have applied it: trying again is safe,
/// see [`landed_earlier`]) or the object said it failed (a 5xx it rendered:
/// nothing was committed). Never after an answer that could not be decoded
/// (it was applied) or a refusal of the call itself (4xx).
pub fn is_retryable(error: &LedgerError) -> bool {
    match error {
        LedgerError::NotReached(_) | LedgerError::Unreachable(_) => true,
        LedgerError::Refused { status, .. } => *status >= 500,
        LedgerError::Undecodable(_) => false,
    }
}

/// A retried completion or release answered `fenced_out`: did an earlier
/// attempt of this owner already land? Only the owner of `generation` can
/// move its record to `want` at that generation, so finding it there means
/// the lost answer was a success.
pub fn landed_earlier(current: &Option<RecordState>, generation: i64, want: KeyState) -> bool {
    current
        .as_ref()
        .is_some_and(|c| c.generation == generation && c.state == want)
}
