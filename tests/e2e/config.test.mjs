// Configuration (docs/contract.md §5) as the deployed Worker sees it: defaults, invalid
// values failing loudly, no demo-token fallback, and the request bounds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGateway, orderInit, json, slug, orders, wranglerVars, eventually } from "./harness.mjs";
import { fingerprint } from "../../client/index.js";

test("wrangler.toml publishes the documented defaults", () => {
  assert.deepEqual(wranglerVars(), {
    RETENTION_SECONDS: "86400", LEASE_SECONDS: "60", MAX_REQUEST_BODY_BYTES: "1048576",
    MAX_STORED_BODY_BYTES: "1048576", SWEEP_BATCH: "500", SWEEP_INTERVAL_SECONDS: "60", IDEMPOTENCY_REQUIRED: "true",
    IDEMPOTENCY_KEY_HEADER: "Idempotency-Key",
    PROTECTED_METHODS: "POST,PATCH", FINGERPRINT_HEADERS: "content-type",
    STORED_RESPONSE_HEADERS: "content-type,location,etag", RELEASE_ON_5XX: "false",
    MAX_KEYS_PER_TENANT: "1000000", MAX_DB_BYTES_PER_OBJECT: "9000000000", FAILURE_POLICY: "closed", ORIGIN_TIMEOUT_SECONDS: "30",
    LOG_LEVEL: "info", REPLAY_CACHE_BYTES: "8388608",
    IN_FLIGHT_WAIT_SECONDS: "0", IN_FLIGHT_WAIT_MAX_SECONDS: "10", IN_FLIGHT_MAX_WAITERS: "1000",
    EVICT_WITH_API_TOKENS: "false",
  });
});

test("wrangler.toml [vars] publishes exactly the defaults of src/config/defaults.json (their one home: compiled into Rust, generated into the JS package)", () => {
  const fixture = JSON.parse(readFileSync(new URL("../../src/config/defaults.json", import.meta.url), "utf8"));
  const vars = wranglerVars();
  for (const [name, value] of Object.entries(vars)) assert.equal(fixture.variables[name], value, name);
  assert.deepEqual(vars, fixture.variables, "every default is published, and nothing else");
});

test("the packaged config (worker/wrangler.jsonc) runs the prebuilt Worker with wrangler.toml's bindings and defaults, and no build step", () => {
  const text = readFileSync(new URL("../../worker/wrangler.jsonc", import.meta.url), "utf8");
  const config = JSON.parse(text.replace(/^\s*\/\/.*$/gm, ""));
  assert.deepEqual(config.vars, wranglerVars());
  assert.equal(config.main, "./entry.mjs");
  assert.equal(config.build, undefined, "prebuilt: nothing to build where it is installed");
  assert.deepEqual(config.durable_objects.bindings, [{ name: "TENANT_LEDGER", class_name: "TenantLedger" }]);
  assert.deepEqual(config.migrations, [{ tag: "v1", new_sqlite_classes: ["TenantLedger"] }]);
  const toml = readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8");
  assert.equal(config.compatibility_date, toml.match(/^compatibility_date = "(.*)"$/m)[1]);
  assert.equal(config.minify, true);
  assert.match(toml, /^minify = true$/m);
  // And with no __name() wrapper per function (CPU per request).
  assert.equal(config.keep_names, false);
  assert.match(toml, /^keep_names = false$/m);
});

