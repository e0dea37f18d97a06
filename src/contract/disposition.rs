//! The disposition of a protected request: what became of it, as the
//! `outcome` field of its log line names it (docs/contract.md §6).
//!
//! Role: the closed list of what can happen to a protected request, so the
//! compiler checks every label and the documented list is this enum. (Named
//! apart from the ledger's `*Outcome` answers: a disposition is the
//! request's end, not a ledger call's answer.)
//!
//! What must stay true here: the spellings are what operators alert on;
//! renaming one is a breaking change for dashboards.

use serde::Serialize;

/// What happened to one protected request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// The application ran under a fresh claim and its answer was stored.
    Executed,
    /// The application ran after taking over an expired lease.
    TookOver,
    /// A completed record was replayed.
    Replayed,
    /// `409`: another owner holds a live lease.
    InUse,
    /// `422`: the key was used for a different request.
    Reused,
    /// `429`: the tenant holds its maximum number of records.
    LedgerFull,
    /// Proxy mode: the origin gave no response at all; the key was released.
    OriginUnavailable,
    /// Proxy mode: the origin did not answer in time; the key stays in flight.
    OriginTimeout,
    /// Proxy mode: the origin's body broke off after its headers; the key stays in flight.
    OriginResponseIncomplete,
    /// Proxy mode: the origin answered a status that cannot be passed on; the key stays in flight.
    OriginInvalidResponse,
    /// `501`: the method cannot be forwarded to the origin; nothing was claimed.
    MethodNotSupported,
    /// Proxy mode: a 5xx with `RELEASE_ON_5XX=true`; the key was released.
    #[serde(rename = "released_5xx")]
    Released5xx,
    /// Proxy mode: this owner was superseded; its completion was refused.
    FencedOut,
    /// Proxy mode: the origin answered but the completion could not be stored.
    CompleteFailed,
    /// `503`: the ledger could not be used.
    StoreUnavailable,
    /// `FAILURE_POLICY=open`: the ledger was unreachable and the request ran without it.
    Unprotected,
    /// `IDEMPOTENCY_REQUIRED=false` and no key: the request ran without the ledger.
    UnprotectedNoKey,
    /// `400`: a protected request without a key.
    KeyMissing,
    /// `400`: a malformed key.
    KeyInvalid,
    /// `413`: the body is over `MAX_REQUEST_BODY_BYTES`.
    TooLarge,
    /// `400`: the body could not be read to its end.
    BodyUnreadable,
}

impl Disposition {
    pub const ALL: [Disposition; 21] = [
        Disposition::Executed,
        Disposition::TookOver,
        Disposition::Replayed,
        Disposition::InUse,
        Disposition::Reused,
        Disposition::LedgerFull,
        Disposition::OriginUnavailable,
        Disposition::OriginTimeout,
        Disposition::OriginResponseIncomplete,
        Disposition::OriginInvalidResponse,
        Disposition::MethodNotSupported,
        Disposition::Released5xx,
        Disposition::FencedOut,
        Disposition::CompleteFailed,
        Disposition::StoreUnavailable,
        Disposition::Unprotected,
        Disposition::UnprotectedNoKey,
        Disposition::KeyMissing,
        Disposition::KeyInvalid,
        Disposition::TooLarge,
        Disposition::BodyUnreadable,
    ];

    /// The label as it appears in the log line.
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Executed => "executed",
            Disposition::TookOver => "took_over",
            Disposition::Replayed => "replayed",
            Disposition::InUse => "in_use",
            Disposition::Reused => "reused",
            Disposition::LedgerFull => "ledger_full",
            Disposition::OriginUnavailable => "origin_unavailable",
            Disposition::OriginTimeout => "origin_timeout",
            Disposition::OriginResponseIncomplete => "origin_response_incomplete",
            Disposition::OriginInvalidResponse => "origin_invalid_response",
            Disposition::MethodNotSupported => "method_not_supported",
            Disposition::Released5xx => "released_5xx",
            Disposition::FencedOut => "fenced_out",
            Disposition::CompleteFailed => "complete_failed",
            Disposition::StoreUnavailable => "store_unavailable",
            Disposition::Unprotected => "unprotected",
            Disposition::UnprotectedNoKey => "unprotected_no_key",
            Disposition::KeyMissing => "key_missing",
            Disposition::KeyInvalid => "key_invalid",
            Disposition::TooLarge => "too_large",
            Disposition::BodyUnreadable => "body_unreadable",
        }
    }

    /// The outcome of a run that the ledger recorded.
    pub fn ran(takeover: bool) -> Disposition {
        if takeover {
            Disposition::TookOver
        } else {
            Disposition::Executed
        }
    }
}
