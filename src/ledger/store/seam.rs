//! The seam itself: the [`SqlStore`] trait the ledger speaks, the values
//! and rows it passes, and its one error (see [`super`] for what every
//! engine must keep true).

use std::fmt;

/// What a column held, for a decode error: its kind, never its value (a
/// `{:?}` of the value would print stored bytes, and pull float formatting
/// into the wasm for this one message).
fn kind_of(value: Option<&SqlValue>) -> &'static str {
    match value {
        None => "no such column",
        Some(SqlValue::Null) => "NULL",
        Some(SqlValue::Integer(_)) => "an integer",
        Some(SqlValue::Real(_)) => "a real",
        Some(SqlValue::Text(_)) => "text",
        Some(SqlValue::Blob(_)) => "a blob",
    }
}

/// A value crossing the seam. Durable Object SQLite hands integers over as
/// JavaScript numbers, so values beyond ±2^53 must never be stored as
/// integers (the ledger stores only millisecond times and small counters).
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl From<i64> for SqlValue {
    fn from(v: i64) -> Self {
        SqlValue::Integer(v)
    }
}
impl From<&str> for SqlValue {
    fn from(v: &str) -> Self {
        SqlValue::Text(v.to_string())
    }
}
impl From<String> for SqlValue {
    fn from(v: String) -> Self {
        SqlValue::Text(v)
    }
}
impl From<Vec<u8>> for SqlValue {
    fn from(v: Vec<u8>) -> Self {
        SqlValue::Blob(v)
    }
}
impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(v: Option<T>) -> Self {
        v.map_or(SqlValue::Null, Into::into)
    }
}

/// A storage failure. The ledger never retries: it reports, and the edge
/// decides (`503 idempotency-store-unavailable`, or a retried alarm).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The engine refused or failed a statement.
    Sql(String),
    /// A row did not have the shape the ledger wrote.
    Decode(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Sql(m) => write!(f, "sql error: {m}"),
            StoreError::Decode(m) => write!(f, "decode error: {m}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// One row: the statement's columns in order.
pub type Row = Vec<SqlValue>;

/// A SQLite engine the ledger can run on.
pub trait SqlStore {
    /// Runs one statement with positional `?` parameters; returns all rows.
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError>;

    /// Runs one `UPDATE` and says whether it changed a row — without a
    /// `RETURNING` clause, which the platform bills as rows read.
    fn update(&self, sql: &str, params: &[SqlValue]) -> Result<bool, StoreError>;

    /// Runs `body` as one transaction (joining an enclosing one if any).
    /// An `Err` from `body` rolls back every write it made.
    fn atomically<T, E: From<StoreError>>(
        &self,
        body: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E>;

    /// The database's size in bytes, when the engine can tell (the byte
    /// quota, `MAX_DB_BYTES_PER_OBJECT`, and `stats.db_bytes`).
    fn database_size(&self) -> Option<u64> {
        None
    }

    /// Whether the database has reached `limit` bytes (the byte quota's
    /// question for every new key), when the engine can tell. The default
    /// measures each time; an engine whose measurement costs may answer
    /// from its last one while what it wrote since cannot have closed the
    /// gap (the Durable Object store: `DoSqlStore`).
    fn database_reached(&self, limit: u64) -> Option<bool> {
        self.database_size().map(|bytes| bytes >= limit)
    }

    /// Rows written and read so far, as the platform bills them (Durable
    /// Object cursors report both), when the engine can tell.
    fn billed_rows(&self) -> Option<(u64, u64)> {
        None
    }

    /// Runs a statement whose rows are not needed.
    fn execute(&self, sql: &str, params: &[SqlValue]) -> Result<(), StoreError> {
        self.query(sql, params).map(|_| ())
    }
}

/// Typed column access with decode errors instead of panics.
pub trait RowExt {
    fn int(&self, i: usize) -> Result<i64, StoreError>;
    fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError>;
    fn text(&self, i: usize) -> Result<String, StoreError>;
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError>;
    fn opt_blob(&self, i: usize) -> Result<Option<Vec<u8>>, StoreError>;
}

impl RowExt for Row {
    fn int(&self, i: usize) -> Result<i64, StoreError> {
        self.opt_int(i)?
            .ok_or_else(|| StoreError::Decode(format!("column {i} is NULL, expected integer")))
    }

    fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        match self.get(i) {
            Some(SqlValue::Integer(v)) => Ok(Some(*v)),
            // JavaScript numbers: integral floats are integers that crossed as f64.
            Some(SqlValue::Real(f)) if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 => {
                Ok(Some(*f as i64))
            }
            Some(SqlValue::Null) => Ok(None),
            other => Err(StoreError::Decode(format!(
                "column {i}: expected integer, got {}",
                kind_of(other)
            ))),
        }
    }

    fn text(&self, i: usize) -> Result<String, StoreError> {
        self.opt_text(i)?
            .ok_or_else(|| StoreError::Decode(format!("column {i} is NULL, expected text")))
    }

    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        match self.get(i) {
            Some(SqlValue::Text(s)) => Ok(Some(s.clone())),
            Some(SqlValue::Null) => Ok(None),
            other => Err(StoreError::Decode(format!(
                "column {i}: expected text, got {}",
                kind_of(other)
            ))),
        }
    }

    fn opt_blob(&self, i: usize) -> Result<Option<Vec<u8>>, StoreError> {
        match self.get(i) {
            Some(SqlValue::Blob(b)) => Ok(Some(b.clone())),
            Some(SqlValue::Null) => Ok(None),
            other => Err(StoreError::Decode(format!(
                "column {i}: expected blob, got {}",
                kind_of(other)
            ))),
        }
    }
}

/// What a store that pays for each size measurement knows of its
/// database's bytes between two (see [`SqlStore::database_reached`]): the
/// last size measured, and an upper bound of what the statements since may
/// have added — twice the text and blob bytes they bound, plus
/// [`SizeEstimate::GROWTH_PER_ROW`] for each row they wrote (a b-tree
/// insert splits at most one page per level). It answers "not reached"
/// without measuring only while that bound stays below seven eighths of
/// the limit and fewer than [`SizeEstimate::WRITES_BETWEEN_CHECKS`]
/// writing statements ran since (rows written outside the store — your
/// own in the embedded ledger — are seen at the next measurement). Rolled
/// back writes still count: the bound only errs high.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SizeEstimate {
    measured: Option<u64>,
    grown: u64,
    writes: u32,
}

