//! Sweep cost per alarm batch, for a few batch sizes and backlog sizes.
//!
//! Runs the real ledger SQL on SQLite (rusqlite, a file database in a temp
//! directory) and prints a
//! table. Numbers, not assertions: compare them before and after a change.
//!
//! Run: `bash bench/run.sh` (or `cargo bench --features host-sqlite --bench sweep`).

use std::time::Instant;

use idempotency_ledger::ledger::rusqlite_store::RusqliteStore;
use idempotency_ledger::ledger::{ClaimPolicy, Ledger, SqlStore};
use idempotency_ledger::protocol::{Fingerprint, RequestParts};

/// Live records kept beside the backlog: the sweep must skip them cheaply.
const LIVE: usize = 10_000;

fn ledger_with(backlog: usize) -> (Ledger<RusqliteStore>, tempdir::Dir) {
    let dir = tempdir::Dir::new();
    let conn = rusqlite::Connection::open(dir.path.join("ledger.sqlite")).expect("open");
    let ledger = Ledger::new(RusqliteStore::new(conn));
    ledger.migrate().expect("migrate");
    let headers: Vec<(String, Option<String>)> = vec![];
    let fp = Fingerprint::of(&RequestParts {
        method: "POST",
        target: "/x",
        headers: &headers,
        body: b"{}",
    });
    let expired = ClaimPolicy {
        lease_ms: 1_000,
        retention_ms: 1_000,
        settle_grace_ms: 0,
        max_keys: u64::MAX,
        max_db_bytes: u64::MAX,
    };
    let live = ClaimPolicy {
        lease_ms: 1_000,
        retention_ms: 86_400_000,
        settle_grace_ms: 0,
        max_keys: u64::MAX,
        max_db_bytes: u64::MAX,
    };
    // One transaction for the whole fill keeps set-up fast; the sweep below
    // runs batch by batch as alarms would.
    ledger
        .store()
        .atomically(|| -> Result<(), idempotency_ledger::ledger::StoreError> {
            for i in 0..backlog {
                ledger.claim(&format!("expired-{i}"), &fp, &expired, i as i64)?;
            }
            for i in 0..LIVE {
                ledger.claim(&format!("live-{i}"), &fp, &live, 1_000_000)?;
            }
            Ok(())
        })
        .expect("fill");
    (ledger, dir)
}

fn main() {
    println!("sweep cost per alarm batch (rusqlite, file database, {LIVE} live records beside the backlog)");
    println!(
        "{:>7} {:>8} {:>7} {:>12} {:>12} {:>12}",
        "batch", "backlog", "alarms", "mean ms", "max ms", "us/record"
    );
    for &backlog in &[1_000usize, 10_000, 50_000] {
        for &batch in &[100usize, 500, 2_000] {
            let (ledger, _dir) = ledger_with(backlog);
            let now = 10_000_000;
            let mut times = Vec::new();
            let mut deleted = 0;
            loop {
                let start = Instant::now();
                let out = ledger.sweep(now, batch).expect("sweep");
                times.push(start.elapsed().as_secs_f64() * 1000.0);
                deleted += out.deleted;
                assert!(out.deleted <= batch);
                if !out.batch_full {
                    break;
                }
            }
            assert_eq!(deleted, backlog, "every expired record swept");
            assert_eq!(
                ledger.held_records().expect("count"),
                LIVE as i64,
                "no live record swept"
            );
            let mean = times.iter().sum::<f64>() / times.len() as f64;
            let max = times.iter().cloned().fold(0.0, f64::max);
            let per_record = times.iter().sum::<f64>() * 1000.0 / backlog as f64;
            println!(
                "{batch:>7} {backlog:>8} {:>7} {mean:>12.3} {max:>12.3} {per_record:>12.2}",
                times.len()
            );
        }
    }
}

/// A throwaway directory removed on drop (no extra crate for one bench).
mod tempdir {
    pub struct Dir {
        pub path: std::path::PathBuf,
    }
    impl Dir {
        pub fn new() -> Dir {
            static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path =
                std::env::temp_dir().join(format!("ledger-bench-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&path).expect("temp dir");
            Dir { path }
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
