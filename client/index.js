// idempotency-ledger for JavaScript Workers: typed calls to a TenantLedger
// Durable Object over RPC v1, plus Idempotency-Key helpers.
// Types: ./index.d.ts. Runs on Workers (and Node >= 20): uses only fetch,
// Headers, Response, crypto.subtle and crypto.randomUUID.

export const RPC_V1_PREFIX = "/rpc/v1/";
export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
export const MAX_KEY_LENGTH = 255;

/** A ledger call that did not produce an outcome. */
export class LedgerError extends Error {
  constructor(message, { status = null, problem = null, cause } = {}) {
    super(message, { cause });
    this.name = "LedgerError";
    /** HTTP status of the object's problem answer, or null when unreachable. */
    this.status = status;
    /** The RFC 9457 problem document the object answered with, if any. */
    this.problem = problem;
  }
}

/** The key the client sent is unacceptable. */
export class IdempotencyKeyError extends Error {
  constructor(message) {
    super(message);
    this.name = "IdempotencyKeyError";
  }
}

/** The object's answer header naming how long a claim waited (ms). */
export const WAITED_HEADER = "ledger-waited-ms";

/** Typed RPC v1 calls to one tenant's TenantLedger. */
export class LedgerClient {
  /** @param stub a DurableObjectStub of the TenantLedger class */
  constructor(stub) {
    this.stub = stub;
  }

  /** The object for `tenant` in a namespace bound with script_name. */
  static forTenant(namespace, tenant) {
    return new LedgerClient(namespace.get(namespace.idFromName(tenant)));
  }

