//! Shared fixtures for the host tests.

use idempotency_ledger::ledger::lease::is_lease_token;
use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::{ClaimOutcome, ClaimPolicy, Ledger};
use idempotency_ledger::protocol::{CapturePolicy, Fingerprint, RequestParts, StoredResponse};

pub const LEASE_MS: i64 = 60_000;
pub const RETENTION_MS: i64 = 86_400_000;

/// A migrated ledger on a fresh in-memory SQLite database.
pub fn ledger() -> Ledger<RusqliteStore> {
    let ledger = Ledger::new(RusqliteStore::in_memory().expect("open sqlite"));
    ledger.migrate().expect("migrate");
    idempotency_ledger::orders::migrate(ledger.store()).expect("orders schema");
    ledger
}

/// A ledger database in a file, opened (and migrated) anew by each
/// `open` — an object's restart — and removed when dropped.
pub struct LedgerFile(std::path::PathBuf);

impl LedgerFile {
    pub fn new(prefix: &str) -> Self {
        LedgerFile(std::env::temp_dir().join(format!(
            "{prefix}-{}-{}.sqlite",
            std::process::id(),
            rand::random::<u64>()
        )))
    }

    pub fn open(&self) -> Ledger<RusqliteStore> {
        let ledger = Ledger::new(RusqliteStore::new(
            rusqlite::Connection::open(&self.0).expect("open sqlite file"),
        ));
        ledger.migrate().expect("migrate");
        ledger
    }
}

impl Drop for LedgerFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn policy() -> ClaimPolicy {
    ClaimPolicy {
        lease_ms: LEASE_MS,
        retention_ms: RETENTION_MS,
        settle_grace_ms: 0,
        max_keys: 1_000_000,
        max_db_bytes: u64::MAX,
    }
}

pub fn capture() -> CapturePolicy {
    CapturePolicy {
        stored_headers: vec!["content-type".into(), "location".into()],
        max_stored_body_bytes: 1024,
    }
}

/// A claim's outcome with its lease token set aside, so the rest compares
/// exactly: a grant must carry a token of a token's shape (a random one:
/// no test can name it in advance), which is checked here.
pub fn without_lease(out: ClaimOutcome) -> ClaimOutcome {
    match out {
        ClaimOutcome::Claimed {
            generation,
            takeover,
            lease,
        } => {
            let token = lease.expect("every grant carries a lease token");
            assert!(is_lease_token(&token), "not a lease token: {token:?}");
            ClaimOutcome::Claimed {
                generation,
                takeover,
                lease: None,
            }
        }
        refused => refused,
    }
}

/// A fingerprint for a POST with the given body.
pub fn fp(body: &str) -> Fingerprint {
    let headers = vec![(
        "content-type".to_string(),
        Some("application/json".to_string()),
    )];
    Fingerprint::of(&RequestParts {
        method: "POST",
        target: "/v1/orders",
        headers: &headers,
        body: body.as_bytes(),
    })
}

pub fn response(body: &str) -> StoredResponse {
    StoredResponse {
        status: 201,
        headers: vec![("content-type".into(), "application/json".into())],
        body: Some(body.as_bytes().to_vec()),
    }
}

/// Counts rows with a plain query (to check the ledger's own counter).
pub fn count(ledger: &Ledger<RusqliteStore>, table: &str) -> i64 {
    ledger
        .store()
        .connection()
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .expect("count")
}

/// A store whose writes of the counters row fail while `failing` is set
/// (every other statement is the real SQLite's).
pub struct CountsFail {
    pub inner: idempotency_ledger::ledger::rusqlite_store::RusqliteStore,
    pub failing: std::cell::Cell<bool>,
}

impl idempotency_ledger::ledger::SqlStore for CountsFail {
    fn query(
        &self,
        sql: &str,
        params: &[idempotency_ledger::ledger::SqlValue],
    ) -> Result<Vec<idempotency_ledger::ledger::Row>, idempotency_ledger::ledger::StoreError> {
        if self.failing.get() && sql.contains("UPDATE ledger_state") {
            return Err(idempotency_ledger::ledger::StoreError::Sql(
                "injected: the counters row cannot be written".into(),
            ));
        }
        self.inner.query(sql, params)
    }

    fn update(
        &self,
        sql: &str,
        params: &[idempotency_ledger::ledger::SqlValue],
    ) -> Result<bool, idempotency_ledger::ledger::StoreError> {
        if self.failing.get() && sql.contains("UPDATE ledger_state") {
            return Err(idempotency_ledger::ledger::StoreError::Sql(
                "injected: the counters row cannot be written".into(),
            ));
        }
        self.inner.update(sql, params)
    }

    fn atomically<T, E: From<idempotency_ledger::ledger::StoreError>>(
        &self,
        body: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.inner.atomically(body)
    }
}

impl LedgerFile {
    /// The database opened (and migrated) anew over a store whose counters
    /// row can be made to fail ([`CountsFail`]).
    pub fn open_failing(&self) -> Ledger<CountsFail> {
        counts_fail_over(RusqliteStore::new(
            rusqlite::Connection::open(&self.0).expect("open sqlite file"),
        ))
    }
}

/// A migrated ledger, with the orders table, over `inner` behind a
/// [`CountsFail`] (not failing yet).
fn counts_fail_over(inner: RusqliteStore) -> Ledger<CountsFail> {
    let ledger = Ledger::new(CountsFail {
        inner,
        failing: std::cell::Cell::new(false),
    });
    ledger.migrate().expect("migrate");
    idempotency_ledger::orders::migrate(ledger.store()).expect("orders schema");
    ledger
}

/// [`counts_fail_over`] an in-memory database.
pub fn counts_fail_ledger() -> Ledger<CountsFail> {
    counts_fail_over(RusqliteStore::in_memory().expect("open sqlite"))
}
