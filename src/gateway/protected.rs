//! One protected request on its way through the ledger: embedded (one
//! `execute` hop, one transaction) or proxied (claim → origin → settle).
//!
//! Role: carry the contract's decisions (`contract::answer`,
//! `contract::proxy`) through the typed client and the origin; decide
//! nothing itself.
//!
//! What must stay true here:
//! - In proxy mode the outbound request is built before the claim, so a
//!   request that cannot be sent claims nothing.
//! - The caller whose run produced a response always gets that response.
//! - A completed record the object replays is remembered by the isolate's
//!   replay cache.
//! - Completion and release survive the caller: they run as a future
//!   registered with `ctx.wait_until` (a client hang-up that cancels the
//!   request cannot cancel them), retried with backoff as
//!   `contract::proxy` allows, and the request awaits the same shared
//!   future for its answer. A completion that finally fails is logged
//!   `idempotency.complete_failed` at error level.

use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{select, Either};
use futures_util::FutureExt;
use worker::{Context, Delay, Response};

use super::origin::{Forward, Origin, OriginError};
use super::replays::with_replays;
use crate::config::Config;
use crate::contract::answer;
use crate::contract::proxy::{
    self, is_retryable, landed_earlier, AfterOrigin, Settle, SETTLE_RETRY_DELAYS_MS,
};
use crate::contract::replay_cache::Replayable;
use crate::contract::waiting::{WaitPlan, WAIT_ANSWER_GRACE_MS};
use crate::contract::Disposition;
use crate::contract::OriginFailure;
use crate::fields;
use crate::ledger::{
    ClaimOutcome, CompleteOutcome, ExecuteOutcome, KeyState, Refusal, ReleaseOutcome,
};
use crate::platform::client::{LedgerClient, LedgerError, Waited};
use crate::platform::http::{self, Bounded};
use crate::platform::{log, now_ms};
use crate::protocol::{AppResponse, Fingerprint};
use crate::rpc::{AppRequestRef, ClaimCall, CompleteCall, ExecuteCallRef, ReleaseCall};

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
    fn remember(&self, refusal: &Refusal) {
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
    fn wait_ms(&self) -> Option<u64> {
        (self.wait.wait_ms > 0).then_some(self.wait.wait_ms)
    }

    /// Awaits a ledger call; one that may wait is given up after its budget
    /// and a grace (`contract::waiting::WAIT_ANSWER_GRACE_MS`), so a lost
    /// object never hangs the request (the gateway then answers `409`).
    async fn bounded<T>(
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

    /// Claims at the key's object. While resharding, the previous layout's
    /// object is asked first: it answers for a key it holds (and the run
    /// settles there), or refuses with `421` for any other, and only then is
    /// the key claimed in the current layout.
    async fn claim_at_home(
        &self,
        claim: &ClaimCall,
    ) -> Result<(Waited<ClaimOutcome>, &LedgerClient), LedgerError> {
        if let Some(previous) = self.previous {
            match self.claim_bounded(previous, claim).await {
                Err(LedgerError::Refused { status: 421, .. }) => {}
                answered => return answered.map(|outcome| (outcome, previous)),
            }
        }
        let outcome = self.claim_bounded(self.client, claim).await?;
        Ok((outcome, self.client))
    }

    /// A claim, bounded like [`Self::bounded`]. A waiting claim this request
    /// gives up on may still be granted by its object later (the object was
    /// slow, not gone): nobody would run it, so the key would sit in flight
    /// until its lease ended. The abandoned call is therefore kept running
    /// (`ctx.wait_until`) and, if it is granted after all, released at once
    /// (logged `idempotency.abandoned_claim_released`).
    async fn claim_bounded(
        &self,
        client: &LedgerClient,
        claim: &ClaimCall,
    ) -> Result<Waited<ClaimOutcome>, LedgerError> {
        if self.wait.wait_ms == 0 {
            return client.claim_waiting(claim).await;
        }
        let (owner, call) = (client.clone(), claim.clone());
        let granted = Box::pin(async move { owner.claim_waiting(&call).await });
        let limit = Delay::from(Duration::from_millis(
            self.wait.wait_ms + WAIT_ANSWER_GRACE_MS,
        ));
        match select(granted, limit).await {
            Either::Left((result, _)) => result,
            Either::Right((_, abandoned)) => {
                let (client, key) = (client.clone(), claim.key.clone());
                self.ctx.wait_until(async move {
                    if let Ok(Waited {
                        outcome: ClaimOutcome::Claimed { generation, .. },
                        ..
                    }) = abandoned.await
                    {
                        let call = ReleaseCall {
                            key: key.clone(),
                            generation,
                        };
                        let released = release_durably(client, call).await;
                        log::warn(
                            "idempotency.abandoned_claim_released",
                            fields! {"key" => log::short_hash(&key), "released" => released.is_ok()},
                        );
                    }
                });
                Err(LedgerError::Unreachable(
                    "no answer from the ledger within the wait budget".into(),
                ))
            }
        }
    }

    /// The answer, with `Preference-Applied` if the client asked to wait
    /// and the request did.
    fn answered(
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
        let answer = self.bounded(self.client.execute_ref(&call)).await?;
        if let ExecuteOutcome::Refused(refusal) = &answer.outcome {
            self.remember(refusal);
        }
        Ok(self.answered(answer::execute_answer(answer.outcome), answer.waited_ms))
    }

    /// Proxy mode: claim, forward to the origin, then settle the key as the
    /// contract decides (complete, release or keep).
    pub async fn proxied(&self, origin: &Origin) -> Step {
        // Built before the claim: a request that cannot be sent claims nothing.
        let request = match origin.prepare(self.forward) {
            Ok(r) => r,
            Err(reason) => {
                log::warn(
                    "idempotency.not_forwardable",
                    fields! {"error" => reason, "method" => &self.forward.method},
                );
                let refused = proxy::not_forwardable(&self.forward.method);
                return Ok(self.answered(refused, None));
            }
        };
        let claim = ClaimCall {
            key: self.key.to_string(),
            fingerprint: self.fingerprint.clone(),
            lease_seconds: None,
            retention_seconds: None,
            wait_ms: self.wait_ms(),
        };
        let (claimed, client) = self.claim_at_home(&claim).await?;
        let (generation, takeover) = match claimed.outcome {
            ClaimOutcome::Claimed {
                generation,
                takeover,
            } => (generation, takeover),
            ClaimOutcome::Refused(refusal) => {
                self.remember(&refusal);
                let refused = answer::refusal_answer(refusal);
                return Ok(self.answered(refused, claimed.waited_ms));
            }
        };
        let timeout = Duration::from_secs(self.config.origin_timeout_seconds);
        // Signed now, after the claim and any wait: `t` is the send time.
        let signer = super::signer(self.config, self.tenant);
        let cap = self.config.max_stored_body_bytes;
        let result = origin
            .send(request, self.forward, signer.as_ref(), timeout, cap)
            .await
            .map_err(|e| {
                if let OriginError::Unreachable(reason) = &e {
                    log::warn(
                        "idempotency.origin_unavailable",
                        fields! {"error" => reason, "key" => log::short_hash(self.key)},
                    );
                }
                e.failure()
            });
        let result = match result {
            Ok(Bounded::Over { head, rest }) => {
                // The same decision as for a whole response; only the body
                // differs (what was read, and a reader for the rest).
                let after = proxy::after_origin(Ok(head), takeover, self.config);
                return Ok(self.streamed(client, generation, after, rest).await);
            }
            Ok(Bounded::Whole(response)) => Ok(response),
            Err(failure) => Err(failure),
        };
        let AfterOrigin {
            settle,
            reply,
            outcome,
        } = proxy::after_origin(result, takeover, self.config);
        let outcome = self.settle(client, generation, settle, outcome).await;
        // The caller whose run produced this response always gets it.
        Ok(self.answered((reply, outcome), claimed.waited_ms))
    }

    /// Settles the key as the contract decided (complete, release or keep)
    /// at the object that granted the claim, and says what the request
    /// finally came to (`fenced_out`, `complete_failed`, or as planned).
    async fn settle(
        &self,
        client: &LedgerClient,
        generation: i64,
        settle: Settle,
        outcome: Disposition,
    ) -> Disposition {
        match settle {
            Settle::Complete(response) => {
                let call = CompleteCall {
                    key: self.key.to_string(),
                    generation,
                    response,
                    retention_seconds: None,
                };
                let completion = self.outliving(complete_durably(client.clone(), call)).await;
                if let Err(e) = &completion {
                    complete_failed(e, self.key, self.tenant, self.config.replay_cache_bytes);
                }
                // The object logs idempotency.fenced_out (it sees every caller).
                proxy::after_completion(outcome, completion.as_ref())
            }
            Settle::Release => {
                let call = ReleaseCall {
                    key: self.key.to_string(),
                    generation,
                };
                // A fenced-out release is logged by the object as idempotency.fenced_out.
                if let Err(e) = self.outliving(release_durably(client.clone(), call)).await {
                    log::error(
                        "idempotency.release_failed",
                        fields! {"error" => e.to_string(), "key" => log::short_hash(self.key)},
                    );
                }
                outcome
            }
            Settle::Keep => outcome,
        }
    }

    /// A response over `MAX_STORED_BODY_BYTES`, settled as `after` decided:
    /// completed as a tombstone at once — before the caller gets its first
    /// byte, so from then on no retry can run it again, whatever becomes
    /// of the stream — then streamed to the caller (see [`super::stream`]),
    /// the pump under `ctx.wait_until`; or, a 5xx under `RELEASE_ON_5XX`,
    /// released at once (as [`Self::settle`] releases) and streamed.
    async fn streamed(
        &self,
        client: &LedgerClient,
        generation: i64,
        after: AfterOrigin,
        rest: worker::worker_sys::web_sys::ReadableStreamDefaultReader,
    ) -> (Response, Disposition) {
        let AfterOrigin {
            settle,
            reply,
            outcome,
        } = after;
        if let Settle::Keep = settle {
            // Not a response to pass on (read_bounded answers those whole):
            // refused, the claim kept.
            return (http::app(reply), outcome);
        }
        let (response, writer) = match http::streaming(&reply) {
            Ok(pair) => pair,
            Err(e) => {
                // No stream to answer with: the claim is kept (the origin ran).
                log::error(
                    "idempotency.stream_failed",
                    fields! {"error" => e.to_string()},
                );
                let failed =
                    proxy::after_origin(Err(OriginFailure::Incomplete), false, self.config);
                return (http::app(failed.reply), failed.outcome);
            }
        };
        // The tombstone (or the release) lands before the first byte goes
        // out, as the JS middleware's captureBounded: a pump that outlives
        // waitUntil or the lease, or a body that breaks off, changes
        // nothing from here on.
        let outcome = self.settle(client, generation, settle, outcome).await;
        let key = self.key.to_string();
        let prefix = reply.body;
        self.ctx.wait_until(async move {
            if let Err(e) = super::stream::pump(prefix, rest, writer).await {
                // The record stays what it was settled as (a tombstone).
                log::warn(
                    "idempotency.origin_response_incomplete",
                    fields! {"error" => e, "key" => log::short_hash(&key)},
                );
            }
        });
        (response, outcome)
    }

    /// Runs `settlement` so that it finishes even if this request is
    /// cancelled (`ctx.wait_until` holds one handle of the shared future)
    /// and returns its result to this request (which awaits the other).
    async fn outliving<T: Clone + 'static>(
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

/// Tries a call up to three times, as `contract::proxy` allows; a retry that
/// is fenced out by this owner's own earlier success counts as that success.
async fn settle_with_retries<O>(
    mut attempt: impl FnMut() -> std::pin::Pin<Box<dyn Future<Output = Result<O, LedgerError>>>>,
    landed: impl Fn(&O) -> bool,
    success: O,
) -> Result<O, LedgerError> {
    let mut tries = 0;
    loop {
        match attempt().await {
            Ok(out) if tries > 0 && landed(&out) => return Ok(success),
            Ok(out) => return Ok(out),
            Err(e) if tries < SETTLE_RETRY_DELAYS_MS.len() && is_retryable(&e) => {
                Delay::from(Duration::from_millis(SETTLE_RETRY_DELAYS_MS[tries])).await;
                tries += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// A completion that could not be stored: logged, and counted in the
/// tenant's stats with the isolate's next write-back.
fn complete_failed(e: &LedgerError, key: &str, tenant: &str, replay_cache_bytes: usize) {
    log::error(
        "idempotency.complete_failed",
        fields! {"error" => e.to_string(), "key" => log::short_hash(key)},
    );
    with_replays(replay_cache_bytes, |c| {
        c.count_complete_failure(tenant, now_ms())
    });
}

async fn complete_durably(
    client: LedgerClient,
    call: CompleteCall,
) -> Result<CompleteOutcome, LedgerError> {
    let generation = call.generation;
    let (client, call) = (Rc::new(client), Rc::new(call));
    settle_with_retries(
        move || {
            let (client, call) = (client.clone(), call.clone());
            Box::pin(async move { client.complete(&call).await })
        },
        |out| matches!(out, CompleteOutcome::FencedOut { current } if landed_earlier(current, generation, KeyState::Completed)),
        CompleteOutcome::Stored,
    )
    .await
}

async fn release_durably(
    client: LedgerClient,
    call: ReleaseCall,
) -> Result<ReleaseOutcome, LedgerError> {
    let generation = call.generation;
    let (client, call) = (Rc::new(client), Rc::new(call));
    settle_with_retries(
        move || {
            let (client, call) = (client.clone(), call.clone());
            Box::pin(async move { client.release(&call).await })
        },
        |out| matches!(out, ReleaseOutcome::FencedOut { current } if landed_earlier(current, generation, KeyState::Released)),
        ReleaseOutcome::Released,
    )
    .await
}
