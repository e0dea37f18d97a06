// @ts-check
// The request fingerprint, identical to the gateway's (Rust protocol::fingerprint;
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
  return { digest: await overallDigest(components), components };
}

/**
 * The digest over all components, each name and digest length-prefixed
 * (Rust protocol::fingerprint `from_components`).
 * @param {FingerprintComponent[]} components
 */
async function overallDigest(components) {
  const parts = components.flatMap((c) => [c.name, c.digest]).flatMap((text) => {
    const bytes = encoder.encode(text);
    return [u64be(bytes.length), bytes];
  });
  return sha256hex(concat(parts));
}

/**
 * A fingerprint of one component whose digest is the SHA-256 of `value`
 * (a middleware's own fingerprint string, or "keys alone"): the overall
 * digest built as the gateway builds it from its components.
 * @param {string} name
 * @param {string} value
 * @returns {Promise<Fingerprint>}
 */
export async function oneComponent(name, value) {
  const components = [{ name, digest: await sha256hex(encoder.encode(value)) }];
  return { digest: await overallDigest(components), components };
}

/**
 * The target of a request as the gateway fingerprints it
 * (Rust protocol::target `target_of`): its URL's path plus query cut out
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
