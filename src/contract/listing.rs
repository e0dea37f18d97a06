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
//! - A cursor says which listing it continues — its `state` (and so its
//!   walk's direction) and its position — and reveals neither: it is sealed
//!   ([`CursorSeal`]) under a key derived from a deployment secret and the
//!   tenant, so it carries no key in plain text (cursors travel in URLs,
//!   hence access logs), a cursor edited, truncated, forged or made for
//!   another tenant is refused, and one made before a reshard still
//!   continues the tenant's listing (the key is the tenant's, not an
//!   object's).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

use crate::ledger::list::{DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, MAX_POSITION_MS};
use crate::ledger::{KeyState, ListPage, Position, RecordView};
use crate::protocol::{validate_key, AppResponse, Problem, ProblemKind};
use crate::rpc::ListCall;

/// The cursor encoding this code writes (its first byte): 2, sealed (1
/// carried the key in plain text and is refused).
const CURSOR_VERSION: u8 = 2;

/// Bytes of the seal's tag, after the version byte.
const TAG_BYTES: usize = 16;

/// What the cursor key is derived under, before the tenant.
const KEY_DOMAIN: &[u8] = b"idempotency-ledger/list-cursor/v2";

type HmacSha256 = Hmac<Sha256>;

/// The key that seals one tenant's cursors: HMAC-SHA256 of the tenant under
/// a deployment secret (the gateway's: [`CursorSeal::secret_of`]).
///
/// A cursor is `version ‖ tag ‖ ciphertext`, base64url, where the
/// plaintext is `state ‖ sweep_at ‖ key`, `tag` = HMAC(k, "tag" ‖
/// plaintext) cut to 16 bytes, and the ciphertext is the plaintext XOR the
/// keystream HMAC(k, "stream" ‖ tag ‖ counter) — a deterministic
/// authenticated encryption (the SIV shape over HMAC-SHA256): the same
/// position always gives the same cursor, which shows only that two
/// cursors are equal; nothing of the key or the time, and no cursor
/// survives an edit or another tenant's key.
#[derive(Clone)]
pub struct CursorSeal {
    key: [u8; 32],
}

impl std::fmt::Debug for CursorSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorSeal(..)")
    }
}

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes a key of any length: `new_from_slice` cannot fail.
    let mut mac = match HmacSha256::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return [0; 32],
    };
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

impl CursorSeal {
    /// The seal of `tenant`'s cursors under `secret`.
    pub fn new(secret: &[u8], tenant: &str) -> CursorSeal {
        let len = (tenant.len() as u64).to_be_bytes();
        CursorSeal {
            key: hmac(secret, &[KEY_DOMAIN, &len, tenant.as_bytes()]),
        }
    }

    /// The deployment secret cursors are sealed under: `LOG_HASH_KEY` when
    /// it is set, else the `API_TOKENS` secret itself (rotating either
    /// makes earlier cursors `400`: start the listing again).
    pub fn secret_of(log_hash_key: Option<&str>, api_tokens: &str) -> Vec<u8> {
        hmac(
            log_hash_key.unwrap_or(api_tokens).as_bytes(),
            &[b"idempotency-ledger/cursor-secret"],
        )
        .to_vec()
    }

    fn stream(&self, tag: &[u8], bytes: &mut [u8]) {
        for (i, chunk) in bytes.chunks_mut(32).enumerate() {
            let block = hmac(&self.key, &[b"stream", tag, &(i as u32).to_be_bytes()]);
            for (b, k) in chunk.iter_mut().zip(block.iter()) {
                *b ^= k;
            }
        }
    }

    fn tag(&self, plain: &[u8]) -> [u8; TAG_BYTES] {
        let full = hmac(&self.key, &[b"tag", plain]);
        let mut tag = [0u8; TAG_BYTES];
        tag.copy_from_slice(&full[..TAG_BYTES]);
        tag
    }

    fn seal(&self, plain: Vec<u8>) -> String {
        let tag = self.tag(&plain);
        let mut body = plain;
        self.stream(&tag, &mut body);
        let mut bytes = Vec::with_capacity(1 + TAG_BYTES + body.len());
        bytes.push(CURSOR_VERSION);
        bytes.extend_from_slice(&tag);
        bytes.extend_from_slice(&body);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    fn open(&self, cursor: &str) -> Option<Vec<u8>> {
        let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
        let [version, rest @ ..] = bytes.as_slice() else {
            return None;
        };
        if *version != CURSOR_VERSION || rest.len() < TAG_BYTES {
            return None;
        }
        let (tag, body) = rest.split_at(TAG_BYTES);
        let mut plain = body.to_vec();
        self.stream(tag, &mut plain);
        // Constant time: the tag is a MAC.
        let mut mac = HmacSha256::new_from_slice(&self.key).ok()?;
        mac.update(b"tag");
        mac.update(&plain);
        mac.verify_truncated_left(tag).ok()?;
        Some(plain)
    }
}

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

/// Reads the query string (without its `?`) of a key listing; a cursor
/// must be one `seal` sealed.
pub fn parse_list_query(query: &str, seal: &CursorSeal) -> Result<ListRequest, Problem> {
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
            let (made_for, position) = decode_cursor(c, seal).ok_or_else(|| {
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

/// The opaque, sealed cursor that continues a listing of `state` after
/// `position`.
pub fn encode_cursor(state: Option<KeyState>, position: &Position, seal: &CursorSeal) -> String {
    let mut plain = vec![state_tag(state)];
    plain.extend_from_slice(&position.sweep_at.to_be_bytes());
    plain.extend_from_slice(position.key.as_bytes());
    seal.seal(plain)
}

/// The listing a cursor continues, if it is one [`encode_cursor`] made
/// under `seal`.
pub fn decode_cursor(cursor: &str, seal: &CursorSeal) -> Option<(Option<KeyState>, Position)> {
    let plain = seal.open(cursor)?;
    let [tag, rest @ ..] = plain.as_slice() else {
        return None;
    };
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

/// `200` with one page of a listing of `state`, its cursor sealed.
pub fn list_answer(state: Option<KeyState>, page: &ListPage, seal: &CursorSeal) -> AppResponse {
    AppResponse::json(
        200,
        &ListAnswer {
            keys: page.keys.iter().map(|k| &k.record).collect(),
            next_cursor: page.next.as_ref().map(|p| encode_cursor(state, p, seal)),
        },
    )
}
