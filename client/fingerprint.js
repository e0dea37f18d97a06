// @ts-check
// The request fingerprint, identical to the gateway's (src/protocol/fingerprint.rs;
// docs/contract.md §2.4). Shared vectors: tests/fixtures/fingerprints.json.
import { DEFAULTS } from "./defaults.js";
import { asBytes, concat, encoder, sha256hex, u64be } from "./bytes.js";
import { headerValue } from "./key.js";

/**
 * One fingerprint component: its name and the hex SHA-256 of its value.
 * @typedef {object} FingerprintComponent
 * @property {string} name "method" | "target" | `header:${string}` | "body"
 * @property {string} digest
 */

/**
 * A request fingerprint; `digest` must be the one its components give.
 * @typedef {object} Fingerprint
 * @property {string} digest
 * @property {FingerprintComponent[]} components
 */

/**
 * @typedef {object} FingerprintInput
 * @property {string} method
 * @property {string} target Path plus query exactly as received.
 * @property {Headers | Record<string, string | null | undefined>} [headers]
 * @property {readonly string[]} [fingerprintHeaders] Header names that are part of "the same request"; default ["content-type"].
 * @property {string | ArrayBuffer | ArrayBufferView | null} [body]
 */

/** @param {string | Uint8Array | null | undefined} value */
async function componentDigest(value) {
  if (value === null || value === undefined) return sha256hex(new Uint8Array([0]));
  const bytes = asBytes(value);
  return sha256hex(concat([new Uint8Array([1]), u64be(bytes.length), bytes]));
}

/**
 * The request fingerprint of docs/contract.md §2.4: method (uppercased), target
 * (path+query verbatim), each named header (absent != empty) and the raw body.
 * @param {FingerprintInput} input
 * @returns {Promise<Fingerprint>}
 */
export async function fingerprint({ method, target, headers = {}, fingerprintHeaders = DEFAULTS.fingerprintHeaders, body }) {
  /** @type {FingerprintComponent[]} */
  const components = [
    { name: "method", digest: await componentDigest(method.toUpperCase()) },
    { name: "target", digest: await componentDigest(target) },
  ];
  for (const h of fingerprintHeaders) {
    const name = h.toLowerCase();
    components.push({ name: `header:${name}`, digest: await componentDigest(headerValue(headers, name)) });
  }
  components.push({ name: "body", digest: await componentDigest(asBytes(body)) });
  /** @type {Uint8Array[]} */
  const parts = [];
  for (const c of components) {
    for (const s of [c.name, c.digest]) {
      const bytes = encoder.encode(s);
      parts.push(u64be(bytes.length), bytes);
    }
  }
  return { digest: await sha256hex(concat(parts)), components };
}

/**
 * The target of a request as the gateway fingerprints it
 * (src/protocol/target.rs `target_of`): its URL's path plus query cut out
 * verbatim — no decoding, no dot-segment removal, an empty query's `?`
 * kept — and any fragment dropped.
 * @param {string} url An absolute URL (`request.url`).
 * @returns {string}
 */
export function targetOf(url) {
  const scheme = url.indexOf("://");
  const rest = scheme === -1 ? url : url.slice(scheme + 3);
  const slash = rest.indexOf("/");
  const target = slash === -1 ? "/" : rest.slice(slash);
  return target.split("#")[0];
}