test("wrangler.toml's [build] command works from any directory: another directory bundles the checkout's build", async () => {
  const { spawnSync } = await import("node:child_process");
  const { mkdtempSync, rmSync, existsSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const root = new URL("../../", import.meta.url).pathname;
  const elsewhere = mkdtempSync(`${tmpdir()}/elsewhere-`);
  try {
    const r = spawnSync(process.execPath, [`${root}node_modules/wrangler/bin/wrangler.js`, "deploy", "--dry-run", "-c", `${root}wrangler.toml`, "--outdir", `${elsewhere}/out`], {
      cwd: elsewhere, encoding: "utf8", env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout + r.stderr, /not in the idempotency-ledger checkout/);
    assert.ok(existsSync(`${elsewhere}/out/entry.js`));
  } finally {
    rmSync(elsewhere, { recursive: true, force: true });
  }
});

test("examples/vitest-app's lock is in step with the package it links (else its npm ci fails: run npm install there)", () => {
  const root = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  const lock = JSON.parse(readFileSync(new URL("../../examples/vitest-app/package-lock.json", import.meta.url), "utf8"));
  const linked = lock.packages["../.."];
  assert.deepEqual(
    { version: linked.version, devDependencies: linked.devDependencies, peerDependencies: linked.peerDependencies },
    { version: root.version, devDependencies: root.devDependencies, peerDependencies: root.peerDependencies },
    "the root package.json changed: run `npm install` in examples/vitest-app and commit its package-lock.json",
  );
});

test("without API_TOKENS the Worker is misconfigured and never accepts the demo tokens", async () => {
  const gw = await startGateway({ apiTokens: null });
  try {
    const r = await json(await gw.request("/v1/orders", orderInit({ key: "k" })));
    assert.equal(r.status, 500);
    assert.equal(slug(r.json), "misconfigured");
    assert.equal((await json(await gw.request("/health"))).status, 200, "health needs no configuration");
  } finally { await gw.dispose(); }
});

test("an invalid variable answers 500 misconfigured naming it", async () => {
  for (const vars of [{ LEASE_SECONDS: "soon" }, { STORED_RESPONSE_HEADERS: "content-type,set-cookie" }, { FAILURE_POLICY: "maybe" }, { LOG_LEVEL: "debug" }, { REPLAY_CACHE_BYTES: "lots" }, { IN_FLIGHT_MAX_WAITERS: "-5" }]) {
    const gw = await startGateway({ vars });
    try {
      const r = await json(await gw.request("/v1/orders", orderInit({ key: "k" })));
      assert.equal(r.status, 500, JSON.stringify(vars));
      assert.equal(slug(r.json), "misconfigured");
      assert.match(r.json.detail, new RegExp(Object.keys(vars)[0]));
    } finally { await gw.dispose(); }
  }
});

test("a retention shorter than the lease is refused, naming both", async () => {
  // With RETENTION_SECONDS=2 and LEASE_SECONDS=20 a slow first run's record
  // could be swept mid-run and a retry would run it again: refused instead.
  for (const vars of [{ RETENTION_SECONDS: "2", LEASE_SECONDS: "20" }, { RETENTION_SECONDS: "59" }]) {
    const gw = await startGateway({ vars });
    try {
      const r = await json(await gw.request("/v1/orders", orderInit({ key: "k" })));
      assert.equal(r.status, 500, JSON.stringify(vars));
      assert.equal(slug(r.json), "misconfigured");
      assert.match(r.json.detail, /RETENTION_SECONDS/);
      assert.match(r.json.detail, /LEASE_SECONDS/);
    } finally { await gw.dispose(); }
  }
});

test("a body over MAX_REQUEST_BODY_BYTES is 413 before anything is claimed", async () => {
  const gw = await startGateway({ vars: { MAX_REQUEST_BODY_BYTES: "64" } });
  try {
    const big = JSON.stringify({ sku: "X", quantity: 1, pad: "p".repeat(100) });
    const r = await json(await gw.request("/v1/orders", orderInit({ key: "big-1", body: big })));
    assert.equal(r.status, 413);
    assert.equal(slug(r.json), "request-too-large");
    const rec = await gw.request("/v1/idempotency-keys/big-1", { headers: { authorization: "Bearer dev-token-acme" } });
    assert.equal(rec.status, 404, "no record was claimed");
    assert.equal((await orders(gw)).length, 0);
  } finally { await gw.dispose(); }
});

test("with IDEMPOTENCY_REQUIRED=false a request without a key runs unprotected", async () => {
  const gw = await startGateway({ vars: { IDEMPOTENCY_REQUIRED: "false" } });
  try {
    const a = await json(await gw.request("/v1/orders", orderInit({})));
    const b = await json(await gw.request("/v1/orders", orderInit({})));
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.notEqual(a.json.id, b.json.id, "unprotected: each request runs");
    const stats = await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: "Bearer dev-token-acme" } }));
    assert.equal(stats.json.records, 0);
  } finally { await gw.dispose(); }
});

