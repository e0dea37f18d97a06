// The operator console (GET /console, worker/console.mjs) in a real
// browser: Debian's Chromium, headless, driven by puppeteer-core, against
// the built Worker in workerd (proxy mode with CONSOLE=on, a real origin on
// 127.0.0.1 that can hold a request in flight). The page loads under its
// CSP with no request, no console message and no CSP violation before a
// token is given; a missing or wrong token shows the 401's detail and
// nothing else; an operator's token (OPERATOR_TOKENS) shows the numbers the
// API returns, and is refused (403) on a protected POST and on everything
// that could return a stored body, from the console's own origin too; the
// token lives in the page's memory only (a reload forgets it); hostile
// keys, created with real POSTs, render as text and fire no dialog; the key
// list pages as the API pages; a busy tenant's key held at the origin
// behind 500 completed ones is shown in flight, under the count stats
// gives. A screenshot of the console with an operator
// token is left in target/test-artifacts/console.png (the one kept in
// docs/console.png). Chromium: `bash scripts/setup.sh --with-browser` (as
// root on Debian) or CHROMIUM=/path/to/chrome.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import puppeteer from "puppeteer-core";
import { ROOT, ACME, GLOBEX, sha256hex, startGateway, startOrigin, json, read, deferred, eventually } from "./harness.mjs";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const ARTIFACTS = `${ROOT}target/test-artifacts`;
const WAIT = { timeout: 90_000 }; // a loaded 2-core machine: generous deadlines, never bare sleeps
const tid = (id) => `[data-testid="${id}"]`;
const NONE = "\u2014";
/** The operator token of tenant acme (OPERATOR_TOKENS): reads only. */
const OPERATOR = "operator-token-acme";
const OPERATOR_AUTH = `Bearer ${OPERATOR}`;

/** Keys that would run script if rendered as HTML (the `field` is how the client sends each). */
const HOSTILE = [
  { key: "<img src=x onerror=alert(1)>", field: "<img src=x onerror=alert(1)>" },
  { key: "</script><script>alert(2)</script>", field: "</script><script>alert(2)</script>" },
  { key: "\"><svg onload=alert(3)>", field: "\"\\\"><svg onload=alert(3)>\"" },
];
const PLAIN = Array.from({ length: 23 }, (_, i) => `console-key-${String(i + 1).padStart(2, "0")}`);
const HELD_KEY = "console-held-<b>in flight</b>";
/** A busy tenant (globex): this many completed keys, then one key held at the origin. */
const BUSY_COMPLETED = 500;
const BUSY_HELD_KEY = "busy-held";

let origin, gw, base, browser, page, held, heldAnswer, busyHeld, busyHeldAnswer;
const dialogs = [];
const problems = []; // console errors, page errors and CSP violations
let lastStats = null; // the last stats document the page itself received
const statsAnswers = []; // every stats document the page received, in order

/** A read of the gateway: status, headers and the body's JSON (null if it is not JSON: a page, the origin's text). */
async function api(path, auth = ACME, headers = {}) {
  const r = await read(await gw.request(path, { headers: { ...(auth === null ? {} : { authorization: auth }), ...headers } }));
  try { return { ...r, json: JSON.parse(r.text) }; } catch { return { ...r, json: null }; }
}
const post = (field, headers = {}, auth = ACME) =>
  gw.request("/charges", { method: "POST", headers: { authorization: auth, "idempotency-key": field, "content-type": "application/json", ...headers }, body: "{}" }).then(read);

