// The operator console's files and headers (worker/console.mjs), in plain
// Node: the script's modules parse and are the files served, the page and script use no inline code and no
// HTML sink, every answer carries the security headers, and only GET and
// HEAD are served. The page in a real browser: tests/e2e/console.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { CONSOLE_CSP, consoleResponse, isConsoleUrl } from "../../worker/console.mjs";
import { CONSOLE_SCRIPTS } from "../../worker/console/files.mjs";
import { TARGET, browserModules, filesModule } from "../../scripts/console-files.mjs";
import { CONSOLE_PAGE } from "../../worker/console/page.mjs";
import { CONSOLE_STYLE } from "../../worker/console/style.mjs";

const get = (path, method = "GET") => consoleResponse(new Request(`https://gw.test${path}`, { method }));

// The script's modules' code, one string, what the checks below read: without
// comments (app.js's own comment names the sinks it must never use) — whole
// comment lines and /* */ blocks; a trailing // comment stays and is read.
const code = (text) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
const CONSOLE_SCRIPT = Object.values(CONSOLE_SCRIPTS).map(code).join("\n");

test("the console's served modules are its browser files exactly (files.mjs is generated, not edited)", () => {
  assert.equal(readFileSync(TARGET, "utf8"), filesModule(), "run `node scripts/console-files.mjs`");
  assert.deepEqual(Object.entries(CONSOLE_SCRIPTS), browserModules());
  assert.ok("app.js" in CONSOLE_SCRIPTS);
});

test("the console's modules parse as modules", () => {
  for (const name of Object.keys(CONSOLE_SCRIPTS)) {
    assert.doesNotThrow(() => execFileSync(process.execPath, ["--check", new URL(`../../worker/console/browser/${name}`, import.meta.url).pathname], { stdio: "pipe" }), name);
  }
});

test("the console's script renders through the DOM only: no HTML sink, no eval", () => {
  for (const sink of [/innerHTML/, /outerHTML/, /insertAdjacentHTML/, /document\.write/, /\beval\s*\(/, /new Function/, /srcdoc/, /createContextualFragment/]) {
    assert.doesNotMatch(CONSOLE_SCRIPT, sink);
  }
  // The token never goes into a URL (only into the Authorization header).
  assert.doesNotMatch(CONSOLE_SCRIPT, /[?&]token=|location\.(hash|search)/);
});

test("the console's script keeps the token in memory only: it writes no storage and no cookie", () => {
  for (const store of [/\.setItem\s*\(/, /localStorage/, /indexedDB/, /document\.cookie/, /caches\./]) {
    assert.doesNotMatch(CONSOLE_SCRIPT, store);
  }
});

test("the console's page has no inline script or style, and names its files by absolute path", () => {
  const scripts = [...CONSOLE_PAGE.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
  assert.equal(scripts.length, 1);
  assert.match(scripts[0][1], /\ssrc="\/console\/app\.js"/);
  assert.match(scripts[0][1], /\stype="module"/);
  // The modules import only each other, by relative path: every file they load is one served here.
  for (const [name, text] of Object.entries(CONSOLE_SCRIPTS)) {
    for (const [, specifier] of text.matchAll(/^import\b[^"]*"([^"]+)";$/gm)) {
      assert.match(specifier, /^\.\/[a-z-]+\.js$/, name);
      assert.ok(specifier.slice(2) in CONSOLE_SCRIPTS, `${name} imports ${specifier}, which is not served`);
    }
  }
  assert.equal(scripts[0][2], "");
  assert.doesNotMatch(CONSOLE_PAGE, /<style\b|\sstyle=|\son[a-z]+=|javascript:/i);
  assert.match(CONSOLE_PAGE, /<link rel="stylesheet" href="\/console\/style\.css">/);
  assert.doesNotMatch(CONSOLE_STYLE, /@import|url\(/, "the stylesheet loads nothing");
});

test("every console file is served with its type and the security headers", async () => {
  for (const [path, type] of [
    ["/console", "text/html; charset=utf-8"],
    ["/console/", "text/html; charset=utf-8"],
    ["/console/app.js", "text/javascript; charset=utf-8"],
    ["/console/style.css", "text/css; charset=utf-8"],
    ["/console/favicon.svg", "image/svg+xml"],
  ]) {
    const res = get(path);
    assert.equal(res.status, 200, path);
    assert.equal(res.headers.get("content-type"), type, path);
    assert.equal(res.headers.get("content-security-policy"), CONSOLE_CSP, path);
    assert.equal(res.headers.get("x-content-type-options"), "nosniff", path);
    assert.equal(res.headers.get("referrer-policy"), "no-referrer", path);
    assert.equal(res.headers.get("cache-control"), "no-cache", path);
    assert.equal(res.headers.get("access-control-allow-origin"), null, path);
    assert.ok((await res.text()).length > 0, path);
  }
  for (const [name, text] of Object.entries(CONSOLE_SCRIPTS)) {
    const res = get(`/console/${name}`);
    assert.equal(res.headers.get("content-type"), "text/javascript; charset=utf-8", name);
    assert.equal(res.headers.get("content-security-policy"), CONSOLE_CSP, name);
    assert.equal(await res.text(), text, name);
  }
});

test("the console's CSP allows this origin's files and API only, and no inline code", () => {
  const directives = Object.fromEntries(CONSOLE_CSP.split("; ").map((d) => [d.split(" ")[0], d.split(" ").slice(1).join(" ")]));
  assert.deepEqual(directives, {
    "default-src": "'none'", "script-src": "'self'", "style-src": "'self'", "connect-src": "'self'", "img-src": "'self'",
    "base-uri": "'none'", "form-action": "'none'", "frame-ancestors": "'none'",
    "require-trusted-types-for": "'script'", "trusted-types": "'none'",
  });
});

test("HEAD answers the headers without a body; other methods get the gateway's 405 problem", async () => {
  const head = get("/console", "HEAD");
  assert.equal(head.status, 200);
  assert.equal(head.headers.get("content-type"), "text/html; charset=utf-8");
  assert.equal(await head.text(), "");
  for (const method of ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"]) {
    const res = get("/console/app.js", method);
    assert.equal(res.status, 405, method);
    assert.equal(res.headers.get("allow"), "GET, HEAD");
    assert.equal(res.headers.get("content-type"), "application/problem+json");
    assert.equal(res.headers.get("content-security-policy"), CONSOLE_CSP);
    const doc = await res.json();
    assert.equal(doc.type, "https://idempotency-ledger.dev/problems/method-not-allowed");
    assert.equal(doc.detail, `${method} is not allowed here`);
  }
});

test("an unknown file under /console is a 404 problem; /console is matched as a path segment", async () => {
  const res = get("/console/admin");
  assert.equal(res.status, 404);
  assert.equal((await res.json()).type, "https://idempotency-ledger.dev/problems/not-found");
  for (const url of ["https://h/console", "https://h/console/", "https://h/console/app.js", "https://h/console?x=1", "https://h:8787/console#top", "http://127.0.0.1:8787/console"]) {
    assert.equal(isConsoleUrl(url), true, url);
  }
  for (const url of ["https://h/consoles", "https://h/v1/console", "https://h/", "https://h", "https://h/v1/orders?next=/console", "https://console/", "not a url"]) {
    assert.equal(isConsoleUrl(url), false, url);
  }
});
