// @ts-check
// Byte helpers shared by the key, fingerprint and stored-response modules
// (internal: not re-exported by the package).

export const encoder = new TextEncoder();
export const decoder = new TextDecoder();

/** @param {number | bigint} n @returns {Uint8Array} 8 bytes, big-endian */
export function u64be(n) {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n));
  return b;
}

/** @param {Uint8Array[]} parts */
export function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

/** @param {BufferSource} bytes @returns {Promise<Uint8Array>} */
export async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

/** @param {BufferSource} bytes @returns {Promise<string>} lowercase hex */
export async function sha256hex(bytes) {
  return Array.from(await sha256(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * A body as bytes: a string (UTF-8), an ArrayBuffer or any typed array view;
 * null / undefined are no bytes.
 * @param {string | ArrayBuffer | ArrayBufferView | null | undefined} body
 * @returns {Uint8Array}
 */
export function asBytes(body) {
  if (body == null) return new Uint8Array();
  if (typeof body === "string") return encoder.encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError("body must be a string, ArrayBuffer or typed array");
}

/** @param {Uint8Array} bytes */
export function toBase64(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** @param {string} text */
export function fromBase64(text) {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
