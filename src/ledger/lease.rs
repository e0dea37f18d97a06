//! Lease tokens: the name of one grant, unique across every object and
//! layout, so a settlement is matched to the grant it settles and never to
//! another object's grant that happens to carry the same generation.
//!
//! Role: a generation orders the grants of one record in one object; it
//! does not name a grant across objects. The previous layout's object and
//! the current one both grant generation 1 of a key (each starts a new
//! record above its own floor), and an eviction or an expiry lets a second
//! grant of the same generation follow a first one on another object. A
//! late owner's `complete` or `release` guarded by the generation alone
//! would then settle a stranger's live claim (docs/contract.md §3, "Lease
//! tokens"). Every grant therefore takes a fresh token of
//! [`LEASE_TOKEN_BYTES`] random bytes, written by the grant's own statement
//! into the record's own row (`lease_token`, schema 10: no row of its own,
//! so no billed row); a settlement that presents it is guarded by it in its
//! `WHERE`.
//!
//! What must stay true here:
//! - A token is minted from the runtime's cryptographic random source
//!   (`crypto.getRandomValues` in workerd, read through js-sys: 16 bytes
//!   per grant; the OS on the host): a source that fails is an error,
//!   never a predictable token.
//! - A settlement without a token (an RPC v1 caller older than tokens) is
//!   matched by its generation alone, as before; every client this crate
//!   and the npm package ship presents the token it was granted.

use super::store::StoreError;

/// How many random bytes a lease token carries (128 bits, hex: 32 chars).
pub const LEASE_TOKEN_BYTES: usize = 16;

/// A fresh lease token: [`LEASE_TOKEN_BYTES`] random bytes, lowercase hex.
pub fn mint() -> Result<String, StoreError> {
    let mut bytes = [0u8; LEASE_TOKEN_BYTES];
    fill_random(&mut bytes)
        .map_err(|e| StoreError::Sql(format!("no random source for a lease token: {e}")))?;
    Ok(hex::encode(bytes))
}

/// The runtime's `crypto.getRandomValues` (workerd, and the slim wasm's
/// host: a Durable Object in JS): one call, no glue of its own.
#[cfg(target_arch = "wasm32")]
fn fill_random(bytes: &mut [u8]) -> Result<(), String> {
    use js_sys::{Function, Reflect, Uint8Array};
    use wasm_bindgen::{JsCast, JsValue};
    let message = |e: JsValue| e.as_string().unwrap_or_else(|| format!("{e:?}"));
    let crypto = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto")).map_err(message)?;
    let fill: Function = Reflect::get(&crypto, &JsValue::from_str("getRandomValues"))
        .map_err(message)?
        .dyn_into()
        .map_err(|_| "crypto.getRandomValues is not a function".to_string())?;
    let array = Uint8Array::new_with_length(bytes.len() as u32);
    fill.call1(&crypto, &array).map_err(message)?;
    array.copy_to(bytes);
    Ok(())
}

/// The operating system's random source (host tests and benchmarks).
#[cfg(not(target_arch = "wasm32"))]
fn fill_random(bytes: &mut [u8]) -> Result<(), String> {
    getrandom::getrandom(bytes).map_err(|e| e.to_string())
}

/// Is `lease` a token's shape (`[0-9a-f]`, 32 characters)? What an RPC
/// call may present; anything else is refused before anything is written.
pub fn is_lease_token(lease: &str) -> bool {
    lease.len() == 2 * LEASE_TOKEN_BYTES
        && lease
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The grant a settlement (`complete`, `release`) settles: the generation
/// it was granted at and, when its claim answered one, its lease token.
/// A bare generation converts into a grant without a token (RPC v1 before
/// tokens; matched by the generation alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant<'a> {
    pub generation: i64,
    pub lease: Option<&'a str>,
}

impl<'a> Grant<'a> {
    /// The grant at `generation` named by `lease`.
    pub fn new(generation: i64, lease: Option<&'a str>) -> Grant<'a> {
        Grant { generation, lease }
    }
}

impl From<i64> for Grant<'static> {
    fn from(generation: i64) -> Grant<'static> {
        Grant {
            generation,
            lease: None,
        }
    }
}
