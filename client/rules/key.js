// @ts-check
// Idempotency-Key: the field parsed exactly as the gateway parses it
// (Rust protocol::key), keys minted, derived and sent, and header lookup
// in any header shape.
import { DEFAULTS } from "./defaults.js";
import { concat, encoder, sha256hex, u64be } from "./bytes.js";
import { MAX_KEY_LEN } from "../generated/limits.js";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
/** The longest key (src/protocol/limits.json MAX_KEY_LEN). */
export const MAX_KEY_LENGTH = MAX_KEY_LEN;

/**
 * Why `parseIdempotencyKey` refused a field.
 * @typedef {"empty" | "too_long" | "non_printable" | "multiple" | "unterminated" | "bad_escape" | "trailing_garbage"} IdempotencyKeyErrorCode
 */

/**
 * Any shape of headers `headerValue` reads.
 * @typedef {Headers | Map<string, string> | [string, string][] | Record<string, string | null | undefined>} HeaderSource
 */

/** The key the client sent is unacceptable. */
export class IdempotencyKeyError extends Error {
  /**
   * Set by `parseIdempotencyKey`: why the field was refused.
   * @type {IdempotencyKeyErrorCode | undefined}
   */
  code;

  /**
   * @param {string} message
   * @param {IdempotencyKeyErrorCode} [code]
   */
  constructor(message, code) {
    super(message);
    this.name = "IdempotencyKeyError";
    this.code = code;
  }
}

/**
 * The value of header `name` (case-insensitive) in any header shape: a
 * `Headers` (or anything with `.get`), a `Map`, an array of `[name, value]`
 * pairs, or a plain object. Repeated names are joined by ", " as the
 * runtime merges repeated field lines. `null` when absent.
 * @param {HeaderSource | null | undefined} headers
 * @param {string} name
 * @returns {string | null}
 */
export function headerValue(headers, name) {
  if (headers == null) return null;
  const want = name.toLowerCase();
  if (!(headers instanceof Map) && typeof (/** @type {{ get?: unknown }} */ (headers).get) === "function") {
    return /** @type {Headers} */ (headers).get(want) ?? null;
  }
  /** @type {[unknown, unknown][]} */
  const entries = headers instanceof Map ? [...headers] : Array.isArray(headers) ? headers : Object.entries(headers);
  const values = entries.filter(([n]) => String(n).toLowerCase() === want).map(([, v]) => String(v));
  return values.length ? values.join(", ") : null;
}

// ---- parsing the field (RFC 9651 sf-string or a bare value) ----

/** @param {string | undefined} c */
const isOws = (c) => c === " " || c === "\t";
/** @param {string} c */
const isPrintable = (c) => c >= " " && c <= "~";

/** @param {IdempotencyKeyErrorCode} code @param {string} message */
const keyError = (code, message) => new IdempotencyKeyError(message, code);

const MULTIPLE = "more than one Idempotency-Key was sent (a bare key may not contain a comma; quote it as an sf-string)";
const NON_PRINTABLE = "the Idempotency-Key may contain only printable ASCII characters (0x20-0x7E)";
const UNTERMINATED = "the quoted Idempotency-Key has no closing quote";
const garbage = () => keyError("trailing_garbage", "the quoted Idempotency-Key is followed by something that is not a parameter");

/**
 * The body of an sf-string (after its opening quote): the string and what follows its closing quote.
 * @param {string} input
 * @returns {[string, string]}
 */
function sfStringBody(input) {
  let out = "";
  for (let i = 0; i < input.length; i++) {
    const c = input[i];
    if (c === "\\") {
      const e = input[++i];
      if (e === undefined) throw keyError("unterminated", UNTERMINATED);
      if (e !== '"' && e !== "\\") throw keyError("bad_escape", 'the quoted Idempotency-Key has an escape other than \\" or \\\\');
      out += e;
    } else if (c === '"') {
      return [out, input.slice(i + 1)];
    } else if (isPrintable(c)) {
      out += c;
    } else {
      throw keyError("non_printable", NON_PRINTABLE);
    }
  }
  throw keyError("unterminated", UNTERMINATED);
}

