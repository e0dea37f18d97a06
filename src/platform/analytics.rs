//! Optional metrics: one Workers Analytics Engine data point per decision,
//! when the script has an `ANALYTICS` binding (docs/operations.md
//! "Metrics").
//!
//! Role: find the binding once per isolate, and write the gateway's data
//! point for one protected request. Absent binding, nothing is written and
//! nothing else changes (the object does not even count its rows).
//!
//! What we learned reading worker 0.8.7 (`src/analytics_engine.rs`):
//! `Env::analytics_engine` casts whatever the binding is without a check
//! (Miniflare's dataset is a plain object), so a variable or secret named
//! `ANALYTICS` would be taken for a dataset and fail on its first write;
//! we check for a `writeDataPoint` function ourselves and refuse anything
//! else as a configuration error. A write that throws is logged, never
//! the request's failure.

use js_sys::{Function, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use worker::{AnalyticsEngineDataPointBuilder, AnalyticsEngineDataset, Env};

use crate::config::ConfigError;
use crate::fields;
use crate::platform::log;

/// The binding's name.
pub const ANALYTICS_BINDING: &str = "ANALYTICS";

/// The response header on an RPC answer with the rows the call wrote (only
/// while the object has the `ANALYTICS` binding).
pub const ROWS_WRITTEN_HEADER: &str = "ledger-rows-written";

/// Whether the script has a usable `ANALYTICS` binding; one that is not
/// an Analytics Engine dataset is a configuration error.
pub fn configured(env: &Env) -> Result<bool, ConfigError> {
    let value = Reflect::get(env.as_ref(), &JsValue::from_str(ANALYTICS_BINDING))
        .unwrap_or(JsValue::UNDEFINED);
    if value.is_undefined() {
        return Ok(false);
    }
    let writes = value.is_object()
        && Reflect::get(&value, &JsValue::from_str("writeDataPoint"))
            .ok()
            .is_some_and(|f| f.is_instance_of::<Function>());
    if writes {
        Ok(true)
    } else {
        Err(ConfigError {
            variable: ANALYTICS_BINDING.into(),
            message: "ANALYTICS must be a Workers Analytics Engine dataset binding \
                      ([[analytics_engine_datasets]]), not a variable or another binding"
                .into(),
        })
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