before(async () => {
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: run \`bash scripts/setup.sh --with-browser\` as root (Debian), or set CHROMIUM`);
  held = deferred();
  busyHeld = deferred();
  origin = await startOrigin((req) => {
    if (req.method !== "POST") return { status: 404, headers: { "content-type": "text/plain" }, body: "the origin serves POST only" };
    if (req.headers["x-hold"] === "busy") return busyHeld.promise;
    if (req.headers["x-hold"]) return held.promise;
    return { status: 201, headers: { "content-type": "application/json", location: "/charges/<script>alert(4)</script>" }, body: '{"id":"ch_1"}' };
  });
  gw = await startGateway({ vars: {
    ORIGIN_URL: origin.url, LEASE_SECONDS: "600", ORIGIN_TIMEOUT_SECONDS: "590",
    CONSOLE: "on", OPERATOR_TOKENS: JSON.stringify({ [sha256hex(OPERATOR)]: "acme" }),
  } });
  base = (await gw.mf.ready).href.replace(/\/$/, "");
  for (const key of PLAIN) assert.equal((await post(key)).status, 201, key);
  for (const { field } of HOSTILE) assert.equal((await post(field)).status, 201, field);
  const replay = await post(PLAIN[0]);
  assert.equal(replay.headers["idempotent-replayed"], "true");
  heldAnswer = post(HELD_KEY, { "x-hold": "1" });
  await origin.waitForRequests(PLAIN.length + HOSTILE.length + 1);
  // The busy tenant: its completed keys claimed before the one it holds, so an
  // oldest-first walk of every record meets all of them first.
  for (let from = 0; from < BUSY_COMPLETED; from += 25) {
    const batch = Array.from({ length: Math.min(25, BUSY_COMPLETED - from) }, (_, j) => post(`busy-done-${String(from + j).padStart(3, "0")}`, {}, GLOBEX));
    for (const r of await Promise.all(batch)) assert.equal(r.status, 201);
  }
  busyHeldAnswer = post(BUSY_HELD_KEY, { "x-hold": "busy" }, GLOBEX);
  await origin.waitForRequests(PLAIN.length + HOSTILE.length + 1 + BUSY_COMPLETED + 1);

  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--headless=new"] });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  page.on("dialog", async (d) => { dialogs.push(d.message()); await d.dismiss(); });
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() !== "error" && m.type() !== "warn") return;
    const url = m.location()?.url ?? "";
    // The API's own refusals the page asked for (a 401 for a wrong token, a 404 while the list API is absent) are answers, not faults.
    // So is the 409 of an eviction refused while its key is in flight.
    if (/^Failed to load resource: the server responded with a status of (401|404|409)\b/.test(m.text()) && new URL(url, base).pathname.startsWith("/v1/")) return;
    problems.push(`console ${m.type()}: ${m.text()} (${url})`);
  });
  page.on("response", async (res) => {
    if (new URL(res.url()).pathname !== "/v1/idempotency/stats" || res.status() !== 200) return;
    try { lastStats = await res.json(); statsAnswers.push(lastStats); } catch { /* the page navigated away */ }
  });
  await page.evaluateOnNewDocument(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      (globalThis.__violations ??= []).push(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });
});

after(async () => {
  held?.resolve({ status: 201, headers: { "content-type": "application/json" }, body: "{}" });
  busyHeld?.resolve({ status: 201, headers: { "content-type": "application/json" }, body: "{}" });
  await heldAnswer?.catch(() => {});
  await busyHeldAnswer?.catch(() => {});
  await browser?.close();
  await gw?.dispose();
  await origin?.close();
});

const text = (id) => page.$eval(tid(id), (e) => e.textContent);
const visible = (id) => page.waitForSelector(`${tid(id)}:not([hidden])`, { ...WAIT, visible: true });
const violations = () => page.evaluate(() => globalThis.__violations ?? []);

/** Pastes `token` into the form and waits for the page to act on it. */
async function useToken(token) {
  await page.$eval(tid("token-input"), (e) => { e.value = ""; });
  await page.type(tid("token-input"), token);
  await page.click(tid("token-use"));
}

/**
 * Polls `pair` (→ [actual, expected]) until both are deeply equal; past the
 * deadline, fails with the last difference.
 */
/** Two flat records with the same entries, in any order. */
const sameEntries = (a, b) => JSON.stringify(Object.entries(a ?? {}).sort()) === JSON.stringify(Object.entries(b ?? {}).sort());

async function settles(pair, message) {
  let last;
  try {
    await eventually(async () => {
      last = await pair();
      return sameEntries(last[0], last[1]);
    }, { ms: 60_000, every: 250 });
  } catch {
    assert.deepEqual(last[0], last[1], message);
  }
}

