//! A Queue consumer whose effect runs once per key, over the typed client
//! (docs/consumers.md, "Rust").
//!
//! Role: the pattern a workers-rs consumer (`#[event(queue)]`) follows to
//! get what `idempotency-ledger/queues` gives a JavaScript one: claim the
//! message's key on the deployed `TenantLedger`, run the effect under the
//! lease, complete the key with the effect's result (or release it when the
//! effect failed), and tell the message what to do next. `run_once` is the
//! part you copy; `consume` is one consumer built on it (a payment per
//! message, made through the `PAYMENTS` service binding).
//!
//! What must stay true here:
//! - The effect runs only after a `claimed` answer; a completed key answers
//!   its stored result (ack, nothing runs); a key in flight elsewhere, a
//!   full ledger or an unreachable one runs nothing (retry later).
//! - Once the effect took place its key is never released: a completion
//!   that cannot be stored (retried as the gateway retries completions)
//!   leaves the key in flight until its lease ends.
//! - The handler never returns `Err` for one message: every message is
//!   acked or retried by itself (a throw would retry the whole batch).

use idempotency_ledger::contract::proxy::{is_retryable, landed_earlier, SETTLE_RETRY_DELAYS_MS};
use idempotency_ledger::ledger::{ClaimOutcome, CompleteOutcome, KeyState, Refusal};
use idempotency_ledger::platform::client::{new_attempt, LedgerClient, LedgerError};
use idempotency_ledger::protocol::{Fingerprint, RequestParts, StoredResponse};
use idempotency_ledger::rpc::{ClaimCall, CompleteCall, ReleaseCall};
use serde::Deserialize;
use worker::{
    event, js_sys, Context, Env, MessageBatch, MessageExt, Method, QueueRetryOptionsBuilder,
    RequestInit,
};

/// What became of one key's effect: what the consumer does with its message.
#[derive(Debug)]
pub enum Once {
    /// This call ran the effect; `stored` is false when its result could not
    /// be recorded (the key then stays in flight until its lease ends). Ack.
    Ran { result: Vec<u8>, stored: bool },
    /// An earlier run took effect; its stored result (`None`: not kept). Ack.
    Replayed { result: Option<Vec<u8>> },
    /// The key is running elsewhere, or the ledger is full: retry after this.
    Busy { retry_after_ms: i64 },
    /// The effect failed (it did not take effect) and the key was freed: retry.
    Failed(String),
    /// The ledger did not answer (nothing ran), or refused the call: retry.
    Unavailable(LedgerError),
    /// The key stands for another body: no retry changes it. Ack (and alert).
    Mismatch(Vec<String>),
}

/// Runs `effect` once per `key` on one tenant's ledger. `fingerprint` is
/// what the key stands for (a duplicate with another body is a
/// `Mismatch`); `lease_seconds` must outlast the effect.
pub async fn run_once<F, Fut>(
    client: &LedgerClient,
    key: &str,
    fingerprint: Fingerprint,
    lease_seconds: u64,
    effect: F,
) -> Once
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<Vec<u8>, String>>,
{
    let claim = ClaimCall {
        key: key.to_string(),
        fingerprint,
        lease_seconds: Some(lease_seconds),
        retention_seconds: None,
        wait_ms: None,
        // A lost answer is sent again and answered with the same grant.
        attempt: new_attempt(),
    };
    let (generation, lease) = match client.claim(&claim).await {
        Ok(ClaimOutcome::Claimed {
            generation, lease, ..
        }) => (generation, lease),
        Ok(ClaimOutcome::Refused(Refusal::Completed { response, .. })) => {
            return Once::Replayed {
                result: response.body,
            }
        }
        Ok(ClaimOutcome::Refused(Refusal::InFlight { retry_after_ms, .. }))
        | Ok(ClaimOutcome::Refused(Refusal::LedgerFull { retry_after_ms })) => {
            return Once::Busy { retry_after_ms }
        }
        Ok(ClaimOutcome::Refused(Refusal::Mismatch { differs })) => return Once::Mismatch(differs),
        Err(error) => return Once::Unavailable(error),
    };
    match effect().await {
        Ok(result) => {
            let stored = complete(client, key, (generation, lease), &result).await;
            Once::Ran { result, stored }
        }
        Err(why) => {
            // It did not take effect: free the key (a failed release leaves it to its lease).
            release(client, key, (generation, lease)).await;
            Once::Failed(why)
        }
    }
}

/// Sends a completion or release until it answers, or fails in a way a
/// retry cannot help: three attempts in all, after `SETTLE_RETRY_DELAYS_MS`
/// (as the gateway settles). Also whether it was sent more than once.
async fn settled<T, F, Fut>(mut call: F) -> Result<(T, bool), LedgerError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, LedgerError>>,
{
    let mut delays = SETTLE_RETRY_DELAYS_MS.iter();
    let mut retried = false;
    loop {
        match call().await {
            Ok(answer) => return Ok((answer, retried)),
            Err(e) => match delays.next() {
                Some(ms) if is_retryable(&e) => {
                    worker::Delay::from(std::time::Duration::from_millis(*ms)).await;
                    retried = true;
                }
                _ => return Err(e),
            },
        }
    }
}

