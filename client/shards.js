// @ts-check
// A tenant spread over several TenantLedger objects by key hash
// (TENANT_SHARDS; src/contract/shards.rs): where a key lives and the
// operator's map. Shared vectors: tests/fixtures/shards.json.
import { encoder, sha256 } from "./bytes.js";

/** The most objects one tenant may be spread over. */
export const MAX_SHARDS = 128;
const TENANT_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * One tenant's layout: its shard count, and the previous count while it is being resharded.
 * @typedef {{ shards: number; previous: number | null }} ShardLayout
 */

/**
 * Is `tenant` a valid tenant id (1–64 of A-Z a-z 0-9 . _ -), as the gateway's?
 * @param {unknown} tenant
 * @returns {tenant is string}
 */
export function isTenantId(tenant) {
  return typeof tenant === "string" && TENANT_ID.test(tenant);
}

/**
 * The shard of `key` among `shards`: the first 8 bytes of SHA-256(key), big-endian, modulo N (as the gateway).
 * @param {string} key
 * @param {number} shards
 * @returns {Promise<number>}
 */
export async function shardOf(key, shards) {
  const digest = await sha256(encoder.encode(key));
  let n = 0n;
  for (const b of digest.subarray(0, 8)) n = (n << 8n) | BigInt(b);
  return Number(n % BigInt(Math.max(1, shards)));
}

/**
 * The Durable Object name of shard `index` of `tenant` over `shards` (the tenant itself for one shard).
 * @param {string} tenant
 * @param {number} index
 * @param {number} shards
 * @returns {string}
 */
export function shardObjectName(tenant, index, shards) {
  return shards <= 1 ? tenant : `${tenant}/shard-${index}-of-${shards}`;
}

/**
 * @param {unknown} v
 * @param {string} what
 * @returns {number}
 */
function shardCount(v, what) {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > MAX_SHARDS) {
    throw new TypeError(`TENANT_SHARDS: ${what} must be a whole number 1..=${MAX_SHARDS}`);
  }
  return v;
}

/**
 * One tenant's entry of TENANT_SHARDS: a count, or `{ shards, previous? }`.
 * @param {string} tenant
 * @param {unknown} v
 * @returns {ShardLayout}
 */
function layoutOf(tenant, v) {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return { shards: shardCount(v, tenant), previous: null };
  const extra = Object.keys(v).find((k) => k !== "shards" && k !== "previous");
  if (extra !== undefined) throw new TypeError(`TENANT_SHARDS: ${tenant}: unknown field ${JSON.stringify(extra)}`);
  const entry = /** @type {{ shards?: unknown; previous?: unknown }} */ (v);
  const shards = shardCount(entry.shards, `${tenant}.shards`);
  const previous = entry.previous === undefined ? null : shardCount(entry.previous, `${tenant}.previous`);
  if (previous === shards) throw new TypeError(`TENANT_SHARDS: ${tenant}: previous equals shards`);
  return { shards, previous };
}

/**
 * Parses TENANT_SHARDS exactly as the gateway does
 * (`{"acme": 8, "globex": {"shards": 8, "previous": 1}}`) into
 * `tenant → { shards, previous }`; throws a TypeError naming what is wrong.
 * @param {string | null | undefined} raw
 * @returns {Map<string, ShardLayout>}
 */
export function parseTenantShards(raw) {
  /** @type {Map<string, ShardLayout>} */
  const out = new Map();
  if (raw === undefined || raw === null || String(raw).trim() === "") return out;
  let value;
  try { value = JSON.parse(String(raw)); } catch (e) { throw new TypeError(`TENANT_SHARDS is not valid JSON: ${/** @type {Error} */ (e).message}`); }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new TypeError("TENANT_SHARDS must be a JSON object of tenant → shard count");
  for (const [tenant, v] of Object.entries(value)) {
    if (!isTenantId(tenant)) throw new TypeError(`TENANT_SHARDS: ${JSON.stringify(tenant)} is not a valid tenant id`);
    out.set(tenant, layoutOf(tenant, v));
  }
  return out;
}
