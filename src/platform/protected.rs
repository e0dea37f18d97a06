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

use std::time::Duration;

use worker::Response;

use crate::config::Config;
use crate::contract::answer;
use crate::contract::proxy::{self, AfterOrigin, Settle};
use crate::contract::replay_cache::Replayable;
use crate::contract::Outcome;
use crate::fields;
use crate::ledger::{ClaimOutcome, ExecuteOutcome, Refusal};
use crate::platform::client::{LedgerClient, LedgerError};
use crate::platform::origin::{Forward, Origin, OriginError};
use crate::platform::replays::with_replays;
use crate::platform::{http, log, now_ms};
use crate::protocol::{AppResponse, Fingerprint};
use crate::rpc::{AppRequest, ClaimCall, CompleteCall, ExecuteCall, ReleaseCall};

/// One protected request on its way through the ledger.
pub struct Protected<'a> {
    pub client: &'a LedgerClient,
    pub config: &'a Config,
    pub tenant: &'a str,
    pub key: &'a str,
    pub fingerprint: Fingerprint,
    pub forward: &'a Forward,
}

pub type Step = Result<(Response, Outcome), LedgerError>;

fn answered((answer, outcome): (AppResponse, Outcome)) -> (Response, Outcome) {
    (http::app(answer), outcome)
}

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

    /// Embedded mode: one hop, claim + orders app + complete in one transaction.
    pub async fn embedded(&self) -> Step {
        let call = ExecuteCall {
            key: self.key.to_string(),
            fingerprint: self.fingerprint.clone(),
            request: AppRequest {
                method: self.forward.method.to_ascii_uppercase(),
                target: self.forward.target.clone(),
                body: self.forward.body.clone(),
            },
        };
        let outcome = self.client.execute(&call).await?;
        if let ExecuteOutcome::Refused(refusal) = &outcome {
            self.remember(refusal);
        }
        Ok(answered(answer::execute_answer(outcome)))
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
                return Ok(answered(proxy::not_forwardable(&self.forward.method)));
            }
        };
        let claim = ClaimCall {
            key: self.key.to_string(),
            fingerprint: self.fingerprint.clone(),
            lease_seconds: None,
            retention_seconds: None,
        };
        let (generation, takeover) = match self.client.claim(&claim).await? {
            ClaimOutcome::Claimed {
                generation,
                takeover,
            } => (generation, takeover),
            ClaimOutcome::Refused(refusal) => {
                self.remember(&refusal);
                return Ok(answered(answer::refusal_answer(refusal)));
            }
        };
        let timeout = Duration::from_secs(self.config.origin_timeout_seconds);
        let result = origin.send(request, timeout).await.map_err(|e| {
            if let OriginError::Unreachable(reason) = &e {
                log::warn(
                    "idempotency.origin_unavailable",
                    fields! {"error" => reason, "key" => log::short_hash(self.key)},
                );
            }
            e.failure()
        });
        let AfterOrigin {
            settle,
            reply,
            outcome,
        } = proxy::after_origin(result, takeover, self.config);
        let outcome = match settle {
            Settle::Complete(response) => {
                let call = CompleteCall {
                    key: self.key.to_string(),
                    generation,
                    response,
                    retention_seconds: None,
                };
                let completion = self.client.complete(&call).await;
                if let Err(e) = &completion {
                    log::error(
                        "idempotency.complete_failed",
                        fields! {"error" => e.to_string(), "key" => log::short_hash(self.key)},
                    );
                }
                // The object logs idempotency.fenced_out (it sees every caller).
                proxy::after_completion(outcome, completion.as_ref())
            }
            Settle::Release => {
                self.release(generation).await;
                outcome
            }
            Settle::Keep => outcome,
        };
        // The caller whose run produced this response always gets it.
        Ok((http::app(reply), outcome))
    }

    async fn release(&self, generation: i64) {
        let call = ReleaseCall {
            key: self.key.to_string(),
            generation,
        };
        // A fenced-out release is logged by the object as idempotency.fenced_out.
        if let Err(e) = self.client.release(&call).await {
            log::error(
                "idempotency.release_failed",
                fields! {"error" => e.to_string(), "key" => log::short_hash(self.key)},
            );
        }
    }
}
