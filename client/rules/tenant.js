// @ts-check
// Tenant ids and the one rule that names a tenant's Durable Objects
// (docs/contract.md §2.1; src/protocol/tenant.rs; shared vectors:
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
 * The name of a tenant's (first) object (src/protocol/tenant.rs `object_base`): a tenant id valid
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

/**
 * Is `name` one `tenantObjectName` makes, or a shard's name built on one (`shardObjectName`)?
 * @param {string} name
 */
export function isObjectName(name) {
  const base = /^(.*)\/shard-[0-9]+-of-[0-9]+$/.exec(name)?.[1] ?? name;
  return V13_TENANT_ID.test(base) || /^~(?:[A-Za-z0-9._-]|%[0-9A-F]{2})+$/.test(base);
}
