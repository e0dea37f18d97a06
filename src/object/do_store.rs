//! [`SqlStore`] over a Durable Object's SQLite storage (workers-rs 0.8.7).
//!
//! Role: run the ledger's SQL inside `TenantLedger` (or your own Durable
//! Object, in library mode). What we learned reading
//! worker 0.8.7 (`src/sql.rs`, `src/durable.rs`) and measuring in workerd:
//! - `SqlStorage::exec` returns `Err` on SQL errors; we drain every cursor
//!   with `raw()` and never call `SqlCursor::one()`, which hangs on 0 or >1
//!   rows (the JS throw is not caught).
//! - Integers cross as JavaScript numbers; `SqlStorageValue::try_from` gives
//!   back `Integer` for safe integers. The ledger stores nothing beyond 2^53.
//! - `BEGIN`/`SAVEPOINT` are refused and workers-rs has no wrapper for
//!   `storage.transactionSync(fn)`, so we call it through `js_sys`: it runs
//!   the callback synchronously and rolls back when the callback throws.
//!
//! - A `transactionSync` called inside another is a savepoint (measured in
//!   workerd: an inner callback that throws, caught by the outer, rolls back
//!   the inner writes only; the outer's commit). `ctx.storage` is the same
//!   object on every access.
//!
//! What must stay true here: every `atomically` is its own
//! `transactionSync` (a savepoint when nested), exactly like the rusqlite
//! store's savepoints: a nested level that fails takes back its own writes.

use std::cell::{Cell, OnceCell};

use js_sys::Function;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use worker::{SqlStorage, SqlStorageValue, State};

use crate::ledger::{Row, SizeEstimate, SqlStore, SqlValue, StoreError};
use crate::platform::env::js_message;

/// The ledger's view of one object's SQLite database.
pub struct DoSqlStore {
    sql: SqlStorage,
    /// The raw `DurableObjectStorage`, the `this` of `transactionSync`.
    storage: JsValue,
    /// Rows written and read by every statement so far (the cursors' own
    /// billing figures, read once each cursor is drained).
    billed: Cell<(u64, u64)>,
    /// `storage.transactionSync`, looked up once.
    transaction_sync: OnceCell<Function>,
    /// The database's size as last measured, and a bound of what was
    /// written since (`sql.databaseSize` is a crossing into JS per call;
    /// the quota asks on every new key).
    size: Cell<SizeEstimate>,
}

impl DoSqlStore {
    pub fn new(state: &State) -> DoSqlStore {
        let storage = state.storage();
        DoSqlStore {
            sql: storage.sql(),
            storage: AsRef::<JsValue>::as_ref(storage.as_raw()).clone(),
            billed: Cell::new((0, 0)),
            transaction_sync: OnceCell::new(),
            size: Cell::new(SizeEstimate::default()),
        }
    }

    fn transaction_sync(&self) -> Result<&Function, StoreError> {
        if let Some(f) = self.transaction_sync.get() {
            return Ok(f);
        }
        let f = js_sys::Reflect::get(&self.storage, &JsValue::from_str("transactionSync"))
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok())
            .ok_or_else(|| StoreError::Sql("storage.transactionSync is not available".into()))?;
        Ok(self.transaction_sync.get_or_init(|| f))
    }
}

fn to_storage_value(v: &SqlValue) -> SqlStorageValue {
    match v {
        SqlValue::Null => SqlStorageValue::Null,
        SqlValue::Integer(i) => SqlStorageValue::Integer(*i),
        SqlValue::Real(f) => SqlStorageValue::Float(*f),
        SqlValue::Text(s) => SqlStorageValue::String(s.clone()),
        SqlValue::Blob(b) => SqlStorageValue::Blob(b.clone()),
    }
}

fn from_storage_value(v: SqlStorageValue) -> SqlValue {
    match v {
        SqlStorageValue::Null => SqlValue::Null,
        SqlStorageValue::Boolean(b) => SqlValue::Integer(i64::from(b)),
        SqlStorageValue::Integer(i) => SqlValue::Integer(i),
        SqlStorageValue::Float(f) => SqlValue::Real(f),
        SqlStorageValue::String(s) => SqlValue::Text(s),
        SqlStorageValue::Blob(b) => SqlValue::Blob(b),
    }
}

