// @ts-check
// Tenant ids and the one rule that names a tenant's Durable Objects
// (docs/contract.md §2.1; Rust protocol::tenant; shared vectors:
// tests/fixtures/tenants.json). A leaf: ../rpc/client.js and ../rpc/shards.js both use it.

/** A tenant id valid before v1.4: it names its object itself. */
const V13_TENANT_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** The longest tenant id, in UTF-8 bytes. */
export const MAX_TENANT_ID_BYTES = 256;
/** What a valid tenant id is, for messages. */
export const TENANT_RULE = "1-256 bytes of UTF-8 without control characters";
const UNRESERVED = /^[A-Za-z0-9._-]$/;
const encoder = new TextEncoder();
/** A string with one is not UTF-8 (the gateway's ids come from JSON it parses as UTF-8). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Is `tenant` a valid tenant id, as the gateway's: 1–256 bytes of UTF-8 with no control character
 * (U+0000–U+001F, U+007F–U+009F)?
 * @param {unknown} tenant
 * @returns {tenant is string}
 */
export function isTenantId(tenant) {
  if (typeof tenant !== "string" || tenant.length === 0 || LONE_SURROGATE.test(tenant)) return false;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(tenant)) return false;
  return encoder.encode(tenant).length <= MAX_TENANT_ID_BYTES;
}

/**
 * The name of a tenant's (first) object (Rust protocol::tenant `object_base`): a tenant id valid
 * before v1.4 (1–64 of A-Z a-z 0-9 . _ -) names it itself, so existing deployments keep every key;
 * any other is "~" and its UTF-8 bytes, each outside A-Z a-z 0-9 . _ - written %XX (uppercase hex):
 * one name per tenant, never a v1.3 name, never holding the shard suffix's "/".
 * @param {string} tenant a valid tenant id
 * @returns {string}
 */
