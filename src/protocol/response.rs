//! Responses as the ledger stores and replays them (docs/contract.md §2.5 "Stored responses").
//!
//! Role: capture what a replay needs — status, allowlisted headers, body bytes —
//! and nothing more. Pure: no I/O.
//!
//! What must stay true here:
//! - `set-cookie` is never stored, whatever the allowlist says (config
//!   validation refuses it too; this is the second lock).
//! - Bodies are bytes, never text; on the wire they travel as base64.
//! - 204/205/304 carry no body, stored or replayed.
//! - A body over the stored-body limit is not truncated: the record becomes a
//!   *tombstone* (`body: None`) that replays loudly as 500
//!   `idempotency-response-not-retained`.

use serde::{Deserialize, Serialize};

/// Statuses that never carry a body (the Fetch `Response` constructor throws
/// if given one).
pub fn is_null_body_status(status: u16) -> bool {
    super::limits::NULL_BODY_STATUSES.contains(&status)
}

/// Statuses that can be passed on and stored: a final answer. `1xx` (an
/// origin answering `101 Switching Protocols` to a forwarded `Upgrade`) and
/// anything outside 200–599 cannot be.
pub fn is_passable_status(status: u16) -> bool {
    (200..=599).contains(&status)
}

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1),
/// never forwarded in either direction.
pub fn is_hop_by_hop(lowercase_name: &str) -> bool {
    matches!(
        lowercase_name,
        "connection" | "upgrade" | "keep-alive" | "te" | "transfer-encoding" | "trailer"
    ) || lowercase_name.starts_with("proxy-")
}

/// Base64 (standard alphabet, padded) for byte fields in JSON.
pub mod base64_bytes {
    use base64::{engine::general_purpose::STANDARD, Engine};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

/// Base64 for an optional byte field (`null` when absent).
pub mod base64_bytes_opt {
    use base64::{engine::general_purpose::STANDARD, Engine};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match bytes {
            Some(b) => s.serialize_str(&STANDARD.encode(b)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(text) => STANDARD
                .decode(text)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}

/// A complete HTTP answer as produced by the application (or origin), sent
/// in full to the caller whose run produced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppResponse {
    pub status: u16,
    /// Header pairs, names lowercased, in the order produced.
    pub headers: Vec<(String, String)>,
    #[serde(with = "base64_bytes")]
    pub body: Vec<u8>,
}

impl AppResponse {
    /// A JSON document with `content-type: application/json`. A value that
    /// cannot be serialised (a map with non-string keys) becomes a 500 with
    /// no body rather than a panic.
    pub fn json<T: Serialize>(status: u16, value: &T) -> AppResponse {
        AppResponse::json_body(status, serde_json::to_vec(value))
    }

    /// [`AppResponse::json`] once the value is encoded: not generic, so it
    /// exists once in the wasm rather than once per answer type.
    fn json_body(status: u16, encoded: serde_json::Result<Vec<u8>>) -> AppResponse {
        match encoded {
            Ok(body) => AppResponse {
                status,
                headers: vec![("content-type".into(), "application/json".into())],
                body,
            },
            Err(_) => AppResponse {
                status: 500,
                headers: vec![],
                body: vec![],
            },
        }
    }
}

/// What the ledger keeps of a response so every replay is identical.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredResponse {
    pub status: u16,
    /// Allowlisted header pairs, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body bytes; `None` marks a tombstone (the body was too large to keep).
    #[serde(with = "base64_bytes_opt")]
    pub body: Option<Vec<u8>>,
}

/// Which parts of a response may be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturePolicy {
    /// Lowercase header names that are stored (`set-cookie` is ignored even if listed).
    pub stored_headers: Vec<String>,
    /// Largest body kept; larger bodies make a tombstone.
    pub max_stored_body_bytes: usize,
}

impl StoredResponse {
    /// Captures what a replay needs from an application response.
    pub fn capture(response: &AppResponse, policy: &CapturePolicy) -> StoredResponse {
        let headers = response
            .headers
            .iter()
            .filter(|(name, _)| {
                let name = name.to_ascii_lowercase();
                name != "set-cookie" && policy.stored_headers.contains(&name)
            })
            .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
            .collect();
        let body = if is_null_body_status(response.status) {
            Some(Vec::new())
        } else if response.body.len() > policy.max_stored_body_bytes {
            None
        } else {
            Some(response.body.clone())
        };
        StoredResponse {
            status: response.status,
            headers,
            body,
        }
    }

    /// False for a tombstone: the response was delivered once but not kept.
    pub fn retained(&self) -> bool {
        self.body.is_some()
    }
}
