//! The in-place upgrade from schema 1 on a large database: how long all its
//! bounded steps take together (each moves at most 2,000 records or 8 MiB
//! into the `WITHOUT ROWID` table and deletes them from the old one) and
//! how large the file ends, for docs/operations.md.
//!
//! Runs the real migration SQL on SQLite (rusqlite, a file database under
//! the temp directory, written from tests/fixtures/ledger-v1.sqlite's
//! schema). Numbers, not assertions.
//!
//! Run: `UPGRADE_MIB=1024 cargo bench --features host-sqlite --bench upgrade`
//! (default 256 MiB; records of `UPGRADE_BODY` bytes, default 2048).

use std::time::Instant;

use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::Ledger;

fn main() {
    let mib: u64 = std::env::var("UPGRADE_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let body_len: usize = std::env::var("UPGRADE_BODY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2048);
    let dir = std::env::temp_dir().join(format!("ledger-upgrade-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("ledger.sqlite");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/ledger-v1.sqlite"
        ),
        &path,
    )
    .expect("the v1 fixture");
    let rows = (mib * 1_048_576) / (body_len as u64 + 300);
    {
        let mut conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
            .expect("pragmas");
        let tx = conn.transaction().expect("transaction");
        {
            let mut insert = tx
                .prepare(
                    "INSERT OR REPLACE INTO idempotency_records (key, state, generation, fingerprint, components,
                        created_at, claimed_at, completed_at, expires_at, response_status, response_headers,
                        response_body, retained, replays)
                     VALUES (?1, 'completed', 1, ?2, '[]', ?3, ?3, ?3, ?4, 201, '[]', ?5, 1, 0)",
                )
                .expect("prepare");
            let body = vec![b'x'; body_len];
            let digest = "a".repeat(64);
            for i in 0..rows {
                let t = 1_800_000_000_000i64 + i as i64;
                insert
                    .execute(rusqlite::params![
                        format!("key-{i:012}"),
                        digest,
                        t,
                        t + 86_400_000,
                        body
                    ])
                    .expect("insert");
            }
        }
        tx.commit().expect("commit");
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .expect("checkpoint");
    }
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let ledger = Ledger::new(RusqliteStore::new(
        rusqlite::Connection::open(&path).expect("open"),
    ));
    let started = Instant::now();
    let cpu = cpu_seconds();
    let found = ledger.migrate().expect("the upgrade");
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    let after = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "schema 1 upgrade ({found:?}): {rows} records of {body_len} B, database {:.0} MiB: {wall:.2} s wall, {cpu:.2} s CPU ({:.0} MiB/s of database per CPU second); file after: {:.0} MiB",
        size as f64 / 1_048_576.0,
        size as f64 / 1_048_576.0 / cpu.max(1e-9),
        after as f64 / 1_048_576.0
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// This process's user + system CPU time, in seconds (Linux /proc).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of stat (11 and 12 after the name).
    (ticks(11) + ticks(12)) / 100.0
}