export function tenantObjectName(tenant) {
  if (V13_TENANT_ID.test(tenant)) return tenant;
  let name = "~";
  for (const b of encoder.encode(tenant)) {
    const c = String.fromCharCode(b);
    name += b < 0x80 && UNRESERVED.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return name;
}

/** A shard's suffix in its one spelling: decimal without a sign or leading zeros (Rust config::shards). */
const SHARD_SUFFIX = /\/shard-(0|[1-9][0-9]*)-of-([1-9][0-9]*)$/;
/** The largest shard count a name can spell (Rust reads the counts as u32). */
const U32_MAX = 0xffff_ffff;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Reads an object name as the objects read their own (Rust config::shards `parse_object_name`): a name ending
 * `/shard-{i}-of-{n}` spelled the one way (`i` and `n` decimal without a sign or leading zeros, `i` < `n`, `n` ≥ 2)
 * is shard `i` of a layout of `n` objects built on `base`, the name before it; any other name is a one-object
 * layout, its own base. So `acme/shard-01-of-2` is not a shard of acme.
 * @param {string} name
 * @returns {{ base: string; index: number; shards: number }}
 */
export function parseObjectName(name) {
  const m = SHARD_SUFFIX.exec(name);
  if (m !== null) {
    const index = Number(m[1]);
    const shards = Number(m[2]);
    if (shards <= U32_MAX && index < shards && shards > 1) return { base: name.slice(0, m.index), index, shards };
  }
  return { base: name, index: 0, shards: 1 };
}

/**
 * The tenant id whose objects are built on `base` (`tenantObjectName(tenant) === base`), or null when no tenant's
 * are: the one rule read backwards, so every tenant's object name has exactly one tenant.
 * @param {string} base
 * @returns {string | null}
 */
export function tenantOfObjectName(base) {
  if (V13_TENANT_ID.test(base)) return base;
  if (!/^~(?:[A-Za-z0-9._-]|%[0-9A-F]{2})+$/.test(base)) return null;
  /** @type {number[]} */
  const bytes = [];
  for (let i = 1; i < base.length; i++) {
    if (base[i] === "%") {
      bytes.push(parseInt(base.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(base.charCodeAt(i));
    }
  }
  let tenant;
  try { tenant = strictUtf8.decode(new Uint8Array(bytes)); } catch { return null; }
  return isTenantId(tenant) && tenantObjectName(tenant) === base ? tenant : null;
}

/**
 * Is `name` the name of one of some tenant's objects, spelled the one way: `tenantObjectName(tenant)`, or a shard's
 * name built on it (`shardObjectName`)? Never a tenant id's test: a tenant id is mapped by `tenantObjectName`, always.
 * @param {string} name
 */
export function isObjectName(name) {
  return typeof name === "string" && tenantOfObjectName(parseObjectName(name).base) !== null;
}

/**
 * The jurisdictions a tenant's objects may be kept in (TENANT_JURISDICTIONS, the `jurisdiction` option;
 * Rust config::jurisdictions): `DurableObjectNamespace.jurisdiction(J)`'s names.
 */
export const JURISDICTIONS = Object.freeze(["eu", "fedramp", "fedramp-high", "us"]);

/**
 * What is wrong with `value` as a jurisdiction, or null when it is one (`eu`, `fedramp`, `fedramp-high`, `us`).
 * @param {unknown} value
 * @returns {string | null}
 */
export function jurisdictionProblem(value) {
  if (typeof value === "string" && JURISDICTIONS.includes(value)) return null;
  return `${JSON.stringify(value) ?? String(value)} is not a jurisdiction (one of ${JURISDICTIONS.join(", ")})`;
}

/**
 * Parses TENANT_JURISDICTIONS exactly as the gateway does (`{"acme-eu": "eu"}`) into tenant → jurisdiction;
 * throws a TypeError naming the tenant and the value.
 * @param {string | null | undefined} raw
 * @returns {Map<string, string>}
 */
export function parseTenantJurisdictions(raw) {
  /** @type {Map<string, string>} */
  const out = new Map();
  if (raw === undefined || raw === null || String(raw).trim() === "") return out;
  let value;
  try { value = JSON.parse(String(raw)); } catch (e) { throw new TypeError(`TENANT_JURISDICTIONS is not valid JSON: ${/** @type {Error} */ (e).message}`); }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new TypeError("TENANT_JURISDICTIONS must be a JSON object of tenant → jurisdiction");
  for (const [tenant, j] of Object.entries(value)) {
    if (!isTenantId(tenant)) throw new TypeError(`TENANT_JURISDICTIONS: ${JSON.stringify(tenant)} is not a valid tenant id (${TENANT_RULE})`);
    const wrong = jurisdictionProblem(j);
    if (wrong !== null) throw new TypeError(`TENANT_JURISDICTIONS: ${JSON.stringify(tenant)}: ${wrong}`);
    out.set(tenant, j);
  }
  return out;
}

/**
 * The namespace whose objects are in `jurisdiction` (`namespace.jurisdiction(J)`), or `namespace` itself when
 * none is given. Throws (a TypeError for a bad value; the runtime's own error where it keeps no jurisdictions —
 * local workerd: "Jurisdiction restrictions are not implemented in workerd"): never the unrestricted namespace
 * for a jurisdiction asked.
 * @template {{ jurisdiction?: unknown }} N
 * @param {N} namespace
 * @param {string | null | undefined} jurisdiction
 * @returns {N}
 */
export function inJurisdiction(namespace, jurisdiction) {
  if (jurisdiction === undefined || jurisdiction === null) return namespace;
  const wrong = jurisdictionProblem(jurisdiction);
  if (wrong !== null) throw new TypeError(wrong);
  if (typeof namespace.jurisdiction !== "function") throw new TypeError("this namespace has no jurisdiction() (not a Durable Object namespace?)");
  return /** @type {N} */ (/** @type {(j: string) => unknown} */ (namespace.jurisdiction).call(namespace, jurisdiction));
}
