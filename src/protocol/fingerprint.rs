//! The request fingerprint (docs/contract.md §2.4).
//!
//! Role: decide whether a retry is *the same request*. Pure: no I/O.
//!
//! What must stay true here:
//! - Every component is hashed from the bytes as received: the method
//!   uppercased, the path+query verbatim (no decoding, no reordering), each
//!   configured header verbatim, the raw body bytes. Nothing is re-serialised.
//! - Components are length-prefixed, so no two different requests can be made
//!   to collide by moving bytes across a component boundary, and an absent
//!   header is distinct from an empty one.
//! - A digest is kept per component, so a mismatch can name *which* component
//!   differed (`["body"]`, `["header:content-type"]`).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One fingerprint component: its name (`method`, `target`,
/// `header:<lowercase name>`, `body`) and the hex SHA-256 of its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Component {
    pub name: String,
    pub digest: String,
}

/// The fingerprint of one request: a digest over all components plus the
/// per-component digests it was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub digest: String,
    pub components: Vec<Component>,
}

/// What the fingerprint is computed from. `headers` pairs each configured
/// (lowercase) header name with its value, `None` when the request lacked it.
pub struct RequestParts<'a> {
    pub method: &'a str,
    pub target: &'a str,
    pub headers: &'a [(String, Option<String>)],
    pub body: &'a [u8],
}

/// Digest of one component value: a presence tag, a 64-bit length, the bytes.
fn component_digest(value: Option<&[u8]>) -> String {
    let mut h = Sha256::new();
    match value {
        None => h.update([0u8]),
        Some(bytes) => {
            h.update([1u8]);
            h.update((bytes.len() as u64).to_be_bytes());
            h.update(bytes);
        }
    }
    super::digest::to_hex(&h.finalize())
}

impl Fingerprint {
    /// Fingerprints a request.
    pub fn of(parts: &RequestParts<'_>) -> Fingerprint {
        let method = parts.method.to_ascii_uppercase();
        let mut components = vec![
            Component {
                name: "method".into(),
                digest: component_digest(Some(method.as_bytes())),
            },
            Component {
                name: "target".into(),
                digest: component_digest(Some(parts.target.as_bytes())),
            },
        ];
        for (name, value) in parts.headers {
            components.push(Component {
                name: format!("header:{}", name.to_ascii_lowercase()),
                digest: component_digest(value.as_deref().map(str::as_bytes)),
            });
        }
        components.push(Component {
            name: "body".into(),
            digest: component_digest(Some(parts.body)),
        });
        Fingerprint::from_components(components)
    }

    /// Builds the overall digest from per-component digests (each
    /// length-prefixed by its name).
    pub fn from_components(components: Vec<Component>) -> Fingerprint {
        let mut h = Sha256::new();
        for c in &components {
            h.update((c.name.len() as u64).to_be_bytes());
            h.update(c.name.as_bytes());
            h.update((c.digest.len() as u64).to_be_bytes());
            h.update(c.digest.as_bytes());
        }
        Fingerprint {
            digest: super::digest::to_hex(&h.finalize()),
            components,
        }
    }

    /// Is this well formed? (Used on fingerprints that arrive over RPC: the
    /// overall digest must be the one its components give, each digest 64
    /// lowercase hex characters, names unique and non-empty.)
    pub fn is_well_formed(&self) -> bool {
        let hex64 = |s: &str| {
            s.len() == 64
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        let mut names: Vec<&str> = self.components.iter().map(|c| c.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        !self.components.is_empty()
            && names.len() == self.components.len()
            && self
                .components
                .iter()
                .all(|c| !c.name.is_empty() && c.name.len() <= 128 && hex64(&c.digest))
            && Fingerprint::from_components(self.components.clone()).digest == self.digest
    }

    /// The names of the components that differ between two fingerprints, in
    /// this fingerprint's order, then any the other has that this lacks.
    pub fn differs_from(&self, other: &Fingerprint) -> Vec<String> {
        let mut differs = Vec::new();
        for c in &self.components {
            match other.components.iter().find(|o| o.name == c.name) {
                Some(o) if o.digest == c.digest => {}
                _ => differs.push(c.name.clone()),
            }
        }
        for o in &other.components {
            if !self.components.iter().any(|c| c.name == o.name) {
                differs.push(o.name.clone());
            }
        }
        differs
    }
}
