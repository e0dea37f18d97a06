//! Which keys this object answers for: its place in its tenant's layout
//! ([`place`]: `Home`, its name and role, the retired shard's home check,
//! the registry accepting the layout before the first keyed call), the
//! registry's own side of a layout ([`reshard`]: deciding and recording
//! one) and the tenant's jurisdiction ([`jurisdiction`]: its objects' calls
//! to each other go through it, and a change of it is refused).
//!
//! Role: one room for every rule that decides where a key may be claimed;
//! the calls (`calls/`) and the object ([`super::ledger_object`]) ask it,
//! through [`Home`], before they touch a key.

pub mod ask_previous;
pub mod jurisdiction;
pub mod place;
pub mod reshard;

pub use place::{window_ms, Home, Place};