/** @param {string} input a parameter's value and what follows it @returns {string} what follows it */
function skipBareItem(input) {
  if (input.startsWith('"')) return sfStringBody(input.slice(1))[1];
  if (input.startsWith('%"')) return sfStringBody(input.slice(2))[1];
  let end = input.search(/[;,\t ]/);
  if (end < 0) end = input.length;
  const item = input.slice(0, end);
  if (!item || !/^[A-Za-z0-9!#$%&'*+\-.^_`|~:/?=@]+$/.test(item)) throw garbage();
  return input.slice(end);
}

/** Parameters after the sf-string are allowed (and ignored); anything else is not. @param {string} rest */
function checkParameters(rest) {
  for (;;) {
    rest = rest.replace(/^[ \t]+/, "");
    if (!rest) return;
    if (rest.startsWith(",")) throw keyError("multiple", MULTIPLE);
    if (!rest.startsWith(";")) throw garbage();
    const param = rest.slice(1).replace(/^ +/, "");
    const m = /^[a-z*][a-z0-9_\-.*]*/.exec(param);
    if (!m) throw garbage();
    rest = param.slice(m[0].length);
    if (rest.startsWith("=")) rest = skipBareItem(rest.slice(1));
  }
}

/**
 * Parses an `Idempotency-Key` field value exactly as the gateway does: an
 * RFC 9651 sf-string (parameters ignored) or a bare value (trimmed; no
 * comma). Returns the key; throws `IdempotencyKeyError` with `code`
 * (`empty`, `too_long`, `non_printable`, `multiple`, `unterminated`,
 * `bad_escape`, `trailing_garbage`), or a TypeError when `field` is not a string.
 * @param {string} field
 * @returns {string}
 */
export function parseIdempotencyKey(field) {
  if (typeof field !== "string") throw new TypeError("parseIdempotencyKey needs the field value as a string");
  let start = 0;
  let end = field.length;
  while (start < end && isOws(field[start])) start++;
  while (end > start && isOws(field[end - 1])) end--;
  const value = field.slice(start, end);
  let key;
  if (value.startsWith('"')) {
    const [k, after] = sfStringBody(value.slice(1));
    checkParameters(after);
    key = k;
  } else {
    if (value.includes(",")) throw keyError("multiple", MULTIPLE);
    key = value;
  }
  if (!key) throw keyError("empty", "the Idempotency-Key is empty");
  if (![...key].every(isPrintable)) throw keyError("non_printable", NON_PRINTABLE);
  if (key.length > MAX_KEY_LENGTH) throw keyError("too_long", `the Idempotency-Key is ${key.length} characters long; at most ${MAX_KEY_LENGTH} are allowed`);
  return key;
}

// ---- minting and sending keys ----

/**
 * A fresh random key (a UUID). Mint it once per operation; reuse it on every retry.
 * @returns {string}
 */
export function generateIdempotencyKey() {
  return crypto.randomUUID();
}

/**
 * The SHA-256 (hex) of the parts, keeping part boundaries: same parts, same key.
 * @param {...unknown} parts
 * @returns {Promise<string>}
 */
export async function deriveIdempotencyKey(...parts) {
  if (parts.length === 0) throw new IdempotencyKeyError("deriveIdempotencyKey needs at least one part");
  /** @type {Uint8Array[]} */
  const chunks = [];
  for (const p of parts) {
    const bytes = encoder.encode(String(p));
    chunks.push(u64be(bytes.length), bytes);
  }
  return sha256hex(concat(chunks));
}

/**
 * Serialises a key as an RFC 9651 sf-string field value.
 * @param {string} key
 * @returns {string}
 */
export function formatIdempotencyKey(key) {
  if (typeof key !== "string" || key.length === 0) throw new IdempotencyKeyError("the key is empty");
  if (key.length > MAX_KEY_LENGTH) throw new IdempotencyKeyError(`the key is longer than ${MAX_KEY_LENGTH} characters`);
  if (!/^[\x20-\x7e]+$/.test(key)) throw new IdempotencyKeyError("the key may contain only printable ASCII");
  return `"${key.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/**
 * A copy of `init` with the Idempotency-Key header set, other headers kept.
 * @param {RequestInit | undefined} init
 * @param {string} key
 * @returns {RequestInit & { headers: Headers }}
 */
export function withIdempotencyKey(init = {}, key) {
  const headers = new Headers(init.headers);
  headers.set(IDEMPOTENCY_KEY_HEADER, formatIdempotencyKey(key));
  return { ...init, headers };
}

/**
 * Sets the header on a POST or PATCH (the default protected methods) that
 * has none (a new UUID when `key` is omitted). Other methods, and requests
 * that already carry a key, come back unchanged.
 * @param {Request} request
 * @param {string} [key]
 * @returns {Request}
 */
export function applyIdempotencyKey(request, key) {
  const method = request.method.toUpperCase();
  if (!DEFAULTS.protectedMethods.includes(method) || request.headers.has(IDEMPOTENCY_KEY_HEADER)) return request;
  const copy = new Request(request);
  copy.headers.set(IDEMPOTENCY_KEY_HEADER, formatIdempotencyKey(key ?? generateIdempotencyKey()));
  return copy;
}
