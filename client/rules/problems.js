// @ts-check
// RFC 9457 problem documents, rendered from the one problem catalog both
// languages share. PROBLEM_CATALOG is docs/problems.json as a JS module,
// generated (../generated/problems.js, by scripts/generate.mjs: a JSON
// import does not load in all of Node, workerd through Miniflare and
// wrangler/esbuild bundles); tests/fixtures/problem-documents.json pins the
// exact documents rendered here and by the Rust gateway.
import { PROBLEM_CATALOG } from "../generated/problems.js";

/**
 * RFC 9457 problem document.
 * @typedef {{ type: string; title: string; status: number; detail: string; [member: string]: unknown }} Problem
 */

export { PROBLEM_CATALOG };

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
