// @ts-check
// A protected request's body, bounded as the gateway bounds it
// (MAX_REQUEST_BODY_BYTES, docs/contract.md §2.4), for the middleware
// (./contract.js). What must stay true: a larger Content-Length is refused
// before anything is read; a body without one is read chunk by chunk and
// refused as soon as it passes the limit, so nothing beyond it is ever
// buffered. Internal: not re-exported by the package.
import { concat } from "./bytes.js";

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
 * The body's bytes, or null as soon as more than `limit` arrived (the
 * rest is cancelled, never buffered). Rejects when the body cannot be
 * read to its end.
 * @param {ReadableStream<Uint8Array> | null} stream
 * @param {number} limit
 * @returns {Promise<Uint8Array | null>}
 */
export async function readBounded(stream, limit) {
  if (stream === null) return new Uint8Array();
  const reader = stream.getReader();
  /** @type {Uint8Array[]} */
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return concat(chunks);
    size += value.byteLength;
    if (size > limit) {
      reader.cancel().catch(() => { /* already over: what the sender does next is not ours */ });
      return null;
    }
    chunks.push(value);
  }
}

/**
 * The request's body bounded by `limit` (null past it), read chunk by
 * chunk whatever its Content-Length says (a Request made in the isolate
 * may carry any header over any stream; nothing beyond the limit is ever
 * buffered). With a declared length within the limit the chunks are
 * copied into one buffer of that size, and a body that is longer or
 * shorter than declared rejects (unreadable). The caller checks
 * `declaredTooLarge` first.
 * @param {Request} request
 * @param {number} limit
 * @returns {Promise<Uint8Array | null>}
 */
export async function readBody(request, limit) {
  const field = request.headers.get("content-length")?.trim();
  const declared = field !== undefined && /^[0-9]+$/.test(field) ? Number(field) : null;
  if (declared === null || declared > limit || request.body === null) return readBounded(request.body, limit);
  const out = new Uint8Array(declared);
  const reader = request.body.getReader();
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      if (size !== declared) throw new Error(`the body is ${size} bytes, its Content-Length says ${declared}`);
      return out;
    }
    if (size + value.byteLength > declared) {
      reader.cancel().catch(() => { /* over its declared length: what the sender does next is not ours */ });
      throw new Error(`the body is longer than its Content-Length (${declared})`);
    }
    out.set(value, size);
    size += value.byteLength;
  }
}
