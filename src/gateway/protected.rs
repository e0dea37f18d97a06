//! One protected request on its way through the ledger: what both modes
//! share, and embedded mode (one `execute` hop, one transaction). Proxy
//! mode (claim → origin → settle) is [`super::proxied`]; a response too
//! large to store is streamed by [`super::stream`].
//!
//! Role: carry the contract's decisions (`contract::answer`,
//! `contract::proxy`) through the typed client and the origin; decide
//! nothing itself.
//!
//! What must stay true here:
//! - The caller whose run produced a response always gets that response.
//! - A completed record the object replays is remembered by the isolate's
//!   replay cache.
//! - A call that may wait is given up after its budget and a grace: a lost
//!   object never hangs the request.
//! - What must outlive the caller (completion, release) runs as a shared
//!   future also registered with `ctx.wait_until` ([`Protected::outliving`]).

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use futures_util::future::{select, Either};
use futures_util::FutureExt;
use worker::{Context, Delay, Response};

use super::origin::Forward;
use super::replays::with_replays;
use crate::config::Config;
use crate::contract::answer;
use crate::contract::replay_cache::Replayable;
use crate::contract::waiting::{WaitPlan, WAIT_ANSWER_GRACE_MS};
use crate::contract::Disposition;
use crate::ledger::{ExecuteOutcome, Refusal};
use crate::platform::client::LedgerError;
use crate::platform::client::{new_attempt, LedgerClient};
use crate::platform::http;
use crate::platform::now_ms;
use crate::protocol::{AppResponse, Fingerprint};
use crate::rpc::{AppRequestRef, ExecuteCallRef};

/// One protected request on its way through the ledger.
pub struct Protected<'a> {
    pub ctx: &'a Context,
    /// The key's object.
    pub client: &'a LedgerClient,
    /// While the tenant is resharded: the key's object in the previous
    /// layout, asked first (it answers for the keys it holds, and `421
    /// idempotency-key-moved` for any other).
    pub previous: Option<&'a LedgerClient>,
    pub config: &'a Config,
    pub tenant: &'a str,
    pub key: &'a str,
    pub fingerprint: Fingerprint,
    pub forward: &'a Forward,
    /// How long a request that meets an in-flight key may wait for it.
    pub wait: WaitPlan,
}

pub type Step = Result<(Response, Disposition), LedgerError>;

impl Protected<'_> {
    /// Keeps a completed record the object just replayed, so the next
    /// identical retry is answered from this isolate.
    pub(super) fn remember(&self, refusal: &Refusal) {
        if let Refusal::Completed {
            generation,
            response,
            expires_at: Some(expires_at),
        } = refusal
        {
            let digest = &self.fingerprint.digest;
            let record = Replayable {
                generation: *generation,
                response,
                expires_at: *expires_at,
            };
            with_replays(self.config.replay_cache_bytes, |c| {
                c.insert(self.tenant, self.key, digest, record, now_ms())
            });
        }
    }

    /// The `wait_ms` a call carries (none when the plan does not wait).
    pub(super) fn wait_ms(&self) -> Option<u64> {
        (self.wait.wait_ms > 0).then_some(self.wait.wait_ms)
    }

    /// Awaits a ledger call; one that may wait is given up after its budget
    /// and a grace (`contract::waiting::WAIT_ANSWER_GRACE_MS`), so a lost
    /// object never hangs the request (the gateway then answers `409`).
    pub(super) async fn bounded<T>(
        &self,
        call: impl Future<Output = Result<T, LedgerError>>,
    ) -> Result<T, LedgerError> {
        if self.wait.wait_ms == 0 {
            return call.await;
        }
        let limit = Delay::from(Duration::from_millis(
            self.wait.wait_ms + WAIT_ANSWER_GRACE_MS,
        ));
        match select(pin!(call), limit).await {
            Either::Left((result, _)) => result,
            Either::Right(_) => Err(LedgerError::Unreachable(
                "no answer from the ledger within the wait budget".into(),
            )),
        }
    }

    /// The answer, with `Preference-Applied` if the client asked to wait
    /// and the request did.
    pub(super) fn answered(
        &self,
        (mut answer, outcome): (AppResponse, Disposition),
        waited_ms: Option<u64>,
    ) -> (Response, Disposition) {
        if let Some((name, value)) = self.wait.applied(waited_ms.is_some()) {
            answer.headers.push((name.to_string(), value));
        }
        (http::app(answer), outcome)
    }

    /// Embedded mode: one hop, claim + orders app + complete in one transaction.
    pub async fn embedded(&self) -> Step {
        let method = self.forward.method.to_ascii_uppercase();
        let call = ExecuteCallRef {
            key: self.key,
            fingerprint: &self.fingerprint,
            request: AppRequestRef {
                method: &method,
                target: &self.forward.target,
                body: &self.forward.body,
            },
            wait_ms: self.wait_ms(),
        };
        // Named, so an execute whose answer is lost is sent again and
        // answered its run's own response even where the ledger kept none.
        let client = self.client.naming_attempt(new_attempt());
        let answer = self.bounded(client.execute_ref(&call)).await?;
        if let ExecuteOutcome::Refused(refusal) = &answer.outcome {
            self.remember(refusal);
        }
        Ok(self.answered(answer::execute_answer(answer.outcome), answer.waited_ms))
    }

    /// Runs `settlement` so that it finishes even if this request is
    /// cancelled (`ctx.wait_until` holds one handle of the shared future)
    /// and returns its result to this request (which awaits the other).
    pub(super) async fn outliving<T: Clone + 'static>(
        &self,
        settlement: impl Future<Output = T> + 'static,
    ) -> T {
        let shared = settlement.shared();
        let detached = shared.clone();
        self.ctx.wait_until(async move {
            detached.await;
        });
        shared.await
    }
}
