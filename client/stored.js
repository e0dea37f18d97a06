// @ts-check
// Stored responses: what the ledger keeps of a first run's answer and how
// a replay gives it back (src/protocol/response.rs).
import { DEFAULTS } from "./defaults.js";
import { fromBase64, toBase64 } from "./bytes.js";
import { problemResponse } from "./problems.js";

/**
 * What the ledger keeps of a response. `body` is base64; null marks a tombstone.
 * @typedef {object} StoredResponse
 * @property {number} status
 * @property {[string, string][]} headers Lowercase header name/value pairs; never set-cookie.
 * @property {string | null} body
 */

/**
 * @typedef {object} CaptureOptions
 * @property {readonly string[]} [storedHeaders] Default `["content-type", "location", "etag"]`.
 * @property {number} [maxStoredBodyBytes] Default 1 MiB; a larger body is stored as a tombstone.
 */

const NULL_BODY = new Set([204, 205, 304]);

/**
 * Captures what a replay needs from a Response (consumes its body; pass a
 * clone if you still need it): status, allowlisted headers (never
 * set-cookie) and the body as base64, or null (a tombstone) when larger
 * than maxStoredBodyBytes.
 * @param {Response} response
 * @param {CaptureOptions} [options]
 * @returns {Promise<StoredResponse>}
 */
export async function captureResponse(response, { storedHeaders = DEFAULTS.storedHeaders, maxStoredBodyBytes = DEFAULTS.maxStoredBodyBytes } = {}) {
  const allow = storedHeaders.map((h) => h.toLowerCase()).filter((h) => h !== "set-cookie");
  /** @type {[string, string][]} */
  const headers = [];
  for (const [name, value] of response.headers) if (allow.includes(name.toLowerCase())) headers.push([name.toLowerCase(), value]);
  const bytes = NULL_BODY.has(response.status) ? new Uint8Array() : new Uint8Array(await response.arrayBuffer());
  return { status: response.status, headers, body: bytes.length > maxStoredBodyBytes ? null : toBase64(bytes) };
}

/**
 * A Response replaying a stored response, marked `Idempotent-Replayed: true`;
 * a tombstone answers `500 idempotency-response-not-retained` (with the
 * original status), as the gateway does; `options.problemBase` replaces the
 * catalog's base of that problem's `type`.
 * @param {StoredResponse} stored
 * @param {{ problemBase?: string }} [options]
 * @returns {Response}
 */
export function replayResponse(stored, { problemBase } = {}) {
  if (stored.body === null) {
    return problemResponse("idempotency-response-not-retained", {
      base: problemBase,
      extensions: { original_status: stored.status },
      headers: { "idempotent-replayed": "true" },
    });
  }
  const headers = new Headers(stored.headers);
  headers.set("idempotent-replayed", "true");
  const body = NULL_BODY.has(stored.status) ? null : fromBase64(stored.body);
  return new Response(body, { status: stored.status, headers });
}

/**
 * Decodes a stored response body to bytes (null for a tombstone).
 * @param {StoredResponse} stored
 * @returns {Uint8Array | null}
 */
export function storedBodyBytes(stored) {
  return stored.body === null ? null : fromBase64(stored.body);
}
