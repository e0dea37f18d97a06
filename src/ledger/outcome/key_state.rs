//! The state column of a record ([`KeyState`]) and where a refused
//! settlement found one ([`RecordState`]): words whose stored spelling
//! never changes (renaming one is a schema migration).

use serde::{Deserialize, Serialize};

/// Where a refused completion or release found the record (for logs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordState {
    pub state: KeyState,
    pub generation: i64,
}

/// The state column of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyState {
    InFlight,
    Completed,
    Released,
}

impl KeyState {
    /// The stored (and wire) spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyState::InFlight => "in_flight",
            KeyState::Completed => "completed",
            KeyState::Released => "released",
        }
    }

    /// Reads the stored spelling; `None` for anything the ledger never wrote.
    pub fn parse(stored: &str) -> Option<KeyState> {
        match stored {
            "in_flight" => Some(KeyState::InFlight),
            "completed" => Some(KeyState::Completed),
            "released" => Some(KeyState::Released),
            _ => None,
        }
    }
}
