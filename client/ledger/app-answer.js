// @ts-check
// idempotency-ledger/ledger's answers (./ledger.js): what your function
// returns, checked and normalised into the shape the core stores (a
// Promise, a Response or a status out of 200..599 refused with a
// TypeError, inside the transaction), what `handle` gives it, and the
// Response a `ran` outcome is answered with.
import { encoder } from "../rules/bytes.js";
import { NULL_BODY } from "../rules/stored.js";
/** @import { AppAnswer, HandledRequest, RanResponse } from "./ledger.js" */

/**
 * The function's answer in the shape Rust embedded::app reads:
 * `[status, [name, value, …], body]`.
 * @param {AppAnswer} answer
 * @returns {{ wire: [number, string[], Uint8Array]; given: RanResponse; headers: Headers }}
 */
export function normalized(answer) {
  if (answer === null || typeof answer !== "object") {
    throw new TypeError("idempotency-ledger: run must return { status, headers, body | json } (synchronously)");
  }
  if (typeof (/** @type {{ then?: unknown }} */ (answer).then) === "function") {
    throw new TypeError("idempotency-ledger: run must be synchronous (it returned a Promise): a transaction cannot span an await");
  }
  if (answer instanceof Response || typeof (/** @type {{ arrayBuffer?: unknown }} */ (answer).arrayBuffer) === "function") {
    throw new TypeError("idempotency-ledger: run must return { status, headers, body | json }, not a Response: its body can only be read asynchronously, and a transaction cannot span an await");
  }
  const status = answer.status ?? 200;
  // The core's own check of a stored status (Rust embedded::app run_app), made
  // here too so an unprotected run's answer is refused inside its transaction.
  if (typeof status !== "number" || !Number.isInteger(status) || status < 200 || status > 599) {
    throw new TypeError("idempotency-ledger: the status must be a whole number 200..599");
  }
  const headers = new Headers(/** @type {HeadersInit | undefined} */ (answer.headers));
  /** @type {Uint8Array} */
  let body;
  if (answer.json !== undefined) {
    const text = JSON.stringify(answer.json);
    if (typeof text !== "string") throw new TypeError("idempotency-ledger: json must be a value JSON can encode");
    body = encoder.encode(text);
    if (!headers.has("content-type")) headers.set("content-type", "application/json");
  } else if (answer.body === undefined || answer.body === null) {
    body = new Uint8Array();
  } else if (typeof answer.body === "string") {
    body = encoder.encode(answer.body);
  } else if (answer.body instanceof Uint8Array) {
    body = answer.body;
  } else if (answer.body instanceof ArrayBuffer) {
    body = new Uint8Array(answer.body);
  } else {
    throw new TypeError("idempotency-ledger: body must be a string, Uint8Array or ArrayBuffer");
  }
  /** @type {[string, string][]} */
  const pairs = [...headers];
  return { wire: [status, pairs.flat(), body], given: { status, headers: pairs, body }, headers };
}

/**
 * @param {string | null} key
 * @param {Uint8Array} body
 * @returns {HandledRequest}
 */
export function handled(key, body) {
  const text = () => new TextDecoder().decode(body);
  return { key, body, text, json: () => JSON.parse(text()) };
}

/**
 * @param {RanResponse} r
 * @param {Headers} [headers] r's headers, already made
 */
export function ranResponse(r, headers) {
  return new Response(NULL_BODY.has(r.status) ? null : /** @type {Uint8Array<ArrayBuffer>} */ (r.body), { status: r.status, headers: headers ?? r.headers });
}