test("PROTECTED_METHODS decides which methods need a key", async () => {
  const patch = (gw) => gw.request("/v1/orders/ord_1", { method: "PATCH", headers: { authorization: "Bearer dev-token-acme" }, body: "{}" }).then(json);
  const byDefault = await startGateway();
  try {
    const r = await patch(byDefault);
    assert.equal(r.status, 400);
    assert.equal(slug(r.json), "idempotency-key-missing");
  } finally { await byDefault.dispose(); }
  const postOnly = await startGateway({ vars: { PROTECTED_METHODS: "POST" } });
  try {
    const r = await patch(postOnly);
    assert.equal(r.status, 405, "unprotected: the application itself answers");
    assert.equal(slug(r.json), "method-not-allowed");
  } finally { await postOnly.dispose(); }
});

test("FINGERPRINT_HEADERS: a header that selects behaviour is part of the request", async () => {
  const gw = await startGateway({ vars: { FINGERPRINT_HEADERS: "content-type,x-api-version" } });
  try {
    const send = (version) => gw.request("/v1/orders", orderInit({ key: "versioned-1", headers: { "x-api-version": version } })).then(json);
    assert.equal((await send("2026-01-01")).status, 201);
    const other = await send("2026-06-01");
    assert.equal(other.status, 422);
    assert.deepEqual(other.json.differs, ["header:x-api-version"]);
    const same = await send("2026-01-01");
    assert.equal(same.headers["idempotent-replayed"], "true");
  } finally { await gw.dispose(); }
});

test("LOG_LEVEL=warn drops the per-request info line and keeps warnings", async () => {
  // Proxy mode against a closed port: each request writes a warning
  // (idempotency.origin_unavailable) and, at info, a request line after it.
  // Console output arrives in order, so once the second warning is here the
  // first request's info line would have been too.
  const quiet = await startGateway({ vars: { LOG_LEVEL: "warn", ORIGIN_URL: "http://127.0.0.1:9" } });
  try {
    for (let i = 0; i < 2; i++) {
      const r = await json(await quiet.request("/v1/orders", orderInit({ key: "quiet-1" })));
      assert.equal(r.status, 502);
      assert.equal(slug(r.json), "origin-unavailable");
    }
    await eventually(() => quiet.events("idempotency.origin_unavailable").length === 2);
    assert.deepEqual(quiet.events("idempotency.request"), [], "no info line at warn");
  } finally { await quiet.dispose(); }
  const chatty = await startGateway();
  try {
    assert.equal((await chatty.request("/v1/orders", orderInit({ key: "chatty-1" }))).status, 201);
    await eventually(() => chatty.events("idempotency.request").length === 1);
    assert.equal(chatty.events("idempotency.request")[0].outcome, "executed");
  } finally { await chatty.dispose(); }
});

test("IDEMPOTENCY_KEY_HEADER: the key is read from that header by the key's rules, the standard one is not read; a header the gateway owns is refused", async () => {
  const gw = await startGateway({ vars: { IDEMPOTENCY_KEY_HEADER: "X-Idempotency-Key" } });
  try {
    const post = (headers, body = { sku: "LEGACY", quantity: 1 }) => gw.request("/v1/orders", {
      method: "POST", headers: { authorization: "Bearer dev-token-acme", "content-type": "application/json", ...headers }, body: JSON.stringify(body),
    }).then(json);
    const first = await post({ "x-idempotency-key": '"legacy-order-1"' });
    assert.equal(first.status, 201);
    const replay = await post({ "x-idempotency-key": "legacy-order-1" });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers["idempotent-replayed"], "true");
    assert.equal(replay.text, first.text);
    assert.equal(slug((await post({ "idempotency-key": "legacy-order-1" })).json), "idempotency-key-missing");
    assert.equal(slug((await post({ "x-idempotency-key": "a,b" })).json), "idempotency-key-invalid");
    const lookup = await json(await gw.request("/v1/idempotency-keys/legacy-order-1", { headers: { authorization: "Bearer dev-token-acme" } }));
    assert.equal(lookup.json.state, "completed");
    assert.equal((await orders(gw)).length, 1);
  } finally {
    await gw.dispose();
  }
  const refused = await startGateway({ vars: { IDEMPOTENCY_KEY_HEADER: "Authorization" } });
  try {
    const r = await json(await refused.request("/v1/orders", orderInit({ key: "k-1" })));
    assert.equal(r.status, 500);
    assert.equal(slug(r.json), "misconfigured");
    assert.match(r.json.detail, /IDEMPOTENCY_KEY_HEADER/);
  } finally {
    await refused.dispose();
  }
});

