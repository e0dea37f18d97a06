//! The sweep, the alarm that drives it, and the timer that writes the
//! pending counts (docs/contract.md §4).
//!
//! Role: run one bounded sweep batch per alarm and set the next alarm
//! (the mini-redis expiry loop: purge, return the next expiration, sleep
//! until then), keep an alarm whenever the ledger holds records, and flush
//! counts an idle object would otherwise keep in memory.
//!
//! What must stay true here:
//! - Sweep runs only in `alarm()`, never on the request path.
//! - The alarm is never late beyond the coalescing interval: it is set on
//!   the `SWEEP_INTERVAL_SECONDS` grid at or after the earliest moment a
//!   record may expire (`next_sweep_at`, itself never after the earliest
//!   expiry), and moved earlier when a write may expire sooner — one sweep
//!   per interval unless a batch is full (then again within a second).
//! - An `Err` from the sweep is returned to the platform, which retries
//!   the alarm; the instance then forgets what it knew of the alarm, so its
//!   next write checks (and re-arms) it even if the platform gave up.
//! - The alarm is read once per instance (`getAlarm`) and then known: a
//!   write sets it only when it must move earlier.
//!
//! Learned from worker 0.8.7 `src/durable.rs`: `Storage::set_alarm(i64)`
//! treats the integer as an *offset* from now, not an epoch time, so every
//! absolute time goes through [`at_epoch_ms`].

use std::rc::Rc;
use std::time::Duration;

use std::cell::Cell;

use worker::{wasm_bindgen, Delay, Response, ScheduledTime, State, Storage};

use crate::config::{Config, ConfigError};
use crate::fields;
use crate::ledger::pending::FLUSH_AFTER_MS;
use crate::ledger::sweep::alarm_for;
use crate::ledger::DoSqlStore;
use crate::ledger::{rfc3339, Ledger, Millis};
use crate::platform::{log, now_ms};

/// What this instance believes of its alarm, as it last read or set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlarmBelief {
    /// Not read yet, or forgotten: after a failed sweep or alarm set, and
    /// while a set is awaiting the platform (the next write reads it).
    Unknown,
    /// Known: no alarm is set.
    Unset,
    /// Known: the alarm is set for this epoch millisecond.
    At(Millis),
}

impl AlarmBelief {
    /// The belief once the alarm is known to be `alarm` (none: unset).
    fn known(alarm: Option<Millis>) -> AlarmBelief {
        alarm.map_or(AlarmBelief::Unset, AlarmBelief::At)
    }
}

/// An absolute alarm time (epoch milliseconds on the object's clock).
fn at_epoch_ms(ms: i64) -> ScheduledTime {
    ScheduledTime::new(js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(
        ms as f64,
    )))
}

/// The object's alarm and its flush timer: what this instance believes of
/// the alarm, and the ledger it sweeps (shared with the object and the
/// flush timer).
pub struct Alarm {
    ledger: Rc<Ledger<DoSqlStore>>,
    storage: Storage,
    /// The alarm as this instance last read or set it (see [`AlarmBelief`]).
    belief: Cell<AlarmBelief>,
    /// A flush of the pending counts is scheduled on a timer.
    flush_armed: Rc<Cell<bool>>,
    /// `SWEEP_INTERVAL_SECONDS` in milliseconds: the alarm's grid.
    interval_ms: Millis,
}

impl Alarm {
    pub fn new(
        ledger: Rc<Ledger<DoSqlStore>>,
        state: &State,
        config: &Result<Config, ConfigError>,
    ) -> Alarm {
        Alarm {
            ledger,
            storage: state.storage(),
            belief: Cell::new(AlarmBelief::Unknown),
            flush_armed: Rc::new(Cell::new(false)),
            interval_ms: config.as_ref().map_or(60_000, |c| {
                (c.sweep_interval_seconds as i64).saturating_mul(1000)
            }),
        }
    }

