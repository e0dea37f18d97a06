// The bounds `npm run bench:cost -- --check` holds every operation to
// (npm test runs it): billed rows per operation at n = 40, measured by
// ../cost.mjs.

/**
 * Upper bounds per operation, at n = 40 (billed rows written = rowsWritten
 * + setAlarm; `read` bounds rows read). The targets: a fresh key costs the
 * record and its index entry beyond the floor's own two rows (4.0 embedded,
 * 4.0 over claim + complete in proxy mode); refusals 0.05 amortised; the
 * sweep 1.2 per record. Every count is written in one row per flush window
 * (see src/ledger/pending.rs), which adds 1/n to an operation: hence 4.05.
 * Sweep figures are per record swept. A claim that puts a record in flight
 * (proxy mode's fresh key, a release's claim, a takeover) also writes its
 * entry in the index of the records in flight (schema 7, issue 35): one row
 * more each, its settlement none (measured: workerd bills the entry's
 * insert, not its removal), so 4.05 for claim + complete and claim +
 * release, 3.05 for a takeover. Embedded mode writes a fresh key already
 * completed: no entry.
 */
export const BOUNDS = {
  "floor: fresh POST (order insert only)": null,
  "embedded fresh key": { written: 4.05, read: 4 },
  "proxy fresh key (claim + complete)": { written: 4.05, read: 4.05 },
  "replay (object path)": { written: 0.05, read: 1.1 },
  "mismatch 422": { written: 0.05, read: 1.1 },
  "in-use 409": { written: 0.05, read: 1.1 },
  "release (claim + release)": { written: 4.05, read: 4.05 },
  "takeover (the taking claim)": { written: 3.05, read: 3 },
  // idempotency-ledger/queues, external shape (docs/consumers.md "Cost"): a
  // message's first delivery costs what a proxy-mode key does (the claim's
  // row in the in-flight index included), a handler
  // that throws what a release does; a redelivery is a replay of its own
  // key, whose replay count is one row written (once per flush window: the
  // object-path replay above repeats one key, so it pays that row once).
  "queue message, fresh key (claim + complete)": { written: 4.05, read: 4.05 },
  "queue message redelivered (replay, not run)": { written: 1.05, read: 2.05 },
  "queue message, handler threw (claim + release)": { written: 4.05, read: 3.05 },
  "lookup": { written: 0.05, read: 1.05 },
  // An eviction deletes the record (one statement, reading its row and
  // index entry) and writes the counters' row (the generation floor and the
  // counts) in its transaction; a refusal's delete matches nothing and the
  // record is read once more to say why.
  "evict (a completed key)": { written: 2.05, read: 3.05 },
  "evict refused (in flight, 409)": { written: 0.05, read: 3.05 },
  "evict, unknown key (404)": { written: 0.05, read: 1.05 },
  // An in-flight record's eviction (its lease ended) removes its entry in
  // the in-flight index too: a removal, not billed (measured), so the same.
  "evict (in flight, its lease ended)": { written: 2.05, read: 3.05 },
  "stats": { written: 0.05, read: 2.05 },
  // A backlog of expired records the alarm has not swept yet: the next
  // sweep's read scans at most DUE_SCAN (32) of them, whatever their number.
  "stats, 1,000 records expired and unswept": { written: 0.05, read: 36 },
  "lookup, 1,000 records expired and unswept": { written: 0.05, read: 1.05 },
  "sweep, per record (steady arrival)": { written: 1.2, read: 8, alarmsPerRecord: 0.1 },
  // A page reads the entries it scans (until it holds `limit` keys and one
  // more), at most SCAN_FACTOR (4) × limit and one probe, however deep in
  // the walk; a window that held no key is read twice to find its end (the
  // most a page costs: 2 × 4 × limit). The in-flight walk's entries are
  // records in flight only: limit + 2.
  "list, 10,000 records: every state, limit 20 (newest first)": { written: 0.05, read: 23 },
  "list, 10,000 records: completed (9 in 10), limit 100": { written: 0.05, read: 120 },
  "list, 10,000 records: in_flight (1 in 20), limit 20 (oldest first)": { written: 0.05, read: 22 },
  "list, 10,000 records: in_flight (1 in 20), limit 1": { written: 0.05, read: 3 },
  // The in-flight walk reads the index of the records in flight only
  // (schema 7): a page reads the keys it holds and one more, and one
  // probe, however many completed records the object holds
  // (docs/contract.md §2.7: at most limit + 2 when none is past its window).
  "list, 100,000 completed records: in_flight (50 held), limit 100 (one page holds them all)": { written: 0.05, read: 52 },
  "list, 100,000 completed records: in_flight (50 held), limit 20 (per page, 3 pages)": { written: 0.05, read: 22 },
};