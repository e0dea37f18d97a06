//! Example: idempotency-ledger as a library inside your own Rust Worker.
//!
//! - **Library mode**: `Wallet` is *your* Durable Object. It runs the ledger
//!   over its own SQLite (`DoSqlStore`), keeps its own `transfers` table, and
//!   uses `Ledger::execute` so a transfer and its ledger completion commit in
//!   one transaction: one key, one transfer, whatever the retries.
//! - **Typed client**: `/ledger/{tenant}/{claim,complete,release,lookup,evict,stats}`
//!   calls a deployed `TenantLedger` through `LedgerClient`, getting the
//!   core's closed outcome enums back, with no JSON written by hand.
//! - **Queue consumer** (`queue.rs`): an `#[event(queue)]` whose effect (a
//!   payment) runs once per key over the same client, across redeliveries
//!   and duplicate messages.

mod queue;

use idempotency_ledger::contract::answer;
use idempotency_ledger::ledger::{
    ClaimPolicy, ExecuteOutcome, Ledger, RowExt, SqlStore, StoreError,
};
use idempotency_ledger::ledger::DoSqlStore;
use idempotency_ledger::platform::client::{LedgerClient, LedgerError};
use idempotency_ledger::platform::{http, now_ms};
use idempotency_ledger::protocol::{
    parse_idempotency_key, AppResponse, CapturePolicy, Fingerprint, Problem, ProblemKind,
    RequestParts, StoredResponse,
};
use idempotency_ledger::rpc::{ClaimCall, CompleteCall, EvictCall, LookupCall, ReleaseCall};
use serde::Deserialize;
use worker::{
    durable_object, event, wasm_bindgen, Context, DurableObject, Env, Request, Response, Result,
    State,
};

/// Your own Durable Object with the ledger embedded.
#[durable_object]
pub struct Wallet {
    ledger: Ledger<DoSqlStore>,
    ready: std::result::Result<(), String>,
}

impl DurableObject for Wallet {
    fn new(state: State, _env: Env) -> Self {
        let ledger = Ledger::new(DoSqlStore::new(&state));
        let ready = ledger
            .migrate()
            .and_then(|_| {
                ledger.store().execute(
                    "CREATE TABLE IF NOT EXISTS transfers (
                        id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, created_at INTEGER NOT NULL)",
                    &[],
                )
            })
            .map_err(|e| e.to_string());
        Wallet { ledger, ready }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        if let Err(e) = &self.ready {
            return Ok(http::problem(&Problem::new(
                ProblemKind::StoreUnavailable,
                e.clone(),
            )));
        }
        let path = req.path();
        if path.ends_with("/balance") {
            return Ok(http::json(
                200,
                &serde_json::json!({ "balance": self.balance().unwrap_or(0) }),
            ));
        }
        let Some(raw_key) = req.headers().get("idempotency-key")? else {
            return Ok(http::problem(&Problem::new(
                ProblemKind::KeyMissing,
                "send an Idempotency-Key",
            )));
        };
        let key = match parse_idempotency_key(&raw_key) {
            Ok(k) => k,
            Err(e) => {
                return Ok(http::problem(&Problem::new(
                    ProblemKind::KeyInvalid,
                    e.to_string(),
                )))
            }
        };
        let body = req.bytes().await?;
        let fingerprint = Fingerprint::of(&RequestParts {
            method: "POST",
            target: &path,
            headers: &[],
            body: &body,
        });
        let policy = ClaimPolicy {
            lease_ms: 60_000,
            retention_ms: 86_400_000,
            settle_grace_ms: 0,
            max_keys: 1_000_000,
            max_db_bytes: u64::MAX,
        };
        let capture = CapturePolicy {
            stored_headers: vec!["content-type".into()],
            max_stored_body_bytes: 65_536,
        };
        let now = now_ms();
        // Your mutation runs inside the ledger's transaction.
        let outcome = self
            .ledger
            .execute(&key, &fingerprint, &policy, &capture, now, |store| {
                let Ok(amount) = std::str::from_utf8(&body)
                    .unwrap_or("")
                    .trim()
                    .parse::<i64>()
                else {
                    return Ok(AppResponse {
                        status: 400,
                        headers: vec![],
                        body: b"amount must be an integer".to_vec(),
                    });
                };
                let rows = store.query(
                    "INSERT INTO transfers (amount, created_at) VALUES (?, ?) RETURNING id",
                    &[amount.into(), now.into()],
                )?;
                let id = rows.first().map(|r| r.int(0)).transpose()?.unwrap_or(0);
                let balance = balance_of(store)?;
                Ok::<_, StoreError>(AppResponse {
                    status: 201,
                    headers: vec![("content-type".into(), "application/json".into())],
                    body:
                        serde_json::json!({ "transfer": id, "amount": amount, "balance": balance })
                            .to_string()
                            .into_bytes(),
                })
            });
        Ok(match outcome {
            Ok(ExecuteOutcome::Ran { response, .. }) => http::app(response),
            // Replay, 409, 422 or 429: the contract's answer for each.
            Ok(ExecuteOutcome::Refused(refusal)) => http::app(answer::refusal_answer(refusal).0),
            Err(e) => http::problem(&Problem::new(ProblemKind::StoreUnavailable, e.to_string())),
        })
    }
}

