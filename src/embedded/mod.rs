//! The ledger inside *your own* TypeScript Durable Object: the same
//! [`Ledger`] core as `TenantLedger` and Rust library mode, exported to
//! JavaScript (`idempotency-ledger/ledger`, client/ledger/ledger.js, wraps it).
//!
//! Role: give a JS object exactly-once over its own SQLite tables. One
//! `execute` claims the key, calls the caller's synchronous function (its
//! own `ctx.storage.sql` writes) and stores the answer, all in one
//! `storage.transactionSync` (the [`DoSqlStore`]'s `atomically`): a function
//! that throws rolls back its writes and the claim together, and the error
//! reaches the caller unchanged.
//!
//! What we learned making it (workers-rs 0.8.7, worker-build 0.8.7):
//! - worker-build's generated shim re-exports every `#[wasm_bindgen]`
//!   class of the crate (wrapped in its re-initialising Proxy, whose method
//!   wrappers stay synchronous for synchronous methods), but no free
//!   functions: so this is a class.
//! - The JS object's `ctx.storage` becomes the same [`DoSqlStore`]
//!   `TenantLedger` uses ([`DoSqlStore::from_storage`]: `js_sys` only, so
//!   this builds without workers-rs: the slim wasm of
//!   `idempotency-ledger/ledger`, `--no-default-features --features
//!   js-ledger`, scripts/build.sh).
//! - Without workers-rs nothing installs its panic hook (worker 0.8.7's
//!   start function), so this file installs the same one ([`start`]).
//! - A JS function called from Rust through `js_sys::Function::call0`
//!   returns `Err(thrown)` when it throws (wasm-bindgen catches it), so a
//!   throw inside the caller's write is an ordinary `Err` here.
//!
//! What must stay true here: the caller's function runs only when the key
//! is new (or its earlier owner's lease is over), inside the transaction
//! that records its answer; every other outcome is answered without
//! calling it. Inputs are validated as RPC v1 validates them (key,
//! fingerprint, windows) before anything is written.

use std::rc::Rc;

use js_sys::{Array, Function};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::config::SWEEP_BATCH;
use crate::ledger::pending::FLUSH_AFTER_MS;
use crate::ledger::sweep::alarm_for;
use crate::ledger::DoSqlStore;
use crate::ledger::{earliest, ClaimPolicy, ExecuteOutcome, Ledger};
use crate::platform::env::now_ms;
use crate::protocol::target::target_of;
use crate::protocol::{CapturePolicy, Fingerprint, RequestParts};
use crate::rpc::call::{check_fingerprint, check_key};

mod app;
mod errors;
mod options;

use app::{run_app, Failed};
use errors::{refuse, store_failed};
use options::policies;

/// Without workers-rs (the slim build), workers-rs's own start function is
/// not linked: install what it installs, a panic hook writing the panic
/// as a `Critical` console error (the module's JS shim then re-initialises
/// the instance on the trap that follows: scripts/ledger-shim.mjs).
#[cfg(not(feature = "workers-rs"))]
#[wasm_bindgen(start)]
fn start() {
    std::panic::set_hook(Box::new(|info| {
        let error = js_sys::Error::new(&format!("Rust panic: {info}"));
        console_error(&JsValue::from_str("Critical"), &error);
    }));
}

#[cfg(not(feature = "workers-rs"))]
#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error(label: &JsValue, error: &JsValue);
}

/// The key and fingerprint of one call, as RPC v1 `execute` carries them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Keyed {
    key: String,
    fingerprint: Fingerprint,
}

/// A `ran` as `execute` answers it: RPC v1's, without the response (the
/// caller has it). Fields in the order `json!` wrote them (sorted), so the
/// text is what it always was; a struct, so no `serde_json::Value` (and its
/// map) is in the slim wasm.
#[derive(Serialize)]
struct Ran {
    generation: i64,
    outcome: &'static str,
    retained: bool,
    takeover: bool,
}

/// What `sweep` answers (fields sorted, as [`Ran`]'s).
#[derive(Serialize)]
struct Swept {
    batch_full: bool,
    deleted: usize,
    next_alarm_at: Option<i64>,
    next_expires_at: Option<i64>,
}

/// One Durable Object's ledger, over that object's own SQLite database.
///
/// The [`Ledger`] (the store and its counts) is one per object instance:
/// client/ledger/ledger.js keeps the first `EmbeddedLedger` made over a `ctx` and
/// derives every later one from it ([`EmbeddedLedger::with_options`]), so
/// a `new Ledger(ctx)` per request migrates, recounts and counts once.
#[wasm_bindgen]
pub struct EmbeddedLedger {
    ledger: Rc<Ledger<DoSqlStore>>,
    policy: ClaimPolicy,
    capture: CapturePolicy,
    sweep_interval_ms: i64,
}

