//! The ledger state machine: claim, complete, release, lookup, stats, sweep.
//!
//! Role: the product's heart. Runs on any [`SqlStore`] (Durable Object SQLite
//! in workerd, rusqlite on the host) and knows nothing of HTTP or workers-rs.
//!
//! What must stay true here:
//! - Each transition runs inside one `atomically` call, and the statement
//!   that changes state carries its guard in its `WHERE` clause
//!   (`generation = ?`, `state = 'in_flight'`, `lease_expires_at <= ?`), so a
//!   reader sees the fence in the SQL itself.
//! - A record's generation only grows while the record exists: takeover,
//!   reclaim after release and rebirth after expiry all take generation+1, so
//!   an owner from an earlier generation can never complete a later claim.
//! - `complete` and `release` succeed only while the record is in flight at
//!   the caller's generation. A completed record's response is never replaced.
//! - A record is deleted only by the sweep, and only once `expires_at <= now`.
//! - Time is always the caller-supplied `now` of the *object's* clock.

pub mod schema;
pub mod store;

#[cfg(feature = "host-sqlite")]
pub mod rusqlite_store;

use serde::{Deserialize, Serialize};

use crate::protocol::{AppResponse, CapturePolicy, Component, Fingerprint, StoredResponse};
pub use store::{Row, RowExt, SqlStore, SqlValue, StoreError};

/// Epoch milliseconds on the object's clock.
pub type Millis = i64;

/// The limits a claim is made under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimPolicy {
    /// How long an owner may run before a retry may take over.
    pub lease_ms: Millis,
    /// How long a record is kept after its last claim or its completion.
    pub retention_ms: Millis,
    /// Records a tenant may hold; a new key beyond this is refused.
    pub max_keys: u64,
}

/// The closed set of answers to a claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ClaimOutcome {
    /// The caller owns the key at `generation` and must run, then complete or release.
    Claimed { generation: i64, takeover: bool },
    /// Another owner holds a live lease.
    InFlight {
        generation: i64,
        retry_after_ms: i64,
    },
    /// Already done: replay this.
    Completed {
        generation: i64,
        response: StoredResponse,
    },
    /// Same key, different request.
    Mismatch { differs: Vec<String> },
    /// The tenant holds its maximum number of records; try after the next expiry.
    LedgerFull { retry_after_ms: i64 },
}

/// The answer to `complete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CompleteOutcome {
    Stored,
    FencedOut { current: Option<RecordState> },
}

/// The answer to `release`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReleaseOutcome {
    Released,
    FencedOut { current: Option<RecordState> },
}

/// Where a refused completion or release found the record (for logs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordState {
    pub state: String,
    pub generation: i64,
}

/// The single-hop answer of `execute`: the application ran (and its response
/// was recorded in the same transaction), or the claim refused it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ExecuteOutcome {
    Ran {
        generation: i64,
        takeover: bool,
        retained: bool,
        response: AppResponse,
    },
    InFlight {
        generation: i64,
        retry_after_ms: i64,
    },
    Completed {
        generation: i64,
        response: StoredResponse,
    },
    Mismatch {
        differs: Vec<String>,
    },
    LedgerFull {
        retry_after_ms: i64,
    },
}

impl ExecuteOutcome {
    /// The claim outcome that kept the application from running, if any.
    pub fn refusal(&self) -> Option<ClaimOutcome> {
        match self {
            ExecuteOutcome::Ran { .. } => None,
            ExecuteOutcome::InFlight {
                generation,
                retry_after_ms,
            } => Some(ClaimOutcome::InFlight {
                generation: *generation,
                retry_after_ms: *retry_after_ms,
            }),
            ExecuteOutcome::Completed {
                generation,
                response,
            } => Some(ClaimOutcome::Completed {
                generation: *generation,
                response: response.clone(),
            }),
            ExecuteOutcome::Mismatch { differs } => Some(ClaimOutcome::Mismatch {
                differs: differs.clone(),
            }),
            ExecuteOutcome::LedgerFull { retry_after_ms } => Some(ClaimOutcome::LedgerFull {
                retry_after_ms: *retry_after_ms,
            }),
        }
    }
}

