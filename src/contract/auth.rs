//! Authentication: the bearer token → tenant maps (`API_TOKENS`, and the
//! operators' `OPERATOR_TOKENS`) and who a request is (docs/contract.md §2.1).
//!
//! Role: parse the secrets once per isolate, and find the tenant and the
//! kind of a request's `Authorization: Bearer <token>` — the only way a
//! tenant is chosen. Which kind may call which route is the route's rule
//! (`contract::admission::Access`), not decided here.
//!
//! What must stay true here:
//! - The tenant comes only from the token, through the map; nothing else the
//!   client sends can choose it.
//! - `API_TOKENS` has no built-in fallback: without it nobody is let in.
//! - A hash that appears twice (in any letter case) is refused: a JSON
//!   parser would silently keep one of the two tenants. A hash in both
//!   maps is refused too: one token is of one kind.

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
        TokenMap::parse_as(API_TOKENS, raw)
    }

    /// [`TokenMap::parse`] for the secret named `variable` (its errors name it).
    pub fn parse_as(variable: &str, raw: &str) -> Result<TokenMap, ConfigError> {
        let pairs: TokenPairs = serde_json::from_slice(raw.as_bytes()).map_err(|_| {
            err(
                variable,
                "not a JSON object of sha256-hex token hashes to tenant ids",
            )
        })?;
        let mut by_hash = HashMap::new();
        for (hash, tenant) in pairs.0 {
            let hash = hash.to_ascii_lowercase();
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(err(variable, "a key is not a sha256 hex digest"));
            }
            if !is_valid_tenant_id(&tenant) {
                return Err(err(
                    variable,
                    format!("tenant id {tenant:?} is not {TENANT_RULE}"),
                ));
            }
            if by_hash.insert(hash, tenant).is_some() {
                return Err(err(
                    variable,
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

/// The tenants' secret: tokens that may do everything their tenant may.
pub const API_TOKENS: &str = "API_TOKENS";

/// The operators' secret: tokens that read their tenant's stats and keys
/// only (docs/contract.md §2.1).
pub const OPERATOR_TOKENS: &str = "OPERATOR_TOKENS";

/// Which secret a request's token is listed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// `API_TOKENS`: the tenant's own credential.
    Tenant,
    /// `OPERATOR_TOKENS`: reads the tenant's stats and keys, nothing else.
    Operator,
}

impl TokenKind {
    /// The kind as logs name it.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenKind::Tenant => "tenant",
            TokenKind::Operator => "operator",
        }
    }
}

/// Who a request is: its tenant, and the kind of token that named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub tenant: String,
    pub kind: TokenKind,
}

/// Both token maps of a deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    tenant: TokenMap,
    operator: TokenMap,
}

impl Tokens {
    /// Parses `API_TOKENS` and, if set, `OPERATOR_TOKENS` (same shape). A
    /// token hash listed in both is refused, naming `OPERATOR_TOKENS`: a
    /// token is of one kind, and an operator's token that is also a
    /// tenant's would have the tenant's full power.
    pub fn parse(api: &str, operator: Option<&str>) -> Result<Tokens, ConfigError> {
        let tenant = TokenMap::parse_as(API_TOKENS, api)?;
        let operator = match operator {
            None => TokenMap {
                by_hash: HashMap::new(),
            },
            Some(raw) => TokenMap::parse_as(OPERATOR_TOKENS, raw)?,
        };
        if operator
            .by_hash
            .keys()
            .any(|h| tenant.by_hash.contains_key(h))
        {
            return Err(err(
                OPERATOR_TOKENS,
                "a token hash is also in API_TOKENS: a token is either a tenant's or an operator's",
            ));
        }
        Ok(Tokens { tenant, operator })
    }

    /// The caller a bearer token names, if either map lists it.
    pub fn caller_for(&self, token: &str) -> Option<Caller> {
        let hash = sha256_hex(token.as_bytes());
        let found = |map: &TokenMap, kind| {
            map.by_hash.get(&hash).map(|tenant| Caller {
                tenant: tenant.clone(),
                kind,
            })
        };
        found(&self.tenant, TokenKind::Tenant)
            .or_else(|| found(&self.operator, TokenKind::Operator))
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
    let token = bearer_token(authorization)?;
    tokens
        .tenant_for(token)
        .map(str::to_string)
        .ok_or_else(|| unauthorized("unknown bearer token"))
}

/// The caller of the bearer token in the `Authorization` field value, by
/// [`authenticate`]'s reading of the field, in either map.
pub fn identify(authorization: Option<&str>, tokens: &Tokens) -> Result<Caller, Problem> {
    let token = bearer_token(authorization)?;
    tokens
        .caller_for(token)
        .ok_or_else(|| unauthorized("unknown bearer token"))
}

/// The token of an `Authorization: Bearer <token>` field value.
fn bearer_token(authorization: Option<&str>) -> Result<&str, Problem> {
    let Some(header) = authorization else {
        return Err(unauthorized("send Authorization: Bearer <token>"));
    };
    let token = header
        .trim()
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .filter(|t| !t.is_empty());
    token.ok_or_else(|| unauthorized("the Authorization header must use the Bearer scheme"))
}
