//! The key listing's query and cursor (`GET /v1/idempotency-keys`,
//! docs/contract.md §2.7).
//!
//! Role: read `state`, `limit` and `cursor` from the query string into an
//! RPC `list` call, and turn a page back into the answer, its `next` into
//! an opaque cursor. The walk itself is `ledger::list`; a sharded tenant's
//! merge is `ListPage::merge`.
//!
//! What must stay true here:
//! - Every parameter is read exactly once: a name the listing does not
//!   take, a repeated one, a `state` it does not know, a `limit` outside
//!   1–100 or a cursor it did not make (malformed, edited, made for another
//!   `state`) is `400 invalid-query`, before any object is asked anything.
//! - A cursor says which listing it continues: its version, its `state`
//!   (and so its walk's direction) and its position, with a check digest
//!   over them, base64url. It only ever points into the tenant's own keys
//!   (the tenant comes from the token), so the digest guards against edits
//!   and truncation, not against a forger.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::ledger::list::{DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, MAX_POSITION_MS};
use crate::ledger::{KeyState, ListPage, Position, RecordView};
use crate::protocol::{validate_key, AppResponse, Problem, ProblemKind};
use crate::rpc::ListCall;

/// The cursor encoding this code writes (its first byte).
const CURSOR_VERSION: u8 = 1;

/// Bytes of the check digest at a cursor's end.
const CHECK_BYTES: usize = 4;

/// What the check digest is taken over, before the cursor's own bytes.
const CHECK_DOMAIN: &[u8] = b"idempotency-ledger/list-cursor";

/// A listing request as its query string asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRequest {
    pub state: Option<KeyState>,
    pub limit: u32,
    /// Where the cursor's page ended; `None`: from the start.
    pub after: Option<Position>,
}

impl ListRequest {
    /// The RPC call each object is sent.
    pub fn call(&self) -> ListCall {
        ListCall {
            state: self.state,
            limit: Some(self.limit),
            after: self.after.clone(),
        }
    }
}

fn invalid(detail: impl Into<String>) -> Problem {
    Problem::new(ProblemKind::InvalidQuery, detail)
}

/// Reads the query string (without its `?`) of a key listing.
pub fn parse_list_query(query: &str) -> Result<ListRequest, Problem> {
    let (mut state, mut limit, mut cursor) = (None, None, None);
    for piece in query.split('&').filter(|p| !p.is_empty()) {
        let (raw_name, raw_value) = piece.split_once('=').unwrap_or((piece, ""));
        let name = decoded(raw_name)?;
        let value = decoded(raw_value)?;
        let slot = match name.as_str() {
            "state" => &mut state,
            "limit" => &mut limit,
            "cursor" => &mut cursor,
            _ => {
                return Err(invalid(format!(
                    "unknown query parameter {name:?}: the listing takes state, limit and cursor"
                )))
            }
        };
        if slot.replace(value).is_some() {
            return Err(invalid(format!("{name} may be given once")));
        }
    }
    let state = match state.as_deref() {
        None => None,
        Some(s) => Some(KeyState::parse(s).ok_or_else(|| {
            invalid("state must be in_flight, completed or released (or absent: every state)")
        })?),
    };
    let limit = match limit.as_deref() {
        None => DEFAULT_LIST_LIMIT,
        Some(l) => l
            .parse::<u32>()
            .ok()
            .filter(|n| l.bytes().all(|b| b.is_ascii_digit()) && (1..=MAX_LIST_LIMIT).contains(n))
            .ok_or_else(|| {
                invalid(format!(
                    "limit must be a whole number from 1 to {MAX_LIST_LIMIT}"
                ))
            })?,
    };
    let after = match cursor.as_deref() {
        None => None,
        Some(c) => {
            let (made_for, position) = decode_cursor(c).ok_or_else(|| {
                invalid("the cursor is not one this listing gave out (pass next_cursor as it is)")
            })?;
            if made_for != state {
                return Err(invalid(format!(
                    "the cursor continues a listing of state={}: ask with the same state",
                    made_for.map_or("(every state)", KeyState::as_str)
                )));
            }
            Some(position)
        }
    };
    Ok(ListRequest {
        state,
        limit,
        after,
    })
}

fn decoded(raw: &str) -> Result<String, Problem> {
    percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| invalid("the query is not valid percent-encoded UTF-8"))
}

fn state_tag(state: Option<KeyState>) -> u8 {
    match state {
        None => 0,
        Some(KeyState::InFlight) => 1,
        Some(KeyState::Completed) => 2,
        Some(KeyState::Released) => 3,
    }
}

fn check(bytes: &[u8]) -> [u8; CHECK_BYTES] {
    let digest = Sha256::new()
        .chain_update(CHECK_DOMAIN)
        .chain_update(bytes)
        .finalize();
    let mut out = [0u8; CHECK_BYTES];
    out.copy_from_slice(&digest[..CHECK_BYTES]);
    out
}

/// The opaque cursor that continues a listing of `state` after `position`.
pub fn encode_cursor(state: Option<KeyState>, position: &Position) -> String {
    let mut bytes = vec![CURSOR_VERSION, state_tag(state)];
    bytes.extend_from_slice(&position.sweep_at.to_be_bytes());
    bytes.extend_from_slice(position.key.as_bytes());
    let digest = check(&bytes);
    bytes.extend_from_slice(&digest);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The listing a cursor continues, if it is one [`encode_cursor`] made.
pub fn decode_cursor(cursor: &str) -> Option<(Option<KeyState>, Position)> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let (body, digest) = bytes.split_at_checked(bytes.len().checked_sub(CHECK_BYTES)?)?;
    if digest != check(body) {
        return None;
    }
    let [version, tag, rest @ ..] = body else {
        return None;
    };
    if *version != CURSOR_VERSION {
        return None;
    }
    let state = match tag {
        0 => None,
        1 => Some(KeyState::InFlight),
        2 => Some(KeyState::Completed),
        3 => Some(KeyState::Released),
        _ => return None,
    };
    let (at, key) = rest.split_at_checked(8)?;
    let sweep_at = i64::from_be_bytes(at.try_into().ok()?);
    let key = String::from_utf8(key.to_vec()).ok()?;
    if sweep_at.abs() > MAX_POSITION_MS || validate_key(&key).is_err() {
        return None;
    }
    Some((state, Position { sweep_at, key }))
}

/// The listing's answer: the keys as the key lookup shows each, and the
/// cursor of the next page (`null` once nothing is left).
#[derive(Debug, Serialize)]
struct ListAnswer<'a> {
    keys: Vec<&'a RecordView>,
    next_cursor: Option<String>,
}

/// `200` with one page of a listing of `state`.
pub fn list_answer(state: Option<KeyState>, page: &ListPage) -> AppResponse {
    AppResponse::json(
        200,
        &ListAnswer {
            keys: page.keys.iter().map(|k| &k.record).collect(),
            next_cursor: page.next.as_ref().map(|p| encode_cursor(state, p)),
        },
    )
}
