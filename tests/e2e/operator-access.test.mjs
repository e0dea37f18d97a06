// Least privilege for operators, on the wire (docs/contract.md §2.1,
// docs/operations.md#console): an operator's token (OPERATOR_TOKENS) reads
// its tenant's stats, key listing and key lookup and evicts a key, and is
// refused (`403 forbidden`) on the application — the embedded orders here,
// a tenant's API token may not evict a key (which would run it again)
// unless EVICT_WITH_API_TOKENS=true opts API tokens in —
// a real origin in proxy mode — so it never sends a protected request and
// never gets a stored body; and where the console is served (CONSOLE, CONSOLE_HOST): off
// in proxy mode unless turned on, only on its own host when one is named,
// that host serving no application. Bad values are `500 misconfigured`
// naming the variable. The console in a browser: console.test.mjs.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { ACME, eventually, json, orderInit, read, sha256hex, slug, startGateway, startOrigin } from "./harness.mjs";

const OPERATOR = "Bearer operator-token-acme";
const OPERATOR_TOKENS = JSON.stringify({ [sha256hex("operator-token-acme")]: "acme" });
/** The lookup document's members (docs/contract.md §2.7): metadata only. */
const LOOKUP_MEMBERS = ["key", "state", "generation", "created_at", "expires_at", "lease_expires_at", "response_status", "retained", "replays"];

let origin;
const started = [];
async function gateway(vars, apiTokens) {
  const gw = await startGateway({ vars, ...(apiTokens === undefined ? {} : { apiTokens }) });
  started.push(gw);
  return gw;
}
/** A request to `gw` at `url` (an absolute URL: its host is the request's). */
const at = (gw, url, init = {}) => gw.mf.dispatchFetch(url, init);
const isConsole = (r) => r.status === 200 && /^default-src 'none'/.test(r.headers["content-security-policy"] ?? "");

before(async () => {
  origin = await startOrigin((req) => ({ status: 200, headers: { "content-type": "text/plain" }, body: `origin ${req.method} ${req.url}` }));
});
after(async () => {
  for (const gw of started) await gw.dispose();
  await origin?.close();
});

test("embedded mode: an operator token reads stats, keys and a lookup, and every order route is 403 forbidden, a replay's POST included", async () => {
  const gw = await gateway({ OPERATOR_TOKENS });
  const created = await json(await gw.request("/v1/orders", orderInit({ key: "op-order-1" })));
  assert.equal(created.status, 201);
  const orders = async () => (await json(await gw.request("/v1/orders", { headers: { authorization: ACME } }))).json.orders.length;
  const before = await orders();

  for (const [path, init] of [
    ["/v1/orders", orderInit({ key: "op-order-1", auth: OPERATOR })], // with a tenant's token: the stored answer
    ["/v1/orders", orderInit({ key: "op-order-2", auth: OPERATOR })], // a new key: nothing may run
    ["/v1/orders", { headers: { authorization: OPERATOR } }],
    [`/v1/orders/${created.json.id}`, { headers: { authorization: OPERATOR } }],
  ]) {
    const r = await json(await gw.request(path, init));
    assert.equal(r.status, 403, `${init.method ?? "GET"} ${path}`);
    assert.equal(slug(r.json), "forbidden");
    assert.equal(r.headers["x-should-retry"], "false");
    assert.equal(r.headers["www-authenticate"], 'Bearer error="insufficient_scope"');
    assert.equal(r.headers["idempotent-replayed"], undefined);
    assert.ok(!r.text.includes(created.json.id), "no stored body, no order");
  }
  assert.equal(await orders(), before, "no order was made");
  assert.equal((await gw.request("/v1/idempotency-keys/op-order-2", { headers: { authorization: ACME } })).status, 404, "nothing claimed");
  assert.ok(gw.events("idempotency.token_refused").some((e) => e.kind === "operator"), "each refusal is logged (warn)");

  const stats = await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: OPERATOR } }));
  assert.equal(stats.status, 200);
  assert.equal(stats.json.records, 1);
  const listed = await json(await gw.request("/v1/idempotency-keys", { headers: { authorization: OPERATOR } }));
  assert.deepEqual(listed.json.keys.map((k) => k.key), ["op-order-1"]);
  const found = await json(await gw.request("/v1/idempotency-keys/op-order-1", { headers: { authorization: OPERATOR } }));
  assert.equal(found.status, 200);
  for (const doc of [found.json, ...listed.json.keys]) assert.deepEqual(Object.keys(doc).filter((k) => !LOOKUP_MEMBERS.includes(k)), []);
  assert.ok(!found.text.includes(created.json.id) && !listed.text.includes(created.json.id), "no stored body in a read");
  // The tenant's own token keeps every power.
  const replay = await read(await gw.request("/v1/orders", orderInit({ key: "op-order-1" })));
  assert.equal(replay.headers["idempotent-replayed"], "true");
});

