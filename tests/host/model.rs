//! Model-based test: thousands of random interleavings of claim / complete /
//! release / clock advance / sweep / evict against a plain in-memory
//! reference model. After every step the ledger must answer exactly as the
//! model does, and the invariants must hold: generations never go back (a
//! key's every new grant is above all it was granted before, through sweeps
//! and evictions), a completed response is never replaced, the quota
//! counter equals the rows held. Claims come from
//! named and unnamed attempts: only the attempt holding a live lease is
//! answered its grant again. Every grant carries a lease token never seen
//! before (the model adopts it); settlements present their grant's token,
//! a stale token of the same key, or none (a bare generation, as callers
//! older than tokens), and a token's repeat of its own landed settlement
//! is told it landed.

use std::collections::{HashMap, HashSet};

use crate::support::*;
use idempotency_ledger::ledger::{
    ClaimOutcome, ClaimPolicy, CompleteOutcome, EvictOutcome, Grant, Refusal, ReleaseOutcome,
};
use rand::{rngs::SmallRng, Rng, SeedableRng};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum St {
    InFlight,
    Completed,
    Released,
}

#[derive(Clone, Debug)]
struct Rec {
    state: St,
    generation: i64,
    fp: u8,
    lease_end: i64,
    expires_at: i64,
    /// The earliest the record may expire (claim time + retention).
    sweep_at: i64,
    response: Option<String>,
    /// The claim attempt that holds the lease, and whether it took over.
    attempt: Option<u8>,
    took_over: bool,
    /// The lease token of the latest grant (adopted from the ledger).
    lease: Option<String>,
}

#[derive(Default)]
struct Model {
    recs: HashMap<String, Rec>,
    /// The highest generation swept or evicted: a new key starts above it.
    floor: i64,
}

impl Model {
    /// The claim's outcome, and whether it repeated a grant.
    fn claim(
        &mut self,
        key: &str,
        fpid: u8,
        attempt: Option<u8>,
        p: &ClaimPolicy,
        now: i64,
    ) -> (ClaimOutcome, bool) {
        if let Some(r) = self.recs.get(key) {
            if attempt.is_some()
                && r.attempt == attempt
                && r.fp == fpid
                && r.state == St::InFlight
                && r.lease_end > now
            {
                let granted = ClaimOutcome::Claimed {
                    generation: r.generation,
                    takeover: r.took_over,
                    lease: r.lease.clone(),
                };
                return (granted, true);
            }
        }
        (self.claim_anew(key, fpid, attempt, p, now), false)
    }

    fn claim_anew(
        &mut self,
        key: &str,
        fpid: u8,
        attempt: Option<u8>,
        p: &ClaimPolicy,
        now: i64,
    ) -> ClaimOutcome {
        let fresh = |generation| Rec {
            state: St::InFlight,
            generation,
            fp: fpid,
            lease_end: now + p.lease_ms,
            expires_at: now + p.retention_ms,
            sweep_at: now + p.retention_ms,
            response: None,
            attempt,
            took_over: false,
            lease: None,
        };
        let floor = self.floor;
        match self.recs.get_mut(key) {
            None => {
                if self.recs.len() as u64 >= p.max_keys {
                    // The next moment a record may expire: never later than the
                    // earliest expiry.
                    let next = self
                        .recs
                        .values()
                        .map(|r| {
                            if r.sweep_at <= now {
                                r.expires_at
                            } else {
                                r.sweep_at
                            }
                        })
                        .min()
                        .unwrap();
                    return ClaimOutcome::Refused(Refusal::LedgerFull {
                        retry_after_ms: (next - now).max(1000),
                    });
                }
                self.recs.insert(key.into(), fresh(floor + 1));
                ClaimOutcome::Claimed {
                    generation: floor + 1,
                    takeover: false,
                    lease: None,
                }
            }
            Some(r) if r.expires_at <= now => {
                *r = fresh(r.generation + 1);
                ClaimOutcome::Claimed {
                    generation: r.generation,
                    takeover: false,
                    lease: None,
                }
            }
            Some(r) if r.fp != fpid => ClaimOutcome::Refused(Refusal::Mismatch {
                differs: vec!["body".into()],
            }),
            Some(r) => match r.state {
                St::Completed => ClaimOutcome::Refused(Refusal::Completed {
                    generation: r.generation,
                    response: response(r.response.as_deref().unwrap()),
                    expires_at: Some(r.expires_at),
                }),
                St::Released => {
                    *r = Rec {
                        generation: r.generation + 1,
                        fp: r.fp,
                        ..fresh(0)
                    };
                    ClaimOutcome::Claimed {
                        generation: r.generation,
                        takeover: false,
                        lease: None,
                    }
                }
                St::InFlight if r.lease_end > now => ClaimOutcome::Refused(Refusal::InFlight {
                    generation: r.generation,
                    retry_after_ms: r.lease_end - now,
                }),
                St::InFlight => {
                    r.generation += 1;
                    r.attempt = attempt;
                    r.took_over = true;
                    r.lease_end = now + p.lease_ms;
                    r.expires_at = now + p.retention_ms;
                    r.sweep_at = now + p.retention_ms;
                    ClaimOutcome::Claimed {
                        generation: r.generation,
                        takeover: true,
                        lease: None,
                    }
                }
            },
        }
    }

