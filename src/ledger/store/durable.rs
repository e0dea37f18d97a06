//! [`SqlStore`] over a Durable Object's SQLite storage (`ctx.storage.sql`).
//!
//! Role: run the ledger's SQL inside `TenantLedger`, your own Rust Durable
//! Object (library mode) or your own TypeScript one (`EmbeddedLedger`).
//! It speaks to the storage through `js_sys` alone, so the slim
//! `js-ledger` build links no workers-rs; [`DoSqlStore::new`] takes a
//! workers-rs `State` (feature `workers-rs`). What we learned reading
//! worker 0.8.7 (`src/sql.rs`, `src/durable.rs`) and measuring in workerd:
//! - `sql.exec(query, ...bindings)` throws on SQL errors; we drain every
//!   cursor with `raw()` and never call `one()`, which hangs on 0 or >1
//!   rows when called from workers-rs (the JS throw is not caught).
//! - Integers cross as JavaScript numbers; a safe integer comes back as
//!   `Integer` (worker 0.8.7's `SqlStorageValue::try_from` rule, kept
//!   here). The ledger stores nothing beyond 2^53.
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

use js_sys::{Array, Function, Uint8Array};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use super::seam::{Row, SizeEstimate, SqlStore, SqlValue, StoreError};

#[wasm_bindgen]
extern "C" {
    /// `ctx.storage.sql`.
    type SqlStorage;
    #[wasm_bindgen(method, catch, variadic)]
    fn exec(this: &SqlStorage, query: &str, bindings: Array) -> Result<SqlCursor, JsValue>;
    #[wasm_bindgen(method, getter, js_name = databaseSize)]
    fn database_size(this: &SqlStorage) -> f64;

    /// What `exec` answers.
    type SqlCursor;
    #[wasm_bindgen(method)]
    fn raw(this: &SqlCursor) -> js_sys::Iterator;
    #[wasm_bindgen(method, getter, js_name = rowsRead)]
    fn rows_read(this: &SqlCursor) -> f64;
    #[wasm_bindgen(method, getter, js_name = rowsWritten)]
    fn rows_written(this: &SqlCursor) -> f64;
}

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
    /// The store of a workers-rs Durable Object (`TenantLedger`, library mode).
    #[cfg(feature = "workers-rs")]
    pub fn new(state: &worker::State) -> DoSqlStore {
        let storage = state.storage();
        DoSqlStore::from_storage(AsRef::<JsValue>::as_ref(storage.as_raw()).clone())
    }

    /// The store over a `DurableObjectStorage` (`ctx.storage`) whose `sql`
    /// the caller has checked is there (`EmbeddedLedger::new`).
    pub fn from_storage(storage: JsValue) -> DoSqlStore {
        let sql = js_sys::Reflect::get(&storage, &JsValue::from_str("sql"))
            .unwrap_or(JsValue::UNDEFINED)
            .unchecked_into::<SqlStorage>();
        DoSqlStore {
            sql,
            storage,
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

/// A bound parameter as `sql.exec` takes it (a blob as a `Uint8Array`).
fn to_js(v: &SqlValue) -> JsValue {
    match v {
        SqlValue::Null => JsValue::NULL,
        SqlValue::Integer(i) => JsValue::from(*i as f64),
        SqlValue::Real(f) => JsValue::from(*f),
        SqlValue::Text(s) => JsValue::from_str(s),
        SqlValue::Blob(b) => Uint8Array::from(b.as_slice()).into(),
    }
}

/// A column value as `raw()` gives it: null, a boolean (as 0/1), text, a
/// safe integer or else a real, a blob (`ArrayBuffer` or `Uint8Array`).
fn from_js(v: JsValue) -> Result<SqlValue, StoreError> {
    if v.is_null() || v.is_undefined() {
        Ok(SqlValue::Null)
    } else if let Some(b) = v.as_bool() {
        Ok(SqlValue::Integer(i64::from(b)))
    } else if let Some(s) = v.as_string() {
        Ok(SqlValue::Text(s))
    } else if let Some(n) = v.as_f64() {
        if js_sys::Number::is_safe_integer(&v) {
            Ok(SqlValue::Integer(n as i64))
        } else {
            Ok(SqlValue::Real(n))
        }
    } else if v.is_instance_of::<Uint8Array>() || v.is_instance_of::<js_sys::ArrayBuffer>() {
        Ok(SqlValue::Blob(Uint8Array::new(&v).to_vec()))
    } else {
        Err(StoreError::Sql("Unsupported JavaScript value type".into()))
    }
}

/// What a thrown value says, as worker 0.8.7's `Error` displays it: an
/// `Error` as `Name [code]: message`, a string as itself.
fn thrown_text(e: &JsValue) -> String {
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        let name = err.name().as_string().unwrap_or_else(|| "Error".into());
        let message = String::from(err.message());
        let code = js_sys::Reflect::get(e, &JsValue::from_str("code"))
            .ok()
            .and_then(|c| c.as_string());
        match code {
            Some(code) => format!("{name} [{code}]: {message}"),
            None => format!("{name}: {message}"),
        }
    } else if let Some(s) = e.as_string() {
        s
    } else {
        format!("unrecognized JavaScript value: {e:?}")
    }
}

impl DoSqlStore {
    /// Runs one statement, drains its cursor, and adds its billed rows.
    fn run(&self, sql: &str, params: &[SqlValue]) -> Result<(Vec<Row>, u64), StoreError> {
        let bindings: Array = params.iter().map(to_js).collect();
        let cursor = self
            .sql
            .exec(sql, bindings)
            .map_err(|e| StoreError::Sql(thrown_text(&e)))?;
        let mut rows = Vec::new();
        let raw = cursor.raw();
        loop {
            let next = raw.next().map_err(|e| StoreError::Sql(thrown_text(&e)))?;
            if next.done() {
                break;
            }
            let row = Array::from(&next.value());
            let mut values = Vec::with_capacity(row.length() as usize);
            for value in row.iter() {
                values.push(from_js(value)?);
            }
            rows.push(values);
        }
        let written = cursor.rows_written() as u64;
        if written > 0 {
            let mut size = self.size.get();
            size.wrote(SizeEstimate::bound_bytes(params), written);
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
        let mut body = Some(body);
        let mut outcome: Option<Result<T, E>> = None;
        let mut run = || -> Result<(), &'static str> {
            let Some(body) = body.take() else {
                return Err("transaction body ran twice");
            };
            let result = body();
            let failed = result.is_err();
            outcome = Some(result);
            if failed {
                // Throwing makes transactionSync roll back every write.
                Err("idempotency-ledger: transaction rolled back")
            } else {
                Ok(())
            }
        };
        let call = self.transaction(&mut run)?;
        match (call, outcome) {
            (Ok(()), Some(Ok(value))) => Ok(value),
            (Err(_), Some(Err(e))) => Err(e),
            (Err(e), Some(Ok(_))) => Err(StoreError::Sql(format!(
                "transaction failed to commit: {}",
                js_message(&e)
            ))
            .into()),
            (Ok(()), Some(Err(e))) => Err(e),
            (Err(e), None) => {
                Err(StoreError::Sql(format!("transaction did not run: {}", js_message(&e))).into())
            }
            (Ok(()), None) => Err(StoreError::Sql("transaction callback never ran".into()).into()),
        }
    }
}

impl DoSqlStore {
    /// The half of [`SqlStore::atomically`] that does not depend on its
    /// types (so it exists once in the wasm, not once per call site): runs
    /// `run` inside one `transactionSync`, which rolls back when `run`
    /// answers `Err` (thrown as that message). Answers how the call ended.
    fn transaction(
        &self,
        run: &mut dyn FnMut() -> Result<(), &'static str>,
    ) -> Result<Result<(), JsValue>, StoreError> {
        let transaction_sync = self.transaction_sync()?;
        let mut run = move || -> Result<JsValue, JsValue> {
            run()
                .map(|()| JsValue::UNDEFINED)
                .map_err(JsValue::from_str)
        };
        let run_ref: &mut dyn FnMut() -> Result<JsValue, JsValue> = &mut run;
        // SAFETY: transactionSync invokes the callback synchronously and
        // only before it returns; the Closure is dropped at the end of
        // this function, so the erased borrow never outlives `run`.
        let run_static: &'static mut dyn FnMut() -> Result<JsValue, JsValue> =
            unsafe { std::mem::transmute(run_ref) };
        let closure =
            Closure::<dyn FnMut() -> Result<JsValue, JsValue>>::wrap(Box::new(move || {
                run_static()
            }));
        let call = transaction_sync.call1(&self.storage, closure.as_ref().unchecked_ref());
        drop(closure);
        Ok(call.map(|_| ()))
    }
}

/// The message of a JavaScript error value (its `message`, or the string
/// it is, or its debug form).
pub fn js_message(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| {
            js_sys::Reflect::get(e, &JsValue::from_str("message"))
                .ok()
                .and_then(|m| m.as_string())
        })
        .unwrap_or_else(|| format!("{e:?}"))
}
