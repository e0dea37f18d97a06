//! One record as the ledger stores it, and as introspection shows it.
//!
//! Role: the only code that reads a row of `idempotency_records` back into
//! values: the state machine's [`Record`] and the public [`RecordView`].
//!
//! What must stay true here: a row the ledger did not write (an unknown
//! state, a completed record without a status) is a `StoreError::Decode`,
//! never a panic and never a guess.

use serde::{Deserialize, Serialize};

use super::clock::Millis;
use super::outcome::{ClaimOutcome, KeyState};
use super::store::{Row, RowExt, StoreError};
use crate::protocol::{Component, Fingerprint, StoredResponse};

/// A record as introspection shows it (docs/contract.md §2.7). Times are RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordView {
    pub key: String,
    pub state: KeyState,
    pub generation: i64,
    pub created_at: String,
    pub expires_at: String,
    pub lease_expires_at: Option<String>,
    pub response_status: Option<u16>,
    pub retained: Option<bool>,
    pub replays: i64,
}

/// Renders epoch milliseconds as RFC 3339 with milliseconds, UTC
/// (`2026-11-30T09:50:41.870Z`). Years outside 0000–9999 cannot be written
/// in RFC 3339 and come out as the plain millisecond number.
///
/// Written by hand (civil-from-days, H. Hinnant's algorithm) instead of
/// pulling chrono into the Worker bundle for one format; a host test checks
/// it against chrono over a wide range.
pub fn rfc3339(ms: Millis) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if !(0..=9999).contains(&year) {
        return ms.to_string();
    }
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1_000 % 60,
        in_day % 1_000
    )
}

/// Reads every column [`Record`] needs, by key.
pub(super) const SELECT_RECORD: &str =
    "SELECT state, generation, fingerprint, components, lease_expires_at,
        expires_at, response_status, response_headers, response_body, retained, created_at, replays,
        lease_attempt, lease_took_over, lease_token
     FROM idempotency_records WHERE key = ?";

/// A record as read by [`SELECT_RECORD`].
pub(super) struct Record {
    pub state: KeyState,
    pub generation: i64,
    pub fingerprint: String,
    pub components: String,
    pub lease_expires_at: Option<Millis>,
    pub expires_at: Millis,
    pub response_status: Option<i64>,
    pub response_headers: Option<String>,
    pub response_body: Option<Vec<u8>>,
    pub retained: Option<i64>,
    pub created_at: Millis,
    pub replays: i64,
    /// The claim attempt that holds the lease, as its caller named it
    /// (schema 6; `None`: unnamed, or written before).
    pub lease_attempt: Option<String>,
    /// Did the lease's grant take the record over from an earlier owner?
    pub lease_took_over: bool,
    /// The lease token of the record's latest grant (schema 10; `None`:
    /// granted before, or written completed by `execute`).
    pub lease_token: Option<String>,
}

impl Record {
    /// The grant `attempt` was already given, if it holds this record's
    /// live lease under the same fingerprint: its caller lost the answer
    /// and asks again (see `Ledger::claim_as`). An unnamed attempt never
    /// matches.
    pub fn granted_to(
        &self,
        attempt: Option<&str>,
        fp: &Fingerprint,
        now: Millis,
    ) -> Option<ClaimOutcome> {
        let held = attempt.is_some()
            && self.lease_attempt.as_deref() == attempt
            && self.fingerprint == fp.digest
            && self.lease_live(now);
        held.then(|| ClaimOutcome::Claimed {
            generation: self.generation,
            takeover: self.lease_took_over,
            lease: self.lease_token.clone(),
        })
    }

    /// Does an owner hold a live lease on this record at `now`?
    pub fn lease_live(&self, now: Millis) -> bool {
        self.state == KeyState::InFlight && self.lease_expires_at.is_some_and(|end| end > now)
    }

    /// Is the record past its window, so that it may be reborn or swept? An
    /// in-flight record whose lease is live never is, whatever its
    /// `expires_at` says (records written before leases outlived retention).
    pub fn is_expired(&self, now: Millis) -> bool {
        self.expires_at <= now && !self.lease_live(now)
    }

