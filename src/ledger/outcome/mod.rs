//! The ledger's closed answers: what a claim, completion, release or
//! execute can come to, and the words records and counters are stored as.
//!
//! Role: one vocabulary shared by the state machine, RPC v1, the clients and
//! the contract. Pure data; no I/O.
//!
//! What must stay true here:
//! - A refusal is one [`Refusal`] value, whatever call produced it: claim
//!   and execute answer `Claimed | Refused(Refusal)` and `Ran |
//!   Refused(Refusal)`, so no caller ever handles an impossible case.
//! - RPC v1's JSON is unchanged: every outcome is one flat object tagged by
//!   `"outcome"` (`claimed`, `ran`, `in_flight`, `completed`, `mismatch`,
//!   `ledger_full`, `stored`, `released`, `fenced_out`). The granted variant
//!   is matched by its tag; a refusal is serde's untagged fallback and
//!   carries its own tag, so the wire shape is the same flat object.
//! - Outcomes are read back through one flat [`Wire`] object (every field
//!   any outcome carries), never through serde's derived internally tagged
//!   and untagged deserializers: those buffer the object in serde's
//!   `Content` first, machinery that was a fifth of the gateway's serde
//!   code. Serialization stays derived.
//! - States and counters are enums whose stored spelling never changes:
//!   renaming one is a schema migration.

//!
//! The rooms: [`outcomes`] (the outcomes and the refusal), `wire.rs`
//! (reading them back), [`key_state`] (the stored state words), [`counter`]
//! (the counted outcomes).

pub mod counter;
pub mod key_state;
pub mod outcomes;
mod wire;

pub use counter::Counter;
pub use key_state::{KeyState, RecordState};
pub use outcomes::{Claim, ClaimOutcome, CompleteOutcome, ExecuteOutcome, Refusal, ReleaseOutcome};
pub(crate) use wire::read_unit_outcome;