#[wasm_bindgen]
impl EmbeddedLedger {
    /// `new EmbeddedLedger(ctx, optionsJson)`: migrates the ledger's tables
    /// in the object's database (idempotent), recounts the records per
    /// state if the object is small (as `TenantLedger` does on start, so a
    /// count an earlier instance lost is healed), and checks the options.
    #[wasm_bindgen(constructor)]
    pub fn new(ctx: JsValue, options: &str) -> Result<EmbeddedLedger, JsValue> {
        let storage = js_sys::Reflect::get(&ctx, &JsValue::from_str("storage"))
            .ok()
            .filter(|s| s.is_object())
            .ok_or_else(|| refuse("new Ledger(ctx): ctx must be the Durable Object's state"))?;
        if !js_sys::Reflect::get(&storage, &JsValue::from_str("sql"))
            .map(|s| s.is_object())
            .unwrap_or(false)
        {
            return Err(refuse(
                "ctx.storage.sql is missing: the object's class must use the SQLite backend (new_sqlite_classes)",
            ));
        }
        let (policy, capture, sweep_interval_ms) = policies(options)?;
        let ledger = Ledger::new(DoSqlStore::from_storage(storage)).count_in_transaction();
        ledger.migrate().map_err(store_failed)?;
        ledger.recount_on_start(now_ms()).map_err(store_failed)?;
        Ok(EmbeddedLedger {
            ledger: Rc::new(ledger),
            policy,
            capture,
            sweep_interval_ms,
        })
    }

    /// `withOptions(optionsJson)`: the same object's ledger (its store and
    /// counts) under other options: what a second `new Ledger(ctx, …)` of
    /// the same object gets.
    #[wasm_bindgen(js_name = withOptions)]
    pub fn with_options(&self, options: &str) -> Result<EmbeddedLedger, JsValue> {
        let (policy, capture, sweep_interval_ms) = policies(options)?;
        Ok(EmbeddedLedger {
            ledger: Rc::clone(&self.ledger),
            policy,
            capture,
            sweep_interval_ms,
        })
    }

    /// `execute(callJson, run)`: `callJson` is `{key, fingerprint}` (RPC v1's
    /// shapes); `run()` is called at most once, inside the transaction, and
    /// returns `[status, [name, value, …], body: Uint8Array]`. Answers the
    /// outcome as RPC v1 `execute` JSON, without the response of a `ran`
    /// (the caller has it). Whatever `run` throws is rethrown, nothing
    /// written.
    pub fn execute(&self, call: &str, run: &Function) -> Result<String, JsValue> {
        let call: Keyed = serde_json::from_slice(call.as_bytes()).map_err(refuse)?;
        check_key(&call.key).map_err(refuse)?;
        check_fingerprint(&call.fingerprint).map_err(refuse)?;
        self.run_execute(&call.key, &call.fingerprint, run)
    }

    /// `executeRequest(key, method, url, headers, body, run)`: as
    /// `execute`, with the fingerprint computed here from the request's
    /// parts, exactly as the gateway computes it (src/protocol/fingerprint.rs,
    /// the target cut verbatim out of the request's URL by `target_of`):
    /// `headers` is `[name, value | null, …]` for each fingerprinted header,
    /// in order. One crossing into the core, no hashing in JavaScript.
    #[wasm_bindgen(js_name = executeRequest)]
    pub fn execute_request(
        &self,
        key: &str,
        method: &str,
        url: &str,
        headers: Array,
        body: &[u8],
        run: &Function,
    ) -> Result<String, JsValue> {
        check_key(key).map_err(refuse)?;
        let mut pairs = Vec::with_capacity(headers.length() as usize / 2);
        for i in (0..headers.length()).step_by(2) {
            let Some(name) = headers.get(i).as_string() else {
                return Err(refuse("executeRequest: header names must be strings"));
            };
            pairs.push((name.to_ascii_lowercase(), headers.get(i + 1).as_string()));
        }
        let fingerprint = Fingerprint::of(&RequestParts {
            method,
            target: target_of(url),
            headers: &pairs,
            body,
        });
        self.run_execute(key, &fingerprint, run)
    }

