// @ts-check
// The middleware's defaults: the gateway's own, as wrangler.toml [vars]
// publishes them (tests/fixtures/defaults.json pins both; the e2e tests
// compare this object with that fixture).

/**
 * What `withIdempotency`, the Hono middleware, `fingerprint` and
 * `captureResponse` use when an option is not given, each the gateway's
 * variable of the same meaning.
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
});

/** Largest stored body: a Durable Object SQLite row holds 2 MB (src/ledger/mod.rs STORED_BODY_CEILING). */
export const STORED_BODY_CEILING = 1900000;

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Whether `list` is an array of HTTP header names (tokens): the check of
 * every option that names headers (fingerprintHeaders, storedHeaders).
 * @param {unknown} list
 * @returns {list is readonly string[]}
 */
export function isHeaderNameList(list) {
  return Array.isArray(list) && list.every((h) => typeof h === "string" && TOKEN.test(h));
}

/**
 * Whether `list` is an array of HTTP method names (tokens): protectedMethods.
 * @param {unknown} list
 * @returns {list is readonly string[]}
 */
export function isMethodList(list) {
  return isHeaderNameList(list);
}
