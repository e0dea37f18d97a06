//! The Rust benchmark floor: bench/floor/worker.js written with workers-rs.
//!
//! The same bearer-token → tenant routing (SHA-256 of the token looked up in
//! the `API_TOKENS` JSON var, `idFromName(tenant)`), the same order
//! validation and INSERT in a SQLite Durable Object, the same 201 answer —
//! with no idempotency at all. Against the JS floor it prices the workers-rs
//! binding; the product against it prices the Idempotency-Key contract.

use std::cell::OnceCell;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use worker::{
    durable_object, event, js_sys, Context, Date, DurableObject, Env, Method, Request, Response,
    Result, SqlStorage, State,
};

thread_local! {
    /// `API_TOKENS` parsed once per isolate: SHA-256 (hex) of a token → tenant.
    static TOKENS: OnceCell<HashMap<String, String>> = const { OnceCell::new() };
}

fn tenant_of(req: &Request, env: &Env) -> Result<Option<String>> {
    let auth = req.headers().get("authorization")?.unwrap_or_default();
    let mut parts = auth.split(' ');
    let (Some(scheme), Some(token)) = (parts.next(), parts.next()) else {
        return Ok(None);
    };
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Ok(None);
    }
    let digest = hex::encode(Sha256::digest(token.trim().as_bytes()));
    TOKENS.with(|cell| {
        if cell.get().is_none() {
            let tokens = serde_json::from_str(&env.var("API_TOKENS")?.to_string())?;
            let _ = cell.set(tokens);
        }
        Ok(cell.get().and_then(|tokens| tokens.get(&digest).cloned()))
    })
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    if req.path() == "/health" {
        return Response::from_json(&serde_json::json!({ "status": "ok" }));
    }
    let Some(tenant) = tenant_of(&req, &env)? else {
        return Response::error("unauthorized", 401);
    };
    let stub = env
        .durable_object("ORDERS")?
        .id_from_name(&tenant)?
        .get_stub()?;
    stub.fetch_with_request(req).await
}

/// A `POST /v1/orders` body (other members ignored).
#[derive(Deserialize)]
struct NewOrder {
    sku: String,
    quantity: i64,
}

/// The 201 body, members in the JS floor's order.
#[derive(Serialize)]
struct Order {
    id: String,
    sku: String,
    quantity: i64,
    created_at: String,
}

#[derive(Deserialize)]
struct Next {
    seq: i64,
}

#[durable_object]
pub struct Orders {
    sql: SqlStorage,
}

impl DurableObject for Orders {
    fn new(state: State, _env: Env) -> Self {
        let sql = state.storage().sql();
        sql.exec(
            "CREATE TABLE IF NOT EXISTS orders (
                seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, sku TEXT NOT NULL,
                quantity INTEGER NOT NULL, created_at INTEGER NOT NULL)",
            None,
        )
        .expect("create the orders table");
        Orders { sql }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        if req.method() != Method::Post {
            return Response::error("method not allowed", 405);
        }
        let order = match req.json::<NewOrder>().await {
            Ok(o)
                if (1..=64).contains(&o.sku.chars().count())
                    && (1..=1000).contains(&o.quantity) =>
            {
                o
            }
            _ => {
                return Ok(
                    Response::from_json(&serde_json::json!({ "title": "invalid-order" }))?
                        .with_status(400),
                )
            }
        };
        let now = Date::now();
        // `to_array`, not `one()`: in workers-rs 0.8.7 `one()` hangs the
        // request when the row count is not exactly one (the JS throw is lost).
        let next: Vec<Next> = self
            .sql
            .exec("SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM orders", None)?
            .to_array()?;
        let seq = next.first().ok_or("no next order sequence")?.seq;
        let id = format!("ord_{seq:08}");
        self.sql.exec(
            "INSERT INTO orders (seq, id, sku, quantity, created_at) VALUES (?, ?, ?, ?, ?)",
            vec![
                seq.into(),
                id.as_str().into(),
                order.sku.as_str().into(),
                order.quantity.into(),
                (now.as_millis() as i64).into(),
            ],
        )?;
        let location = format!("/v1/orders/{id}");
        let body = Order {
            id,
            sku: order.sku,
            quantity: order.quantity,
            created_at: js_sys::Date::from(now).to_iso_string().into(),
        };
        let mut resp = Response::from_json(&body)?.with_status(201);
        resp.headers_mut().set("location", &location)?;
        Ok(resp)
    }
}