  async #call(route, payload) {
    let res;
    try {
      res = await this.stub.fetch(`https://tenant-ledger${RPC_V1_PREFIX}${route}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(payload),
      });
    } catch (cause) {
      throw new LedgerError(`ledger unreachable: ${cause?.message ?? cause}`, { cause });
    }
    const text = await res.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
    if (res.status !== 200) {
      throw new LedgerError(`ledger refused ${route} (${res.status}): ${body?.detail ?? text}`, { status: res.status, problem: body });
    }
    // A claim or execute that was parked on an in-flight key says how long.
    const waited = res.headers.get(WAITED_HEADER);
    if (waited !== null && body && typeof body === "object") body.waited_ms = Number(waited);
    return body;
  }

  claim(call) { return this.#call("claim", call); }
  complete(call) { return this.#call("complete", call); }
  release(call) { return this.#call("release", call); }
  async lookup(key) { return (await this.#call("lookup", { key })).record; }
  stats() { return this.#call("stats", {}); }
  replayed(call) { return this.#call("replayed", call); }
  /** `execute`: claim + the embedded orders app + complete in one transaction (the gateway's own object). */
  execute(call) { return this.#call("execute", call); }
}

// ---- sharded tenants (TENANT_SHARDS) ----

/** The most objects one tenant may be spread over. */
export const MAX_SHARDS = 128;
const TENANT_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Is `tenant` a valid tenant id (1–64 of A-Z a-z 0-9 . _ -), as the gateway's? */
export function isTenantId(tenant) {
  return typeof tenant === "string" && TENANT_ID.test(tenant);
}

/** The shard of `key` among `shards`: the first 8 bytes of SHA-256(key), big-endian, modulo N (as the gateway). */
export async function shardOf(key, shards) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(key)));
  let n = 0n;
  for (const b of digest.subarray(0, 8)) n = (n << 8n) | BigInt(b);
  return Number(n % BigInt(Math.max(1, shards)));
}

/** The object name of shard `index` of a tenant spread over `shards` (the tenant itself for one shard). */
export function shardObjectName(tenant, index, shards) {
  return shards <= 1 ? tenant : `${tenant}/shard-${index}-of-${shards}`;
}

/**
 * Parses TENANT_SHARDS exactly as the gateway does
 * (`{"acme": 8, "globex": {"shards": 8, "previous": 1}}`) into
 * `tenant → { shards, previous }`; throws a TypeError naming what is wrong.
 */
export function parseTenantShards(raw) {
  const out = new Map();
  if (raw === undefined || raw === null || String(raw).trim() === "") return out;
  let value;
  try { value = JSON.parse(raw); } catch (e) { throw new TypeError(`TENANT_SHARDS is not valid JSON: ${e.message}`); }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new TypeError("TENANT_SHARDS must be a JSON object of tenant → shard count");
  const count = (v, what) => {
    if (!Number.isInteger(v) || v < 1 || v > MAX_SHARDS) throw new TypeError(`TENANT_SHARDS: ${what} must be a whole number 1..=${MAX_SHARDS}`);
    return v;
  };
  for (const [tenant, v] of Object.entries(value)) {
    if (!isTenantId(tenant)) throw new TypeError(`TENANT_SHARDS: ${JSON.stringify(tenant)} is not a valid tenant id`);
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      const extra = Object.keys(v).find((k) => k !== "shards" && k !== "previous");
      if (extra !== undefined) throw new TypeError(`TENANT_SHARDS: ${tenant}: unknown field ${JSON.stringify(extra)}`);
      const shards = count(v.shards, `${tenant}.shards`);
      const previous = v.previous === undefined ? null : count(v.previous, `${tenant}.previous`);
      if (previous === shards) throw new TypeError(`TENANT_SHARDS: ${tenant}: previous equals shards`);
      out.set(tenant, { shards, previous });
    } else {
      out.set(tenant, { shards: count(v, tenant), previous: null });
    }
  }
  return out;
}

// ---- headers and keys (the gateway's rules) ----

/**
 * The value of header `name` (case-insensitive) in any header shape: a
 * `Headers` (or anything with `.get`), a `Map`, an array of `[name, value]`
 * pairs, or a plain object. Repeated names are joined by ", " as the
 * runtime merges repeated field lines. `null` when absent.
 */
export function headerValue(headers, name) {
  if (headers == null) return null;
  const want = name.toLowerCase();
  if (typeof headers.get === "function" && !(headers instanceof Map)) return headers.get(want) ?? null;
  const entries = headers instanceof Map ? [...headers] : Array.isArray(headers) ? headers : Object.entries(headers);
  const values = entries.filter(([n]) => String(n).toLowerCase() === want).map(([, v]) => String(v));
  return values.length ? values.join(", ") : null;
}

const isOws = (c) => c === " " || c === "\t";
const isPrintable = (c) => c >= " " && c <= "~";

function keyError(code, message) {
  const e = new IdempotencyKeyError(message);
  e.code = code;
  return e;
}

function sfStringBody(input) {
  let out = "";
  for (let i = 0; i < input.length; i++) {
    const c = input[i];
    if (c === "\\") {
      const e = input[++i];
      if (e === undefined) throw keyError("unterminated", "the quoted Idempotency-Key has no closing quote");
      if (e !== '"' && e !== "\\") throw keyError("bad_escape", 'the quoted Idempotency-Key has an escape other than \\" or \\\\');
      out += e;
    } else if (c === '"') {
      return [out, input.slice(i + 1)];
    } else if (isPrintable(c)) {
      out += c;
    } else {
      throw keyError("non_printable", "the Idempotency-Key may contain only printable ASCII characters (0x20-0x7E)");
    }
  }
  throw keyError("unterminated", "the quoted Idempotency-Key has no closing quote");
}

const garbage = () => keyError("trailing_garbage", "the quoted Idempotency-Key is followed by something that is not a parameter");

function skipBareItem(input) {
  if (input.startsWith('"')) return sfStringBody(input.slice(1))[1];
  if (input.startsWith('%"')) return sfStringBody(input.slice(2))[1];
  let end = input.search(/[;,\t ]/);
  if (end < 0) end = input.length;
  const item = input.slice(0, end);
  if (!item || !/^[A-Za-z0-9!#$%&'*+\-.^_`|~:/?=@]+$/.test(item)) throw garbage();
  return input.slice(end);
}

function checkParameters(rest) {
  for (;;) {
    rest = rest.replace(/^[ \t]+/, "");
    if (!rest) return;
    if (rest.startsWith(",")) throw keyError("multiple", "more than one Idempotency-Key was sent (a bare key may not contain a comma; quote it as an sf-string)");
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
 * `bad_escape`, `trailing_garbage`).
 */
export function parseIdempotencyKey(field) {
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
    if (value.includes(",")) throw keyError("multiple", "more than one Idempotency-Key was sent (a bare key may not contain a comma; quote it as an sf-string)");
    key = value;
  }
  if (!key) throw keyError("empty", "the Idempotency-Key is empty");
  if (![...key].every(isPrintable)) throw keyError("non_printable", "the Idempotency-Key may contain only printable ASCII characters (0x20-0x7E)");
  if (key.length > MAX_KEY_LENGTH) throw keyError("too_long", `the Idempotency-Key is ${key.length} characters long; at most ${MAX_KEY_LENGTH} are allowed`);
  return key;
}

