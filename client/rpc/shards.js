// @ts-check
// A tenant spread over several TenantLedger objects by key hash
// (TENANT_SHARDS; Rust config::shards): where a key lives, the
// operator's map, and the one routing rule for keyed calls while a tenant
// is resharded. Shared vectors: tests/fixtures/shards.json.
import { encoder, sha256 } from "../rules/bytes.js";
import { LedgerClient, LedgerError, PREVIOUS_ASKED_HEADER } from "./client.js";
import { TENANT_RULE, inJurisdiction, isTenantId, parseTenantJurisdictions, tenantObjectName } from "../rules/tenant.js";

import { LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, mergeListPages, sumStats } from "./merge.js";
import { MAX_SHARDS } from "../generated/limits.js";

export { TENANT_RULE, isTenantId };
export { LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, mergeListPages };
/**
 * @import { LedgerNamespace, LedgerServiceRpc, LedgerStats, ClaimCall, CompleteCall, ReleaseCall,
 *   ExecuteCall, ClaimOutcome, CompleteOutcome, ReleaseOutcome, EvictOutcome, ExecuteOutcome, RecordView, WaitedAnswer,
 *   ListCall, ListPage, ListPosition, ListedRecord, TrendMinute } from "./client.js"
 */

export { MAX_SHARDS };
/**
 * One tenant's layout: its shard count, and the previous count while it is being resharded.
 * @typedef {{ shards: number; previous: number | null }} ShardLayout
 */

/** @type {ShardLayout} */
const SINGLE = Object.freeze({ shards: 1, previous: null });

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
 * The Durable Object name of shard `index` of `tenant` (a tenant id) over `shards`: built on its object name
 * (`tenantObjectName`: a v1.3 id itself, any other escaped), that name alone for one shard. Reach it with
 * `LedgerClient.forObject`.
 * @param {string} tenant
 * @param {number} index
 * @param {number} shards
 * @returns {string}
 */
export function shardObjectName(tenant, index, shards) {
  const base = tenantObjectName(tenant);
  return shards <= 1 ? base : `${base}/shard-${index}-of-${shards}`;
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

// The white space Rust's `str::trim` removes around a variable (Unicode
// White_Space): JavaScript's `trim()` differs (it keeps U+0085 and removes U+FEFF).
const EDGE_SPACE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

/**
 * The first number of the JSON text `text` written with a fraction or an
 * exponent (`8.0`, `1e1`), if any: a count is a whole number written as
 * one, as Rust's JSON reader takes it (JSON.parse reads `8.0` as 8).
 * @param {string} text
 * @returns {string | undefined}
 */
function fractionalNumber(text) {
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === "\\") i++;
    } else if (c === "-" || (c >= "0" && c <= "9")) {
      const token = /^[-+0-9.eE]+/.exec(text.slice(i))?.[0] ?? c;
      if (/[.eE]/.test(token)) return token;
      i += token.length - 1;
    }
  }
  return undefined;
}

/**
 * Parses TENANT_SHARDS exactly as the gateway does
 * (`{"acme": 8, "globex": {"shards": 8, "previous": 1}}`) into
 * `tenant → { shards, previous }`; throws a TypeError naming what is wrong.
 * The strings it accepts are the Rust parser's (tests/fixtures/shards.json).
 * @param {string | null | undefined} raw
 * @returns {Map<string, ShardLayout>}
 */
export function parseTenantShards(raw) {
  /** @type {Map<string, ShardLayout>} */
  const out = new Map();
  if (raw === undefined || raw === null) return out;
  const text = String(raw).replace(EDGE_SPACE, "");
  if (text === "") return out;
  let value;
  try { value = JSON.parse(text); } catch (e) { throw new TypeError(`TENANT_SHARDS is not valid JSON: ${/** @type {Error} */ (e).message}`); }
  const fractional = fractionalNumber(text);
  if (fractional !== undefined) throw new TypeError(`TENANT_SHARDS: ${fractional} is not a whole number written as one (counts are 1..=${MAX_SHARDS})`);
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new TypeError("TENANT_SHARDS must be a JSON object of tenant → shard count");
  for (const [tenant, v] of Object.entries(value)) {
    if (!isTenantId(tenant)) throw new TypeError(`TENANT_SHARDS: ${JSON.stringify(tenant)} is not a valid tenant id`);
    out.set(tenant, layoutOf(tenant, v));
  }
  return out;
}

// ---- routing keyed calls (the one rule, as the gateway's) ----

/**
 * A key's object in the current layout and, while the tenant is resharded, its object in the previous one.
 * @typedef {{ current: LedgerClient; previous: LedgerClient | null }} KeyHomes
 */

