//! The per-minute trend: the last hour's outcome counts, minute by minute
//! (docs/contract.md §2.7), at no row written of its own.
//!
//! Role: [`Counter::TRENDED`] (`claims`, `replays`, `in_use`, `reused`,
//! `takeovers`, `fenced_out`, `swept`, `evicted`) are also counted per
//! minute of the object's clock, in memory with every other count
//! (`pending`), and written in the same `ledger_state` row write as the
//! counters, into its `trend` column (schema 4): compact JSON, `{"<epoch
//! minute>": [claims, replays, in_use, reused, takeovers, fenced_out,
//! swept, evicted], ...}`. Schemas 4 to 7 wrote seven counts a minute (no
//! `evicted`): a shorter stored minute reads as zeros in its missing
//! slots, and the next write of that minute adds to it in SQL
//! (`COALESCE(json_extract(...), 0)`), making it whole. A write
//! adds its minutes to the stored ones in SQL (as every counter is added,
//! never overwritten), so a count is written once even when an enclosing
//! transaction rolls back (the embedded ledger), and drops the minutes
//! older than the hour before its latest one.
//!
//! What must stay true here:
//! - A count lands in the minute of the event's `now` (a replay a gateway
//!   reports later, in the minute it is reported).
//! - `stats` shows exactly [`TREND_MINUTES`] minutes, oldest first, the
//!   last the current minute, zeros where nothing happened: stored plus
//!   pending, like every other count.

use serde::de::Error as _;
use serde::{Deserialize, Serialize};

use super::clock::Millis;
use super::outcome::Counter;
use super::record::rfc3339;
use super::store::StoreError;

/// Minutes the trend shows (the last hour).
pub const TREND_MINUTES: i64 = 60;

const MINUTE_MS: Millis = 60_000;

/// Counts per minute: one per [`Counter::TRENDED`].
const SLOTS: usize = Counter::TRENDED.len();

/// Counts per minute (epoch minutes), in [`Counter::TRENDED`] order: a
/// few dozen minutes at most, kept as a vector sorted by minute (a
/// `BTreeMap` here was ~15 KB of b-tree code in each wasm).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trend(Vec<(i64, [i64; SLOTS])>);

impl Trend {
    pub fn new() -> Trend {
        Trend::default()
    }

    /// The counts of `minute`, made zero if it had none.
    fn entry(&mut self, minute: i64) -> &mut [i64; SLOTS] {
        let i = match self.0.binary_search_by_key(&minute, |(m, _)| *m) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (minute, [0; SLOTS]));
                i
            }
        };
        &mut self.0[i].1
    }

    fn get(&self, minute: i64) -> Option<&[i64; SLOTS]> {
        self.0
            .binary_search_by_key(&minute, |(m, _)| *m)
            .ok()
            .map(|i| &self.0[i].1)
    }

    /// Its minutes, oldest first.
    fn iter(&self) -> impl Iterator<Item = &(i64, [i64; SLOTS])> {
        self.0.iter()
    }
}

/// The epoch minute `ms` falls in.
pub fn minute_of(ms: Millis) -> i64 {
    ms.div_euclid(MINUTE_MS)
}

/// Adds `n` of `counter` to its minute, if the trend follows it.
pub fn count(trend: &mut Trend, counter: Counter, n: i64, now: Millis) {
    if let Some(slot) = counter.trend_slot() {
        trend.entry(minute_of(now))[slot] += n;
    }
}

/// Adds every minute of `other` to `trend`.
pub fn merge(trend: &mut Trend, other: &Trend) {
    for (minute, counts) in other.iter() {
        let mine = trend.entry(*minute);
        for (m, n) in mine.iter_mut().zip(counts) {
            *m += n;
        }
    }
}

/// The oldest minute a write keeps: the hour ending at its latest minute.
pub fn kept_from(written: &Trend) -> Option<i64> {
    written
        .0
        .last()
        .map(|(latest, _)| latest - (TREND_MINUTES - 1))
}

/// Drops the minutes before `from`.
pub fn trim(trend: &mut Trend, from: i64) {
    trend.0.retain(|(minute, _)| *minute >= from);
}

/// Reads the `trend` column: `{"<epoch minute>": [claims, replays, in_use,
/// reused, takeovers, fenced_out, swept, evicted], ...}`; a minute of
/// fewer counts (schemas 4 to 7 wrote seven) reads as zeros where it has
/// none, a minute of more is refused.
pub fn from_json(text: &str) -> Result<Trend, StoreError> {
    let rows: Minutes = serde_json::from_slice(text.as_bytes())
        .map_err(|e| StoreError::Decode(format!("ledger_state.trend: {e}")))?;
    let mut trend = Trend::new();
    for (minute, counts) in rows.0 {
        let minute = minute
            .parse::<i64>()
            .map_err(|_| StoreError::Decode(format!("ledger_state.trend: minute {minute:?}")))?;
        let slot = trend.entry(minute);
        for (sum, n) in slot.iter_mut().zip(counts) {
            *sum += n;
        }
    }
    Ok(trend)
}

