// @ts-check
// RFC 9457 problem documents, rendered from the one problem catalog both
// languages share. PROBLEM_CATALOG is docs/problems.json as a JS module (a
// JSON import does not load in all of Node, workerd through Miniflare and
// wrangler/esbuild bundles); tests/node/problems.test.mjs proves it equals
// that file, and tests/fixtures/problem-documents.json pins the exact
// documents rendered here and by the Rust gateway.

/**
 * RFC 9457 problem document.
 * @typedef {{ type: string; title: string; status: number; detail: string; [member: string]: unknown }} Problem
 */

/** docs/problems.json, verbatim: base URI and every problem slug with its status, title and (templated) detail. */
export const PROBLEM_CATALOG = deepFreeze({
  "$comment": "The problem catalog: every RFC 9457 problem document the product answers, by slug. The Rust gateway and object (src/protocol/problem.rs) and the JS package (client/problems.js) both render from this table; tests/fixtures/problem-documents.json pins the exact documents both produce. A detail in {braces} names an argument the renderer fills in; \"final\": true marks a refusal no retry can change, answered with X-Should-Retry: false (docs/contract.md §2.5); a problem without a detail gets one from its call site (a parser or validation message). Slugs, statuses and titles are the wire contract (docs/contract.md §2.5): renaming one breaks clients.",
  "base": "https://idempotency-ledger.dev/problems/",
  "problems": {
    "unauthorized": {
      "status": 401,
      "title": "Missing or unknown bearer token"
    },
    "forbidden": {
      "status": 403,
      "final": true,
      "title": "This token may not make this request",
      "detail": "an operator token reads its tenant's stats and keys and evicts a key, nothing else; this request needs the tenant's API token"
    },
    "misconfigured": {
      "status": 500,
      "title": "The service is misconfigured",
      "detail": "configuration variable {variable} is missing or invalid; see the logs"
    },
    "idempotency-key-missing": {
      "status": 400,
      "final": true,
      "title": "An Idempotency-Key is required",
      "detail": "{method} requests must carry an Idempotency-Key header"
    },
    "idempotency-key-invalid": {
      "status": 400,
      "final": true,
      "title": "The Idempotency-Key is invalid"
    },
    "request-too-large": {
      "status": 413,
      "final": true,
      "title": "The request body is too large",
      "detail": "request bodies are limited to {limit} bytes"
    },
    "request-body-unreadable": {
      "status": 400,
      "title": "The request body could not be read",
      "detail": "the request body could not be read to its end"
    },
    "idempotency-key-in-use": {
      "status": 409,
      "title": "A request with this Idempotency-Key is still in flight",
      "detail": "a request with this Idempotency-Key is still being processed; retry shortly"
    },
    "idempotency-key-reused": {
      "status": 422,
      "final": true,
      "title": "This Idempotency-Key was used for a different request",
      "detail": "this Idempotency-Key was used for a different request ({differs} differs)"
    },
    "origin-unavailable": {
      "status": 502,
      "title": "The origin could not be reached"
    },
    "origin-timeout": {
      "status": 504,
      "title": "The origin did not answer in time"
    },
    "origin-invalid-response": {
      "status": 502,
      "title": "The origin's answer cannot be passed on"
    },
    "origin-response-incomplete": {
      "status": 502,
      "title": "The origin's answer broke off"
    },
    "method-not-supported": {
      "status": 501,
      "final": true,
      "title": "The method cannot be forwarded",
      "detail": "{method} requests cannot be forwarded to the origin"
    },
    "idempotency-response-not-retained": {
      "status": 500,
      "final": true,
      "title": "The original response was too large to retain",
      "detail": "the original response was delivered once but was too large to store; the request will not run again under this key"
    },
    "idempotency-store-unavailable": {
      "status": 503,
      "title": "The idempotency ledger is unavailable",
      "detail": "the idempotency ledger could not be reached; the request was not run"
    },
    "idempotency-ledger-full": {
      "status": 429,
      "title": "The idempotency ledger is full",
      "detail": "this tenant holds its maximum number of idempotency records"
    },
    "invalid-order": {
      "status": 400,
      "title": "The order is invalid"
    },
    "not-found": {
      "status": 404,
      "title": "Not found"
    },
    "method-not-allowed": {
      "status": 405,
      "title": "Method not allowed"
    },
    "invalid-rpc": {
      "status": 400,
      "title": "The ledger RPC call is invalid"
    },
    "invalid-query": {
      "status": 400,
      "final": true,
      "title": "The query parameters are invalid"
    },
    "idempotency-key-moved": {
      "status": 421,
      "title": "This key lives in another ledger object",
      "detail": "this object belongs to a retired shard layout and does not hold the key; ask the key's object in the current layout"
    }
  }
});

