//! Proxy mode: one protected request claimed at its key's object,
//! forwarded to the origin, and settled (complete, release or keep) as
//! `contract::proxy` decides.
//!
//! Role: carry the contract's decisions through the typed client and the
//! origin; decide nothing itself. A response too large to store leaves
//! here for [`super::stream`].
//!
//! What must stay true here:
//! - The outbound request is built before the claim, so a request that
//!   cannot be sent claims nothing.
//! - The caller whose run produced a response always gets that response.
//! - Completion and release survive the caller: they run as a future
//!   registered with `ctx.wait_until` (a client hang-up that cancels the
//!   request cannot cancel them), retried with backoff as
//!   `contract::proxy` allows, and the request awaits the same shared
//!   future for its answer. A completion that finally fails is logged
//!   `idempotency.complete_failed` at error level.
//! - A waiting claim this request gave up on is released if it is granted
//!   after all.
//! - Every claim names its attempt: one whose answer is lost is sent again
//!   and answered the grant it was given (docs/contract.md §3, "A
//!   claim's lost answer").

use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{select, Either};
use worker::{Delay, Request};

use super::origin::{Origin, OriginError};
use super::protected::{Protected, Step};
use super::replays::with_replays;
use crate::contract::answer;
use crate::contract::proxy::{
    self, is_retryable, landed_earlier, AfterOrigin, Settle, SETTLE_RETRY_DELAYS_MS,
};
use crate::contract::waiting::WAIT_ANSWER_GRACE_MS;
use crate::contract::{Disposition, OriginFailure};
use crate::fields;
use crate::ledger::{ClaimOutcome, CompleteOutcome, Grant, KeyState, ReleaseOutcome};
use crate::platform::client::{LedgerClient, LedgerError, Waited};
use crate::platform::env::new_attempt;
use crate::platform::http::Bounded;
use crate::platform::{log, now_ms};
use crate::rpc::{ClaimCall, CompleteCall, ReleaseCall};

impl Protected<'_> {
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
            // Named, so a claim whose answer is lost is sent again and
            // answered its grant (`LedgerClient::claim_waiting`), not 409.
            attempt: new_attempt(),
        };
        let (claimed, client) = self.claim_at_home(&claim).await?;
        let (generation, takeover, lease) = match claimed.outcome {
            ClaimOutcome::Claimed {
                generation,
                takeover,
                lease,
            } => (generation, takeover, lease),
            ClaimOutcome::Refused(refusal) => {
                self.remember(&refusal);
                let refused = answer::refusal_answer(refusal);
                return Ok(self.answered(refused, claimed.waited_ms));
            }
        };
        let result = match self.send(origin, request).await {
            Ok(Bounded::Over { head, rest }) => {
                // The same decision as for a whole response; only the body
                // differs (what was read, and a reader for the rest).
                let after = proxy::after_origin(Ok(head), takeover, self.config);
                let grant = Grant::new(generation, lease.as_deref());
                return Ok(self.streamed(client, grant, after, rest).await);
            }
            Ok(Bounded::Whole(response)) => Ok(response),
            Err(failure) => Err(failure),
        };
        let AfterOrigin {
            settle,
            reply,
            outcome,
        } = proxy::after_origin(result, takeover, self.config);
        let grant = Grant::new(generation, lease.as_deref());
        let outcome = self.settle(client, grant, settle, outcome).await;
        // The caller whose run produced this response always gets it.
        Ok(self.answered((reply, outcome), claimed.waited_ms))
    }

    /// Settles the key as the contract decided (complete, release or keep)
    /// at the object that granted the claim, presenting the grant's lease
    /// token, and says what the request
    /// finally came to (`fenced_out`, `complete_failed`, or as planned).
    pub(super) async fn settle(
        &self,
        client: &LedgerClient,
        grant: Grant<'_>,
        settle: Settle,
        outcome: Disposition,
    ) -> Disposition {
        match settle {
            Settle::Complete(response) => {
                let call = CompleteCall {
                    key: self.key.to_string(),
                    generation: grant.generation,
                    lease: grant.lease.map(str::to_string),
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
                    generation: grant.generation,
                    lease: grant.lease.map(str::to_string),
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

    /// Sends the prepared request to the origin, signed now (after the
    /// claim and any wait: `t` is the send time), within
    /// `ORIGIN_TIMEOUT_SECONDS`, its body read up to the stored-body cap.
    async fn send(&self, origin: &Origin, request: Request) -> Result<Bounded, OriginFailure> {
        let timeout = Duration::from_secs(self.config.origin_timeout_seconds);
        let signer = super::origin::signer(self.config, self.tenant);
        let cap = self.config.max_stored_body_bytes;
        origin
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
            })
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
                        outcome:
                            ClaimOutcome::Claimed {
                                generation, lease, ..
                            },
                        ..
                    }) = abandoned.await
                    {
                        let call = ReleaseCall {
                            key: key.clone(),
                            generation,
                            lease,
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
