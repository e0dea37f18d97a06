// @ts-check
// A sharded tenant's reads (./shards.js TenantLedgers): its objects' stats
// summed (counts added, the trend minute by minute, the earliest sweep) and
// their listing pages merged into one page, by the gateway's one rule
// (Rust ledger::list ListPage::merge; shared vectors:
// tests/fixtures/list-merge.json).
import { TRENDED } from "../generated/trended.js";
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from "../generated/limits.js";
/** @import { LedgerStats, ListPage, ListPosition, ListedRecord, TrendMinute } from "./client.js" */

/**
 * @param {string | null} a
 * @param {string | null} b
 * @returns {string | null} the earlier RFC 3339 time (null only when both are)
 */
function earlier(a, b) {
  if (a === null || b === null) return a ?? b;
  const [ta, tb] = [Date.parse(a), Date.parse(b)];
  if (Number.isNaN(ta) || Number.isNaN(tb)) return a <= b ? a : b;
  return tb < ta ? b : a;
}

/** Minutes a stats trend shows (Rust ledger::trend TREND_MINUTES). */
const TREND_MINUTES = 60;

/**
 * A sharded tenant's trend: the objects' trends summed minute by minute, the latest 60 minutes
 * (objects that answered either side of a minute's turn agree on all but its edge).
 * @param {readonly LedgerStats[]} all
 * @returns {TrendMinute[]}
 */
function sumTrends(all) {
  /** @type {Map<string, TrendMinute>} */
  const byMinute = new Map();
  for (const stats of all) {
    for (const m of stats.trend ?? []) {
      const held = byMinute.get(m.minute);
      if (held === undefined) { byMinute.set(m.minute, { ...m }); continue; }
      // A count an older object does not know is absent from its minutes.
      for (const name of TRENDED) held[name] = (held[name] ?? 0) + (m[name] ?? 0);
    }
  }
  // RFC 3339 UTC strings of one format order as their times do.
  const minutes = [...byMinute.values()].sort((a, b) => (a.minute < b.minute ? -1 : a.minute > b.minute ? 1 : 0));
  return minutes.slice(Math.max(0, minutes.length - TREND_MINUTES));
}

/**
 * A sharded tenant's stats: every count added up, `next_sweep_at` the
 * earliest of the objects' (null when none has one), the trend summed
 * minute by minute.
 * @param {readonly LedgerStats[]} all
 * @returns {LedgerStats}
 */
export function sumStats(all) {
  /** @type {Record<string, number | string | null | TrendMinute[]>} */
  const sum = {};
  for (const stats of all) {
    for (const [name, value] of Object.entries(stats)) {
      if (typeof value === "number") sum[name] = /** @type {number} */ (sum[name] ?? 0) + value;
      else if (name === "next_sweep_at") sum[name] = earlier(/** @type {string | null} */ (sum[name] ?? null), /** @type {string | null} */ (value));
    }
  }
  sum.next_sweep_at ??= null;
  sum.trend = sumTrends(all);
  return /** @type {LedgerStats} */ (/** @type {unknown} */ (sum));
}

// ---- a sharded tenant's listing (the one rule, as the gateway's) ----

/** Keys a listing page holds when the call names no `limit` (src/protocol/limits.json DEFAULT_LIST_LIMIT). */
export const LIST_DEFAULT_LIMIT = DEFAULT_LIST_LIMIT;
/** The most keys a listing page may hold (src/protocol/limits.json MAX_LIST_LIMIT). */
export const LIST_MAX_LIMIT = MAX_LIST_LIMIT;

/**
 * Which way a listing walks: `in_flight` oldest first, every other newest first.
 * @typedef {"newest_first" | "oldest_first"} ListWalk
 */

/**
 * `a` against `b` in walk order (negative: `a` comes first), by `sweep_at`, then key.
 * @param {ListWalk} walk
 * @param {ListPosition} a
 * @param {ListPosition} b
 * @returns {number}
 */
function walkOrder(walk, a, b) {
  const index = a.sweep_at !== b.sweep_at ? (a.sweep_at < b.sweep_at ? -1 : 1) : a.key === b.key ? 0 : a.key < b.key ? -1 : 1;
  return walk === "oldest_first" ? index : -index;
}

/**
 * A sharded tenant's listing page from each object's page for the same call (Rust ledger::list
 * `ListPage::merge`; vectors: tests/fixtures/list-merge.json): the keys up to the earliest position
 * an object that is not done stopped at, in walk order, at most `limit`, one record per key (the
 * current layout's while resharding); `next` is that position, or the last key's when the page is full.
 * @param {readonly { page: ListPage; current: boolean }[]} pages
 * @param {number} limit
 * @param {ListWalk} walk
 * @returns {ListPage}
 */
export function mergeListPages(pages, limit, walk) {
  /** @type {ListPosition | null} */
  let bound = null;
  for (const { page } of pages) {
    if (page.next !== null && (bound === null || walkOrder(walk, page.next, bound) < 0)) bound = page.next;
  }
  /** @type {Map<string, { record: ListedRecord; current: boolean }>} */
  const chosen = new Map();
  for (const { page, current } of pages) {
    for (const record of page.keys) {
      if (bound !== null && walkOrder(walk, record, bound) > 0) continue;
      const held = chosen.get(record.key);
      if (held === undefined || (current && !held.current)) chosen.set(record.key, { record, current });
    }
  }
  const keys = [...chosen.values()].map((c) => c.record).sort((a, b) => walkOrder(walk, a, b));
  const max = Math.min(Math.max(1, limit), LIST_MAX_LIMIT);
  if (keys.length > max) {
    keys.length = max;
    const last = keys[max - 1];
    return { keys, next: { sweep_at: last.sweep_at, key: last.key } };
  }
  return { keys, next: bound };
}
