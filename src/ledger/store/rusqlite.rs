//! [`SqlStore`] over rusqlite: the ledger on real SQLite outside workerd.
//!
//! Role: host tests and benchmarks run the exact ledger SQL on the same
//! engine family the Durable Object uses. Behind the `host-sqlite` feature so
//! the Worker build never links it.
//!
//! What must stay true here: `atomically` nests by depth (only the outermost
//! call opens and ends the transaction), matching the Durable Object store.

use std::cell::Cell;

use rusqlite::types::{Value, ValueRef};
use rusqlite::Connection;

use super::seam::{Row, SqlStore, SqlValue, StoreError};

/// A rusqlite connection with transaction nesting.
pub struct RusqliteStore {
    conn: Connection,
    depth: Cell<u32>,
}

impl RusqliteStore {
    /// An in-memory database.
    pub fn in_memory() -> Result<RusqliteStore, StoreError> {
        Connection::open_in_memory()
            .map(RusqliteStore::new)
            .map_err(|e| StoreError::Sql(e.to_string()))
    }

    pub fn new(conn: Connection) -> RusqliteStore {
        RusqliteStore {
            conn,
            depth: Cell::new(0),
        }
    }

    /// The connection, for tests that inspect query plans.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

fn to_value(v: &SqlValue) -> Value {
    match v {
        SqlValue::Null => Value::Null,
        SqlValue::Integer(i) => Value::Integer(*i),
        SqlValue::Real(f) => Value::Real(*f),
        SqlValue::Text(s) => Value::Text(s.clone()),
        SqlValue::Blob(b) => Value::Blob(b.clone()),
    }
}

fn from_value(v: ValueRef<'_>) -> SqlValue {
    match v {
        ValueRef::Null => SqlValue::Null,
        ValueRef::Integer(i) => SqlValue::Integer(i),
        ValueRef::Real(f) => SqlValue::Real(f),
        ValueRef::Text(t) => SqlValue::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => SqlValue::Blob(b.to_vec()),
    }
}

impl SqlStore for RusqliteStore {
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        let err = |e: rusqlite::Error| StoreError::Sql(e.to_string());
        let mut stmt = self.conn.prepare(sql).map_err(err)?;
        let columns = stmt.column_count();
        let values: Vec<Value> = params.iter().map(to_value).collect();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(values.iter()))
            .map_err(err)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(err)? {
            let mut r = Vec::with_capacity(columns);
            for i in 0..columns {
                r.push(from_value(row.get_ref(i).map_err(err)?));
            }
            out.push(r);
        }
        Ok(out)
    }

    fn update(&self, sql: &str, params: &[SqlValue]) -> Result<bool, StoreError> {
        let values: Vec<Value> = params.iter().map(to_value).collect();
        self.conn
            .execute(sql, rusqlite::params_from_iter(values.iter()))
            .map(|changed| changed > 0)
            .map_err(|e| StoreError::Sql(e.to_string()))
    }

    fn database_size(&self) -> Option<u64> {
        self.conn
            .query_row(
                "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
                [],
                |row| row.get::<_, i64>(0),
            )
            .ok()
            .map(|n| n.max(0) as u64)
    }

    fn atomically<T, E: From<StoreError>>(
        &self,
        body: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        // The outermost level is a transaction; a nested one a savepoint,
        // so an inner level that fails rolls back its own writes only (as
        // a nested `transactionSync` does in workerd).
        let depth = self.depth.get();
        let savepoint = format!("ledger_level_{depth}");
        if depth == 0 {
            self.execute("BEGIN IMMEDIATE", &[])?;
        } else {
            self.execute(&format!("SAVEPOINT {savepoint}"), &[])?;
        }
        self.depth.set(depth + 1);
        let result = body();
        self.depth.set(depth);
        match (&result, depth) {
            (Ok(_), 0) => self.execute("COMMIT", &[])?,
            (Err(_), 0) => self.execute("ROLLBACK", &[])?,
            (Ok(_), _) => self.execute(&format!("RELEASE {savepoint}"), &[])?,
            (Err(_), _) => {
                self.execute(&format!("ROLLBACK TO {savepoint}"), &[])?;
                self.execute(&format!("RELEASE {savepoint}"), &[])?;
            }
        }
        result
    }
}