/** The scalar stats the page shows, by name. */
const shownStats = () => page.$$eval('[data-testid^="stat-"]', (els) => Object.fromEntries(els.map((e) => [e.dataset.testid.slice(5), e.textContent])));
const shown = (v) => (v === null ? NONE : String(v));

test("the console is served with its security headers, GET and HEAD only, never forwarded to the origin", async () => {
  for (const path of ["/console", "/console/app.js", "/console/style.css", "/console/favicon.svg"]) {
    const r = await read(await gw.request(path));
    assert.equal(r.status, 200, path);
    assert.match(r.headers["content-security-policy"], /^default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'/);
    assert.equal(r.headers["x-content-type-options"], "nosniff");
    assert.equal(r.headers["referrer-policy"], "no-referrer");
    assert.equal(r.headers["cache-control"], "no-cache");
  }
  const head = await read(await gw.request("/console", { method: "HEAD" }));
  assert.equal(head.status, 200);
  assert.equal(head.text, "");
  const refused = await json(await gw.request("/console", { method: "POST", body: "x" }));
  assert.equal(refused.status, 405);
  assert.equal(refused.headers.allow, "GET, HEAD");
  assert.equal(refused.json.type.split("/").pop(), "method-not-allowed");
  assert.ok(!origin.requests.some((r) => r.url.startsWith("/console")), "the origin never sees /console");
});

test("the API adds no CORS: a page of another origin cannot read it", async () => {
  const evil = { origin: "https://evil.example" };
  for (const [path, auth] of [["/v1/idempotency/stats", ACME], ["/v1/idempotency/stats", null], [`/v1/idempotency-keys/${encodeURIComponent(PLAIN[0])}`, ACME], ["/console", null]]) {
    const r = await api(path, auth, evil);
    assert.equal(r.headers["access-control-allow-origin"], undefined, path);
    assert.equal(r.headers["access-control-allow-credentials"], undefined, path);
  }
});

test("without a token the page loads under its CSP, asks the API nothing and logs nothing: it asks for a token", async () => {
  const early = { requests: [], messages: [] };
  const onRequest = (r) => { if (new URL(r.url()).pathname.startsWith("/v1/")) early.requests.push(r.url()); };
  const onMessage = (m) => early.messages.push(`${m.type()}: ${m.text()}`);
  page.on("request", onRequest);
  page.on("console", onMessage);
  await page.goto(`${base}/console`, { waitUntil: "networkidle0", ...WAIT });
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === "paste a token to begin", WAIT, tid("status"));
  page.off("request", onRequest);
  page.off("console", onMessage);
  assert.deepEqual(early.requests, [], "no API request before a token");
  assert.deepEqual(early.messages, [], "no console message of any kind before a token");
  assert.equal(await page.$eval(tid("problem"), (e) => e.hidden), true);
  assert.equal(await page.$eval(tid("dashboard"), (e) => e.hidden), true);
  assert.deepEqual(await violations(), []);
  assert.deepEqual(problems, []);
});

test("a refused token shows the 401's detail only, styled by the served stylesheet", async () => {
  const missing = await api("/v1/idempotency/stats", "Bearer nobody");
  assert.equal(missing.status, 401);
  await useToken("nobody");
  await visible("problem");
  assert.equal(await text("problem"), missing.json.detail);
  assert.equal(await page.$eval(tid("dashboard"), (e) => e.hidden), true);
  // The CSP the browser enforces is the served one, and the stylesheet applied (no inline style needed it).
  assert.equal(await page.$eval(tid("problem"), (e) => getComputedStyle(e).fontWeight), "600");
  assert.deepEqual(await violations(), []);
  assert.deepEqual(problems, []);
});

test("a wrong token shows the 401's detail and nothing else", async () => {
  const wrong = await api("/v1/idempotency/stats", "Bearer not-a-token");
  assert.equal(wrong.status, 401);
  await useToken("not-a-token");
  await page.waitForFunction((sel, detail) => document.querySelector(sel)?.textContent === detail, WAIT, tid("problem"), wrong.json.detail);
  assert.equal(await page.$$eval('[data-testid^="stat-"]', (els) => els.length), 0);
  // The token is in the page's memory only: no storage, no cookie, no URL.
  assert.deepEqual(await page.evaluate(() => [sessionStorage.length, localStorage.length, document.cookie]), [0, 0, ""]);
  assert.ok(!page.url().includes("token"), "the token is never in the URL");
});