test("an object with an invalid variable refuses new claims but settles the claims it granted before; one a settlement reads refuses both, changing nothing", async () => {
  // Owners hold grants (as a proxied run in flight does) when the Worker is
  // redeployed with an invalid variable, then with the fix: a settlement
  // refused in between would let the key run a second time.
  const dir = mkdtempSync(join(tmpdir(), "settle-misconfigured-"));
  const start = (vars) => startGateway({ vars, shared: { resourcePersistencePath: dir } });
  const fp = await fingerprint({ method: "POST", target: "/charges", headers: {}, body: new TextEncoder().encode("x") });
  const body = (text) => Buffer.from(text).toString("base64");
  /** One RPC v1 call on acme's object: its status and answer. */
  const rpc = async (gw, route, call) => {
    const r = await (await gw.ledger("acme")).fetch(`https://ledger/rpc/v1/${route}`, { method: "POST", body: JSON.stringify(call) });
    return { status: r.status, json: await r.json() };
  };
  const response = (text) => ({ status: 201, headers: [["content-type", "text/plain"]], body: body(text) });
  try {
    const grants = {};
    const before = await start({});
    try {
      for (const key of ["completes", "releases", "waits-for-fix"]) {
        const granted = await rpc(before, "claim", { key, fingerprint: fp });
        assert.equal(granted.json.outcome, "claimed", key);
        grants[key] = granted.json.generation;
      }
    } finally { await before.dispose(); }

    // Gateway-only variables invalid: new claims and the gateway refused, settlements served.
    const broken = await start({ FAILURE_POLICY: "maybe", IN_FLIGHT_MAX_WAITERS: "many" });
    try {
      const fresh = await rpc(broken, "claim", { key: "new-key", fingerprint: fp });
      assert.equal(fresh.status, 500, JSON.stringify(fresh.json));
      assert.equal(slug(fresh.json), "misconfigured");
      assert.match(fresh.json.detail, /FAILURE_POLICY/);
      const gateway = await json(await broken.request("/v1/orders", orderInit({ key: "via-gateway" })));
      assert.equal(gateway.status, 500);
      const completed = await rpc(broken, "complete", { key: "completes", generation: grants.completes, response: response("charged once") });
      assert.equal(completed.status, 200, JSON.stringify(completed.json));
      assert.equal(completed.json.outcome, "stored");
      const released = await rpc(broken, "release", { key: "releases", generation: grants.releases });
      assert.equal(released.status, 200, JSON.stringify(released.json));
      assert.equal(released.json.outcome, "released");
      await eventually(() => broken.events("idempotency.misconfigured").some((e) => e.variable === "FAILURE_POLICY" && /settlement/.test(e.served ?? "")));
    } finally { await broken.dispose(); }

    // A variable a settlement reads (how long to keep the answer), invalid: refused, nothing changed.
    const unreadable = await start({ RETENTION_SECONDS: "soon" });
    try {
      const refused = await rpc(unreadable, "complete", { key: "waits-for-fix", generation: grants["waits-for-fix"], response: response("later") });
      assert.equal(refused.status, 500, JSON.stringify(refused.json));
      assert.match(refused.json.detail, /RETENTION_SECONDS/);
    } finally { await unreadable.dispose(); }

    // Fixed: the completed key replays (never runs again), the released one runs again, the refused claim made nothing.
    const fixed = await start({});
    try {
      const replay = await rpc(fixed, "claim", { key: "completes", fingerprint: fp });
      assert.equal(replay.json.outcome, "completed", JSON.stringify(replay.json));
      assert.equal(Buffer.from(replay.json.response.body, "base64").toString(), "charged once");
      const again = await rpc(fixed, "claim", { key: "releases", fingerprint: fp });
      assert.equal(again.json.outcome, "claimed");
      assert.ok(again.json.generation > grants.releases);
      assert.equal((await rpc(fixed, "lookup", { key: "new-key" })).json.record, null, "no key was created");
      const late = await rpc(fixed, "complete", { key: "waits-for-fix", generation: grants["waits-for-fix"], response: response("later") });
      assert.equal(late.json.outcome, "stored", "the refused settlement changed nothing: its owner settles now");
    } finally { await fixed.dispose(); }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});