/// A record as introspection shows it (SPEC §2.7). Times are RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordView {
    pub key: String,
    pub state: String,
    pub generation: i64,
    pub created_at: String,
    pub expires_at: String,
    pub lease_expires_at: Option<String>,
    pub response_status: Option<u16>,
    pub retained: Option<bool>,
    pub replays: i64,
}

/// Counts kept by the object (SPEC §2.7).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    pub records: i64,
    pub in_flight: i64,
    pub completed: i64,
    pub released: i64,
    pub claims: i64,
    pub replays: i64,
    pub in_use: i64,
    pub reused: i64,
    pub takeovers: i64,
    pub fenced_out: i64,
    pub swept: i64,
    pub next_sweep_at: Option<String>,
}

/// What one sweep batch did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepOutcome {
    pub deleted: usize,
    /// The batch was full: more expired records may remain.
    pub batch_full: bool,
    /// The earliest `expires_at` still held, if any.
    pub next_expires_at: Option<Millis>,
}

/// Renders epoch milliseconds as RFC 3339 with milliseconds, UTC.
pub fn rfc3339(ms: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_else(|| ms.to_string())
}

/// The ledger over one tenant's SQLite database.
pub struct Ledger<S> {
    store: S,
}

const SELECT_RECORD: &str = "SELECT state, generation, fingerprint, components, lease_expires_at,
        expires_at, response_status, response_headers, response_body, retained, created_at, replays
     FROM idempotency_records WHERE key = ?";

/// A record as read by [`SELECT_RECORD`].
struct Record {
    state: String,
    generation: i64,
    fingerprint: String,
    components: String,
    lease_expires_at: Option<Millis>,
    expires_at: Millis,
    response_status: Option<i64>,
    response_headers: Option<String>,
    response_body: Option<Vec<u8>>,
    retained: Option<i64>,
    created_at: Millis,
    replays: i64,
}

impl Record {
    fn from_row(row: &Row) -> Result<Record, StoreError> {
        Ok(Record {
            state: row.text(0)?,
            generation: row.int(1)?,
            fingerprint: row.text(2)?,
            components: row.text(3)?,
            lease_expires_at: row.opt_int(4)?,
            expires_at: row.int(5)?,
            response_status: row.opt_int(6)?,
            response_headers: row.opt_text(7)?,
            response_body: row.opt_blob(8)?,
            retained: row.opt_int(9)?,
            created_at: row.int(10)?,
            replays: row.int(11)?,
        })
    }

    fn stored_response(&self) -> Result<StoredResponse, StoreError> {
        let status = self
            .response_status
            .and_then(|s| u16::try_from(s).ok())
            .ok_or_else(|| StoreError::Decode("completed record without a status".into()))?;
        let headers: Vec<(String, String)> = match &self.response_headers {
            Some(json) => serde_json::from_str(json)
                .map_err(|e| StoreError::Decode(format!("response_headers: {e}")))?,
            None => Vec::new(),
        };
        let body = if self.retained == Some(1) {
            // SQLite may hand back an empty blob as NULL on some engines.
            Some(self.response_body.clone().unwrap_or_default())
        } else {
            None
        };
        Ok(StoredResponse {
            status,
            headers,
            body,
        })
    }

    fn fingerprint(&self) -> Result<Fingerprint, StoreError> {
        let components: Vec<Component> = serde_json::from_str(&self.components)
            .map_err(|e| StoreError::Decode(format!("components: {e}")))?;
        Ok(Fingerprint {
            digest: self.fingerprint.clone(),
            components,
        })
    }
}

impl<S: SqlStore> Ledger<S> {
    pub fn new(store: S) -> Ledger<S> {
        Ledger { store }
    }