test("an operator token shows the numbers the API returns", async () => {
  await useToken(OPERATOR);
  await visible("dashboard");
  // Every scalar the page shows is what one of its own stats answers said: its polling moves
  // sql_rows_read, and on a loaded machine the next answer may arrive before the page renders
  // the one it shows, so the shown values are matched against each answer the page received.
  const scalars = (doc) => Object.fromEntries(Object.entries(doc ?? {}).filter(([, v]) => v === null || typeof v !== "object").map(([k, v]) => [k, shown(v)]));
  const received = (shownNow) => statsAnswers.map(scalars).find((a) => sameEntries(a, shownNow)) ?? scalars(lastStats);
  await settles(async () => { const now = await shownStats(); return [now, received(now)]; }, "the shown stats are one of the page's stats answers");
  // And the counts no read changes equal a stats read of our own.
  const stats = (await api("/v1/idempotency/stats")).json;
  const got = await shownStats();
  for (const name of ["records", "in_flight", "completed", "released", "claims", "replays", "in_use", "reused", "takeovers", "fenced_out", "swept", "evicted"]) {
    assert.equal(got[name], String(stats[name]), name);
  }
  assert.equal(got.records, String(PLAIN.length + HOSTILE.length + 1));
  assert.equal(got.in_flight, "1");
  assert.equal(got.replays, "1");
  assert.ok(got.sql_rows_written !== undefined && got.sql_rows_read !== undefined, "the billed rows are shown");
  assert.ok(await page.$(`${tid("billed")} ${tid("stat-sql_rows_written")}`), "in the billed-rows panel");

  assert.ok(stats.limits, "stats carries the limits");
  assert.match(await text("quota-records"), new RegExp(`^${stats.records} of ${stats.limits.max_keys} `));
  assert.match(await text("quota-db-bytes"), new RegExp(`^\\d+ of ${stats.limits.max_db_bytes} `));
  assert.equal(stats.trend.length, 60);
  for (const name of ["claims", "replays", "in_use", "reused", "takeovers", "fenced_out", "swept", "evicted"]) {
    const total = stats.trend.reduce((sum, m) => sum + m[name], 0);
    assert.equal(await text(`trend-total-${name}`), String(total), name);
    assert.ok(await page.$(`${tid("trend-chart")} ${tid(`trend-line-${name}`)}`), name);
  }
  assert.deepEqual(await violations(), []);
  assert.deepEqual(problems, []);
});

/** The lookup document's members (docs/contract.md §2.7): no stored body, no stored header. */
const LOOKUP_MEMBERS = ["key", "state", "generation", "created_at", "expires_at", "lease_expires_at", "response_status", "retained", "replays"];

