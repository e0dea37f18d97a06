// @ts-check
// Stored responses: what the ledger keeps of a first run's answer and how
// a replay gives it back (Rust protocol::response).
import { DEFAULTS } from "./defaults.js";
import { concat, fromBase64, toBase64 } from "./bytes.js";
import { problemResponse } from "./problems.js";
import { readChunks } from "./request.js";
import { NULL_BODY_STATUSES } from "../generated/limits.js";

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

/** Statuses whose responses carry no body (src/protocol/limits.json NULL_BODY_STATUSES). */
export const NULL_BODY = new Set(NULL_BODY_STATUSES);

/**
 * The allowlisted headers of a response, lowercase (never set-cookie).
 * @param {Response} response
 * @param {readonly string[]} storedHeaders
 * @returns {[string, string][]}
 */
function headersToStore(response, storedHeaders) {
  const allow = storedHeaders.map((h) => h.toLowerCase()).filter((h) => h !== "set-cookie");
  /** @type {[string, string][]} */
  const headers = [];
  for (const [name, value] of response.headers) if (allow.includes(name.toLowerCase())) headers.push([name.toLowerCase(), value]);
  return headers;
}

/**
 * Captures what a replay needs from a Response (consumes its body; pass a
 * clone if you still need it): status, allowlisted headers (never
 * set-cookie) and the body as base64, or null (a tombstone) when larger
 * than maxStoredBodyBytes — read no further than that (the rest is
 * cancelled). Rejects when the body breaks off before it. To store a
 * response *and* pass it on without a clone, see `captureBounded`.
 * @param {Response} response
 * @param {CaptureOptions} [options]
 * @returns {Promise<StoredResponse>}
 */
export async function captureResponse(response, { storedHeaders = DEFAULTS.storedHeaders, maxStoredBodyBytes = DEFAULTS.maxStoredBodyBytes } = {}) {
  const headers = headersToStore(response, storedHeaders);
  if (NULL_BODY.has(response.status) || response.body === null) return { status: response.status, headers, body: toBase64(new Uint8Array()) };
  const reader = response.body.getReader();
  const read = await readChunks(reader, maxStoredBodyBytes);
  if ("error" in read) throw read.error;
  if (!read.ended) reader.cancel().catch(() => { /* a tombstone: the rest is not needed */ });
  return { status: response.status, headers, body: read.ended ? toBase64(concat(read.chunks)) : null };
}

/**
 * What `captureBounded` gives: what to store, and the response to hand on
 * in place of the one captured (whose body it has taken).
 * @typedef {object} BoundedCapture
 * @property {StoredResponse} stored The response to complete the key with (`body` null: a tombstone).
 * @property {Response} response The same status, status text, headers and body bytes, to answer the caller with.
 * @property {boolean} streaming True when the body passed maxStoredBodyBytes: `response` streams the rest of it as it comes.
 */

/**
 * Captures a response to store while keeping it for its caller, reading
 * its body with its own reader (no clone, no tee) no further than
 * `maxStoredBodyBytes` + 1 bytes:
 * - a body that ends within the cap is stored, and `response` answers
 *   those bytes with the original's status, status text and headers;
 * - a body that passes the cap is a tombstone (status and headers kept,
 *   body null), and `response` streams the bytes already read then the
 *   rest of the original body as the caller reads it (pull-based,
 *   highWaterMark 0: nothing more is read than the caller takes; the
 *   caller cancelling it cancels the original body), so memory stays
 *   bounded by the cap plus a chunk whatever the body's size;
 * - a body that breaks off within the cap is a tombstone too, and
 *   `response` gives the bytes that came, then the same error.
 * A null body (and 204, 205, 304) is stored empty and `response` is the
 * original. Rejects only when the body cannot be read at all (already used).
 * @param {Response} response
 * @param {CaptureOptions} [options]
 * @returns {Promise<BoundedCapture>}
 */
export async function captureBounded(response, { storedHeaders = DEFAULTS.storedHeaders, maxStoredBodyBytes = DEFAULTS.maxStoredBodyBytes } = {}) {
  const { status } = response;
  const headers = headersToStore(response, storedHeaders);
  if (NULL_BODY.has(status) || response.body === null) {
    return { stored: { status, headers, body: toBase64(new Uint8Array()) }, response, streaming: false };
  }
  const reader = response.body.getReader();
  const read = await readChunks(reader, maxStoredBodyBytes);
  if ("ended" in read && read.ended) {
    const bytes = concat(read.chunks);
    return { stored: { status, headers, body: toBase64(bytes) }, response: new Response(bytes, response), streaming: false };
  }
  const tombstone = { status, headers, body: null };
  const rest = "error" in read ? { error: read.error } : { reader };
  return { stored: tombstone, response: new Response(resumed(read.chunks, rest), response), streaming: !("error" in read) };
}

/**
 * A pull-based stream (highWaterMark 0) of the chunks already read, then
 * the rest of `reader` as it is asked for — or `error` once they are out.
 * Each chunk is let go once handed on. Cancelling it cancels `reader`.
 * @param {Uint8Array[]} chunks
 * @param {{ reader: ReadableStreamDefaultReader<Uint8Array> } | { error: unknown }} rest
 * @returns {ReadableStream<Uint8Array>}
 */
function resumed(chunks, rest) {
  return new ReadableStream({
    async pull(controller) {
      const next = chunks.shift();
      if (next !== undefined) return controller.enqueue(next);
      if ("error" in rest) return controller.error(rest.error);
      const { done, value } = await rest.reader.read(); // a rejection errors this stream with the same reason
      if (done) controller.close(); else controller.enqueue(value);
    },
    cancel(reason) {
      chunks.length = 0;
      if ("reader" in rest) return rest.reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

/**
 * A Response replaying a stored response, marked `Idempotent-Replayed: true`
 * and `X-Should-Retry: false` (the answer is final: a retry gets it again);
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
  headers.set("x-should-retry", "false");
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