impl SizeEstimate {
    /// Bytes one written row may add beyond twice its bound bytes.
    pub const GROWTH_PER_ROW: u64 = 32 * 1024;
    /// Writing statements after which the size is measured again anyway.
    pub const WRITES_BETWEEN_CHECKS: u32 = 64;

    /// The text and blob bytes `params` bind (8 for any other value): what
    /// [`SizeEstimate::wrote`] takes for one statement.
    pub fn bound_bytes(params: &[SqlValue]) -> u64 {
        params
            .iter()
            .map(|p| match p {
                SqlValue::Text(s) => s.len() as u64,
                SqlValue::Blob(b) => b.len() as u64,
                _ => 8,
            })
            .sum()
    }

    /// The most a statement that binds `bound_bytes` of text and blobs and
    /// writes `rows` may grow the database by: twice its bound bytes, plus
    /// [`SizeEstimate::GROWTH_PER_ROW`] per row (0 when it writes none).
    pub fn growth_bound(bound_bytes: u64, rows: u64) -> u64 {
        if rows == 0 {
            return 0;
        }
        bound_bytes
            .saturating_mul(2)
            .saturating_add(rows.saturating_mul(Self::GROWTH_PER_ROW))
    }

    /// A statement ran that bound `bound_bytes` of text and blobs and wrote `rows`.
    pub fn wrote(&mut self, bound_bytes: u64, rows: u64) {
        if rows == 0 {
            return;
        }
        self.grown = self
            .grown
            .saturating_add(Self::growth_bound(bound_bytes, rows));
        self.writes = self.writes.saturating_add(1);
    }

    /// The database measured `bytes` now.
    pub fn measured(&mut self, bytes: u64) {
        *self = SizeEstimate {
            measured: Some(bytes),
            grown: 0,
            writes: 0,
        };
    }

    /// `Some(false)`: the database cannot have reached `limit` since the
    /// last measurement; `None`: measure it.
    pub fn reached_without_measuring(&self, limit: u64) -> Option<bool> {
        let bytes = self.measured?;
        let bound = bytes.saturating_add(self.grown);
        (self.writes < Self::WRITES_BETWEEN_CHECKS && bound < limit - limit / 8).then_some(false)
    }
}