    /// One alarm: sweep a batch, then set (or clear) the next alarm.
    pub async fn sweep(&self, config: &Result<Config, ConfigError>) -> worker::Result<Response> {
        let config = config
            .as_ref()
            .map_err(|e| worker::Error::RustError(e.to_string()))?;
        let now = now_ms();
        let outcome = match self.ledger.sweep(now, config.sweep_batch) {
            Ok(outcome) => outcome,
            Err(e) => {
                // The platform retries this alarm; if it gives up, the next
                // write finds no alarm and sets one.
                self.belief.set(AlarmBelief::Unknown);
                log::error(
                    "idempotency.sweep_failed",
                    fields! {"error" => e.to_string()},
                );
                return Err(worker::Error::RustError(e.to_string()));
            }
        };
        let storage = &self.storage;
        let next = outcome.next_alarm_at(now, self.interval_ms);
        // Until the platform confirms the next alarm, this instance knows
        // nothing of it: a failed set must leave no belief that an alarm is
        // armed (the next write reads the alarm again and arms it).
        self.belief.set(AlarmBelief::Unknown);
        let set = match next {
            Some(at) => storage.set_alarm(at_epoch_ms(at)).await,
            None => storage.delete_alarm().await,
        };
        if let Err(e) = set {
            log::error(
                "idempotency.alarm_set_failed",
                fields! {"error" => e.to_string()},
            );
            return Err(e);
        }
        self.belief.set(AlarmBelief::known(next));
        log::info(
            "idempotency.sweep",
            fields! {"deleted" => outcome.deleted, "batch_full" => outcome.batch_full},
        );
        Response::ok("swept")
    }

    /// Makes sure the alarm fires by the first grid point at or after
    /// `at` (a record written now may expire then): reads the alarm once per
    /// instance, then sets it only when it must move earlier.
    pub async fn arm_by(&self, at: Millis) {
        let now = now_ms();
        // The hourly recount is due on the same alarm (one per object).
        let at = match self.ledger.next_recount_at(now) {
            Ok(Some(recount)) => at.min(recount),
            _ => at,
        };
        let storage = &self.storage;
        let known = match self.belief.get() {
            AlarmBelief::At(current) => Some(current),
            AlarmBelief::Unset => None,
            AlarmBelief::Unknown => match storage.get_alarm().await {
                Ok(current) => current,
                Err(e) => {
                    log::warn(
                        "idempotency.alarm_check_failed",
                        fields! {"error" => e.to_string()},
                    );
                    return;
                }
            },
        };
        let target = alarm_for(at, now_ms(), self.interval_ms);
        if known.is_some_and(|current| current <= target) {
            self.belief.set(AlarmBelief::known(known));
            return;
        }
        match storage.set_alarm(at_epoch_ms(target)).await {
            Ok(()) => {
                self.belief.set(AlarmBelief::At(target));
                log::info("idempotency.alarm_armed", fields! {"at" => rfc3339(target)});
            }
            Err(e) => {
                self.belief.set(AlarmBelief::Unknown);
                log::error(
                    "idempotency.alarm_set_failed",
                    fields! {"error" => e.to_string()},
                );
            }
        }
    }

    /// On an instance's first request: an alarm must exist while records
    /// do (a restarted workerd may have lost an overdue one, workerd #3138,
    /// #3566), at the latest by the next moment a record may expire.
    pub async fn check(&self) {
        match self.ledger.next_sweep_at(now_ms()) {
            Ok(Some(at)) => self.arm_by(at).await,
            Ok(None) => {}
            Err(e) => log::warn(
                "idempotency.alarm_check_failed",
                fields! {"error" => e.to_string()},
            ),
        }
    }

    /// Forgets what this instance knew of the alarm: the next write reads
    /// it again (and arms it if it must).
    pub fn forget(&self) {
        self.belief.set(AlarmBelief::Unknown);
    }

    /// An alarm 100 ms from now (what carries a schema upgrade on with no
    /// traffic); a failure is logged.
    pub async fn soon(&self) {
        self.belief.set(AlarmBelief::Unknown);
        let at = now_ms().saturating_add(100);
        if let Err(e) = self.storage.set_alarm(at_epoch_ms(at)).await {
            log::error(
                "idempotency.alarm_set_failed",
                fields! {"error" => e.to_string()},
            );
        }
    }

    /// Writes the pending counts [`FLUSH_AFTER_MS`] from now unless a flush
    /// is already scheduled, so an object that goes idle writes them too.
    pub fn flush_later(&self) {
        if self.flush_armed.get() || !self.ledger.has_pending() {
            return;
        }
        self.flush_armed.set(true);
        let (ledger, armed) = (Rc::clone(&self.ledger), Rc::clone(&self.flush_armed));
        worker::wasm_bindgen_futures::spawn_local(async move {
            Delay::from(Duration::from_millis(FLUSH_AFTER_MS as u64)).await;
            armed.set(false);
            if let Err(e) = ledger.flush_pending() {
                log::warn(
                    "idempotency.flush_failed",
                    fields! {"error" => e.to_string()},
                );
            }
        });
    }
}