/** @typedef {keyof typeof PROBLEM_CATALOG.problems} ProblemSlug Every problem slug of the catalog. */

/**
 * @typedef {object} ProblemOptions
 * @property {Record<string, string | number | readonly string[]>} [args] Fills the catalog detail's
 *   `{name}` placeholders (a list is joined by ", ").
 * @property {string} [detail] The detail, for a problem whose catalog entry has none (a parser's or
 *   validator's message); given, it replaces the catalog's.
 * @property {Record<string, unknown>} [extensions] Extension members (written after `detail`, by name).
 * @property {HeadersInit} [headers] More response headers (content-type is
 *   application/problem+json).
 * @property {string} [base] The base URI of `type` (`type` is base + slug); default the catalog's
 *   `https://idempotency-ledger.dev/problems/`. The middleware's `problemBase`.
 */

/**
 * @template T
 * @param {T} value
 * @returns {T}
 */
function deepFreeze(value) {
  if (value !== null && typeof value === "object") {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

const MEMBERS = new Set(["type", "title", "status", "detail"]);

/**
 * The catalog's detail for `slug` with its placeholders filled.
 * @param {string} slug
 * @param {string | undefined} template
 * @param {Record<string, unknown>} args
 */
function fillDetail(slug, template, args) {
  if (template === undefined) throw new TypeError(`problem ${slug} has no catalog detail: pass options.detail`);
  return template.replace(/\{([A-Za-z0-9_]+)\}/g, (_, name) => {
    const value = Object.hasOwn(args, name) ? args[name] : undefined;
    if (value === undefined || value === null) throw new TypeError(`problem ${slug} needs argument ${name}`);
    return Array.isArray(value) ? value.join(", ") : String(value);
  });
}

/**
 * The problem document of `slug`: type (the catalog's base, or `options.base`, + slug), title,
 * status, detail, then the extension members sorted by name. Throws a
 * TypeError for an unknown slug, a missing argument or detail, or an
 * extension that would shadow a standard member.
 * @param {ProblemSlug} slug
 * @param {ProblemOptions} [options]
 * @returns {Problem}
 */
export function problemDocument(slug, options = {}) {
  const { args, detail, extensions, base = PROBLEM_CATALOG.base } = options ?? {};
  const entry = Object.hasOwn(PROBLEM_CATALOG.problems, slug)
    ? /** @type {{ status: number; title: string; detail?: string }} */ (PROBLEM_CATALOG.problems[slug])
    : undefined;
  if (entry === undefined) throw new TypeError(`unknown problem ${JSON.stringify(slug)}`);
  /** @type {Problem} */
  const doc = {
    type: base + slug,
    title: entry.title,
    status: entry.status,
    detail: detail ?? fillDetail(slug, entry.detail, args ?? {}),
  };
  const members = extensions ?? {};
  for (const name of Object.keys(members).sort()) {
    if (MEMBERS.has(name)) throw new TypeError(`problem ${slug}: extension ${name} would replace a standard member`);
    doc[name] = members[name];
  }
  return doc;
}

/**
 * A Response carrying the problem document of `slug` (compact JSON,
 * `content-type: application/problem+json`, the catalog's status), as the
 * gateway answers it.
 * @param {ProblemSlug} slug
 * @param {ProblemOptions} [options]
 * @returns {Response}
 */
export function problemResponse(slug, options = {}) {
  const doc = problemDocument(slug, options);
  const headers = new Headers({ "content-type": "application/problem+json" });
  // A refusal no retry can change (the catalog's `final`) says so to SDKs that retry by default.
  if (/** @type {{ final?: boolean } | undefined} */ (PROBLEM_CATALOG.problems[slug])?.final === true) headers.set("x-should-retry", "false");
  for (const [name, value] of new Headers(options?.headers ?? undefined)) headers.set(name, value);
  return new Response(JSON.stringify(doc), { status: doc.status, headers });
}
