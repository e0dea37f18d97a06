//! The embedded application: a tenant-local orders API (docs/contract.md §2.6).
//!
//! Role: the default application behind the gateway when no origin is
//! configured. Its table lives in the tenant's own SQLite database, beside the
//! ledger, so `Ledger::execute` commits an order and its ledger completion in
//! one transaction: one key can never yield two orders.
//!
//! May call: the [`SqlStore`] it is handed. Pure otherwise: the caller
//! supplies the clock.
//!
//! What must stay true here: bad input is a `400 invalid-order` problem and
//! writes nothing; every answer is a complete [`AppResponse`].

use serde_json::{json, Value};

use crate::ledger::{rfc3339, Millis, RowExt, SqlStore, StoreError};
use crate::protocol::{AppResponse, Problem, ProblemKind};

/// Most orders `GET /v1/orders` returns.
pub const LIST_LIMIT: i64 = 100;

/// The orders table. `seq` orders them; `id` is what clients see.
pub const SCHEMA: &[&str] = &["CREATE TABLE IF NOT EXISTS orders (
        seq        INTEGER PRIMARY KEY,
        id         TEXT NOT NULL UNIQUE,
        sku        TEXT NOT NULL,
        quantity   INTEGER NOT NULL,
        created_at INTEGER NOT NULL
    )"];

/// Creates the orders table if missing.
pub fn migrate<S: SqlStore>(store: &S) -> Result<(), StoreError> {
    store.atomically(|| {
        for s in SCHEMA {
            store.execute(s, &[])?;
        }
        Ok(())
    })
}

/// A validated order request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOrder {
    pub sku: String,
    pub quantity: i64,
}

/// Validates a `POST /v1/orders` body: `{"sku": string 1–64, "quantity":
/// integer 1–1000}`; other members are ignored.
pub fn parse_new_order(body: &[u8]) -> Result<NewOrder, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not valid JSON: {e}"))?;
    let Some(obj) = value.as_object() else {
        return Err("the body must be a JSON object".into());
    };
    let sku = match obj.get("sku") {
        Some(Value::String(s)) if (1..=64).contains(&s.chars().count()) => s.clone(),
        Some(Value::String(_)) => return Err("sku must be 1 to 64 characters".into()),
        Some(_) => return Err("sku must be a string".into()),
        None => return Err("sku is required".into()),
    };
    let quantity = match obj.get("quantity") {
        // JSON has one number type: `2.0` is the integer 2 (as JSON Schema's
        // `integer` says); `1.5` is not.
        Some(Value::Number(n)) => match n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() <= 1e15)
                .map(|f| f as i64)
        }) {
            Some(q) if (1..=1000).contains(&q) => q,
            Some(_) => return Err("quantity must be between 1 and 1000".into()),
            None => return Err("quantity must be an integer".into()),
        },
        Some(_) => return Err("quantity must be an integer".into()),
        None => return Err("quantity is required".into()),
    };
    Ok(NewOrder { sku, quantity })
}

fn json_response(status: u16, body: &Value, extra: Vec<(String, String)>) -> AppResponse {
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    headers.extend(extra);
    AppResponse {
        status,
        headers,
        body: body.to_string().into_bytes(),
    }
}

fn order_json(row: &crate::ledger::Row) -> Result<Value, StoreError> {
    Ok(json!({
        "id": row.text(0)?,
        "sku": row.text(1)?,
        "quantity": row.int(2)?,
        "created_at": rfc3339(row.int(3)?),
    }))
}

/// Creates one order, in a transaction of its own.
pub fn create<S: SqlStore>(store: &S, body: &[u8], now: Millis) -> Result<AppResponse, StoreError> {
    create_order(store, body, now, true)
}

/// Creates one order, in a transaction of its own (`own`) or in the
/// caller's (`Ledger::execute`, where an error rolls back the whole
/// transaction: a savepoint of its own, a second `transactionSync` on a
/// Durable Object, would add nothing).
fn create_order<S: SqlStore>(
    store: &S,
    body: &[u8],
    now: Millis,
    own: bool,
) -> Result<AppResponse, StoreError> {
    let order = match parse_new_order(body) {
        Ok(order) => order,
        Err(detail) => {
            return Ok(AppResponse::from(&Problem::new(
                ProblemKind::InvalidOrder,
                detail,
            )))
        }
    };
    let write = || {
        // The next sequence number, then the row (two statements, as the
        // benchmark floor does: a `RETURNING` clause is billed as rows read).
        let rows = store.query("SELECT COALESCE(MAX(seq), 0) + 1 FROM orders", &[])?;
        let seq = rows
            .first()
            .map(|r| r.int(0))
            .transpose()?
            .ok_or_else(|| StoreError::Sql("no next order sequence".into()))?;
        let id = format!("ord_{seq:08}");
        store.execute(
            "INSERT INTO orders (seq, id, sku, quantity, created_at) VALUES (?, ?, ?, ?, ?)",
            &[
                seq.into(),
                id.as_str().into(),
                order.sku.as_str().into(),
                order.quantity.into(),
                now.into(),
            ],
        )?;
        let body = json!({
            "id": id,
            "sku": order.sku,
            "quantity": order.quantity,
            "created_at": rfc3339(now),
        });
        Ok(json_response(
            201,
            &body,
            vec![("location".into(), format!("/v1/orders/{id}"))],
        ))
    };
    if own {
        store.atomically(write)
    } else {
        write()
    }
}