test("an operator token evicts a key (contract §2.11), answered its metadata only, and is still refused the application", async () => {
  const gw = await gateway({ OPERATOR_TOKENS });
  const created = await json(await gw.request("/v1/orders", orderInit({ key: "op-evict-1" })));
  assert.equal(created.status, 201);
  const evicted = await json(await gw.request("/v1/idempotency-keys/op-evict-1", { method: "DELETE", headers: { authorization: OPERATOR } }));
  assert.equal(evicted.status, 200, evicted.text);
  assert.deepEqual([evicted.json.key, evicted.json.state, evicted.json.generation, evicted.json.response_status], ["op-evict-1", "completed", 1, 201]);
  assert.deepEqual(Object.keys(evicted.json).filter((k) => !LOOKUP_MEMBERS.includes(k)), [], "only the record's metadata");
  assert.ok(!evicted.text.includes(created.json.id), "no stored body");
  assert.equal((await gw.request("/v1/idempotency-keys/op-evict-1", { headers: { authorization: ACME } })).status, 404, "the key is gone");
  assert.equal((await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: OPERATOR } }))).json.evicted, 1);
  // The same token still cannot send the order, whose key now runs again.
  const refused = await json(await gw.request("/v1/orders", orderInit({ key: "op-evict-1", auth: OPERATOR })));
  assert.equal(refused.status, 403);
  assert.equal(slug(refused.json), "forbidden");
  assert.equal((await gw.request("/v1/idempotency-keys/op-evict-1", { headers: { authorization: ACME } })).status, 404, "nothing claimed");
  // With the tenant's token the key runs again, as a new key.
  const again = await read(await gw.request("/v1/orders", orderInit({ key: "op-evict-1" })));
  assert.equal(again.status, 201);
  assert.equal(again.headers["idempotent-replayed"], undefined);
});

test("a tenant's API token may not evict a key (403, nothing changed, the order still replays) unless EVICT_WITH_API_TOKENS=true; an invalid value is 500 misconfigured naming it", async () => {
  const gw = await gateway({ OPERATOR_TOKENS });
  const created = await json(await gw.request("/v1/orders", orderInit({ key: "paid-1" })));
  assert.equal(created.status, 201);
  const refused = await json(await gw.request("/v1/idempotency-keys/paid-1", { method: "DELETE", headers: { authorization: ACME } }));
  assert.equal(refused.status, 403, refused.text);
  assert.equal(refused.headers["content-type"], "application/problem+json");
  assert.equal(slug(refused.json), "forbidden");
  assert.match(refused.json.detail, /OPERATOR_TOKENS.*EVICT_WITH_API_TOKENS/);
  assert.equal(refused.headers["www-authenticate"], 'Bearer error="insufficient_scope"');
  const kept = await json(await gw.request("/v1/idempotency-keys/paid-1", { headers: { authorization: ACME } }));
  assert.equal(kept.json.state, "completed", "the record is still there");
  const replay = await read(await gw.request("/v1/orders", orderInit({ key: "paid-1" })));
  assert.equal(replay.headers["idempotent-replayed"], "true", "the order is not run again");
  assert.equal((await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: OPERATOR } }))).json.evicted, 0);
  await eventually(() => gw.events("idempotency.token_refused").some((e) => e.kind === "tenant")); // the refusal is logged

  // Opted in: the tenant's token evicts.
  const opted = await gateway({ OPERATOR_TOKENS, EVICT_WITH_API_TOKENS: "true" });
  assert.equal((await read(await opted.request("/v1/orders", orderInit({ key: "paid-2" })))).status, 201);
  const evicted = await json(await opted.request("/v1/idempotency-keys/paid-2", { method: "DELETE", headers: { authorization: ACME } }));
  assert.equal(evicted.status, 200, evicted.text);
  assert.equal(evicted.json.state, "completed");

  // Anything but true or false refuses the configuration: no silent default either way.
  for (const value of ["yes", "TRUE"]) {
    const bad = await startGateway({ vars: { OPERATOR_TOKENS, EVICT_WITH_API_TOKENS: value } });
    try {
      const r = await json(await bad.request("/v1/idempotency-keys/paid-3", { method: "DELETE", headers: { authorization: OPERATOR } }));
      assert.equal(r.status, 500, `${value}: ${r.text}`);
      assert.equal(slug(r.json), "misconfigured");
      assert.match(r.json.detail, /EVICT_WITH_API_TOKENS/);
    } finally { await bad.dispose(); }
  }
});