/// The stored JSON object's entries in their order (read into a vector:
/// no map type of its own in the wasm), each minute's counts as stored
/// (seven before schema 9, [`SLOTS`] since).
struct Minutes(Vec<(String, Vec<i64>)>);

impl<'de> Deserialize<'de> for Minutes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Minutes, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Minutes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of minute -> at most 8 counts")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Minutes, A::Error> {
                let mut out = Vec::new();
                while let Some((minute, counts)) = map.next_entry::<String, Vec<i64>>()? {
                    if counts.len() > SLOTS {
                        return Err(A::Error::invalid_length(counts.len(), &self));
                    }
                    out.push((minute, counts));
                }
                Ok(Minutes(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// The `SET` clause that adds a write's minutes to the stored ones and
/// drops the stored minutes before the hour ending at the write's latest
/// (those `stored`, the row as this instance knows it, holds), or `None`
/// when the write counts nothing the trend follows. Additive in SQL, as
/// every counter is (`json_set` of each minute to what the row holds plus
/// the write's): the row is never read for it (`json_each` would bill its
/// elements as rows read), and a write that rolls back takes its minutes
/// with it. Its numbers are the ledger's own integers, written into the
/// statement (a trend may span more minutes than a statement may bind).
pub fn set_clause(written: &Trend, stored: &Trend) -> Option<String> {
    let from = kept_from(written)?;
    let added: Vec<String> = written
        .iter()
        .filter(|(minute, _)| *minute >= from)
        .map(|(minute, counts)| {
            let sums: Vec<String> = counts
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    format!("COALESCE(json_extract(trend, '$.\"{minute}\"[{i}]'), 0) + {n}")
                })
                .collect();
            format!("'$.\"{minute}\"', json_array({})", sums.join(", "))
        })
        .collect();
    let mut set = format!("json_set(trend, {})", added.join(", "));
    let dropped: Vec<String> = stored
        .iter()
        .filter(|(minute, _)| *minute < from)
        .map(|(minute, _)| format!("'$.\"{minute}\"'"))
        .collect();
    if !dropped.is_empty() {
        set = format!("json_remove({set}, {})", dropped.join(", "));
    }
    Some(format!("trend = {set}"))
}

/// One minute of the trend as `stats` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrendMinute {
    /// The minute's start, RFC 3339 UTC.
    pub minute: String,
    pub claims: i64,
    pub replays: i64,
    pub in_use: i64,
    pub reused: i64,
    pub takeovers: i64,
    pub fenced_out: i64,
    pub swept: i64,
    /// Records evicted (absent from older objects' trends).
    #[serde(default)]
    pub evicted: i64,
}

impl TrendMinute {
    fn of(minute: i64, c: [i64; SLOTS]) -> TrendMinute {
        TrendMinute {
            minute: rfc3339(minute.saturating_mul(MINUTE_MS)),
            claims: c[0],
            replays: c[1],
            in_use: c[2],
            reused: c[3],
            takeovers: c[4],
            fenced_out: c[5],
            swept: c[6],
            evicted: c[7],
        }
    }

    fn add(&mut self, other: &TrendMinute) {
        self.claims += other.claims;
        self.replays += other.replays;
        self.in_use += other.in_use;
        self.reused += other.reused;
        self.takeovers += other.takeovers;
        self.fenced_out += other.fenced_out;
        self.swept += other.swept;
        self.evicted += other.evicted;
    }
}

/// The [`TREND_MINUTES`] minutes ending with the one `now` falls in, oldest
/// first, from the counts of every trend given (stored, pending, ...).
pub fn window(parts: &[&Trend], now: Millis) -> Vec<TrendMinute> {
    let last = minute_of(now);
    (last - (TREND_MINUTES - 1)..=last)
        .map(|minute| {
            let mut counts = [0i64; SLOTS];
            for part in parts {
                if let Some(c) = part.get(minute) {
                    for (sum, n) in counts.iter_mut().zip(c) {
                        *sum += n;
                    }
                }
            }
            TrendMinute::of(minute, counts)
        })
        .collect()
}

/// A sharded tenant's trend: the objects' trends summed minute by minute,
/// the latest [`TREND_MINUTES`] of them (objects that answered either side
/// of a minute's turn agree on all but its edge).
pub fn sum(mine: &mut Vec<TrendMinute>, theirs: &[TrendMinute]) {
    // RFC 3339 UTC strings of one format order as their times do.
    let mut by_minute: Vec<TrendMinute> = Vec::with_capacity(mine.len() + theirs.len());
    for m in mine.drain(..).chain(theirs.iter().cloned()) {
        match by_minute.binary_search_by(|held| held.minute.cmp(&m.minute)) {
            Ok(i) => by_minute[i].add(&m),
            Err(i) => by_minute.insert(i, m),
        }
    }
    let skip = by_minute.len().saturating_sub(TREND_MINUTES as usize);
    mine.extend(by_minute.into_iter().skip(skip));
}
