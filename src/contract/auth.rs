//! Authentication: the bearer token → tenant map (`API_TOKENS`) and who a
//! request is (docs/contract.md §2.1).
//!
//! Role: parse the secret once per isolate, and find the tenant of a
//! request's `Authorization: Bearer <token>` — the only way a tenant is
//! chosen.
//!
//! What must stay true here:
//! - The tenant comes only from the token, through the map; nothing else the
//!   client sends can choose it.
//! - `API_TOKENS` has no built-in fallback: without it nobody is let in.
//! - A hash that appears twice (in any letter case) is refused: a JSON
//!   parser would silently keep one of the two tenants.

use std::collections::HashMap;

use crate::config::vars::{err, ConfigError};
use crate::protocol::digest::sha256_hex;
use crate::protocol::{is_valid_tenant_id, Problem, ProblemKind, TENANT_RULE};

/// A JSON object's members in order, duplicates kept (serde_json's own maps
/// keep only the last of a repeated member).
struct TokenPairs(Vec<(String, String)>);

impl<'de> serde::Deserialize<'de> for TokenPairs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Pairs;
        impl<'de> serde::de::Visitor<'de> for Pairs {
            type Value = TokenPairs;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<TokenPairs, A::Error> {
                let mut pairs = Vec::new();
                while let Some(pair) = map.next_entry::<String, String>()? {
                    pairs.push(pair);
                }
                Ok(TokenPairs(pairs))
            }
        }
        d.deserialize_map(Pairs)
    }
}

/// The token → tenant map from the `API_TOKENS` secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenMap {
    by_hash: HashMap<String, String>,
}

impl TokenMap {
    /// Parses `{"<sha256-hex of token>": "<tenant-id>"}`. A hash that
    /// appears twice — verbatim, or in another letter case — is refused: a
    /// JSON parser would silently keep one of the two tenants.
    pub fn parse(raw: &str) -> Result<TokenMap, ConfigError> {
        let pairs: TokenPairs = serde_json::from_slice(raw.as_bytes()).map_err(|_| {
            err(
                "API_TOKENS",
                "not a JSON object of sha256-hex token hashes to tenant ids",
            )
        })?;
        let mut by_hash = HashMap::new();
        for (hash, tenant) in pairs.0 {
            let hash = hash.to_ascii_lowercase();
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(err("API_TOKENS", "a key is not a sha256 hex digest"));
            }
            if !is_valid_tenant_id(&tenant) {
                return Err(err(
                    "API_TOKENS",
                    format!("tenant id {tenant:?} is not {TENANT_RULE}"),
                ));
            }
            if by_hash.insert(hash, tenant).is_some() {
                return Err(err(
                    "API_TOKENS",
                    "a token hash appears more than once (letter case ignored)",
                ));
            }
        }
        Ok(TokenMap { by_hash })
    }

    /// The tenant a bearer token belongs to.
    pub fn tenant_for(&self, token: &str) -> Option<&str> {
        let hash = sha256_hex(token.as_bytes());
        self.by_hash.get(&hash).map(String::as_str)
    }
}

fn unauthorized(detail: &str) -> Problem {
    Problem::new(ProblemKind::Unauthorized, detail).with_header("WWW-Authenticate", "Bearer")
}

/// The tenant of the bearer token in the `Authorization` field value.
///
/// The scheme is matched case-insensitively (RFC 9110 §11.1); the token is
/// what follows the first space, with surrounding whitespace removed.
pub fn authenticate(authorization: Option<&str>, tokens: &TokenMap) -> Result<String, Problem> {
    let Some(header) = authorization else {
        return Err(unauthorized("send Authorization: Bearer <token>"));
    };
    let token = header
        .trim()
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .filter(|t| !t.is_empty());
    let Some(token) = token else {
        return Err(unauthorized(
            "the Authorization header must use the Bearer scheme",
        ));
    };
    tokens
        .tenant_for(token)
        .map(str::to_string)
        .ok_or_else(|| unauthorized("unknown bearer token"))
}