// ---- fingerprints (identical to the Rust gateway's) ----

const encoder = new TextEncoder();

function u64be(n) {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n));
  return b;
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

async function sha256hex(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

function asBytes(body) {
  if (body == null) return new Uint8Array();
  if (typeof body === "string") return encoder.encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError("body must be a string, ArrayBuffer or typed array");
}

async function componentDigest(value) {
  if (value === null || value === undefined) return sha256hex(new Uint8Array([0]));
  const bytes = asBytes(value);
  return sha256hex(concat([new Uint8Array([1]), u64be(bytes.length), bytes]));
}

/**
 * The request fingerprint of docs/contract.md §2.4: method (uppercased), target
 * (path+query verbatim), each named header (absent != empty) and the raw body.
 */
export async function fingerprint({ method, target, headers = {}, fingerprintHeaders = ["content-type"], body }) {
  const get = (name) => headerValue(headers, name);
  const components = [
    { name: "method", digest: await componentDigest(method.toUpperCase()) },
    { name: "target", digest: await componentDigest(target) },
  ];
  for (const h of fingerprintHeaders) {
    const name = h.toLowerCase();
    components.push({ name: `header:${name}`, digest: await componentDigest(get(name)) });
  }
  components.push({ name: "body", digest: await componentDigest(asBytes(body)) });
  const parts = [];
  for (const c of components) {
    for (const s of [c.name, c.digest]) {
      const bytes = encoder.encode(s);
      parts.push(u64be(bytes.length), bytes);
    }
  }
  return { digest: await sha256hex(concat(parts)), components };
}

// ---- stored responses ----

function toBase64(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function fromBase64(text) {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

const NULL_BODY = new Set([204, 205, 304]);

/**
 * Captures what a replay needs from a Response (consumes its body; pass a
 * clone if you still need it): status, allowlisted headers (never
 * set-cookie) and the body as base64, or null (a tombstone) when larger
 * than maxStoredBodyBytes.
 */
export async function captureResponse(response, { storedHeaders = ["content-type", "location", "etag"], maxStoredBodyBytes = 1048576 } = {}) {
  const allow = storedHeaders.map((h) => h.toLowerCase()).filter((h) => h !== "set-cookie");
  const headers = [];
  for (const [name, value] of response.headers) if (allow.includes(name.toLowerCase())) headers.push([name.toLowerCase(), value]);
  const bytes = NULL_BODY.has(response.status) ? new Uint8Array() : new Uint8Array(await response.arrayBuffer());
  return { status: response.status, headers, body: bytes.length > maxStoredBodyBytes ? null : toBase64(bytes) };
}

/** A Response replaying a stored response, marked `Idempotent-Replayed: true`. */
export function replayResponse(stored) {
  if (stored.body === null) {
    return new Response(JSON.stringify({
      type: "https://idempotency-ledger.dev/problems/idempotency-response-not-retained",
      title: "The original response was too large to retain", status: 500,
      detail: "the original response was delivered once but was too large to store", original_status: stored.status,
    }), { status: 500, headers: { "content-type": "application/problem+json", "idempotent-replayed": "true" } });
  }
  const headers = new Headers(stored.headers);
  headers.set("idempotent-replayed", "true");
  const body = NULL_BODY.has(stored.status) ? null : fromBase64(stored.body);
  return new Response(body, { status: stored.status, headers });
}

/** Decodes a stored response body to bytes (null for a tombstone). */
export function storedBodyBytes(stored) {
  return stored.body === null ? null : fromBase64(stored.body);
}

// ---- keys ----

/** A fresh random key (a UUID). Mint it once per operation; reuse it on every retry. */
export function generateIdempotencyKey() {
  return crypto.randomUUID();
}

/** The SHA-256 (hex) of the parts, keeping part boundaries: same parts, same key. */
export async function deriveIdempotencyKey(...parts) {
  if (parts.length === 0) throw new IdempotencyKeyError("deriveIdempotencyKey needs at least one part");
  const chunks = [];
  for (const p of parts) {
    const bytes = encoder.encode(String(p));
    chunks.push(u64be(bytes.length), bytes);
  }
  return sha256hex(concat(chunks));
}

/** Serialises a key as an RFC 9651 sf-string field value. */
export function formatIdempotencyKey(key) {
  if (typeof key !== "string" || key.length === 0) throw new IdempotencyKeyError("the key is empty");
  if (key.length > MAX_KEY_LENGTH) throw new IdempotencyKeyError(`the key is longer than ${MAX_KEY_LENGTH} characters`);
  if (!/^[\x20-\x7e]+$/.test(key)) throw new IdempotencyKeyError("the key may contain only printable ASCII");
  return `"${key.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** A copy of `init` with the Idempotency-Key header set, other headers kept. */
export function withIdempotencyKey(init = {}, key) {
  const headers = new Headers(init.headers);
  headers.set(IDEMPOTENCY_KEY_HEADER, formatIdempotencyKey(key));
  return { ...init, headers };
}

/**
 * Sets the header on a POST or PATCH that has none (a new UUID when `key`
 * is omitted). Other methods, and requests that already carry a key, come
 * back unchanged.
 */
export function applyIdempotencyKey(request, key) {
  const method = request.method.toUpperCase();
  if ((method !== "POST" && method !== "PATCH") || request.headers.has(IDEMPOTENCY_KEY_HEADER)) return request;
  const copy = new Request(request);
  copy.headers.set(IDEMPOTENCY_KEY_HEADER, formatIdempotencyKey(key ?? generateIdempotencyKey()));
  return copy;
}

// ---- middleware for plain fetch handlers ----

// ---- waiting for an in-flight result (Prefer: wait=N) ----

/** Splits on `sep` where it is not inside a quoted string. */
function splitOutsideQuotes(s, sep) {
  const parts = [];
  let start = 0, quoted = false, escaped = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (escaped) escaped = false;
    else if (c === "\\" && quoted) escaped = true;
    else if (c === '"') quoted = !quoted;
    else if (c === sep && !quoted) { parts.push(s.slice(start, i)); start = i + 1; }
  }
  parts.push(s.slice(start));
  return parts;
}

/**
 * The `wait` preference of a Prefer header value (RFC 7240 §4.3) in
 * seconds, read exactly as the gateway reads it: only the first `wait`
 * counts, a quoted value is allowed, and an unreadable one is ignored
 * (null). Values too large to matter come back as Infinity.
 */
export function preferWait(header) {
  if (header === null || header === undefined) return null;
  for (const preference of splitOutsideQuotes(String(header), ",")) {
    const head = splitOutsideQuotes(preference, ";")[0];
    const eq = head.indexOf("=");
    const name = (eq === -1 ? head : head.slice(0, eq)).trim();
    if (name.toLowerCase() !== "wait") continue;
    if (eq === -1) return null;
    let value = head.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (!/^[0-9]+$/.test(value)) return null;
    const n = Number(value);
    return Number.isSafeInteger(n) ? n : Infinity;
  }
  return null;
}

const PROBLEM_BASE = "https://idempotency-ledger.dev/problems/";

function problem(status, slug, title, detail, extra = {}, headers = {}) {
  return new Response(JSON.stringify({ type: PROBLEM_BASE + slug, title, status, detail, ...extra }), {
    status,
    headers: { "content-type": "application/problem+json", ...headers },
  });
}

/** The gateway's answer to a refused claim (same slugs, statuses and Retry-After). */
export function refusalResponse(claim) {
  switch (claim.outcome) {
    case "completed":
      return replayResponse(claim.response);
    case "in_flight":
      return problem(409, "idempotency-key-in-use", "A request with this Idempotency-Key is still in flight",
        "a request with this Idempotency-Key is still being processed; retry shortly",
        { lease_remaining_ms: claim.retry_after_ms }, { "retry-after": "1" });
    case "mismatch":
      return problem(422, "idempotency-key-reused", "This Idempotency-Key was used for a different request",
        `this Idempotency-Key was used for a different request (${claim.differs.join(", ")} differs)`, { differs: claim.differs });
    case "ledger_full":
      return problem(429, "idempotency-ledger-full", "The idempotency ledger is full",
        "this tenant holds its maximum number of idempotency records", {},
        { "retry-after": String(Math.max(1, Math.ceil(claim.retry_after_ms / 1000))) });
    default:
      throw new TypeError(`not a refusal: ${claim.outcome}`);
  }
}

/**
 * The Idempotency-Key contract as the gateway applies it, for middleware:
 * `withIdempotency` (plain fetch handlers) and `idempotency-ledger/hono`
 * share it. Options are checked here, once, when the middleware is made.
 *
 * `run({ request, env, ctx, readBody, next })` answers one request whose
 * method is protected: parse the key (same rules), fingerprint (same
 * components), claim (waiting if asked), call `next(body)` once — which
 * resolves to `{ response, failed }` — then complete with its response, or
 * release the key when it failed (threw, or the framework turned an error
 * into a response), and answer refusals with the gateway's problem
 * documents. Exported for framework adapters; most code wants
 * `withIdempotency` or the Hono middleware.
 */
export function idempotencyContract({
  ledger,
  protectedMethods = ["POST", "PATCH"],
  required = true,
  fingerprintHeaders = ["content-type"],
  storedHeaders = ["content-type", "location", "etag"],
  maxStoredBodyBytes = 1048576,
  waitSeconds = 0,
  maxWaitSeconds = 10,
} = {}) {
  if (typeof ledger !== "function") throw new TypeError("idempotency middleware needs options.ledger(request, env)");
  for (const [name, v] of [["waitSeconds", waitSeconds], ["maxWaitSeconds", maxWaitSeconds]]) {
    if (!Number.isSafeInteger(v) || v < 0 || v > 300) throw new TypeError(`idempotency middleware: ${name} must be a whole number 0..300`);
  }
  if (waitSeconds > maxWaitSeconds) throw new TypeError("idempotency middleware: waitSeconds exceeds maxWaitSeconds");
  if (!Number.isSafeInteger(maxStoredBodyBytes) || maxStoredBodyBytes < 0) throw new TypeError("idempotency middleware: maxStoredBodyBytes must be a whole number");
  const methods = new Set(protectedMethods.map((m) => String(m).toUpperCase()));
  return {
    protects: (method) => methods.has(String(method).toUpperCase()),
    async run({ request, env, ctx, readBody, next }) {
      const field = request.headers.get("idempotency-key");
      if (field === null) {
        if (!required) return (await next(undefined)).response;
        return problem(400, "idempotency-key-missing", "An Idempotency-Key is required",
          `${request.method} requests must carry an Idempotency-Key header`);
      }
      let key;
      try {
        key = parseIdempotencyKey(field);
      } catch (e) {
        if (e instanceof IdempotencyKeyError) return problem(400, "idempotency-key-invalid", "The Idempotency-Key is invalid", e.message);
        throw e;
      }
      const body = await readBody();
      const url = new URL(request.url);
      const fp = await fingerprint({ method: request.method, target: url.pathname + url.search, headers: request.headers, fingerprintHeaders, body });
      const client = ledger(request, env);
      // As the gateway: wait for an in-flight first run when asked (or by default).
      const asked = preferWait(request.headers.get("prefer"));
      const seconds = Math.min(asked ?? waitSeconds, maxWaitSeconds);
      const claim = await client.claim({ key, fingerprint: fp, ...(seconds > 0 ? { wait_ms: seconds * 1000 } : {}) });
      const applied = (response) => {
        if (asked === null || claim.waited_ms === undefined) return response;
        const out = new Response(response.body, response);
        out.headers.set("preference-applied", `wait=${seconds}`);
        return out;
      };
      if (claim.outcome !== "claimed") return applied(refusalResponse(claim));
      let result;
      try {
        result = await next(body);
      } catch (e) {
        await client.release({ key, generation: claim.generation });
        throw e;
      }
      if (result.failed) {
        await client.release({ key, generation: claim.generation });
        return result.response;
      }
      const stored = await captureResponse(result.response.clone(), { storedHeaders, maxStoredBodyBytes });
      const completion = client.complete({ key, generation: claim.generation, response: stored });
      ctx?.waitUntil?.(completion.catch(() => {}));
      await completion;
      return applied(result.response);
    },
  };
}

/**
 * Wraps a fetch handler `(request, env, ctx) => Response` with the
 * Idempotency-Key contract, as the gateway applies it: parse the key (same
 * rules), fingerprint (same components), claim, run the handler once,
 * complete with its response (released instead if it throws, and the error
 * rethrown), and answer refusals with the gateway's problem documents.
 *
 * options.ledger(request, env) must return a `LedgerClient` (e.g.
 * `LedgerClient.forTenant(env.LEDGER, tenantOf(request))`).
 */
export function withIdempotency(handler, options) {
  const contract = idempotencyContract(options);
  return async (request, env, ctx) => {
    if (!contract.protects(request.method)) return handler(request, env, ctx);
    return contract.run({
      request, env, ctx,
      readBody: async () => new Uint8Array(await request.arrayBuffer()),
      // The handler gets a request whose body can still be read.
      next: async (body) => {
        const replayable = body === undefined ? request
          : new Request(request, { body: ["GET", "HEAD"].includes(request.method) ? undefined : body });
        return { response: await handler(replayable, env, ctx), failed: false };
      },
    });
  };
}
