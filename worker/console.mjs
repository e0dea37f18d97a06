// The operator console (docs/operations.md#console): GET /console, its
// script, style and icon, answered by the JS entry (./entry.mjs) before the
// Rust gateway sees the request, so the wasm carries none of it — where the
// Rust rule says it is served (CONSOLE, CONSOLE_HOST; off in proxy mode
// unless turned on). The page reads the tenant's introspection API
// (docs/contract.md §2.7) with the operator token (OPERATOR_TOKENS) the
// operator pastes, held in the page's memory only; it holds no data and no
// secret itself, so serving it needs no authentication.
//
// What must stay true here:
// - Every answer under /console carries CONSOLE_HEADERS: a CSP allowing
//   only this origin's script, style, icon and API (no inline script or
//   style, Trusted Types required), nosniff, no referrer, no framing.
// - Only GET and HEAD: any other method is the gateway's 405 problem.
// - The files are JS strings (./console/*.mjs): no build step, no wrangler
//   rule, the same from the checkout and from the npm package. The
//   script's modules are real files (./console/browser/*.js, type-checked
//   against the DOM), embedded as strings in ./console/files.mjs by
//   scripts/console-files.mjs.
import { problemResponse } from "../client/rules/problems.js";
import { CONSOLE_SCRIPTS } from "./console/files.mjs";
import { CONSOLE_ICON, CONSOLE_PAGE } from "./console/page.mjs";
import { CONSOLE_STYLE } from "./console/style.mjs";

/** The page's Content-Security-Policy: this origin's files and API only; no inline code; DOM sinks refused. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join("; ");

/** The headers of every /console answer. */
export const CONSOLE_HEADERS = Object.freeze({
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  // Revalidated on every load: a deploy never leaves an old script beside a new page.
  "cache-control": "no-cache",
});

/** The console's files by path: body and content type. */
const FILES = new Map([
  ["/console", [CONSOLE_PAGE, "text/html; charset=utf-8"]],
  ["/console/", [CONSOLE_PAGE, "text/html; charset=utf-8"]],
  ...Object.entries(CONSOLE_SCRIPTS).map(([name, text]) => [`/console/${name}`, [text, "text/javascript; charset=utf-8"]]),
  ["/console/style.css", [CONSOLE_STYLE, "text/css; charset=utf-8"]],
  ["/console/favicon.svg", [CONSOLE_ICON, "image/svg+xml"]],
]);

/**
 * Is `url` (a request's absolute URL) one of the console's? Read from the
 * string, without parsing it into a URL: every request of the gateway
 * asks this first.
 */
export function isConsoleUrl(url) {
  const scheme = url.indexOf("//");
  const path = scheme < 0 ? -1 : url.indexOf("/", scheme + 2);
  if (path < 0 || !url.startsWith("/console", path)) return false;
  const next = url.charAt(path + "/console".length);
  return next === "" || next === "/" || next === "?" || next === "#";
}

/** The console's answer to `request`, whose path is the console's. */
export function consoleResponse(request) {
  const { pathname } = new URL(request.url);
  const method = request.method;
  if (method !== "GET" && method !== "HEAD") {
    return withHeaders(problemResponse("method-not-allowed", {
      detail: `${method} is not allowed here`,
      headers: { allow: "GET, HEAD" },
    }));
  }
  const file = FILES.get(pathname);
  if (file === undefined) {
    return withHeaders(problemResponse("not-found", { detail: "no such resource" }));
  }
  const [body, type] = file;
  return new Response(method === "HEAD" ? null : body, {
    headers: { ...CONSOLE_HEADERS, "content-type": type },
  });
}

function withHeaders(response) {
  for (const [name, value] of Object.entries(CONSOLE_HEADERS)) response.headers.set(name, value);
  return response;
}