test("the operator token is refused on a protected POST and on everything that could return a stored body, from the console's origin too", async () => {
  const slug = (r) => r.json?.type?.split("/").pop();
  const statsBefore = (await api("/v1/idempotency/stats")).json;
  const seen = origin.requests.length;
  const refusals = [
    // A completed key: with the tenant's token this is a replay of the stored body.
    ["POST", "/charges", { "idempotency-key": PLAIN[0], "content-type": "application/json" }, "{}"],
    // A new key: nothing may be claimed or sent.
    ["POST", "/charges", { "idempotency-key": "operator-new-key", "content-type": "application/json" }, "{}"],
    ["PATCH", "/charges/ch_1", { "idempotency-key": PLAIN[1], "content-type": "application/json" }, "{}"],
    // Unprotected methods reach the application (the origin's data): refused too.
    ["GET", "/charges/ch_1", {}, undefined],
    ["DELETE", "/charges/ch_1", {}, undefined],
  ];
  for (const [method, path, headers, body] of refusals) {
    const r = await json(await gw.request(path, { method, headers: { authorization: OPERATOR_AUTH, ...headers }, body }));
    assert.equal(r.status, 403, `${method} ${path}`);
    assert.equal(slug(r), "forbidden", `${method} ${path}`);
    assert.equal(r.headers["x-should-retry"], "false");
    assert.equal(r.headers["idempotent-replayed"], undefined, "never a replay");
    assert.ok(!r.text.includes("ch_1"), "no stored body");
  }
  // From a page on the console's origin holding the operator token: the same refusal.
  const probe = await browser.newPage();
  try {
    await probe.goto(`${base}/console`, { waitUntil: "networkidle0", ...WAIT });
    const inPage = await probe.evaluate(async (auth, key) => {
      const r = await fetch("/charges", { method: "POST", headers: { authorization: auth, "idempotency-key": key, "content-type": "application/json" }, body: "{}" });
      return { status: r.status, replayed: r.headers.get("idempotent-replayed"), text: await r.text() };
    }, OPERATOR_AUTH, PLAIN[0]);
    assert.equal(inPage.status, 403);
    assert.equal(inPage.replayed, null);
    assert.ok(!inPage.text.includes("ch_1"));
  } finally {
    await probe.close();
  }
  assert.equal(origin.requests.length, seen, "the origin saw none of them");
  assert.equal((await api(`/v1/idempotency-keys/${encodeURIComponent("operator-new-key")}`)).status, 404, "nothing was claimed");
  const statsAfter = (await api("/v1/idempotency/stats")).json;
  for (const name of ["records", "claims", "replays", "in_use", "reused"]) assert.equal(statsAfter[name], statsBefore[name], name);

  // What it may read carries no stored body or header: stats, the listing, the lookup.
  assert.equal((await api("/v1/idempotency/stats", OPERATOR_AUTH)).status, 200);
  const listed = await api("/v1/idempotency-keys?limit=100", OPERATOR_AUTH);
  assert.equal(listed.status, 200);
  const found = await api(`/v1/idempotency-keys/${encodeURIComponent(PLAIN[0])}`, OPERATOR_AUTH);
  assert.equal(found.status, 200);
  assert.equal(found.json.response_status, 201);
  for (const doc of [found.json, ...listed.json.keys]) {
    assert.deepEqual(Object.keys(doc).filter((k) => !LOOKUP_MEMBERS.includes(k)), [], "only the record's metadata");
  }
  assert.ok(!found.text.includes("ch_1") && !listed.text.includes("ch_1"), "no stored body in a read");
});

test("hostile keys render as text: no element they describe appears, no dialog fires", async () => {
  for (const { key } of [...HOSTILE, { key: HELD_KEY }]) {
    await page.$eval(tid("lookup-input"), (e) => { e.value = ""; });
    await page.type(tid("lookup-input"), key);
    await page.click(tid("lookup-submit"));
    await page.waitForFunction((sel, k) => document.querySelector(sel)?.textContent === k, WAIT, tid("lookup-key"), key);
    const record = (await api(`/v1/idempotency-keys/${encodeURIComponent(key)}`)).json;
    assert.equal(await text("lookup-state"), record.state);
    assert.equal(await text("lookup-replays"), String(record.replays));
    assert.equal(await text("lookup-response_status"), shown(record.response_status));
  }
  const keys = await page.$$eval(`${tid("recent")} ${tid("cell-key")}`, (els) => els.map((e) => e.textContent));
  for (const { key } of HOSTILE) assert.ok(keys.includes(key), `${key} is listed as text`);
  assert.equal(await page.$$eval("img, iframe, object, embed", (els) => els.length), 0);
  assert.equal(await page.$$eval("script", (els) => els.map((e) => e.getAttribute("src")).join()), "/console/app.js");
  assert.equal(await page.$$eval("svg [onload], [onerror]", (els) => els.length), 0);
  assert.deepEqual(dialogs, []);
  assert.deepEqual(await violations(), []);
  assert.deepEqual(problems, []);
});

