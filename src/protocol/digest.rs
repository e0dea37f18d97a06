//! Digests: SHA-256 and HMAC-SHA256 as lowercase hex.
//!
//! Role: the keyed hash behind the origin signature and keyed log hashes.
//! Pure.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// `bytes` as lowercase hex. `hex::encode` goes through `ToHex`'s
/// char iterator (1.3 % of a cached replay's CPU in `npm run
/// bench:profile`, for its three digests); `encode_to_slice` is a table
/// lookup per byte.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut out = vec![0u8; bytes.len() * 2];
    // The output is exactly twice the input: encode_to_slice cannot fail.
    let _ = hex::encode_to_slice(bytes, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// SHA-256 of `bytes`, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    to_hex(&Sha256::digest(bytes))
}

/// HMAC-SHA256 of `message` under `key`, as lowercase hex.
pub fn hmac_hex(key: &[u8], message: &[u8]) -> String {
    // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(message);
    to_hex(&mac.finalize().into_bytes())
}