    /// The store underneath, for colocated application tables.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Creates the ledger's tables if they do not exist.
    pub fn migrate(&self) -> Result<(), StoreError> {
        self.store.atomically(|| {
            for statement in schema::SCHEMA {
                self.store.execute(statement, &[])?;
            }
            Ok(())
        })
    }

    fn bump(&self, counter: &str, by: i64) -> Result<(), StoreError> {
        self.store.execute(
            "INSERT INTO ledger_counters (name, value) VALUES (?, ?)
             ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
            &[counter.into(), by.into()],
        )
    }

    fn counter(&self, counter: &str) -> Result<i64, StoreError> {
        let rows = self.store.query(
            "SELECT value FROM ledger_counters WHERE name = ?",
            &[counter.into()],
        )?;
        match rows.first() {
            Some(row) => row.int(0),
            None => Ok(0),
        }
    }

    /// The earliest `expires_at` held, if any: when the next sweep is due.
    pub fn next_expires_at(&self) -> Result<Option<Millis>, StoreError> {
        let rows = self
            .store
            .query("SELECT MIN(expires_at) FROM idempotency_records", &[])?;
        match rows.first() {
            Some(row) => row.opt_int(0),
            None => Ok(None),
        }
    }

    fn read(&self, key: &str) -> Result<Option<Record>, StoreError> {
        let rows = self.store.query(SELECT_RECORD, &[key.into()])?;
        rows.first().map(Record::from_row).transpose()
    }

    /// Reads the generation a guarded statement returned, if it matched.
    fn returned_generation(rows: Vec<Row>) -> Result<Option<i64>, StoreError> {
        match rows.first() {
            Some(row) => row.int(0).map(Some),
            None => Ok(None),
        }
    }

    /// Turns the rows of a guarded claim statement into `Claimed`, counting
    /// the claim (and the takeover). No row means the guard did not match,
    /// which cannot happen inside the claim's transaction: refuse loudly.
    fn granted(
        &self,
        rows: Vec<Row>,
        takeover: bool,
        what: &str,
    ) -> Result<ClaimOutcome, StoreError> {
        let generation = Self::returned_generation(rows)?
            .ok_or_else(|| StoreError::Sql(format!("{what} changed under its claim")))?;
        self.bump("claims", 1)?;
        if takeover {
            self.bump("takeovers", 1)?;
        }
        Ok(ClaimOutcome::Claimed {
            generation,
            takeover,
        })
    }

    /// Claims `key` for the request with fingerprint `fp`.
    pub fn claim(
        &self,
        key: &str,
        fp: &Fingerprint,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        self.store.atomically(|| {
            let Some(record) = self.read(key)? else {
                return self.claim_new(key, fp, policy, now);
            };
            if record.expires_at <= now {
                return self.claim_expired(key, fp, policy, now);
            }
            if record.fingerprint != fp.digest {
                self.bump("reused", 1)?;
                let differs = record.fingerprint()?.differs_from(fp);
                return Ok(ClaimOutcome::Mismatch { differs });
            }
            match record.state.as_str() {
                "completed" => {
                    // Guard: only a completed record is replayed.
                    self.store.execute(
                        "UPDATE idempotency_records SET replays = replays + 1
                         WHERE key = ? AND state = 'completed'",
                        &[key.into()],
                    )?;
                    self.bump("replays", 1)?;
                    Ok(ClaimOutcome::Completed {
                        generation: record.generation,
                        response: record.stored_response()?,
                    })
                }
                "released" => self.reclaim_released(key, policy, now),
                _ => match record.lease_expires_at {
                    Some(lease_end) if lease_end > now => {
                        self.bump("in_use", 1)?;
                        Ok(ClaimOutcome::InFlight {
                            generation: record.generation,
                            retry_after_ms: lease_end - now,
                        })
                    }
                    _ => self.take_over(key, record.generation, policy, now),
                },
            }
        })
    }

