//! The object's side of each RPC v1 call: one file per call, beside its
//! wire shape in `src/rpc/<call>.rs` (the mini-redis `cmd/` shape).
//!
//! Role: each file holds one [`Apply`] impl — what that call does to this
//! object once it is parsed and validated (`LedgerObject::call`, in
//! [`super::tenant_ledger`]). This file holds what several calls share: the
//! claim policy, the keyed path that may wait ([`LedgerObject::keyed`]), the
//! retired shard's home check, and the store failure every call answers.
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

use super::waiting::{attempt_waiting, WaitReport};
use super::LedgerObject;
use crate::config::Config;
use crate::fields;
use crate::ledger::{ClaimPolicy, Counter, Millis, Refusal, StoreError};
use crate::platform::{log, now_ms};
use crate::protocol::{Problem, ProblemKind};
use crate::rpc::Call;

/// What one RPC call does to this object: its answer and, for a call that
/// may wait, how long it was parked.
pub(super) trait Apply<C: Call> {
    async fn apply(&self, config: &Config, call: C) -> Result<(C::Answer, WaitReport), Problem>;
}

/// An answer that never waited.
fn answered<T>(answer: T) -> (T, WaitReport) {
    (answer, WaitReport::default())
}

/// A call the object refuses as malformed (`400 invalid-rpc`).
pub(super) fn bad_call(detail: impl Into<String>) -> Problem {
    Problem::new(ProblemKind::InvalidRpc, detail)
}

/// A ledger operation failed in SQLite: logged, and answered as the one
/// store failure clients know (`503 idempotency-store-unavailable`).
pub(super) fn store_unavailable(e: &impl std::fmt::Display) -> Problem {
    log::error(
        "idempotency.store_unavailable",
        fields! {"error" => e.to_string()},
    );
    Problem::of(ProblemKind::StoreUnavailable)
}

impl LedgerObject {
    fn policy(
        &self,
        config: &Config,
        lease_seconds: Option<u64>,
        retention_seconds: Option<u64>,
    ) -> Result<ClaimPolicy, Problem> {
        let shards = self.place(config)?.shards;
        // MAX_KEYS_PER_TENANT stays a tenant's quota: each of a sharded
        // tenant's N objects holds at most its N-th part (rounded up).
        Ok(ClaimPolicy {
            lease_ms: lease_seconds.map_or(config.lease_ms(), |s| s as i64 * 1000),
            retention_ms: retention_seconds.map_or(config.retention_ms(), |s| s as i64 * 1000),
            // A proxied owner waits up to ORIGIN_TIMEOUT_SECONDS for its origin.
            settle_grace_ms: (config.origin_timeout_seconds as i64).saturating_mul(1000),
            max_keys: config.max_keys_per_tenant.div_ceil(u64::from(shards)),
            max_db_bytes: config.max_db_bytes_per_object,
        })
    }

    /// Runs a claim or execute on `key` at the object's clock: in its home
    /// (see [`Self::check_home`]), waiting up to `wait_ms` (bounded by
    /// `IN_FLIGHT_WAIT_MAX_SECONDS`) while it is refused as in flight, and
    /// counting the wait. `refusal` names an outcome's refusal, if any.
    async fn keyed<T>(
        &self,
        config: &Config,
        key: &str,
        wait_ms: Option<u64>,
        mut attempt: impl FnMut(Millis) -> Result<T, StoreError>,
        refusal: impl Fn(&T) -> Option<&Refusal>,
    ) -> Result<(T, WaitReport), Problem> {
        let budget = config.wait.bound_ms(wait_ms.unwrap_or(0));
        let (out, report) = attempt_waiting(
            &self.waiters,
            key,
            budget,
            |now| {
                self.check_home(config, key, now)?;
                attempt(now).map_err(|e| store_unavailable(&e))
            },
            |out| refusal(out).and_then(Refusal::lease_remaining),
        )
        .await?;
        let replayed = matches!(refusal(&out), Some(Refusal::Completed { .. }));
        self.count_wait(&report, replayed);
        Ok((out, report))
    }

    /// A retired shard (the tenant is being resharded, see
    /// `config::shards`) answers only for the keys it holds: for any other
    /// key a claim, execute, complete or release is refused with `421
    /// idempotency-key-moved` and changes nothing (so every caller routes a
    /// keyed call the same way: previous layout first, on 421 the current),
    /// so no caller — not even a gateway still running the old
    /// configuration — can create a key here while another creates it in
    /// its current object.
    fn check_home(&self, config: &Config, key: &str, now: Millis) -> Result<(), Problem> {
        if !self.place(config)?.retired {
            return Ok(());
        }
        if self
            .ledger
            .holds(key, now)
            .map_err(|e| store_unavailable(&e))?
        {
            return Ok(());
        }
        self.reshard_pending();
        Err(Problem::of(ProblemKind::KeyMoved))
    }

    /// Counts one call that was allowed to wait (in memory, like refusals).
    fn count_wait(&self, report: &WaitReport, replayed: bool) {
        if report.waited_ms.is_none() {
            return;
        }
        let now = now_ms();
        self.ledger.add_count(Counter::Waited, 1, now);
        if replayed {
            self.ledger.add_count(Counter::WaitedReplayed, 1, now);
        }
        if report.timed_out {
            self.ledger.add_count(Counter::WaitedTimedOut, 1, now);
        }
    }
}
