//! The two problems the object answers on its own, whatever the call: a
//! malformed call, and a store that failed.
//!
//! Role: one home for them, below every room that answers them (the
//! request path, the calls, the object's place and its registry).
//!
//! What must stay true here: a store failure is logged with its error and
//! answered as the one store failure clients know (`503
//! idempotency-store-unavailable`), never with the error's text.

use crate::fields;
use crate::platform::log;
use crate::protocol::{Problem, ProblemKind};

/// A call the object refuses as malformed (`400 invalid-rpc`).
pub(super) fn bad_call(detail: impl Into<String>) -> Problem {
    Problem::new(ProblemKind::InvalidRpc, detail)
}

/// A ledger operation failed in SQLite: logged, and answered as the one
/// store failure clients know (`503 idempotency-store-unavailable`).
pub(super) fn store_unavailable(e: &impl std::fmt::Display) -> Problem {
    log::error(
        "idempotency.store_unavailable",
        fields! {"error" => e.to_string()},
    );
    Problem::of(ProblemKind::StoreUnavailable)
}
