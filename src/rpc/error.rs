//! Why a ledger call did not produce an outcome, as its caller sees it
//! ([`LedgerError`]), and when a call whose answer was lost is sent again.
//!
//! What must stay true here: only [`LedgerError::NotReached`] means the
//! object certainly did not act on the call (`contract::answer` decides
//! from it whether a request may run without the ledger).

/// Why a ledger call did not produce an outcome, as its caller sees it.
///
/// The cases call for different answers (see `contract::answer`): only
/// `NotReached` means the object certainly did not act on the call.
#[derive(Debug, Clone, PartialEq)]
pub enum LedgerError {
    /// The call certainly never reached the object's code: no stub could
    /// be made, the request could not be built, or the runtime refused it
    /// as `overloaded` before delivering it. The only failure after which
    /// running a request without the ledger cannot run it twice. (No
    /// ledger binding at all is not this: it is a configuration error,
    /// `Refused` with `500 misconfigured`, `platform::namespace`.)
    NotReached(String),
    /// No answer arrived (the stub's fetch threw): the object may have run
    /// the call, or part of it.
    Unreachable(String),
    /// The object answered 200 but the answer could not be decoded: the call
    /// may well have been applied.
    Undecodable(String),
    /// The object answered with a non-200 status (a problem document),
    /// and the `Retry-After` it sent with it, in seconds (an upgrading
    /// object's `503`; `None` when it sent none or one that is not a
    /// number of seconds).
    Refused {
        status: u16,
        problem: serde_json::Value,
        retry_after: Option<u32>,
    },
}

impl std::fmt::Display for LedgerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LedgerError::NotReached(m) => write!(f, "ledger not reached: {m}"),
            LedgerError::Unreachable(m) => write!(f, "ledger unreachable: {m}"),
            LedgerError::Undecodable(m) => write!(f, "undecodable ledger answer: {m}"),
            LedgerError::Refused {
                status, problem, ..
            } => {
                write!(f, "ledger refused ({status}): {problem}")
            }
        }
    }
}

impl std::error::Error for LedgerError {}

pub use crate::protocol::limits::LOST_ANSWER_RETRY_DELAYS_MS;

impl LedgerError {
    /// Was the call sent and its answer lost (the stub's fetch threw: the
    /// object may have applied it)? Only such a call is sent again — a
    /// claim under its attempt (answered the same grant), an execute
    /// (answered the replay of its own run); never one the object answered,
    /// even with a problem, nor one that certainly never arrived (the
    /// runtime retries those itself).
    pub fn answer_lost(&self) -> bool {
        matches!(self, LedgerError::Unreachable(_))
    }

    /// How a repeat's failure reads once an earlier try's answer was lost:
    /// the object may have acted on that try, so the call as a whole is
    /// never "not reached" (`FAILURE_POLICY=open` must not run it
    /// unprotected).
    pub fn after_lost_answer(self) -> LedgerError {
        match self {
            LedgerError::NotReached(m) => LedgerError::Unreachable(format!(
                "{m} (after an earlier try whose answer was lost)"
            )),
            other => other,
        }
    }
}