    fn run_execute(&self, key: &str, fp: &Fingerprint, run: &Function) -> Result<String, JsValue> {
        let now = now_ms();
        let outcome = self
            .ledger
            .execute(key, fp, &self.policy, &self.capture, now, |_| run_app(run));
        match outcome {
            Ok(ExecuteOutcome::Ran {
                generation,
                takeover,
                retained,
                ..
            }) => serde_json::to_string(&Ran {
                generation,
                outcome: "ran",
                retained,
                takeover,
            })
            .map_err(refuse),
            Ok(refused) => serde_json::to_string(&refused).map_err(refuse),
            Err(Failed::Thrown(thrown)) => Err(thrown),
            Err(Failed::Store(e)) => Err(store_failed(e)),
        }
    }

    /// `lookup(key)`: the record as RPC v1 `lookup` answers it (JSON), or `null`.
    pub fn lookup(&self, key: &str) -> Result<String, JsValue> {
        check_key(key).map_err(refuse)?;
        let record = self.ledger.lookup(key, now_ms()).map_err(store_failed)?;
        serde_json::to_string(&record).map_err(refuse)
    }

    /// `sweep(batch)`: deletes at most `batch` expired records (JSON
    /// `{deleted, batch_full, next_expires_at, next_alarm_at}`);
    /// `next_alarm_at` is where the object's alarm goes next (the rule of
    /// `TenantLedger`'s alarm, on this ledger's sweep grid), or null.
    pub fn sweep(&self, batch: u32) -> Result<String, JsValue> {
        if !SWEEP_BATCH.contains(&u64::from(batch)) {
            return Err(refuse(format!(
                "sweep(batch): batch must be {}..{}",
                SWEEP_BATCH.start(),
                SWEEP_BATCH.end()
            )));
        }
        let now = now_ms();
        let swept = self
            .ledger
            .sweep(now, batch as usize)
            .map_err(store_failed)?;
        let next_alarm_at = swept.next_alarm_at(now, self.sweep_interval_ms);
        serde_json::to_string(&Swept {
            batch_full: swept.batch_full,
            deleted: swept.deleted,
            next_alarm_at,
            next_expires_at: swept.next_expires_at,
        })
        .map_err(refuse)
    }

    /// `nextSweepAt()`: when the next record may expire (epoch ms), or
    /// `null` (JSON).
    #[wasm_bindgen(js_name = nextSweepAt)]
    pub fn next_sweep_at(&self) -> Result<String, JsValue> {
        let next = self.ledger.next_sweep_at(now_ms()).map_err(store_failed)?;
        serde_json::to_string(&next).map_err(refuse)
    }

    /// `alarmAt()`: where the object's alarm must be at the latest so the
    /// next expiry is swept (on the sweep grid, never in the past), or
    /// `null` (JSON) when no record is held.
    #[wasm_bindgen(js_name = alarmAt)]
    pub fn alarm_at(&self) -> Result<String, JsValue> {
        let now = now_ms();
        let next = self.ledger.next_sweep_at(now).map_err(store_failed)?;
        let recount = self.ledger.next_recount_at(now).map_err(store_failed)?;
        serde_json::to_string(
            &earliest(next, recount).map(|at| alarm_for(at, now, self.sweep_interval_ms)),
        )
        .map_err(refuse)
    }

    /// `sweepIntervalMs`: the sweep grid, in milliseconds.
    #[wasm_bindgen(getter, js_name = sweepIntervalMs)]
    pub fn sweep_interval_ms(&self) -> f64 {
        self.sweep_interval_ms as f64
    }

    /// `hasPending()`: are there counts (of outcomes that wrote nothing:
    /// replays, 409s, 422s) kept in memory, not yet written?
    #[wasm_bindgen(js_name = hasPending)]
    pub fn has_pending(&self) -> bool {
        self.ledger.has_pending()
    }

    /// `flush()`: writes the counts kept in memory (call it outside any
    /// transaction; client/ledger/ledger.js does, on a timer).
    pub fn flush(&self) -> Result<(), JsValue> {
        self.ledger.flush_pending().map_err(store_failed)
    }

    /// `flushAfterMs`: how long counts may wait in memory before a flush
    /// (the object's own flush timer, `TenantLedger`'s too).
    #[wasm_bindgen(getter, js_name = flushAfterMs)]
    pub fn flush_after_ms(&self) -> f64 {
        FLUSH_AFTER_MS as f64
    }

    /// `stats()`: RPC v1 `stats` (JSON), read-only.
    pub fn stats(&self) -> Result<String, JsValue> {
        let stats = self.ledger.stats(now_ms()).map_err(store_failed)?;
        serde_json::to_string(&stats).map_err(refuse)
    }
}