    /// A key never seen (or already swept): generation 1, if the quota allows.
    fn claim_new(
        &self,
        key: &str,
        fp: &Fingerprint,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        let held = self.counter("records")?;
        if held >= 0 && held as u64 >= policy.max_keys {
            let next = self.next_expires_at()?.unwrap_or(now + 1000);
            return Ok(ClaimOutcome::LedgerFull {
                retry_after_ms: (next - now).max(1000),
            });
        }
        let components =
            serde_json::to_string(&fp.components).map_err(|e| StoreError::Decode(e.to_string()))?;
        // Guard: ON CONFLICT DO NOTHING — exactly one concurrent claimant inserts.
        let rows = self.store.query(
            "INSERT INTO idempotency_records
                (key, state, generation, fingerprint, components, created_at, claimed_at,
                 lease_expires_at, expires_at)
             VALUES (?, 'in_flight', 1, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (key) DO NOTHING
             RETURNING generation",
            &[
                key.into(),
                fp.digest.as_str().into(),
                components.into(),
                now.into(),
                now.into(),
                (now + policy.lease_ms).into(),
                (now + policy.retention_ms).into(),
            ],
        )?;
        self.bump("records", 1)?;
        self.granted(rows, false, "a new key")
    }

    /// A record past its retention window that the sweep has not reached yet
    /// is a new operation: it is reborn in flight at generation+1 (never 1, so
    /// a zombie owner of the old record stays fenced out).
    fn claim_expired(
        &self,
        key: &str,
        fp: &Fingerprint,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        let components =
            serde_json::to_string(&fp.components).map_err(|e| StoreError::Decode(e.to_string()))?;
        // Guard: expires_at <= now — a record inside its window is never reborn.
        let rows = self.store.query(
            "UPDATE idempotency_records
             SET state = 'in_flight', generation = generation + 1, fingerprint = ?,
                 components = ?, created_at = ?, claimed_at = ?, lease_expires_at = ?,
                 completed_at = NULL, expires_at = ?, response_status = NULL,
                 response_headers = NULL, response_body = NULL, retained = NULL, replays = 0
             WHERE key = ? AND expires_at <= ?
             RETURNING generation",
            &[
                fp.digest.as_str().into(),
                components.into(),
                now.into(),
                now.into(),
                (now + policy.lease_ms).into(),
                (now + policy.retention_ms).into(),
                key.into(),
                now.into(),
            ],
        )?;
        self.granted(rows, false, "an expired record")
    }

    /// A released record is claimed again at generation+1.
    fn reclaim_released(
        &self,
        key: &str,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        // Guard: state = 'released' — only a released record is reclaimed here.
        let rows = self.store.query(
            "UPDATE idempotency_records
             SET state = 'in_flight', generation = generation + 1, claimed_at = ?,
                 lease_expires_at = ?, expires_at = ?
             WHERE key = ? AND state = 'released'
             RETURNING generation",
            &[
                now.into(),
                (now + policy.lease_ms).into(),
                (now + policy.retention_ms).into(),
                key.into(),
            ],
        )?;
        self.granted(rows, false, "a released record")
    }

    /// An in-flight record whose lease has ended is taken over at generation+1.
    fn take_over(
        &self,
        key: &str,
        seen_generation: i64,
        policy: &ClaimPolicy,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        // Guard: still in flight, at the generation we saw, with its lease over.
        let rows = self.store.query(
            "UPDATE idempotency_records
             SET generation = generation + 1, claimed_at = ?, lease_expires_at = ?,
                 expires_at = ?
             WHERE key = ? AND state = 'in_flight' AND generation = ?
               AND lease_expires_at <= ?
             RETURNING generation",
            &[
                now.into(),
                (now + policy.lease_ms).into(),
                (now + policy.retention_ms).into(),
                key.into(),
                seen_generation.into(),
                now.into(),
            ],
        )?;
        self.granted(rows, true, "an in-flight record")
    }

    fn current_state(&self, key: &str) -> Result<Option<RecordState>, StoreError> {
        Ok(self.read(key)?.map(|r| RecordState {
            state: r.state,
            generation: r.generation,
        }))
    }

    /// Records the response of the owner at `generation`.
    pub fn complete(
        &self,
        key: &str,
        generation: i64,
        response: &StoredResponse,
        retention_ms: Millis,
        now: Millis,
    ) -> Result<CompleteOutcome, StoreError> {
        let headers = serde_json::to_string(&response.headers)
            .map_err(|e| StoreError::Decode(e.to_string()))?;
        let retained = i64::from(response.retained());
        self.store.atomically(|| {
            // Guard: in flight at the caller's generation. A late completion
            // with no takeover since is still accepted: nobody else ran.
            let rows = self.store.query(
                "UPDATE idempotency_records
                 SET state = 'completed', lease_expires_at = NULL, completed_at = ?,
                     expires_at = ?, response_status = ?, response_headers = ?,
                     response_body = ?, retained = ?
                 WHERE key = ? AND state = 'in_flight' AND generation = ?
                 RETURNING generation",
                &[
                    now.into(),
                    (now + retention_ms).into(),
                    i64::from(response.status).into(),
                    headers.into(),
                    response.body.clone().into(),
                    retained.into(),
                    key.into(),
                    generation.into(),
                ],
            )?;
            if Self::returned_generation(rows)?.is_some() {
                return Ok(CompleteOutcome::Stored);
            }
            self.bump("fenced_out", 1)?;
            Ok(CompleteOutcome::FencedOut {
                current: self.current_state(key)?,
            })
        })
    }

    /// Gives the key back so the next claim runs again (at generation+1).
    /// Never deletes the record and never resets its generation.
    pub fn release(&self, key: &str, generation: i64) -> Result<ReleaseOutcome, StoreError> {
        self.store.atomically(|| {
            // Guard: in flight at the caller's generation.
            let rows = self.store.query(
                "UPDATE idempotency_records
                 SET state = 'released', lease_expires_at = NULL
                 WHERE key = ? AND state = 'in_flight' AND generation = ?
                 RETURNING generation",
                &[key.into(), generation.into()],
            )?;
            if Self::returned_generation(rows)?.is_some() {
                return Ok(ReleaseOutcome::Released);
            }
            self.bump("fenced_out", 1)?;
            Ok(ReleaseOutcome::FencedOut {
                current: self.current_state(key)?,
            })
        })
    }

    /// Claim, run `app` and complete, in one transaction: a tenant-local
    /// mutation and its ledger record commit together or not at all.
    pub fn execute<E: From<StoreError>>(
        &self,
        key: &str,
        fp: &Fingerprint,
        policy: &ClaimPolicy,
        capture: &CapturePolicy,
        now: Millis,
        app: impl FnOnce(&S) -> Result<AppResponse, E>,
    ) -> Result<ExecuteOutcome, E> {
        self.store.atomically(|| {
            let (generation, takeover) = match self.claim(key, fp, policy, now)? {
                ClaimOutcome::Claimed {
                    generation,
                    takeover,
                } => (generation, takeover),
                ClaimOutcome::InFlight {
                    generation,
                    retry_after_ms,
                } => {
                    return Ok(ExecuteOutcome::InFlight {
                        generation,
                        retry_after_ms,
                    })
                }
                ClaimOutcome::Completed {
                    generation,
                    response,
                } => {
                    return Ok(ExecuteOutcome::Completed {
                        generation,
                        response,
                    })
                }
                ClaimOutcome::Mismatch { differs } => {
                    return Ok(ExecuteOutcome::Mismatch { differs })
                }
                ClaimOutcome::LedgerFull { retry_after_ms } => {
                    return Ok(ExecuteOutcome::LedgerFull { retry_after_ms })
                }
            };
            let response = app(&self.store)?;
            let stored = StoredResponse::capture(&response, capture);
            match self.complete(key, generation, &stored, policy.retention_ms, now)? {
                CompleteOutcome::Stored => Ok(ExecuteOutcome::Ran {
                    generation,
                    takeover,
                    retained: stored.retained(),
                    response,
                }),
                // Impossible inside one transaction; refuse loudly and roll back
                // the application's writes rather than let them stand unrecorded.
                CompleteOutcome::FencedOut { .. } => Err(StoreError::Sql(
                    "completion fenced out inside its own transaction".into(),
                )
                .into()),
            }
        })
    }

    /// The record for `key`, unless absent or past its retention window.
    pub fn lookup(&self, key: &str, now: Millis) -> Result<Option<RecordView>, StoreError> {
        let Some(r) = self.read(key)? else {
            return Ok(None);
        };
        if r.expires_at <= now {
            return Ok(None);
        }
        let completed = r.state == "completed";
        Ok(Some(RecordView {
            key: key.to_string(),
            generation: r.generation,
            created_at: rfc3339(r.created_at),
            expires_at: rfc3339(r.expires_at),
            lease_expires_at: if r.state == "in_flight" {
                r.lease_expires_at.map(rfc3339)
            } else {
                None
            },
            response_status: if completed {
                r.response_status.and_then(|s| u16::try_from(s).ok())
            } else {
                None
            },
            retained: if completed {
                Some(r.retained == Some(1))
            } else {
                None
            },
            replays: r.replays,
            state: r.state,
        }))
    }

    /// The object's counters and record counts.
    pub fn stats(&self) -> Result<Stats, StoreError> {
        let mut stats = Stats::default();
        for row in self
            .store
            .query("SELECT name, value FROM ledger_counters", &[])?
        {
            let value = row.int(1)?;
            match row.text(0)?.as_str() {
                "claims" => stats.claims = value,
                "replays" => stats.replays = value,
                "in_use" => stats.in_use = value,
                "reused" => stats.reused = value,
                "takeovers" => stats.takeovers = value,
                "fenced_out" => stats.fenced_out = value,
                "swept" => stats.swept = value,
                _ => {}
            }
        }
        for row in self.store.query(
            "SELECT state, COUNT(*) FROM idempotency_records GROUP BY state",
            &[],
        )? {
            let count = row.int(1)?;
            match row.text(0)?.as_str() {
                "in_flight" => stats.in_flight = count,
                "completed" => stats.completed = count,
                "released" => stats.released = count,
                _ => {}
            }
        }
        stats.records = stats.in_flight + stats.completed + stats.released;
        stats.next_sweep_at = self.next_expires_at()?.map(rfc3339);
        Ok(stats)
    }

    /// The number of records the quota counts (kept as a counter so a claim
    /// never scans the table).
    pub fn held_records(&self) -> Result<i64, StoreError> {
        self.counter("records")
    }

    /// Deletes at most `batch` records with `expires_at <= now`, through the
    /// `expires_at` index, and says when the next one expires.
    pub fn sweep(&self, now: Millis, batch: usize) -> Result<SweepOutcome, StoreError> {
        self.store.atomically(|| {
            // Guard: expires_at <= now — nothing inside its window is deleted.
            let rows = self.store.query(
                "DELETE FROM idempotency_records
                 WHERE key IN (SELECT key FROM idempotency_records
                               WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)
                 RETURNING key",
                &[now.into(), (batch as i64).into()],
            )?;
            let deleted = rows.len();
            if deleted > 0 {
                self.bump("records", -(deleted as i64))?;
                self.bump("swept", deleted as i64)?;
            }
            Ok(SweepOutcome {
                deleted,
                batch_full: deleted >= batch,
                next_expires_at: self.next_expires_at()?,
            })
        })
    }
}
