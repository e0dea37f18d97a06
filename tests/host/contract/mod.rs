//! The gateway's contract on the host, decided by `contract` from the
//! answers of a real ledger on rusqlite: every row of the outcome table
//! (docs/contract.md §2.5, [`outcomes`]), the admission rules
//! (docs/contract.md §2.1–§2.4, [`admit`]) and proxy mode's settlement
//! (docs/contract.md §2.6, [`proxy`]). This file holds their shared helpers.

mod admit;
mod listing;
mod outcomes;
mod proxy;
mod waiting;

use std::collections::HashMap;

use crate::support::*;
use idempotency_ledger::config::{Config, FailurePolicy};
use idempotency_ledger::contract::admission::{self, check_body_length, introspection_key};
use idempotency_ledger::contract::answer::{
    execute_answer, ledger_failure, lookup_answer, read_failure, refusal_answer, replay,
    retry_after_seconds, REPLAYED_HEADER,
};
use idempotency_ledger::contract::auth::{
    authenticate, identify, Caller, TokenKind, TokenMap, Tokens,
};
use idempotency_ledger::contract::proxy::{
    after_completion, after_origin, not_passable, unprotected_answer,
};
use idempotency_ledger::contract::{
    Disposition, GatewayRoute, LedgerFailure, OriginFailure, Protection, RequestHead, Settle,
};
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::{ClaimOutcome, CompleteOutcome, ExecuteOutcome, Ledger};
use idempotency_ledger::orders;
use idempotency_ledger::protocol::{AppResponse, Problem, StoredResponse, PROBLEM_CONTENT_TYPE};
use idempotency_ledger::rpc::LedgerError;
use serde_json::Value;
use sha2::{Digest, Sha256};

fn config(vars: &[(&str, &str)]) -> Config {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(&|name| map.get(name).cloned()).expect("valid config")
}

fn header<'a>(r: &'a AppResponse, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The problem document of an answer, checked to be one.
fn problem(r: &AppResponse) -> Value {
    assert_eq!(header(r, "content-type"), Some(PROBLEM_CONTENT_TYPE));
    let doc: Value = serde_json::from_slice(&r.body).expect("problem JSON");
    assert_eq!(doc["status"], r.status);
    assert!(doc["title"].is_string() && doc["detail"].is_string());
    doc
}

/// Checks an answer is the problem `slug` at `status`; returns its document.
fn expect_problem(r: &AppResponse, status: u16, expected: &str) -> Value {
    assert_eq!((r.status, slug(r)), (status, expected.to_string()));
    problem(r)
}

fn slug(r: &AppResponse) -> String {
    let doc = problem(r);
    let ty = doc["type"].as_str().expect("type").to_string();
    ty.rsplit('/').next().unwrap().to_string()
}

fn origin_response(status: u16, body: &[u8]) -> AppResponse {
    AppResponse {
        status,
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-trace".into(), "t1".into()),
        ],
        body: body.to_vec(),
    }
}

/// Claims `key` on the real ledger and answers the refusal as the gateway would.
fn answer_to_claim(
    l: &Ledger<RusqliteStore>,
    key: &str,
    body: &str,
    at: i64,
) -> (AppResponse, Disposition) {
    match l.claim(key, &fp(body), &policy(), at).unwrap() {
        ClaimOutcome::Refused(refusal) => refusal_answer(refusal),
        out @ ClaimOutcome::Claimed { .. } => panic!("expected a refusal, got {out:?}"),
    }
}