/// Stores `result` for `key` as the grant at `generation` named by its
/// lease token (the object answers `stored` again to a retry of this very
/// completion); whether this grant's result is the one stored (an object
/// older than lease tokens answers a retry `fenced_out`: it landed earlier).
async fn complete(
    client: &LedgerClient,
    key: &str,
    (generation, lease): (i64, Option<String>),
    result: &[u8],
) -> bool {
    let call = CompleteCall {
        key: key.to_string(),
        generation,
        lease,
        response: StoredResponse {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Some(result.to_vec()),
        },
        retention_seconds: None,
    };
    match settled(|| client.complete(&call)).await {
        Ok((CompleteOutcome::Stored, _)) => true,
        Ok((CompleteOutcome::FencedOut { current }, retried)) => {
            retried && landed_earlier(&current, generation, KeyState::Completed)
        }
        Err(e) => {
            worker::console_error!("queue consumer: {key} ran but its completion failed: {e}");
            false
        }
    }
}

/// Frees `key` as the grant at `generation` named by its lease token
/// (fenced: a superseded lease, or another object's grant, changes
/// nothing; a release that fails leaves the key to its lease).
async fn release(client: &LedgerClient, key: &str, (generation, lease): (i64, Option<String>)) {
    let call = ReleaseCall {
        key: key.to_string(),
        generation,
        lease,
    };
    if let Err(e) = settled(|| client.release(&call)).await {
        worker::console_error!("queue consumer: {key} could not be released: {e}");
    }
}

/// One payment job: `key` names the payment (a producer's retry sends the
/// same key in a new message); without one the message id is the key, which
/// survives the message's own redeliveries.
#[derive(Deserialize)]
struct Job {
    key: Option<String>,
    amount: i64,
}

/// The tenant whose ledger holds this consumer's keys.
const TENANT: &str = "payments-consumer";

/// The payment itself: one call to the payment service. A 2xx took effect;
/// anything else did not (the service's contract).
async fn charge(env: &Env, key: &str, amount: i64) -> Result<Vec<u8>, String> {
    let payments = env.service("PAYMENTS").map_err(|e| e.to_string())?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_body(Some(
        serde_json::json!({ "key": key, "amount": amount })
            .to_string()
            .into(),
    ));
    let mut res = payments
        .fetch("https://payments/charge", Some(init))
        .await
        .map_err(|e| e.to_string())?;
    let body = res.bytes().await.map_err(|e| e.to_string())?;
    if (200..300).contains(&res.status_code()) {
        Ok(body)
    } else {
        Err(format!("payment service answered {}", res.status_code()))
    }
}

/// Whole seconds for `retry({ delaySeconds })`, rounded up, at most 12 hours.
fn delay_seconds(ms: i64) -> u32 {
    (ms.max(0) as u64).div_ceil(1000).min(43_200) as u32
}

#[event(queue)]
async fn consume(
    batch: MessageBatch<serde_json::Value>,
    env: Env,
    _ctx: Context,
) -> worker::Result<()> {
    let client = LedgerClient::for_tenant(&env, "TENANT_LEDGER", TENANT);
    for message in batch.raw_iter() {
        let body = js_sys::JSON::stringify(&message.body())
            .map(String::from)
            .unwrap_or_default();
        let Ok(job) = serde_json::from_str::<Job>(&body) else {
            worker::console_error!(
                "queue consumer: message {} is not a job; acked",
                message.id()
            );
            message.ack();
            continue;
        };
        let client = match &client {
            Ok(c) => c,
            Err(e) => {
                worker::console_error!("queue consumer: no ledger ({e}); retrying");
                message.retry();
                continue;
            }
        };
        let key = job.key.clone().unwrap_or_else(|| message.id());
        let fingerprint = Fingerprint::of(&RequestParts {
            method: "POST",
            target: "/queue/payments",
            headers: &[],
            body: body.as_bytes(),
        });
        let once = run_once(client, &key, fingerprint, 30, || {
            charge(&env, &key, job.amount)
        })
        .await;
        match once {
            Once::Ran { result, stored } => {
                if !stored {
                    // Paid, but the ledger holds the key in flight until its lease ends.
                    worker::console_error!("queue consumer: {key} paid, its result not stored");
                }
                worker::console_log!(
                    "queue consumer: {key} paid: {}",
                    String::from_utf8_lossy(&result)
                );
                message.ack();
            }
            Once::Replayed { result } => {
                let receipt = result
                    .as_deref()
                    .map(String::from_utf8_lossy)
                    .unwrap_or_default();
                worker::console_log!("queue consumer: {key} was paid before: {receipt}");
                message.ack();
            }
            Once::Mismatch(differs) => {
                worker::console_error!(
                    "queue consumer: {key} was used for another job ({differs:?}); acked"
                );
                message.ack();
            }
            Once::Busy { retry_after_ms } => message.retry_with_options(
                &QueueRetryOptionsBuilder::new()
                    .with_delay_seconds(delay_seconds(retry_after_ms))
                    .build(),
            ),
            Once::Failed(why) => {
                worker::console_log!("queue consumer: {key} failed ({why}); retrying");
                message.retry();
            }
            Once::Unavailable(e) => {
                worker::console_error!(
                    "queue consumer: ledger unavailable for {key} ({e}); retrying"
                );
                message.retry();
            }
        }
    }
    Ok(())
}