test("proxy mode: /console is the origin's path unless CONSOLE=on", async () => {
  const off = await gateway({ ORIGIN_URL: origin.url });
  for (const path of ["/console", "/console/app.js"]) {
    const seen = origin.requests.length;
    const r = await read(await off.request(path, { headers: { authorization: ACME } }));
    assert.equal(r.text, `origin GET ${path}`, path);
    assert.ok(!isConsole(r));
    assert.equal(origin.requests.length, seen + 1);
  }
  const on = await gateway({ ORIGIN_URL: origin.url, CONSOLE: "on" });
  const seen = origin.requests.length;
  assert.ok(isConsole(await read(await on.request("/console"))));
  assert.equal(origin.requests.length, seen, "the origin never sees /console");
});

test("outside proxy mode the console is served unless CONSOLE=off; then /console is the application's path", async () => {
  const byDefault = await gateway({});
  assert.ok(isConsole(await read(await byDefault.request("/console"))));
  const off = await gateway({ CONSOLE: "off" });
  const r = await json(await off.request("/console"));
  assert.equal(r.status, 401, "the application's: a token is needed");
  assert.ok(!isConsole(r));
});

test("CONSOLE_HOST: the console on that host only; that host serves no application; elsewhere /console is the origin's", async () => {
  const gw = await gateway({ ORIGIN_URL: origin.url, CONSOLE_HOST: "Console.Example.test", OPERATOR_TOKENS });
  const seen = origin.requests.length;
  for (const path of ["/console", "/console/app.js"]) assert.ok(isConsole(await read(await at(gw, `http://console.example.test${path}`))), path);
  const stats = await at(gw, "http://console.example.test/v1/idempotency/stats", { headers: { authorization: OPERATOR } });
  assert.equal(stats.status, 200, "the reads the console makes are served there");
  assert.equal((await at(gw, "http://console.example.test/health")).status, 200);
  for (const [path, init] of [
    ["/charges", { method: "POST", headers: { authorization: ACME, "idempotency-key": "host-1" }, body: "{}" }],
    ["/charges", { headers: { authorization: ACME } }],
    ["/", {}],
  ]) {
    const r = await json(await at(gw, `http://console.example.test${path}`, init));
    assert.equal(r.status, 404, `${init.method ?? "GET"} ${path}`);
    assert.equal(slug(r.json), "not-found");
  }
  assert.equal(origin.requests.length, seen, "nothing of the origin on the console's host");
  assert.equal((await gw.request("/v1/idempotency-keys/host-1", { headers: { authorization: ACME } })).status, 404, "nothing claimed");

  // Any other host: /console is the origin's, and the application is served.
  const elsewhere = await read(await gw.request("/console", { headers: { authorization: ACME } }));
  assert.equal(elsewhere.text, "origin GET /console");
  const paid = await read(await gw.request("/charges", { method: "POST", headers: { authorization: ACME, "idempotency-key": "host-2" }, body: "{}" }));
  assert.equal(paid.text, "origin POST /charges");
});

test("a bad CONSOLE, CONSOLE_HOST or OPERATOR_TOKENS is 500 misconfigured naming it, /console included; /health still answers", async () => {
  const acmeHash = sha256hex("dev-token-acme"); // a tenant's token (API_TOKENS) listed as an operator's too
  for (const [vars, variable] of [
    [{ ORIGIN_URL: origin.url, CONSOLE: "yes" }, "CONSOLE"],
    [{ CONSOLE_HOST: "https://console.example.test" }, "CONSOLE_HOST"],
    [{ OPERATOR_TOKENS: '{"nothex": "acme"}' }, "OPERATOR_TOKENS"],
    [{ OPERATOR_TOKENS: JSON.stringify({ [acmeHash]: "acme" }) }, "OPERATOR_TOKENS"],
  ]) {
    const gw = await gateway(vars);
    for (const path of ["/console", "/v1/idempotency/stats"]) {
      const r = await json(await gw.request(path, { headers: { authorization: ACME } }));
      assert.equal(r.status, 500, `${variable} ${path}`);
      assert.equal(slug(r.json), "misconfigured");
      assert.match(r.json.detail, new RegExp(`\\b${variable}\\b`));
      assert.ok(!isConsole(r));
    }
    assert.equal((await gw.request("/health")).status, 200);
    await gw.dispose();
    started.splice(started.indexOf(gw), 1);
  }
});
