// @ts-check
// A protected request's inputs as the gateway reads them, for the
// middleware (../middleware/contract.js) and the embedded ledger (../ledger/ledger.js): its
// Idempotency-Key (docs/contract.md §2.3) and its body, bounded as the
// gateway bounds it (MAX_REQUEST_BODY_BYTES, §2.4), each with the
// gateway's problem answer when it cannot be had. What must stay true: a
// larger Content-Length is refused before anything is read; a body is read
// chunk by chunk whatever its Content-Length says (a Request made in the
// isolate may carry any header over any stream) and refused as soon as it
// passes the limit, so nothing beyond it is ever buffered. `readChunks` is
// that chunk loop, shared with the middleware's capture of a route's
// response (./stored.js). Internal: not re-exported by the package.
import { concat } from "./bytes.js";
import { IdempotencyKeyError, MAX_KEY_LENGTH, parseIdempotencyKey } from "./key.js";
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
 * What `readChunks` read: the chunks in order and their size; `ended` when
 * the stream ended (false: more than the limit arrived and the rest is
 * unread), or the `error` that stopped it (the chunks before it kept).
 * @typedef {{ chunks: Uint8Array[]; size: number; ended: boolean } | { chunks: Uint8Array[]; size: number; error: unknown }} ChunksRead
 */

/**
 * The one bounded chunk loop (a request's body here, a route's response in
 * ./stored.js): reads `reader` until the stream ends or more than `limit`
 * bytes arrived, whichever comes first, holding at most `limit` + 1 bytes
 * plus the last chunk; past the limit the reader is left as it is (the
 * caller cancels it or reads on). Never rejects: a stream that errors, a
 * chunk that is not bytes, or a stream longer or shorter than the length
 * it `declared` (a Content-Length: checked on every chunk, the reader then
 * cancelled) is `error`.
 * @param {ReadableStreamDefaultReader<Uint8Array>} reader
 * @param {number} limit
 * @param {number | null} [declared]
 * @returns {Promise<ChunksRead>}
 */
export async function readChunks(reader, limit, declared = null) {
  /** @type {Uint8Array[]} */
  const chunks = [];
  let size = 0;
  const failed = (/** @type {unknown} */ error) => {
    reader.cancel(error).catch(() => { /* what the sender does next is not ours */ });
    return { chunks, size, error };
  };
  for (;;) {
    let step;
    try { step = await reader.read(); } catch (error) { return { chunks, size, error }; }
    if (step.done) {
      if (declared !== null && size !== declared) return { chunks, size, error: new Error(`the body is ${size} bytes, its Content-Length says ${declared}`) };
      return { chunks, size, ended: true };
    }
    // A stream made in the isolate may enqueue anything: only bytes are a body.
    const value = /** @type {unknown} */ (step.value);
    if (!ArrayBuffer.isView(value)) return failed(new TypeError("a body chunk is not bytes"));
    chunks.push(value instanceof Uint8Array ? value : new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
    size += value.byteLength;
    if (declared !== null && size > declared) return failed(new Error(`the body is longer than its Content-Length (${declared})`));
    if (size > limit) return { chunks, size, ended: false };
  }
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
  const read = await readChunks(reader, limit, declared);
  if ("error" in read) throw read.error;
  if (!read.ended) {
    reader.cancel().catch(() => { /* already over: what the sender does next is not ours */ });
    return null;
  }
  return concat(read.chunks);
}

/**
 * The request's Idempotency-Key, parsed by the gateway's rules, or the
 * gateway's answer when it has none (and one is required) or an invalid
 * one; null: no key, and none required (run unprotected).
 * @param {Request} request
 * @param {boolean} required
 * @param {string} [base] The problem documents' base (`problemBase`).
 * @param {string} [header] The field the key is read from (the middleware's `key` option); default Idempotency-Key.
 * @returns {{ key: string } | { answer: Response } | null}
 */
export function requestKey(request, required, base, header = "idempotency-key") {
  const field = request.headers.get(header);
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

/**
 * The key a `key` function gave (the middleware's `key` option), by the
 * same rules as a key read from the field once parsed: 1–255 printable
 * ASCII characters, else `400 idempotency-key-invalid` (the value may come
 * from the client: a body field, a job id). null or undefined: no key
 * (`400 idempotency-key-missing` when one is required, else unprotected).
 * A function that throws or gives something that is not a string is the
 * server's error: `500 misconfigured`, logged (`idempotency.key_failed`).
 * @template {unknown[]} A
 * @param {(...args: A) => unknown} source
 * @param {A} args
 * @param {{ request: Request; required: boolean; base?: string }} context
 * @returns {Promise<{ key: string } | { answer: Response } | null>}
 */
export async function sourcedKey(source, args, { request, required, base }) {
  let value;
  try {
    value = await source(...args);
  } catch (e) {
    console.error(JSON.stringify({ event: "idempotency.key_failed", error: e instanceof Error ? e.message : String(e) }));
    return { answer: problemResponse("misconfigured", { base, detail: "options.key threw (the error is in the Worker's log, idempotency.key_failed)" }) };
  }
  if (value === null || value === undefined) {
    return required ? { answer: problemResponse("idempotency-key-missing", { base, args: { method: request.method } }) } : null;
  }
  if (typeof value !== "string") {
    console.error(JSON.stringify({ event: "idempotency.key_failed", error: `options.key gave a ${typeof value}, not a string` }));
    return { answer: problemResponse("misconfigured", { base, detail: "options.key gave something that is not a string (see idempotency.key_failed in the Worker's log)" }) };
  }
  const problem = keyProblem(value);
  return problem === null ? { key: value } : { answer: problemResponse("idempotency-key-invalid", { base, detail: problem }) };
}

/**
 * What is wrong with a key value by the key's rules (docs/contract.md §2.3), or null.
 * @param {string} key
 */
export function keyProblem(key) {
  if (key.length === 0) return "the idempotency key is empty";
  if (!/^[\x20-\x7e]+$/.test(key)) return "the idempotency key may contain only printable ASCII characters (0x20-0x7E)";
  if (key.length > MAX_KEY_LENGTH) return `the idempotency key is ${key.length} characters long; at most ${MAX_KEY_LENGTH} are allowed`;
  return null;
}