    pub fn from_row(row: &Row) -> Result<Record, StoreError> {
        let state = row.text(0)?;
        Ok(Record {
            state: KeyState::parse(&state)
                .ok_or_else(|| StoreError::Decode(format!("unknown record state {state:?}")))?,
            generation: row.int(1)?,
            fingerprint: row.text(2)?,
            components: row.text(3)?,
            lease_expires_at: row.opt_int(4)?,
            expires_at: row.int(5)?,
            response_status: row.opt_int(6)?,
            response_headers: row.opt_text(7)?,
            response_body: row.opt_blob(8)?,
            retained: row.opt_int(9)?,
            created_at: row.int(10)?,
            replays: row.int(11)?,
            lease_attempt: row.opt_text(12)?,
            lease_took_over: row.int(13)? != 0,
            lease_token: row.opt_text(14)?,
        })
    }

    /// The response a completed record replays (moves the body out).
    pub fn into_stored_response(self) -> Result<StoredResponse, StoreError> {
        let status = self
            .response_status
            .and_then(|s| u16::try_from(s).ok())
            .ok_or_else(|| StoreError::Decode("completed record without a status".into()))?;
        let headers: Vec<(String, String)> = match &self.response_headers {
            Some(json) => serde_json::from_slice(json.as_bytes())
                .map_err(|e| StoreError::Decode(format!("response_headers: {e}")))?,
            None => Vec::new(),
        };
        let body = if self.retained == Some(1) {
            // SQLite may hand back an empty blob as NULL on some engines.
            Some(self.response_body.unwrap_or_default())
        } else {
            None
        };
        Ok(StoredResponse {
            status,
            headers,
            body,
        })
    }

    pub fn fingerprint(&self) -> Result<Fingerprint, StoreError> {
        let components: Vec<Component> = serde_json::from_slice(self.components.as_bytes())
            .map_err(|e| StoreError::Decode(format!("components: {e}")))?;
        Ok(Fingerprint {
            digest: self.fingerprint.clone(),
            components,
        })
    }

    /// What introspection shows of this record.
    pub fn view(self, key: &str) -> RecordView {
        Shown {
            state: self.state,
            generation: self.generation,
            lease_expires_at: self.lease_expires_at,
            expires_at: self.expires_at,
            response_status: self.response_status,
            retained: self.retained,
            created_at: self.created_at,
            replays: self.replays,
        }
        .view(key.to_string())
    }
}

/// The columns introspection shows of a record, in the order
/// [`view_from_row`] reads them (a listing reads no more of a record).
pub(super) const VIEW_COLUMNS: &str =
    "state, generation, lease_expires_at, expires_at, response_status, retained, created_at, replays";

/// Reads [`VIEW_COLUMNS`], starting at column `at` of `row`, as the view of
/// `key`.
pub(super) fn view_from_row(row: &Row, at: usize, key: String) -> Result<RecordView, StoreError> {
    let state = row.text(at)?;
    Ok(Shown {
        state: KeyState::parse(&state)
            .ok_or_else(|| StoreError::Decode(format!("unknown record state {state:?}")))?,
        generation: row.int(at + 1)?,
        lease_expires_at: row.opt_int(at + 2)?,
        expires_at: row.int(at + 3)?,
        response_status: row.opt_int(at + 4)?,
        retained: row.opt_int(at + 5)?,
        created_at: row.int(at + 6)?,
        replays: row.int(at + 7)?,
    }
    .view(key))
}

/// What introspection shows of a record, as stored: one rule for `lookup`
/// and the listing.
struct Shown {
    state: KeyState,
    generation: i64,
    lease_expires_at: Option<Millis>,
    expires_at: Millis,
    response_status: Option<i64>,
    retained: Option<i64>,
    created_at: Millis,
    replays: i64,
}

impl Shown {
    fn view(self, key: String) -> RecordView {
        let completed = self.state == KeyState::Completed;
        RecordView {
            key,
            generation: self.generation,
            created_at: rfc3339(self.created_at),
            expires_at: rfc3339(self.expires_at),
            lease_expires_at: if self.state == KeyState::InFlight {
                self.lease_expires_at.map(rfc3339)
            } else {
                None
            },
            response_status: if completed {
                self.response_status.and_then(|s| u16::try_from(s).ok())
            } else {
                None
            },
            retained: completed.then_some(self.retained == Some(1)),
            replays: self.replays,
            state: self.state,
        }
    }
}