/**
 * The key's object of `tenant` in `layout` (and in its previous layout while resharding).
 * @param {LedgerNamespace} namespace
 * @param {string} tenant
 * @param {string} key
 * @param {ShardLayout} [layout] default: one object
 * @returns {Promise<KeyHomes>}
 */
async function keyHomes(namespace, tenant, key, layout = SINGLE) {
  /** @param {number} n */
  const home = async (n) => LedgerClient.forObject(namespace, shardObjectName(tenant, n <= 1 ? 0 : await shardOf(String(key), n), n));
  const current = await home(layout.shards);
  if (layout.previous === null) return { current, previous: null };
  return { current: askedPrevious(current, layout.previous), previous: await home(layout.previous) };
}

/**
 * `client`, telling the object with every call that the previous layout (of `previous` objects) was
 * asked first ({@link routeKeyed} always asks it first): that object then does not ask it again. Any
 * other caller's call is checked there by the object itself, whatever its configuration says.
 * @param {LedgerClient} client
 * @param {number} previous
 * @returns {LedgerClient}
 */
function askedPrevious(client, previous) {
  const { stub } = client;
  return new LedgerClient({
    fetch(input, init = {}) {
      const headers = new Headers(init.headers);
      headers.set(PREVIOUS_ASKED_HEADER, String(previous));
      return stub.fetch(input, { ...init, headers });
    },
  });
}

/**
 * Runs one keyed call (claim, complete, release, execute) by the routing
 * rule: while resharding it goes first to the key's object in the previous
 * layout, which answers for the keys it holds; its `421
 * idempotency-key-moved` sends the call to the key's object in the
 * current layout. Any other error is the answer.
 * @template T
 * @param {KeyHomes} homes
 * @param {(ledger: LedgerClient) => Promise<T>} call
 * @returns {Promise<T>}
 */
async function routeKeyed(homes, call) {
  if (homes.previous !== null) {
    try {
      return await call(homes.previous);
    } catch (e) {
      if (!(e instanceof LedgerError && e.status === 421)) throw e;
    }
  }
  return call(homes.current);
}

/**
 * Every tenant's ledger behind one TenantLedger namespace binding, routed
 * as the gateway routes it: `new TenantLedgers(env.TENANT_LEDGER,
 * env.TENANT_SHARDS)`, then `claim("acme", call)`, … A tenant not in
 * TENANT_SHARDS is one object, named by the one rule (`shardObjectName(tenant, 0, 1)`). Every method takes a
 * tenant id, never an object's name (a TypeError otherwise); keyed calls follow
 * {@link routeKeyed}; `lookup` answers the previous layout's record if it
 * has one, else the current's, and `evict` removes it where it is; `stats` is summed over every object of both
 * layouts; `list` merges every object's page ({@link mergeListPages}). `LedgerService` of the deployed script is this class over RPC.
 * @implements {LedgerServiceRpc}
 */
export class TenantLedgers {
  /** @type {LedgerNamespace} */
  #namespace;
  /** @type {Map<string, ShardLayout>} */
  #layouts;
  /** @type {Map<string, string>} */
  #jurisdictions;

  /**
   * @param {LedgerNamespace} namespace the TenantLedger Durable Object namespace
   * @param {string | Map<string, ShardLayout> | null} [tenantShards] TENANT_SHARDS (raw, or parsed by
   *   `parseTenantShards`); absent: every tenant is one object. A TypeError when invalid.
   * @param {string | Map<string, string> | null} [tenantJurisdictions] TENANT_JURISDICTIONS (raw JSON, or
   *   tenant → jurisdiction, each checked when used): every object of such a tenant is `namespace.jurisdiction(J)`'s. A TypeError when
   *   invalid; absent: every tenant unrestricted.
   */
  constructor(namespace, tenantShards, tenantJurisdictions) {
    if (namespace === null || typeof namespace !== "object" || typeof namespace.get !== "function" || typeof namespace.idFromName !== "function") {
      throw new TypeError("TenantLedgers needs a TenantLedger Durable Object namespace");
    }
    this.#namespace = namespace;
    this.#layouts = tenantShards instanceof Map ? tenantShards : parseTenantShards(tenantShards);
    this.#jurisdictions = tenantJurisdictions instanceof Map ? tenantJurisdictions : parseTenantJurisdictions(tenantJurisdictions);
  }

  /**
   * The namespace of the tenant's objects: its jurisdiction's, if TENANT_JURISDICTIONS names one.
   * @param {string} tenant
   * @returns {LedgerNamespace}
   */
  #objectsOf(tenant) {
    return inJurisdiction(this.#namespace, this.#jurisdictions.get(tenant));
  }

