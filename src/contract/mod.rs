//! The contract: every idempotency decision the gateway makes, as pure
//! functions from values to values (docs/contract.md §2).
//!
//! Role: own the rules that used to live in the wasm edges — who is let in,
//! which requests are protected, what each ledger outcome answers (status,
//! problem, `Retry-After`, replay), and what proxy mode does with the key
//! once the origin has answered (complete, release or keep). `platform/`
//! only converts between `worker` types and these values, so every rule
//! here runs under plain `cargo test` on the host.
//!
//! May call: `protocol`, `ledger`'s outcome types, `config`, `rpc`'s wire
//! types. Never workers-rs, never storage, never a clock.
//!
//! What must stay true here:
//! - Every decision is a closed enum matched exhaustively; there is no
//!   "impossible" arm and no fallback answer.
//! - Every answer is a complete [`AppResponse`](crate::protocol::AppResponse)
//!   (status, headers, body) plus, for protected requests, the
//!   [`Disposition`] its log line names.
//! - Nothing here is claimed or written: bad input is refused before the
//!   ledger is asked anything.

pub mod admission;
pub mod answer;
pub mod auth;
pub mod disposition;
pub mod listing;
pub mod proxy;
pub mod replay_cache;
pub mod signature;
pub mod waiting;

pub use admission::{GatewayRoute, Protection, Rejection, RequestHead};
pub use answer::LedgerFailure;
pub use disposition::Disposition;
pub use proxy::{AfterOrigin, OriginFailure, Settle};
