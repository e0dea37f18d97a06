// @ts-check
// The defaults of the middleware and the embedded ledger: the gateway's
// own, as wrangler.toml [vars] publishes them (tests/fixtures/defaults.json
// pins both; the e2e tests compare this object with that fixture), and the
// checks of the options they default.

/**
 * What `withIdempotency`, the Hono middleware, `fingerprint`,
 * `captureResponse` and the embedded `Ledger` (idempotency-ledger/ledger)
 * use when an option is not given, each the gateway's variable of the
 * same meaning.
 */
export const DEFAULTS = Object.freeze({
  /** PROTECTED_METHODS */
  protectedMethods: Object.freeze(["POST", "PATCH"]),
  /** IDEMPOTENCY_REQUIRED */
  required: true,
  /** FINGERPRINT_HEADERS */
  fingerprintHeaders: Object.freeze(["content-type"]),
  /** STORED_RESPONSE_HEADERS */
  storedHeaders: Object.freeze(["content-type", "location", "etag"]),
  /** MAX_STORED_BODY_BYTES */
  maxStoredBodyBytes: 1048576,
  /** IN_FLIGHT_WAIT_SECONDS */
  waitSeconds: 0,
  /** IN_FLIGHT_WAIT_MAX_SECONDS */
  maxWaitSeconds: 10,
  /** MAX_REQUEST_BODY_BYTES */
  maxBodyBytes: 1048576,
  /** FAILURE_POLICY */
  failurePolicy: /** @type {"closed" | "open"} */ ("closed"),
  /** RETENTION_SECONDS (the embedded Ledger's retentionSeconds) */
  retentionSeconds: 86400,
  /** MAX_KEYS_PER_TENANT (the embedded Ledger's maxKeys) */
  maxKeys: 1000000,
  /** MAX_DB_BYTES_PER_OBJECT (the embedded Ledger's maxDbBytes) */
  maxDbBytes: 9000000000,
  /** SWEEP_INTERVAL_SECONDS (the embedded Ledger's sweepIntervalSeconds) */
  sweepIntervalSeconds: 60,
  /** SWEEP_BATCH (the embedded Ledger's sweep and alarm batch) */
  sweepBatch: 500,
});

// The limits below are the core's (their Rust constants are named in each
// comment); tests/fixtures/limits.json pins both languages to one value.

/** Largest stored body: a Durable Object SQLite row holds 2 MB (src/ledger/mod.rs STORED_BODY_CEILING). */
export const STORED_BODY_CEILING = 1900000;

/** The largest request-body limit (src/config/mod.rs MAX_REQUEST_BODY_CEILING). */
export const MAX_BODY_CEILING = 16777216;

/** The longest lease or retention, as RPC v1 bounds them (src/rpc/mod.rs MAX_WINDOW_SECONDS). */
export const MAX_WINDOW_SECONDS = 31536000;

/** The longest wait for an in-flight first run (src/config/waiting.rs MAX_WAIT_SECONDS). */
export const MAX_WAIT_SECONDS = 300;

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