  /**
   * The tenant's layout (one object unless TENANT_SHARDS names it).
   * @param {string} tenant
   * @returns {ShardLayout}
   */
  layout(tenant) {
    if (!isTenantId(tenant)) throw new TypeError(`tenant must be ${TENANT_RULE}`);
    return this.#layouts.get(tenant) ?? SINGLE;
  }

  /**
   * The key's object (and its previous layout's while resharding).
   * @param {string} tenant
   * @param {string} key
   * @returns {Promise<KeyHomes>}
   */
  #homes(tenant, key) {
    return keyHomes(this.#objectsOf(tenant), tenant, key, this.layout(tenant));
  }

  /** @param {string} tenant @param {ClaimCall} call @returns {Promise<ClaimOutcome & WaitedAnswer>} */
  async claim(tenant, call) {
    return routeKeyed(await this.#homes(tenant, call?.key), (ledger) => ledger.claim(call));
  }

  /** @param {string} tenant @param {CompleteCall} call @returns {Promise<CompleteOutcome>} */
  async complete(tenant, call) {
    return routeKeyed(await this.#homes(tenant, call?.key), (ledger) => ledger.complete(call));
  }

  /** @param {string} tenant @param {ReleaseCall} call @returns {Promise<ReleaseOutcome>} */
  async release(tenant, call) {
    return routeKeyed(await this.#homes(tenant, call?.key), (ledger) => ledger.release(call));
  }

  /** @param {string} tenant @param {string} key @returns {Promise<RecordView | null>} */
  async lookup(tenant, key) {
    const { current, previous } = await this.#homes(tenant, key);
    return (previous === null ? null : await previous.lookup(key)) ?? current.lookup(key);
  }

  /**
   * Removes the key's record so its next claim runs again (docs/contract.md §2.11): while the
   * tenant is resharded, from the key's object in the previous layout if it holds it, else from
   * its current one (as the gateway does).
   * @param {string} tenant @param {string} key @returns {Promise<EvictOutcome>}
   */
  async evict(tenant, key) {
    const { current, previous } = await this.#homes(tenant, key);
    if (previous !== null) {
      const out = await previous.evict(key);
      if (out.outcome !== "not_found") return out;
    }
    return current.evict(key);
  }

  /**
   * One page of the tenant's keys, merged over its objects in one order; pass its `next` as `after`
   * (with the same `state`) for the next page.
   * @param {string} tenant @param {ListCall} [call] @returns {Promise<ListPage>}
   */
  async list(tenant, call = {}) {
    const objects = this.#objects(tenant);
    if (objects.length === 1) return this.#object(tenant, objects[0].name).list(call);
    const pages = await Promise.all(objects.map(async ({ name, current }) => ({ page: await this.#object(tenant, name).list(call), current })));
    return mergeListPages(pages, call.limit ?? LIST_DEFAULT_LIMIT, call.state === "in_flight" ? "oldest_first" : "newest_first");
  }

  /** @param {string} tenant @returns {Promise<LedgerStats>} */
  async stats(tenant) {
    const objects = this.#objects(tenant);
    if (objects.length === 1) return this.#object(tenant, objects[0].name).stats();
    return sumStats(await Promise.all(objects.map(({ name }) => this.#object(tenant, name).stats())));
  }

  /**
   * Every object of the tenant's current layout and, while resharding, of its previous one.
   * @param {string} tenant
   * @returns {{ name: string; current: boolean }[]}
   */
  #objects(tenant) {
    const { shards, previous } = this.layout(tenant);
    if (shards <= 1 && previous === null) return [{ name: shardObjectName(tenant, 0, 1), current: true }];
    const objects = [];
    for (const [n, current] of /** @type {const} */ ([[shards, true], [previous, false]])) {
      if (n !== null) for (let i = 0; i < n; i++) objects.push({ name: shardObjectName(tenant, i, n), current });
    }
    return objects;
  }

  /**
   * `execute` (claim + the embedded orders app + complete, one transaction):
   * unsharded tenants only, since their orders must commit with one ledger.
   * @param {string} tenant @param {ExecuteCall} call @returns {Promise<ExecuteOutcome & WaitedAnswer>}
   */
  async execute(tenant, call) {
    const { shards, previous } = this.layout(tenant);
    if (shards > 1 || previous !== null) {
      throw new TypeError("execute is not available for a sharded tenant (its orders must commit with one ledger)");
    }
    return this.#object(tenant, shardObjectName(tenant, 0, 1)).execute(call);
  }

  /** @param {string} tenant @param {string} name one of its objects' names (`shardObjectName`), never the tenant id */
  #object(tenant, name) {
    return LedgerClient.forObject(this.#objectsOf(tenant), name);
  }
}
