//! Asking the previous layout first: where a key lives while its tenant is
//! resharded is decided by the tenant's registry's record, not by a
//! caller's configuration nor this object's (docs/contract.md §8).
//!
//! Role: a current-layout object that does not hold a key sends a keyed
//! call (claim, execute, complete, release, lookup, evict) to the key's
//! object in the
//! previous layout first — the one the registry records, or keeps in force
//! although the configuration dropped `"previous"` — and serves the call
//! itself only when that object answers `421` (it does not hold the key).
//! A caller that routes by the same rule (the gateway, `TenantLedgers`:
//! previous layout first, on `421` the current one) says so with
//! `rpc::PREVIOUS_ASKED_HEADER`, and the object does not ask again; a
//! caller whose configuration lags or leads (a separately deployed app, a
//! gateway isolate on another version) sends no such header, and the
//! object asks for it. So no caller can create a key in the current layout
//! while the previous one holds it.
//!
//! What must stay true here:
//! - The previous layout is asked unless the call names that very layout
//!   as asked, this object holds a record of the key (it was granted here,
//!   after the previous layout answered `421`), or this object is itself
//!   retired (it answers only for keys it holds).
//! - A settlement asks nothing before the layout is known unless it must:
//!   an object that holds the key settles it at once.
//! - A lost answer on the hop is repeated like the caller's own calls
//!   (the typed client's repeat of a claim under its attempt, an execute);
//!   any other failure is `503 store-unavailable`, never a local grant.

use super::place::{passed_on, Home};
use crate::config::shards::{object_name, shard_of};
use crate::config::Config;
use crate::object::problems::store_unavailable;
use crate::object::waiting::WaitReport;
use crate::platform::client::LedgerError;
use crate::platform::now_ms;
use crate::protocol::Problem;
use crate::rpc::Call;

impl Home {
    /// The previous layout (its object count) a keyed call for `key` asks
    /// first, if any: the one the registry keeps in force or records,
    /// unless the call's caller asked it (`asked`), this object is
    /// retired or unnamed, or it holds the key (`held`, when the caller
    /// already knows; else read).
    fn previous_to_ask(
        &self,
        config: &Config,
        key: &str,
        asked: Option<u32>,
        held: Option<bool>,
    ) -> Result<Option<u32>, Problem> {
        let in_force = self.previous_in_force.get();
        let Some(m) = in_force.or(self.registry_previous.get()) else {
            return Ok(None);
        };
        // A caller that asked the very layout the registry keeps in force
        // (configured with it) is believed; a kept layout the caller's
        // configuration dropped is asked whatever the caller says.
        if asked == Some(m) && in_force.is_none() {
            return Ok(None);
        }
        let place = self.place(config)?;
        if place.retired || place.tenant.is_none() {
            return Ok(None);
        }
        Ok((!self.holds(key, held)?).then_some(m))
    }

    /// Does this object hold `key` (`held` when its caller already read it)?
    fn holds(&self, key: &str, held: Option<bool>) -> Result<bool, Problem> {
        match held {
            Some(held) => Ok(held),
            None => self
                .ledger
                .holds(key, now_ms())
                .map_err(|e| store_unavailable(&e)),
        }
    }

    /// [`Self::ask_previous_first`] for a call that creates no key — a
    /// settlement (complete, release), a lookup, an eviction — which asks
    /// no registry to accept the layout and is never refused by it
    /// (docs/contract.md §8): only when this object does not hold the key
    /// (`held`, when its caller already read it) and has not learned its
    /// layout yet does it ask the registry — a refusal only logged — so a
    /// key the previous layout holds is settled, read or evicted there.
    pub(in crate::object) async fn ask_previous_for_record<C: Call>(
        &self,
        config: &Config,
        key: &str,
        call: &C,
        (asked, held): (Option<u32>, Option<bool>),
    ) -> Result<Option<(C::Answer, WaitReport)>, Problem> {
        let mut held = held;
        if !self.layout_accepted.get() {
            let place = self.place(config)?;
            if place.retired || place.tenant.is_none() {
                return Ok(None);
            }
            if self.holds(key, held)? {
                return Ok(None);
            }
            held = Some(false);
            let _ = self.check_layout(config).await;
        }
        self.asking(config, key, call, asked, held).await
    }

    /// Sends a keyed call for `key` to the key's object in the previous
    /// layout first, when [`Self::previous_to_ask`] names one: its answer
    /// when it holds the key; `None` when it answers `421` (the key is this
    /// object's) or there is none to ask.
    pub(in crate::object) async fn ask_previous_first<C: Call>(
        &self,
        config: &Config,
        key: &str,
        call: &C,
        asked: Option<u32>,
    ) -> Result<Option<(C::Answer, WaitReport)>, Problem> {
        self.asking(config, key, call, asked, None).await
    }

    /// [`Self::ask_previous_first`], knowing whether this object holds
    /// the key when `held` says.
    async fn asking<C: Call>(
        &self,
        config: &Config,
        key: &str,
        call: &C,
        asked: Option<u32>,
        held: Option<bool>,
    ) -> Result<Option<(C::Answer, WaitReport)>, Problem> {
        let Some(m) = self.previous_to_ask(config, key, asked, held)? else {
            return Ok(None);
        };
        let place = self.place(config)?;
        let Some((tenant, _)) = place.tenant.as_ref() else {
            return Ok(None);
        };
        let name = object_name(tenant, shard_of(key, m), m);
        let object = self
            .tenant_object(config, &name)
            .map_err(|e| store_unavailable(&e))?;
        match object.send(call).await {
            Ok(answer) => Ok(Some((
                answer.outcome,
                WaitReport {
                    waited_ms: answer.waited_ms.map(|ms| ms as i64),
                    timed_out: false,
                },
            ))),
            Err(LedgerError::Refused { status: 421, .. }) => Ok(None),
            Err(LedgerError::Refused { problem, .. }) => Err(passed_on(&problem)),
            Err(other) => Err(store_unavailable(&other)),
        }
    }
}