    /// Does `lease` (when presented) name the record's latest grant?
    fn named(r: &Rec, lease: Option<&str>) -> bool {
        lease.is_none() || r.lease.as_deref() == lease
    }

    /// Is this the very settlement `lease` already made (a repeat)?
    fn landed(r: &Rec, generation: i64, lease: Option<&str>, state: St) -> bool {
        lease.is_some() && r.state == state && r.generation == generation && Self::named(r, lease)
    }

    fn complete(
        &mut self,
        key: &str,
        (generation, lease): (i64, Option<&str>),
        body: &str,
        p: &ClaimPolicy,
        now: i64,
    ) -> bool {
        match self.recs.get_mut(key) {
            Some(r) if Self::landed(r, generation, lease, St::Completed) => true,
            Some(r)
                if r.state == St::InFlight
                    && r.generation == generation
                    && Self::named(r, lease) =>
            {
                r.state = St::Completed;
                r.response = Some(body.into());
                r.expires_at = now + p.retention_ms;
                r.sweep_at = r.sweep_at.min(r.expires_at);
                true
            }
            _ => false,
        }
    }

    fn release(&mut self, key: &str, (generation, lease): (i64, Option<&str>)) -> bool {
        match self.recs.get_mut(key) {
            Some(r) if Self::landed(r, generation, lease, St::Released) => true,
            Some(r)
                if r.state == St::InFlight
                    && r.generation == generation
                    && Self::named(r, lease) =>
            {
                r.state = St::Released;
                true
            }
            _ => false,
        }
    }

    /// Evicts `key`: the generation and state removed, `Err` with the
    /// lease's time left while it is live, `None` when absent or expired.
    fn evict(&mut self, key: &str, now: i64) -> Option<Result<(i64, St), i64>> {
        let r = self.recs.get(key).filter(|r| r.expires_at > now)?;
        if r.state == St::InFlight && r.lease_end > now {
            return Some(Err(r.lease_end - now));
        }
        let r = self.recs.remove(key)?;
        self.floor = self.floor.max(r.generation);
        Some(Ok((r.generation, r.state)))
    }

    fn sweep(&mut self, now: i64) {
        let floor = &mut self.floor;
        self.recs.retain(|_, r| {
            let kept = r.expires_at > now;
            if !kept {
                *floor = (*floor).max(r.generation);
            }
            kept
        });
    }
}

/// Who settles: mostly an owner the ledger granted, presenting its token
/// (or none, as a caller older than tokens; or another grant's token, as a
/// confused or hostile caller), else a stranger's bare generation.
fn settling(
    rng: &mut SmallRng,
    owners: &[(String, i64, String)],
    key: &str,
) -> (String, i64, Option<String>) {
    if owners.is_empty() || rng.gen_bool(0.1) {
        return (key.to_string(), rng.gen_range(1..4), None);
    }
    let (k, g, lease) = owners[rng.gen_range(0..owners.len())].clone();
    let presented = match rng.gen_range(0..10) {
        0..=6 => Some(lease),
        7..=8 => None,
        _ => Some(owners[rng.gen_range(0..owners.len())].2.clone()),
    };
    (k, g, presented)
}