fn balance_of<S: SqlStore>(store: &S) -> std::result::Result<i64, StoreError> {
    let rows = store.query("SELECT COALESCE(SUM(amount), 0) FROM transfers", &[])?;
    rows.first()
        .map(|r| r.int(0))
        .transpose()
        .map(|b| b.unwrap_or(0))
}

impl Wallet {
    fn balance(&self) -> std::result::Result<i64, StoreError> {
        balance_of(self.ledger.store())
    }
}

/// The body of a `/ledger/{tenant}/{op}` call in this example.
#[derive(Deserialize)]
struct LedgerCall {
    key: Option<String>,
    body: Option<String>,
    generation: Option<i64>,
    lease: Option<String>,
    response_text: Option<String>,
}

fn outcome_json<T: serde::Serialize>(result: std::result::Result<T, LedgerError>) -> Response {
    match result {
        Ok(out) => http::json(200, &out),
        Err(LedgerError::Refused {
            status, problem, ..
        }) => http::json(
            599,
            &serde_json::json!({ "status": status, "problem": problem }),
        ),
        Err(LedgerError::NotReached(m)) | Err(LedgerError::Unreachable(m)) => {
            http::json(598, &serde_json::json!({ "unreachable": m }))
        }
        Err(LedgerError::Undecodable(m)) => {
            http::json(598, &serde_json::json!({ "undecodable": m }))
        }
    }
}

async fn ledger_route(env: &Env, tenant: &str, op: &str, call: LedgerCall) -> Result<Response> {
    let client = match LedgerClient::for_tenant(env, "TENANT_LEDGER", tenant) {
        Ok(c) => c,
        Err(e) => return Ok(outcome_json::<()>(Err(e))),
    };
    let key = call.key.unwrap_or_default();
    let body = call.body.unwrap_or_default();
    let fingerprint = Fingerprint::of(&RequestParts {
        method: "POST",
        target: "/payments",
        headers: &[],
        body: body.as_bytes(),
    });
    Ok(match op {
        "claim" => outcome_json(
            client
                .claim(&ClaimCall {
                    key,
                    fingerprint,
                    lease_seconds: None,
                    retention_seconds: None,
                    wait_ms: None,
                    attempt: None,
                })
                .await,
        ),
        "complete" => {
            let response = StoredResponse {
                status: 200,
                headers: vec![("content-type".into(), "text/plain".into())],
                body: Some(call.response_text.unwrap_or_default().into_bytes()),
            };
            let generation = call.generation.unwrap_or(0);
            outcome_json(
                client
                    .complete(&CompleteCall {
                        key,
                        generation,
                        lease: call.lease,
                        response,
                        retention_seconds: None,
                    })
                    .await,
            )
        }
        "release" => outcome_json(
            client
                .release(&ReleaseCall {
                    key,
                    generation: call.generation.unwrap_or(0),
                    lease: call.lease,
                })
                .await,
        ),
        "lookup" => outcome_json(client.lookup(&LookupCall { key }).await),
        "evict" => outcome_json(client.evict(&EvictCall { key }).await),
        "stats" => outcome_json(client.stats().await),
        _ => http::problem(&Problem::new(
            ProblemKind::NotFound,
            "no such ledger operation",
        )),
    })
}

#[event(fetch)]
async fn fetch(mut req: Request, env: Env, _ctx: Context) -> Result<Response> {
    let path = req.path();
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        ["wallet", name, ..] => {
            let stub = env
                .durable_object("WALLET")?
                .id_from_name(name)?
                .get_stub()?;
            stub.fetch_with_request(req).await
        }
        ["ledger", tenant, op] => {
            let call: LedgerCall = req.json().await?;
            ledger_route(&env, tenant, op, call).await
        }
        _ => Ok(http::problem(&Problem::new(
            ProblemKind::NotFound,
            "try /wallet/{name}/transfer or /ledger/{tenant}/{op}",
        ))),
    }
}
