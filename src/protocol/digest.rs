//! Digests: SHA-256 and HMAC-SHA256 as lowercase hex.
//!
//! Role: the keyed hash behind the origin signature and keyed log hashes.
//! Pure.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// SHA-256 of `bytes`, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// HMAC-SHA256 of `message` under `key`, as lowercase hex.
pub fn hmac_hex(key: &[u8], message: &[u8]) -> String {
    // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(message);
    hex::encode(mac.finalize().into_bytes())
}