test("in-flight keys and the paged list match the API", async () => {
  await page.waitForSelector(`${tid("in-flight")} ${tid("in-flight-row")}`, WAIT);
  const inFlight = await page.$$eval(`${tid("in-flight")} ${tid("in-flight-row")}`, (rows) => rows.map((r) => ({
    key: r.querySelector('[data-testid="cell-key"]').textContent,
    lease: r.querySelector('[data-testid="cell-lease_left"]').textContent,
  })));
  assert.deepEqual(inFlight.map((r) => r.key), [HELD_KEY]);
  assert.match(inFlight[0].lease, /^([1-9]\d*) s$/);
  assert.ok(Number.parseInt(inFlight[0].lease, 10) <= 600);

  // The API's pages, walked by next_cursor as the page walks them.
  const pages = [];
  for (let cursor = null; ;) {
    const r = await api(`/v1/idempotency-keys?limit=20${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`);
    assert.equal(r.status, 200);
    pages.push(r.json.keys.map((k) => ({ key: k.key, state: k.state, replays: String(k.replays) })));
    if (r.json.next_cursor === null) break;
    cursor = r.json.next_cursor;
  }
  assert.equal(pages.flat().length, PLAIN.length + HOSTILE.length + 1);
  assert.ok(pages.length >= 2, "more keys than one page");
  const domPage = () => page.$$eval(`${tid("recent")} ${tid("recent-row")}`, (rows) => rows.map((r) => ({
    key: r.querySelector('[data-testid="cell-key"]').textContent,
    state: r.querySelector('[data-testid="cell-state"]').textContent,
    replays: r.querySelector('[data-testid="cell-replays"]').textContent,
  })));
  const samePage = async (expected, n) => {
    await page.waitForFunction((sel, label) => document.querySelector(sel)?.textContent === label, WAIT, tid("recent-page"), `page ${n}`);
    await settles(async () => [await domPage(), expected], `page ${n}`);
  };
  for (let i = 0; i < pages.length; i++) {
    await samePage(pages[i], i + 1);
    assert.equal(await page.$eval(tid("recent-older"), (b) => b.disabled), i === pages.length - 1);
    if (i < pages.length - 1) await page.click(tid("recent-older"));
  }
  await page.click(tid("recent-newer"));
  await samePage(pages[pages.length - 2], pages.length - 1);
  assert.deepEqual(problems, []);
});

test("a screenshot of the console is kept as a test artifact", async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: `${ARTIFACTS}/console.png`, fullPage: true });
  assert.ok(existsSync(`${ARTIFACTS}/console.png`));
});

/** Looks `key` up on the page and waits for its record. */
async function lookUp(key) {
  await page.$eval(tid("lookup-input"), (e) => { e.value = ""; });
  await page.type(tid("lookup-input"), key);
  await page.click(tid("lookup-submit"));
  await page.waitForFunction((sel, k) => document.querySelector(sel)?.textContent === k, WAIT, tid("lookup-key"), key);
}

test("Evict on a key's lookup (the operator token) asks for confirmation, removes the key, and its retry runs again", async () => {
  const key = PLAIN[1];
  await useToken(OPERATOR);
  const runs = origin.requests.length;
  assert.equal((await post(key)).headers["idempotent-replayed"], "true", "completed: a retry replays");
  await lookUp(key);
  // The first click only asks; cancelling sends nothing.
  await page.click(tid("lookup-evict"));
  await visible("evict-confirmation");
  assert.match(await text("evict-confirmation"), /runs again/);
  await page.click(tid("evict-cancel"));
  await page.waitForFunction((sel) => document.querySelector(sel) === null, WAIT, tid("evict-confirmation"));
  assert.equal((await api(`/v1/idempotency-keys/${encodeURIComponent(key)}`)).status, 200, "cancel changed nothing");
  // Confirmed: the key is evicted and the page says what was removed.
  await page.click(tid("lookup-evict"));
  await page.click(tid("evict-confirm"));
  await page.waitForSelector(tid("evict-done"), WAIT);
  assert.ok((await text("evict-done")).startsWith(`evicted ${key} (was completed, status 201, generation 1)`), await text("evict-done"));
  assert.equal((await api(`/v1/idempotency-keys/${encodeURIComponent(key)}`)).status, 404);
  // The retry runs again: the origin sees it, nothing is replayed.
  const again = await post(key);
  assert.equal(again.status, 201);
  assert.equal(again.headers["idempotent-replayed"], undefined);
  assert.equal(origin.requests.length, runs + 1);
  // Counted, and the page shows it.
  assert.equal((await api("/v1/idempotency/stats")).json.evicted, 1);
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === "1", WAIT, tid("stat-evicted"));
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === "1", WAIT, tid("trend-total-evicted"));

  // A key in flight is refused (409): the page shows why, and the key stays.
  await lookUp(HELD_KEY);
  await page.click(tid("lookup-evict"));
  await page.click(tid("evict-confirm"));
  await page.waitForSelector(tid("evict-problem"), WAIT);
  assert.match(await text("evict-problem"), /in flight/);
  assert.equal((await api(`/v1/idempotency-keys/${encodeURIComponent(HELD_KEY)}`)).json.state, "in_flight");
  assert.equal((await api("/v1/idempotency/stats")).json.evicted, 1);
  assert.deepEqual(dialogs, []);
  assert.deepEqual(await violations(), []);
  assert.deepEqual(problems, []);
});

