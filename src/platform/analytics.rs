//! Optional metrics: one Workers Analytics Engine data point per decision,
//! when the script has an `ANALYTICS` binding (docs/operations.md
//! "Metrics").
//!
//! Role: find the binding once per isolate, and write the gateway's data
//! point for one protected request. Absent binding, nothing is written and
//! nothing else changes (the object does not even count its rows).
//!
//! What must stay true here: metrics only observe — they never cost an
//! answer. A binding that is not a dataset is one loud `error` line per
//! isolate (`idempotency.analytics_unusable`) and the script serves
//! without metrics; a write that throws is logged, never the request's
//! failure.
//!
//! What we learned reading worker 0.8.7 (`src/analytics_engine.rs`):
//! `Env::analytics_engine` casts whatever the binding is without a check
//! (Miniflare's dataset is a plain object), so a variable or secret named
//! `ANALYTICS` would be taken for a dataset and fail on its first write;
//! we check for a `writeDataPoint` function ourselves.

use std::cell::Cell;

use js_sys::{Function, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use worker::{AnalyticsEngineDataPointBuilder, AnalyticsEngineDataset, Env};

use crate::fields;
use crate::platform::log;

/// The binding's name.
pub const ANALYTICS_BINDING: &str = "ANALYTICS";

/// The response header on an RPC answer with the rows the call wrote (only
/// while the object has the `ANALYTICS` binding).
pub const ROWS_WRITTEN_HEADER: &str = "ledger-rows-written";

/// What the script has under [`ANALYTICS_BINDING`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// Nothing: no metrics (the default).
    Absent,
    /// An Analytics Engine dataset: one data point per protected request.
    Dataset,
    /// Something else (a variable, a secret, another binding): no metrics,
    /// and the operator is told.
    NotADataset,
}

/// What is wrong with a binding that is not a dataset (the log line's
/// `error`, and `npm run check:config`'s detail).
pub const NOT_A_DATASET: &str = "ANALYTICS must be a Workers Analytics Engine dataset binding \
     ([[analytics_engine_datasets]]), not a variable or another binding; \
     serving without metrics";

/// What `env` has under [`ANALYTICS_BINDING`].
pub fn binding(env: &Env) -> Binding {
    let value = Reflect::get(env.as_ref(), &JsValue::from_str(ANALYTICS_BINDING))
        .unwrap_or(JsValue::UNDEFINED);
    if value.is_undefined() {
        return Binding::Absent;
    }
    let writes = value.is_object()
        && Reflect::get(&value, &JsValue::from_str("writeDataPoint"))
            .ok()
            .is_some_and(|f| f.is_instance_of::<Function>());
    if writes {
        Binding::Dataset
    } else {
        Binding::NotADataset
    }
}

thread_local! {
    /// This isolate has already said its binding is unusable.
    static REPORTED: Cell<bool> = const { Cell::new(false) };
}

/// Whether the script has a usable `ANALYTICS` dataset. One that is not a
/// dataset is reported once per isolate (the gateway and its objects
/// share the line) and counts as none: metrics never cost an answer.
pub fn configured(env: &Env) -> bool {
    match binding(env) {
        Binding::Dataset => true,
        Binding::Absent => false,
        Binding::NotADataset => {
            if !REPORTED.with(|r| r.replace(true)) {
                log::error(
                    "idempotency.analytics_unusable",
                    fields! {"variable" => ANALYTICS_BINDING, "error" => NOT_A_DATASET},
                );
            }
            false
        }
    }
}

/// What one protected request's data point holds.
pub struct DataPoint<'a> {
    /// The tenant, hashed as in the log lines (the index: sampling by tenant).
    pub tenant_hash: &'a str,
    /// The request's outcome, as the log line's `outcome`.
    pub outcome: &'a str,
    pub method: &'a str,
    pub status: u16,
    pub duration_ms: i64,
    /// Rows the tenant's objects wrote for this request, as they reported.
    pub rows_written: u64,
}

/// Writes `point` (blob1 outcome, blob2 method, blob3 tenant hash; double1
/// status, double2 duration ms, double3 rows written; index the tenant
/// hash). A failed write is logged once per failure, never raised.
pub fn write(env: &Env, point: &DataPoint) {
    let Ok(dataset) = env.analytics_engine(ANALYTICS_BINDING) else {
        return;
    };
    let data = AnalyticsEngineDataPointBuilder::new()
        .indexes([point.tenant_hash])
        .add_blob(point.outcome)
        .add_blob(point.method)
        .add_blob(point.tenant_hash)
        .add_double(point.status)
        .add_double(point.duration_ms as f64)
        .add_double(point.rows_written as f64)
        .build();
    if let Err(e) = write_to(&dataset, data) {
        log::warn(
            "idempotency.analytics_failed",
            fields! {"error" => e.to_string()},
        );
    }
}

fn write_to(
    dataset: &AnalyticsEngineDataset,
    data: worker::AnalyticsEngineDataPoint,
) -> worker::Result<()> {
    dataset.write_data_point(&data)
}