fn run_one_seed(seed: u64, steps: usize) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let l = ledger();
    let p = ClaimPolicy {
        lease_ms: 1_000,
        retention_ms: 5_000,
        settle_grace_ms: 0,
        max_keys: 4,
        max_db_bytes: u64::MAX,
    };
    let keys = ["a", "b", "c", "d", "e", "f"];
    let mut model = Model::default();
    let mut owners: Vec<(String, i64, String)> = Vec::new();
    let mut seen_leases: HashSet<String> = HashSet::new();
    let mut now = 0i64;
    let mut last_generation: HashMap<String, i64> = HashMap::new();
    let mut highest_granted: HashMap<String, i64> = HashMap::new();
    let mut completions = 0u32;

    for step in 0..steps {
        let key = keys[rng.gen_range(0..keys.len())];
        match rng.gen_range(0..100) {
            0..=39 => {
                let fpid = if rng.gen_bool(0.85) { 0 } else { 1 };
                let attempt = [None, Some(0u8), Some(1u8)][rng.gen_range(0..3)];
                let named = attempt.map(|a| format!("attempt-{a}"));
                let expected = model.claim(key, fpid, attempt, &p, now);
                let got = l
                    .claim_as(key, &fp(&format!("body-{fpid}")), named.as_deref(), &p, now)
                    .unwrap();
                // A repeat is answered the token the model adopted; a new
                // grant's token is the ledger's to draw.
                let compared = if got.repeated {
                    got.outcome.clone()
                } else {
                    without_lease(got.outcome.clone())
                };
                assert_eq!(
                    (compared, got.repeated),
                    expected,
                    "seed {seed} step {step}: claim {key} as {attempt:?}"
                );
                if let ClaimOutcome::Claimed {
                    generation, lease, ..
                } = got.outcome
                {
                    let lease = lease.expect("every grant carries a lease token");
                    if !got.repeated {
                        assert!(
                            seen_leases.insert(lease.clone()),
                            "seed {seed} step {step}: a lease token granted twice"
                        );
                        model.recs.get_mut(key).unwrap().lease = Some(lease.clone());
                    }
                    owners.push((key.to_string(), generation, lease));
                    let highest = highest_granted.entry(key.to_string()).or_insert(0);
                    assert!(
                        generation > *highest || (got.repeated && generation == *highest),
                        "seed {seed} step {step}: {key} granted {generation} after {highest}"
                    );
                    *highest = generation;
                }
            }
            40..=64 => {
                let (k, g, lease) = settling(&mut rng, &owners, key);
                completions += 1;
                let body = format!("response-{completions}");
                let grant = Grant::new(g, lease.as_deref());
                let expected = model.complete(&k, (g, lease.as_deref()), &body, &p, now);
                let got = l
                    .complete(&k, grant, &response(&body), p.retention_ms, now)
                    .unwrap();
                assert_eq!(
                    got == CompleteOutcome::Stored,
                    expected,
                    "seed {seed} step {step}: complete {k}@{g} under {lease:?}"
                );
            }
            65..=79 => {
                let (k, g, lease) = settling(&mut rng, &owners, key);
                let expected = model.release(&k, (g, lease.as_deref()));
                let got = l.release(&k, Grant::new(g, lease.as_deref()), 0).unwrap();
                assert_eq!(
                    got == ReleaseOutcome::Released,
                    expected,
                    "seed {seed} step {step}: release {k}@{g} under {lease:?}"
                );
            }
            // Coarse steps land exactly on lease and retention boundaries.
            80..=92 => now += 250 * rng.gen_range(0..6),
            93..=95 => {
                let expected = model.evict(key, now);
                let got = l.evict(key, 0, now).unwrap();
                let got = match got {
                    EvictOutcome::Evicted { record } => {
                        let state = match record.state.as_str() {
                            "in_flight" => St::InFlight,
                            "completed" => St::Completed,
                            _ => St::Released,
                        };
                        Some(Ok((record.generation, state)))
                    }
                    EvictOutcome::InFlight { retry_after_ms, .. } => Some(Err(retry_after_ms)),
                    EvictOutcome::NotFound => None,
                };
                assert_eq!(got, expected, "seed {seed} step {step}: evict {key}");
            }
            _ => {
                let batch = rng.gen_range(1..4);
                while l.sweep(now, batch).unwrap().batch_full {}
                model.sweep(now);
            }
        }

        // Invariants after every step.
        for k in keys {
            let view = l.lookup(k, now).unwrap();
            match model.recs.get(k).filter(|r| r.expires_at > now) {
                None => assert!(
                    view.is_none(),
                    "seed {seed} step {step}: {k} should be absent"
                ),
                Some(r) => {
                    let v = view.unwrap_or_else(|| panic!("seed {seed} step {step}: {k} missing"));
                    let state = match r.state {
                        St::InFlight => "in_flight",
                        St::Completed => "completed",
                        St::Released => "released",
                    };
                    assert_eq!(
                        (v.state.as_str(), v.generation),
                        (state, r.generation),
                        "seed {seed} step {step}: {k}"
                    );
                }
            }
            if let Some(r) = model.recs.get(k) {
                let prev = last_generation
                    .insert(k.to_string(), r.generation)
                    .unwrap_or(0);
                assert!(
                    r.generation >= prev || !model.recs.contains_key(k),
                    "generation went back"
                );
            } else {
                last_generation.remove(k);
            }
        }
        let rows = count(&l, "idempotency_records");
        assert_eq!(
            rows,
            model.recs.len() as i64,
            "seed {seed} step {step}: rows held"
        );
        assert_eq!(
            l.held_records().unwrap(),
            rows,
            "seed {seed} step {step}: quota counter"
        );
    }
}

#[test]
fn random_interleavings_match_the_reference_model() {
    // 20 seeds x 500 steps: ten thousand operations, each checked.
    for seed in 0..20 {
        run_one_seed(seed, 500);
    }
}