impl DoSqlStore {
    /// Runs one statement, drains its cursor, and adds its billed rows.
    fn run(&self, sql: &str, params: &[SqlValue]) -> Result<(Vec<Row>, u64), StoreError> {
        let bindings: Vec<SqlStorageValue> = params.iter().map(to_storage_value).collect();
        let cursor = self
            .sql
            .exec(sql, Some(bindings))
            .map_err(|e| StoreError::Sql(e.to_string()))?;
        let mut rows = Vec::new();
        for row in cursor.raw() {
            let row = row.map_err(|e| StoreError::Sql(e.to_string()))?;
            rows.push(row.into_iter().map(from_storage_value).collect());
        }
        let written = cursor.rows_written() as u64;
        if written > 0 {
            let bound: usize = params
                .iter()
                .map(|p| match p {
                    SqlValue::Text(s) => s.len(),
                    SqlValue::Blob(b) => b.len(),
                    _ => 8,
                })
                .sum();
            let mut size = self.size.get();
            size.wrote(bound as u64, written);
            self.size.set(size);
        }
        let (all_written, all_read) = self.billed.get();
        self.billed
            .set((all_written + written, all_read + cursor.rows_read() as u64));
        Ok((rows, written))
    }
}

impl SqlStore for DoSqlStore {
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        Ok(self.run(sql, params)?.0)
    }

    /// A row changed exactly when the cursor wrote one (the platform counts
    /// a changed row as a row written).
    fn update(&self, sql: &str, params: &[SqlValue]) -> Result<bool, StoreError> {
        Ok(self.run(sql, params)?.1 > 0)
    }

    fn database_size(&self) -> Option<u64> {
        let bytes = self.sql.database_size() as u64;
        let mut size = self.size.get();
        size.measured(bytes);
        self.size.set(size);
        Some(bytes)
    }

    /// Measured only when what was written since the last measurement
    /// could have closed the gap (see [`SizeEstimate`]).
    fn database_reached(&self, limit: u64) -> Option<bool> {
        if let Some(answer) = self.size.get().reached_without_measuring(limit) {
            return Some(answer);
        }
        self.database_size().map(|bytes| bytes >= limit)
    }

    fn billed_rows(&self) -> Option<(u64, u64)> {
        Some(self.billed.get())
    }

    fn atomically<T, E: From<StoreError>>(
        &self,
        body: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let transaction_sync = self.transaction_sync()?;
        let mut body = Some(body);
        let mut outcome: Option<Result<T, E>> = None;
        let call = {
            let mut run = || -> Result<JsValue, JsValue> {
                let Some(body) = body.take() else {
                    return Err(JsValue::from_str("transaction body ran twice"));
                };
                let result = body();
                let failed = result.is_err();
                outcome = Some(result);
                if failed {
                    // Throwing makes transactionSync roll back every write.
                    Err(JsValue::from_str(
                        "idempotency-ledger: transaction rolled back",
                    ))
                } else {
                    Ok(JsValue::UNDEFINED)
                }
            };
            let run_ref: &mut dyn FnMut() -> Result<JsValue, JsValue> = &mut run;
            // SAFETY: transactionSync invokes the callback synchronously and
            // only before it returns; the Closure is dropped at the end of
            // this block, so the erased borrow never outlives `run`.
            let run_static: &'static mut dyn FnMut() -> Result<JsValue, JsValue> =
                unsafe { std::mem::transmute(run_ref) };
            let closure =
                Closure::<dyn FnMut() -> Result<JsValue, JsValue>>::wrap(Box::new(move || {
                    run_static()
                }));
            let call = transaction_sync.call1(&self.storage, closure.as_ref().unchecked_ref());
            drop(closure);
            call
        };
        match (call, outcome) {
            (Ok(_), Some(Ok(value))) => Ok(value),
            (Err(_), Some(Err(e))) => Err(e),
            (Err(e), Some(Ok(_))) => Err(StoreError::Sql(format!(
                "transaction failed to commit: {}",
                js_message(&e)
            ))
            .into()),
            (Ok(_), Some(Err(e))) => Err(e),
            (Err(e), None) => {
                Err(StoreError::Sql(format!("transaction did not run: {}", js_message(&e))).into())
            }
            (Ok(_), None) => Err(StoreError::Sql("transaction callback never ran".into()).into()),
        }
    }
}