test("switching to a wrong token leaves nothing of the previous tenant on the page", async () => {
  const wrong = await api("/v1/idempotency/stats", "Bearer dev-token-wrong");
  await useToken("dev-token-wrong");
  await page.waitForFunction((sel, detail) => document.querySelector(sel)?.textContent === detail, WAIT, tid("problem"), wrong.json.detail);
  const body = await page.evaluate(() => document.body.innerText);
  for (const key of [PLAIN[0], ...HOSTILE.map((h) => h.key), HELD_KEY]) assert.ok(!body.includes(key), `${key} is gone`);
  assert.equal(await page.$$eval('[data-testid^="stat-"], [data-testid="lookup-record"]', (els) => els.length), 0);
  assert.deepEqual(dialogs, []);
  assert.deepEqual(await violations(), []);
});

test("the token lives in the page's memory only: a reload forgets it and asks the API nothing", async () => {
  await useToken(OPERATOR);
  await visible("dashboard");
  const after = { requests: [], messages: [] };
  const onRequest = (r) => { if (new URL(r.url()).pathname.startsWith("/v1/")) after.requests.push(r.url()); };
  const onMessage = (m) => after.messages.push(`${m.type()}: ${m.text()}`);
  page.on("request", onRequest);
  page.on("console", onMessage);
  await page.reload({ waitUntil: "networkidle0", ...WAIT });
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === "paste a token to begin", WAIT, tid("status"));
  page.off("request", onRequest);
  page.off("console", onMessage);
  assert.deepEqual(after.requests, [], "no API request after a reload: the token is gone");
  assert.deepEqual(after.messages, []);
  assert.equal(await page.$eval(tid("dashboard"), (e) => e.hidden), true);
  assert.equal(await page.$eval(tid("token-input"), (e) => e.value), "");
  assert.deepEqual(await page.evaluate(() => [sessionStorage.length, localStorage.length, document.cookie]), [0, 0, ""]);
  assert.deepEqual(await violations(), []);
});

test("a tenant with 500 completed keys shows its key held at the origin in flight, under the count stats gives", async () => {
  const stats = (await api("/v1/idempotency/stats", GLOBEX)).json;
  assert.equal(stats.completed, BUSY_COMPLETED);
  assert.equal(stats.in_flight, 1);
  await useToken("dev-token-globex");
  await visible("dashboard");
  await page.waitForSelector(`${tid("in-flight")} ${tid("in-flight-row")}`, WAIT);
  const keys = await page.$$eval(`${tid("in-flight")} ${tid("in-flight-row")} ${tid("cell-key")}`, (els) => els.map((e) => e.textContent));
  assert.deepEqual(keys, [BUSY_HELD_KEY]);
  assert.equal(await text("in-flight-count"), "1");
  assert.equal(await page.$(tid("in-flight-empty")), null, "never 'no key is in flight' while stats counts one");

  // Answered: stats counts none in flight, and only then does the panel say so.
  busyHeld.resolve({ status: 201, headers: { "content-type": "application/json" }, body: "{}" });
  assert.equal((await busyHeldAnswer).status, 201);
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === "no key is in flight", WAIT, tid("in-flight-empty"));
  assert.equal(await text("in-flight-count"), "0");
  assert.deepEqual(dialogs, []);
  assert.deepEqual(await violations(), []);
  assert.deepEqual(problems, []);
});
