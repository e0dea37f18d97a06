// @ts-check
// A protected request's inputs as the gateway reads them, for the
// middleware (./contract.js) and the embedded ledger (./ledger.js): its
// Idempotency-Key (docs/contract.md §2.3) and its body, bounded as the
// gateway bounds it (MAX_REQUEST_BODY_BYTES, §2.4), each with the
// gateway's problem answer when it cannot be had. What must stay true: a
// larger Content-Length is refused before anything is read; a body is read
// chunk by chunk whatever its Content-Length says (a Request made in the
// isolate may carry any header over any stream) and refused as soon as it
// passes the limit, so nothing beyond it is ever buffered. Internal: not
// re-exported by the package.
import { concat } from "./bytes.js";
import { IdempotencyKeyError, parseIdempotencyKey } from "./key.js";
import { problemResponse } from "./problems.js";

/**
 * Does the request declare (Content-Length) a body larger than `limit`?
 * A field that is not a plain decimal number declares nothing (the bytes
 * read are still counted).
 * @param {Headers} headers
 * @param {number} limit
 * @returns {boolean}
 */
export function declaredTooLarge(headers, limit) {
  const field = headers.get("content-length")?.trim();
  return field !== undefined && /^[0-9]+$/.test(field) && Number(field) > limit;
}

/**
 * The request's body bounded by `limit`: its bytes, or null as soon as
 * more than `limit` arrived (the rest is cancelled, never buffered).
 * Rejects when the body cannot be read to its end, or when it is longer or
 * shorter than a Content-Length it declares. The caller checks
 * `declaredTooLarge` first.
 * @param {Request} request
 * @param {number} limit
 * @returns {Promise<Uint8Array | null>}
 */
export async function readBody(request, limit) {
  if (request.body === null) return new Uint8Array();
  const field = request.headers.get("content-length")?.trim();
  const declared = field !== undefined && /^[0-9]+$/.test(field) ? Number(field) : null;
  const reader = request.body.getReader();
  /** @type {Uint8Array[]} */
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      if (declared !== null && size !== declared) throw new Error(`the body is ${size} bytes, its Content-Length says ${declared}`);
      return concat(chunks);
    }
    size += value.byteLength;
    if (declared !== null && size > declared) {
      reader.cancel().catch(() => { /* over its declared length: what the sender does next is not ours */ });
      throw new Error(`the body is longer than its Content-Length (${declared})`);
    }
    if (size > limit) {
      reader.cancel().catch(() => { /* already over: what the sender does next is not ours */ });
      return null;
    }
    chunks.push(value);
  }
}

/**
 * The request's Idempotency-Key, parsed by the gateway's rules, or the
 * gateway's answer when it has none (and one is required) or an invalid
 * one; null: no key, and none required (run unprotected).
 * @param {Request} request
 * @param {boolean} required
 * @param {string} [base] The problem documents' base (`problemBase`).
 * @returns {{ key: string } | { answer: Response } | null}
 */
export function requestKey(request, required, base) {
  const field = request.headers.get("idempotency-key");
  if (field === null) {
    return required ? { answer: problemResponse("idempotency-key-missing", { base, args: { method: request.method } }) } : null;
  }
  try {
    return { key: parseIdempotencyKey(field) };
  } catch (e) {
    if (e instanceof IdempotencyKeyError) return { answer: problemResponse("idempotency-key-invalid", { base, detail: e.message }) };
    throw e;
  }
}

/**
 * The request's body within `limit`, or the gateway's answer: `413
 * request-too-large` for a larger declared length (nothing read) or more
 * bytes read, `400 request-body-unreadable` for a body that cannot be read.
 * @param {Request} request
 * @param {number} limit
 * @param {string} [base] The problem documents' base (`problemBase`).
 * @param {(limit: number) => Promise<Uint8Array | null>} [read] How to read it (default `readBody`; a framework may keep its own copy).
 * @returns {Promise<{ body: Uint8Array } | { answer: Response }>}
 */
export async function requestBody(request, limit, base, read = (l) => readBody(request, l)) {
  const tooLarge = () => ({ answer: problemResponse("request-too-large", { base, args: { limit } }) });
  if (declaredTooLarge(request.headers, limit)) return tooLarge();
  let body;
  try {
    body = await read(limit);
  } catch {
    return { answer: problemResponse("request-body-unreadable", { base }) };
  }
  return body === null ? tooLarge() : { body };
}