/// Serves one request of the orders API. `path` excludes the query.
pub fn handle<S: SqlStore>(
    store: &S,
    method: &str,
    path: &str,
    body: &[u8],
    now: Millis,
) -> Result<AppResponse, StoreError> {
    route(store, method, path, body, now, true)
}

/// [`handle`] inside the caller's transaction (`Ledger::execute`'s app):
/// its writes commit or roll back with the ledger's record.
pub fn handle_within<S: SqlStore>(
    store: &S,
    method: &str,
    path: &str,
    body: &[u8],
    now: Millis,
) -> Result<AppResponse, StoreError> {
    route(store, method, path, body, now, false)
}

fn route<S: SqlStore>(
    store: &S,
    method: &str,
    path: &str,
    body: &[u8],
    now: Millis,
    own: bool,
) -> Result<AppResponse, StoreError> {
    let not_found = || AppResponse::from(&Problem::new(ProblemKind::NotFound, "no such resource"));
    let not_allowed = |allow: &str| {
        AppResponse::from(
            &Problem::new(
                ProblemKind::MethodNotAllowed,
                format!("{method} is not allowed here"),
            )
            .with_header("allow", allow),
        )
    };
    if path == "/v1/orders" {
        return match method {
            "POST" => create_order(store, body, now, own),
            "GET" | "HEAD" => {
                let mut orders = Vec::new();
                for row in store.query(
                    "SELECT id, sku, quantity, created_at FROM orders ORDER BY seq DESC LIMIT ?",
                    &[LIST_LIMIT.into()],
                )? {
                    orders.push(order_json(&row)?);
                }
                Ok(json_response(200, &json!({ "orders": orders }), vec![]))
            }
            _ => Ok(not_allowed("GET, HEAD, POST")),
        };
    }
    if let Some(id) = path.strip_prefix("/v1/orders/") {
        if method != "GET" && method != "HEAD" {
            return Ok(not_allowed("GET, HEAD"));
        }
        let rows = store.query(
            "SELECT id, sku, quantity, created_at FROM orders WHERE id = ?",
            &[id.into()],
        )?;
        return match rows.first() {
            Some(row) => Ok(json_response(200, &order_json(row)?, vec![])),
            None => Ok(not_found()),
        };
    }
    Ok(not_found())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_bodies_are_validated() {
        assert_eq!(
            parse_new_order(br#"{"sku":"A1","quantity":2}"#).unwrap(),
            NewOrder {
                sku: "A1".into(),
                quantity: 2
            }
        );
        assert!(parse_new_order(b"not json").is_err());
        assert!(parse_new_order(br#"[1]"#).is_err());
        assert!(parse_new_order(br#"{"sku":"","quantity":2}"#).is_err());
        assert!(parse_new_order(
            format!(r#"{{"sku":"{}","quantity":2}}"#, "x".repeat(65)).as_bytes()
        )
        .is_err());
        assert!(parse_new_order(br#"{"sku":"A","quantity":0}"#).is_err());
        assert!(parse_new_order(br#"{"sku":"A","quantity":1001}"#).is_err());
        assert!(parse_new_order(br#"{"sku":"A","quantity":1.5}"#).is_err());
        assert_eq!(
            parse_new_order(br#"{"sku":"A","quantity":120.0}"#)
                .unwrap()
                .quantity,
            120
        );
        assert!(parse_new_order(br#"{"sku":"A","quantity":1e300}"#).is_err());
        assert!(parse_new_order(br#"{"sku":"A","quantity":1000.0000001}"#).is_err());
        assert!(parse_new_order(br#"{"sku":"A","quantity":"2"}"#).is_err());
        assert!(parse_new_order(br#"{"sku":"A"}"#).is_err());
    }
}
