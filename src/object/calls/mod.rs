//! The object's side of each RPC v1 call: one file per call, beside its
//! wire shape in `src/rpc/<call>.rs` (the mini-redis `cmd/` shape).
//!
//! Role: each file holds one function named after its call (`claim`,
//! `complete`, …) that takes the object ([`LedgerObject`]) and the call:
//! what that call does to this object once it is parsed and validated.
//! `tenant_ledger`'s `dispatch` calls it by name (`calls::claim(object,
//! …)`) from its `match`. What several calls share — the claim policy,
//! the keyed path that may wait (`LedgerObject::keyed`) — is in
//! [`super::ledger_object`]; the retired shard's home check in
//! [`super::home`].
//!
//! What must stay true here:
//! - Nothing is written before the call is parsed and validated (an apply
//!   only ever receives a validated call).
//! - A `claim` or `execute` with `wait_ms` that meets a live lease parks
//!   (see [`super::waiting`]); `complete`, `release` and a finished
//!   `execute` wake that key's waiters.
//! - A retired shard answers only for the keys it holds: every keyed call
//!   for another key is `421 idempotency-key-moved` and changes nothing.
//! - Only the calls that may create a key (`claim`, `execute`) ask the
//!   tenant's registry for the layout (`check_layout`); `complete` and
//!   `release` settle a claim already granted and are never refused by an
//!   operation — a schema upgrade, a layout refused or held
//!   (docs/contract.md §4, §8).

mod claim;
mod complete;
mod evict;
mod execute;
mod layout;
mod list;
mod lookup;
mod release;
mod replayed;
mod stats;

pub(super) use claim::claim;
pub(super) use complete::complete;
pub(super) use evict::evict;
pub(super) use execute::execute;
pub(super) use layout::{horizon, jurisdiction, layout};
pub(super) use list::list;
pub(super) use lookup::lookup;
pub(super) use release::release;
pub(super) use replayed::replayed;
pub(super) use stats::stats;

#[allow(unused_imports)] // named by the docs above
use super::ledger_object::LedgerObject;
