//! The sweep and the alarm that drives it (docs/contract.md §4).
//!
//! Role: run one bounded sweep batch per alarm and set the next alarm —
//! within a second after a full batch, else at the next `expires_at`, or
//! none when the ledger is empty (the mini-redis expiry loop: purge, return
//! the next expiration, sleep until then). And make sure an alarm exists
//! while the ledger holds records.
//!
//! What must stay true here:
//! - Sweep runs only in `alarm()`, never on the request path.
//! - An `Err` from the sweep is returned to the platform, which retries
//!   the alarm; the sweep is idempotent (it deletes only what expired).
//! - A claim arms the alarm only when this instance has not yet confirmed
//!   one exists (one storage check per instance, which also re-arms after a
//!   restart that lost an overdue alarm).
//!
//! Learned from worker 0.8.7 `src/durable.rs`: `Storage::set_alarm(i64)`
//! treats the integer as an *offset* from now, not an epoch time, so every
//! absolute time goes through [`at_epoch_ms`].

use worker::{wasm_bindgen, Response, ScheduledTime};

use super::TenantLedger;
use crate::fields;
use crate::ledger::rfc3339;
use crate::platform::{log, now_ms};

/// How soon the alarm fires again after a full sweep batch.
const FULL_BATCH_REARM_MS: i64 = 500;

/// An absolute alarm time (epoch milliseconds on the object's clock).
fn at_epoch_ms(ms: i64) -> ScheduledTime {
    ScheduledTime::new(js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(
        ms as f64,
    )))
}

impl TenantLedger {
    /// One alarm: sweep a batch, then set (or clear) the next alarm.
    pub(super) async fn sweep(&self) -> worker::Result<Response> {
        let config = self
            .config
            .as_ref()
            .map_err(|e| worker::Error::RustError(e.to_string()))?;
        let now = now_ms();
        let outcome = self
            .ledger
            .sweep(now, config.sweep_batch)
            .map_err(|e| worker::Error::RustError(e.to_string()))?;
        let storage = self.state.storage();
        if outcome.batch_full {
            storage
                .set_alarm(at_epoch_ms(now + FULL_BATCH_REARM_MS))
                .await?;
        } else if let Some(next) = outcome.next_expires_at {
            storage.set_alarm(at_epoch_ms(next.max(now + 1))).await?;
        } else {
            storage.delete_alarm().await?;
            self.alarm_known.set(false);
        }
        log::info(
            "idempotency.sweep",
            fields! {"deleted" => outcome.deleted, "batch_full" => outcome.batch_full},
        );
        Response::ok("swept")
    }

    /// Makes sure an alarm is set while the ledger holds records. Checks the
    /// storage once per instance (this also re-arms after a restart, when an
    /// overdue alarm may have been lost), then trusts `alarm_known`.
    pub(super) async fn ensure_alarm(&self) {
        if self.alarm_known.get() {
            return;
        }
        let storage = self.state.storage();
        match storage.get_alarm().await {
            Ok(Some(_)) => self.alarm_known.set(true),
            Ok(None) => {
                if let Ok(Some(at)) = self.ledger.next_expires_at() {
                    match storage.set_alarm(at_epoch_ms(at.max(now_ms() + 1))).await {
                        Ok(()) => {
                            self.alarm_known.set(true);
                            log::info("idempotency.alarm_armed", fields! {"at" => rfc3339(at)});
                        }
                        Err(e) => log::error(
                            "idempotency.alarm_set_failed",
                            fields! {"error" => e.to_string()},
                        ),
                    }
                }
            }
            Err(e) => log::warn(
                "idempotency.alarm_check_failed",
                fields! {"error" => e.to_string()},
            ),
        }
    }
}
