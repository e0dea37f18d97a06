// @ts-check
// The defaults of the middleware and the embedded ledger: the gateway's
// own, generated from their one home, src/config/defaults.json
// (../generated/defaults.js, by scripts/generate.mjs), and the checks of the
// options they default.
import { DEFAULTS } from "../generated/defaults.js";

export { DEFAULTS };

// The limits the options are held to: the core's, generated from their one
// home, src/protocol/limits.json (../generated/limits.js).
export {
  STORED_BODY_CEILING, MAX_WINDOW_SECONDS, MAX_WAIT_SECONDS, MAX_REQUEST_BODY_CEILING as MAX_BODY_CEILING,
} from "../generated/limits.js";

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * A whole-number option within min..max, or a TypeError naming it: the
 * check of every numeric option of the middleware and the embedded ledger.
 * @param {string} who What the option belongs to ("idempotency middleware", "idempotency-ledger").
 * @param {string} name
 * @param {unknown} value
 * @param {number} min
 * @param {number} max
 * @returns {number}
 */
export function wholeOption(who, name, value, min, max) {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new TypeError(`${who}: ${name} must be a whole number ${min}..${max}`);
  }
  return value;
}

/**
 * An option naming HTTP tokens (header or method names), or a TypeError
 * naming it (fingerprintHeaders, storedHeaders, protectedMethods).
 * @param {string} who What the option belongs to.
 * @param {string} name
 * @param {unknown} list
 * @param {"header" | "method"} [what]
 * @returns {readonly string[]}
 */
export function tokenListOption(who, name, list, what = "header") {
  if (!Array.isArray(list) || !list.every((h) => typeof h === "string" && TOKEN.test(h))) {
    throw new TypeError(`${who}: ${name} must be an array of ${what} names`);
  }
  return list;
}

/**
 * What other idempotency libraries call their options, and what ours are
 * called (or why there is none): a team migrating with their options
 * object learns the name here instead of running with defaults it did not
 * choose (docs/migrating.md). `null` maps the name to no option of ours.
 * @type {Readonly<Record<string, { ours: string | null; why: string }>>}
 */
export const FOREIGN_OPTIONS = Object.freeze({
  store: { ours: "ledger", why: "the ledger is the store: a LedgerClient, a LedgerService binding or a TenantLedger namespace" },
  scope: { ours: "tenant", why: "records are kept per tenant" },
  prefix: { ours: "tenant", why: "records are kept per tenant, never shared across tenants" },
  cacheKeyPrefix: { ours: "tenant", why: "records are kept per tenant, never shared across tenants" },
  dangerouslyAllowGlobalKeys: { ours: "tenant", why: "every record belongs to a tenant" },
  ttl: { ours: "retentionSeconds", why: "how long a completed key is replayed, in whole seconds" },
  cacheTTLMS: { ours: "retentionSeconds", why: "how long a completed key is replayed, in whole seconds" },
  lease: { ours: "leaseSeconds", why: "how long a claim holds, in whole seconds" },
  methods: { ours: "protectedMethods", why: "the methods that are protected" },
  maxBodySize: { ours: "maxBodyBytes", why: "the largest request body" },
  enforceIdempotency: { ours: "required", why: "whether a protected request must carry a key" },
  onCacheHit: { ours: "onReplayed", why: "called when a stored response is answered" },
  onCacheMiss: { ours: "onStored", why: "called once the first run's response is stored" },
  problems: { ours: "problemBase", why: "refusals are RFC 9457 problems whose type is problemBase + slug" },
  onError: { ours: "problemBase", why: "refusals are RFC 9457 problems whose type is problemBase + slug; shape them in your app after the middleware" },
  inProgressStrategy: { ours: "waitSeconds", why: "a retry of an in-flight key waits this long for the first answer, else 409" },
  skipRequest: { ours: "protectedMethods", why: "mount the middleware on the routes to protect; only protectedMethods are claimed" },
  headerName: { ours: "key", why: "a header name, or a function returning the key" },
  idempotencyKey: { ours: "key", why: "a header name, or a function returning the key" },
  maxKeyLength: { ours: null, why: "a key is 1-255 printable ASCII characters, as the gateway's" },
  keyMaxLength: { ours: null, why: "a key is 1-255 printable ASCII characters, as the gateway's" },
  fingerprint: { ours: "fingerprintHeaders", why: "the fingerprint is the method, the target, these headers and the raw body" },
  getKey: { ours: "key", why: "a header name, or a function returning the key" },
});

/**
 * The edit distance of two option names (case folded), for "did you mean".
 * @param {string} a
 * @param {string} b
 */
function distance(a, b) {
  a = a.toLowerCase();
  b = b.toLowerCase();
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}

/**
 * The options object of `who`, or a TypeError: not a plain object, or an
 * own name that is not one of `known` — naming it, the nearest known name
 * and, for a name another library uses, what ours is called. Every options
 * object of the package is checked here when it is made, so a typo never
 * runs a route with defaults its author did not choose.
 * @template {object} T
 * @param {string} who What the options belong to ("idempotency middleware", "idempotency-ledger").
 * @param {T | undefined | null} options
 * @param {readonly string[]} known
 * @returns {T}
 */
export function knownOptions(who, options, known) {
  if (options === undefined || options === null) return /** @type {T} */ ({});
  if (typeof options !== "object" || Array.isArray(options)) throw new TypeError(`${who}: options must be an object`);
  for (const name of Object.keys(options)) {
    if (known.includes(name)) continue;
    let hint = "";
    const foreign = Object.hasOwn(FOREIGN_OPTIONS, name) ? FOREIGN_OPTIONS[name] : undefined;
    if (foreign !== undefined && (foreign.ours === null || known.includes(foreign.ours))) {
      hint = foreign.ours === null ? ` (${foreign.why})` : ` (ours is "${foreign.ours}": ${foreign.why})`;
    } else {
      const near = known
        .map((k) => ({ k, d: distance(name, k) }))
        .filter(({ k, d }) => d <= Math.max(2, Math.floor(k.length / 4)))
        .sort((x, y) => x.d - y.d)[0];
      if (near !== undefined) hint = ` (did you mean "${near.k}"?)`;
    }
    const known_ = known.map((k) => `"${k}"`).join(", ");
    throw new TypeError(`${who}: unknown option "${name}"${hint}; the options are ${known_}`);
  }
  return options;
}
