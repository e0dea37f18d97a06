// The npm package's key and response helpers (client/index.js, and the
// modules' own exports the package uses internally), run in Node with the
// same Web APIs Workers have.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  generateIdempotencyKey, deriveIdempotencyKey, withIdempotencyKey,
  applyIdempotencyKey, captureResponse, replayResponse, IdempotencyKeyError,
} from "../../client/index.js";
import { formatIdempotencyKey } from "../../client/rules/key.js";
import { storedBodyBytes } from "../../client/rules/stored.js";

test("generateIdempotencyKey mints distinct UUIDs", () => {
  const a = generateIdempotencyKey();
  assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.notEqual(a, generateIdempotencyKey());
});

test("deriveIdempotencyKey is stable and keeps part boundaries", async () => {
  const k = await deriveIdempotencyKey("create-order", "cart-42");
  assert.match(k, /^[0-9a-f]{64}$/);
  assert.equal(k, await deriveIdempotencyKey("create-order", "cart-42"));
  assert.notEqual(k, await deriveIdempotencyKey("create-order", "cart-4", "2"));
  assert.notEqual(await deriveIdempotencyKey("ab", "c"), await deriveIdempotencyKey("a", "bc"));
  await assert.rejects(() => deriveIdempotencyKey(), IdempotencyKeyError);
});

test("formatIdempotencyKey writes an sf-string and refuses bad keys", () => {
  assert.equal(formatIdempotencyKey('a"b\\c'), '"a\\"b\\\\c"');
  assert.throws(() => formatIdempotencyKey(""), IdempotencyKeyError);
  assert.throws(() => formatIdempotencyKey("k".repeat(256)), IdempotencyKeyError);
  assert.throws(() => formatIdempotencyKey("caf\u00e9"), IdempotencyKeyError);
});

test("withIdempotencyKey copies init with the header set and others kept", () => {
  const init = { method: "POST", headers: { "x-a": "1" }, body: "{}" };
  const out = withIdempotencyKey(init, "k-1");
  assert.equal(out.headers.get("idempotency-key"), '"k-1"');
  assert.equal(out.headers.get("x-a"), "1");
  assert.equal(out.body, "{}");
  assert.equal(init.headers["idempotency-key"], undefined, "the original is untouched");
});

test("applyIdempotencyKey sets a key only on POST/PATCH without one", () => {
  const post = applyIdempotencyKey(new Request("https://x/", { method: "POST", body: "a" }));
  assert.match(post.headers.get("idempotency-key"), /^"[0-9a-f-]{36}"$/);
  const given = applyIdempotencyKey(new Request("https://x/", { method: "PATCH", body: "a" }), "mine");
  assert.equal(given.headers.get("idempotency-key"), '"mine"');
  const get = new Request("https://x/");
  assert.equal(applyIdempotencyKey(get), get);
  const keyed = new Request("https://x/", { method: "POST", body: "a", headers: { "idempotency-key": "kept" } });
  assert.equal(applyIdempotencyKey(keyed).headers.get("idempotency-key"), "kept");
});

test("captureResponse and replayResponse round-trip bytes, allowlisted headers only", async () => {
  const bytes = new Uint8Array([0, 255, 10, 13, 128]);
  const original = new Response(bytes, { status: 201, headers: { "content-type": "application/octet-stream", "set-cookie": "s=1", "x-other": "y" } });
  const stored = await captureResponse(original, { storedHeaders: ["content-type", "set-cookie"] });
  assert.deepEqual(stored.headers, [["content-type", "application/octet-stream"]]);
  assert.deepEqual([...storedBodyBytes(stored)], [...bytes]);
  const replay = replayResponse(stored);
  assert.equal(replay.status, 201);
  assert.equal(replay.headers.get("idempotent-replayed"), "true");
  assert.deepEqual([...new Uint8Array(await replay.arrayBuffer())], [...bytes]);
  const tomb = await captureResponse(new Response("x".repeat(20)), { maxStoredBodyBytes: 10 });
  assert.equal(tomb.body, null);
  const loud = replayResponse(tomb);
  assert.equal(loud.status, 500);
  assert.equal((await loud.json()).original_status, 200);
  const empty = replayResponse(await captureResponse(new Response(null, { status: 204 })));
  assert.equal(empty.status, 204);
});

test("parseIdempotencyKey agrees with the gateway on every shared vector", async () => {
  const { parseIdempotencyKey } = await import("../../client/index.js");
  const { readFileSync } = await import("node:fs");
  const fixture = JSON.parse(readFileSync(new URL("../fixtures/idempotency-keys.json", import.meta.url), "utf8"));
  assert.ok(fixture.vectors.length >= 20);
  for (const v of fixture.vectors) {
    if ("key" in v) {
      assert.equal(parseIdempotencyKey(v.field), v.key, JSON.stringify(v.field));
    } else {
      assert.throws(() => parseIdempotencyKey(v.field), (e) => e instanceof IdempotencyKeyError && e.code === v.error, JSON.stringify(v.field));
    }
  }
});

test("preferWait reads Prefer exactly as the gateway does (shared vectors)", async () => {
  const { withIdempotency } = await import("../../client/index.js");
  const { preferWait } = await import("../../client/rules/waiting.js");
  const { readFileSync } = await import("node:fs");
  const fixture = JSON.parse(readFileSync(new URL("../fixtures/prefer-wait.json", import.meta.url), "utf8"));
  assert.ok(fixture.vectors.length >= 20);
  for (const v of fixture.vectors) {
    const want = v.wait === "saturated" ? Infinity : v.wait;
    assert.equal(preferWait(v.header), want, JSON.stringify(v.header));
  }
  // Absurd middleware settings are refused when the handler is wrapped.
  const ledger = () => null;
  assert.throws(() => withIdempotency(() => new Response(), { ledger, waitSeconds: 11 }), /waitSeconds exceeds/);
  assert.throws(() => withIdempotency(() => new Response(), { ledger, maxWaitSeconds: 301 }), /0\.\.300/);
  assert.throws(() => withIdempotency(() => new Response(), { ledger, waitSeconds: -1 }), TypeError);
  assert.throws(() => withIdempotency(() => new Response(), { ledger, waitSeconds: 1.5 }), TypeError);
});

test("fingerprint() finds headers case-insensitively in every header shape", async () => {
  const { fingerprint } = await import("../../client/index.js");
  const base = { method: "POST", target: "/v1/orders", body: "{}" };
  const reference = await fingerprint({ ...base, headers: new Headers({ "content-type": "application/json" }) });
  for (const headers of [
    { "Content-Type": "application/json" },
    { "CONTENT-TYPE": "application/json" },
    [["Content-Type", "application/json"]],
    new Map([["Content-Type", "application/json"]]),
    new Headers({ "Content-Type": "application/json" }),
  ]) {
    assert.equal((await fingerprint({ ...base, headers })).digest, reference.digest, JSON.stringify([...(headers.entries?.() ?? Object.entries(headers))]));
  }
  const absent = await fingerprint({ ...base, headers: {} });
  assert.notEqual(absent.digest, reference.digest, "absent is not the same request");
});

test("fingerprint() reproduces every shared fingerprint vector", async () => {
  const { fingerprint } = await import("../../client/index.js");
  const { readFileSync } = await import("node:fs");
  const fixture = JSON.parse(readFileSync(new URL("../fixtures/fingerprints.json", import.meta.url), "utf8"));
  assert.ok(fixture.vectors.length >= 10);
  for (const v of fixture.vectors) {
    const headers = Object.fromEntries(v.headers.filter(([, value]) => value !== null));
    const got = await fingerprint({
      method: v.method, target: v.target, headers,
      fingerprintHeaders: v.headers.map(([name]) => name),
      body: Buffer.from(v.body_base64, "base64"),
    });
    assert.deepEqual(got, { digest: v.digest, components: v.components }, v.about);
  }
});

test("shardOf / shardObjectName place keys exactly as the gateway (shared vectors); parseTenantShards validates like it", async () => {
  const { shardOf, shardObjectName, parseTenantShards } = await import("../../client/index.js");
  const { readFileSync } = await import("node:fs");
  const fixture = JSON.parse(readFileSync(new URL("../fixtures/shards.json", import.meta.url), "utf8"));
  assert.ok(fixture.vectors.length >= 50);
  for (const v of fixture.vectors) {
    const index = await shardOf(v.key, v.shards);
    assert.equal(index, v.index, `${v.key} over ${v.shards}`);
    assert.equal(shardObjectName("acme", index, v.shards), v.object);
  }
  const map = parseTenantShards('{"acme": 8, "globex": {"shards": 4, "previous": 1}}');
  assert.deepEqual(map.get("acme"), { shards: 8, previous: null });
  assert.deepEqual(map.get("globex"), { shards: 4, previous: 1 });
  assert.equal(parseTenantShards(undefined).size, 0);
  // The values both parsers read alike (shared with the Rust tests): each valid one to exactly its tenants,
  // each invalid one refused — `8.0` and `1e1` included, which JSON.parse alone reads as 8 and 10.
  assert.ok(fixture.valid.length >= 10);
  for (const { raw, tenants } of fixture.valid) {
    const read = Object.fromEntries([...parseTenantShards(raw)].map(([tenant, l]) => [tenant, [l.shards, l.previous]]));
    assert.deepEqual(read, tenants, JSON.stringify(raw));
  }
  assert.ok(fixture.invalid.length >= 30);
  for (const bad of fixture.invalid) {
    assert.throws(() => parseTenantShards(bad), TypeError, JSON.stringify(bad));
  }
  assert.throws(() => parseTenantShards('{"acme": 8.0}'), /TENANT_SHARDS: 8\.0 is not a whole number written as one/);
});

test("a sharded tenant's listing pages merge exactly as the gateway merges them (shared vectors: tests/fixtures/list-merge.json)", async () => {
  const { mergeListPages } = await import("../../client/rpc/shards.js");
  const { readFileSync } = await import("node:fs");
  const fixture = JSON.parse(readFileSync(new URL("../fixtures/list-merge.json", import.meta.url), "utf8"));
  assert.ok(fixture.cases.length >= 8);
  for (const c of fixture.cases) {
    // Each record says which page it came from, to see whose record was kept.
    const pages = c.pages.map((p, from) => ({
      current: p.current,
      page: { keys: p.keys.map((k) => ({ ...k, from })), next: p.next },
    }));
    const merged = mergeListPages(pages, c.limit, c.walk);
    assert.deepEqual(merged.keys.map((k) => ({ key: k.key, from: k.from })), c.merged.keys, c.name);
    assert.deepEqual(merged.next, c.merged.next, c.name);
  }
});

test("the JS middleware's defaults are the gateway's: DEFAULTS equals src/config/defaults.json and is what applies", async () => {
  const { withIdempotency, fingerprint, captureResponse } = await import("../../client/index.js");
  const { DEFAULTS } = await import("../../client/rules/defaults.js");
  const { readFileSync } = await import("node:fs");
  const { variables: v } = JSON.parse(readFileSync(new URL("../../src/config/defaults.json", import.meta.url), "utf8"));
  const list = (s) => s.split(",").map((t) => t.trim()).filter(Boolean);
  assert.deepEqual({ ...DEFAULTS }, {
    keyHeader: v.IDEMPOTENCY_KEY_HEADER,
    protectedMethods: list(v.PROTECTED_METHODS).map((m) => m.toUpperCase()),
    required: v.IDEMPOTENCY_REQUIRED === "true",
    fingerprintHeaders: list(v.FINGERPRINT_HEADERS).map((h) => h.toLowerCase()),
    storedHeaders: list(v.STORED_RESPONSE_HEADERS).map((h) => h.toLowerCase()),
    maxStoredBodyBytes: Number(v.MAX_STORED_BODY_BYTES),
    waitSeconds: Number(v.IN_FLIGHT_WAIT_SECONDS),
    maxWaitSeconds: Number(v.IN_FLIGHT_WAIT_MAX_SECONDS),
    maxBodyBytes: Number(v.MAX_REQUEST_BODY_BYTES),
    failurePolicy: v.FAILURE_POLICY,
    retentionSeconds: Number(v.RETENTION_SECONDS),
    maxKeys: Number(v.MAX_KEYS_PER_TENANT),
    maxDbBytes: Number(v.MAX_DB_BYTES_PER_OBJECT),
    sweepIntervalSeconds: Number(v.SWEEP_INTERVAL_SECONDS),
    sweepBatch: Number(v.SWEEP_BATCH),
  });
  assert.ok(Object.isFrozen(DEFAULTS) && Object.isFrozen(DEFAULTS.protectedMethods), "nobody changes the defaults at run time");

  // What applies when no option is given is exactly DEFAULTS.
  const claims = [];
  const ledger = () => ({
    claim: async (call) => { claims.push(call); return { outcome: "claimed", generation: 1, takeover: false }; },
    complete: async () => ({ outcome: "stored" }),
    release: async () => ({ outcome: "released" }),
  });
  let runs = 0;
  const handler = withIdempotency(async () => { runs += 1; return new Response("ok", { status: 201 }); }, { ledger });
  const send = (method, headers = {}) => handler(new Request("https://x/pay", { method, headers, body: "{}" }), {}, undefined);
  for (const method of DEFAULTS.protectedMethods) {
    assert.equal((await send(method)).status, DEFAULTS.required ? 400 : 201, `${method} without a key`);
  }
  assert.equal((await send("PUT")).status, 201, "PUT is not protected by default");
  assert.equal((await send("POST", { "idempotency-key": "d-1", "content-type": "text/plain" })).status, 201);
  assert.equal((await send("POST", { "idempotency-key": "d-2", prefer: "wait=300" })).status, 201);
  assert.equal(claims[0].wait_ms, DEFAULTS.waitSeconds > 0 ? DEFAULTS.waitSeconds * 1000 : undefined);
  assert.equal(claims[1].wait_ms, DEFAULTS.maxWaitSeconds * 1000, "a long Prefer: wait is capped at maxWaitSeconds");
  const explicit = await fingerprint({ method: "POST", target: "/pay", headers: { "content-type": "text/plain" }, body: "{}", fingerprintHeaders: [...DEFAULTS.fingerprintHeaders] });
  assert.deepEqual(claims[0].fingerprint, explicit);
  const all = new Response("x", { headers: Object.fromEntries(["content-type", "location", "etag", "x-other"].map((h) => [h, "v"])) });
  assert.deepEqual((await captureResponse(all)).headers.map(([h]) => h).sort(), [...DEFAULTS.storedHeaders].sort());
  assert.notEqual((await captureResponse(new Response(new Uint8Array(DEFAULTS.maxStoredBodyBytes)))).body, null);
  assert.equal((await captureResponse(new Response(new Uint8Array(DEFAULTS.maxStoredBodyBytes + 1)))).body, null);
});

test("middleware options are checked when the middleware is made: each wrong one is a TypeError naming it", async () => {
  const { withIdempotency, LedgerClient, TenantLedgers } = await import("../../client/index.js");
  const { idempotency } = await import("../../client/middleware/hono.js");
  // Shapes only: nothing here is called (a namespace's idFromName/get run per request, not at construction).
  const namespace = { idFromName: () => ({}), get: () => ({ fetch: async () => new Response() }) };
  const client = LedgerClient.forTenant(namespace, "acme");
  const make = (options) => () => withIdempotency(() => new Response(), options);
  for (const [options, message] of [
    [{}, /needs options\.ledger/],
    [{ ledger: 42 }, /options\.ledger must be/],
    [{ ledger: namespace }, /needs options\.tenant/],
    [{ ledger: new TenantLedgers(namespace) }, /needs options\.tenant/],
    [{ ledger: client, tenant: "acme" }, /already one tenant's object/],
    [{ ledger: namespace, tenant: "a\u0000b" }, /tenant must be 1-256 bytes of UTF-8 without control characters/],
    [{ ledger: namespace, tenant: "x".repeat(257) }, /tenant must be 1-256 bytes/],
    [{ ledger: namespace, tenant: "acme", tenantShards: "{not json" }, /tenantShards: TENANT_SHARDS is not valid JSON/],
    [{ ledger: namespace, tenant: "acme", tenantShards: '{"acme": 0}' }, /tenantShards: TENANT_SHARDS: acme must be/],
    [{ ledger: namespace, tenant: "acme", tenantShards: 8 }, /tenantShards must be/],
    [{ ledger: client, tenantShards: '{"acme": 2}' }, /tenantShards routes a TenantLedger namespace/],
    [{ ledger: namespace, tenant: "acme", jurisdiction: "mars" }, /options\.jurisdiction: "mars" is not a jurisdiction \(one of eu, fedramp, fedramp-high, us\)/],
    [{ ledger: namespace, tenant: "acme", jurisdiction: "EU" }, /"EU" is not a jurisdiction/],
    [{ ledger: client, jurisdiction: "eu" }, /jurisdiction routes a TenantLedger namespace/],
    [{ ledger: client, leaseSeconds: 0 }, /leaseSeconds must be a whole number 1\.\.31536000/],
    [{ ledger: client, retentionSeconds: 1.5 }, /retentionSeconds must be a whole number/],
    [{ ledger: client, leaseSeconds: 120, retentionSeconds: 60 }, /shorter than leaseSeconds/],
    [{ ledger: client, maxBodyBytes: 16_777_217 }, /maxBodyBytes must be a whole number 0\.\.16777216/],
    [{ ledger: client, failurePolicy: "lenient" }, /failurePolicy must be "closed" or "open"/],
    [{ ledger: client, problemBase: "/problems/" }, /problemBase must be an absolute URL/],
    [{ ledger: client, shouldStore: true }, /shouldStore must be a function/],
    [{ ledger: client, onReplayed: "log" }, /onReplayed must be a function/],
    [{ ledger: client, problemBase: "https://errors.example.com/problems" }, /ending in \//],
    [{ ledger: client, maxStoredBodyBytes: 50_000_000 }, /maxStoredBodyBytes must be a whole number 0\.\.1900000/],
    [{ ledger: client, required: "false" }, /required must be a boolean/],
    [{ ledger: client, fingerprintHeaders: "content-type" }, /fingerprintHeaders must be an array of header names/],
    [{ ledger: client, storedHeaders: 5 }, /storedHeaders must be an array of header names/],
    [{ ledger: client, storedHeaders: ["content type"] }, /storedHeaders must be an array of header names/],
    [{ ledger: client, protectedMethods: "POST" }, /protectedMethods must be an array of method names/],
  ]) {
    assert.throws(make(options), (e) => e instanceof TypeError && message.test(e.message), `${message}`);
    assert.throws(() => idempotency(options), TypeError, `hono: ${message}`);
  }
  // What is valid is accepted, with every source kind.
  make({ ledger: client })();
  make({ ledger: namespace, tenant: "acme", tenantShards: '{"acme": 4}' })();
  make({ ledger: namespace, tenant: "acme", jurisdiction: "eu" })();
  make({ ledger: namespace, tenant: "acme", jurisdiction: () => null })();
  make({ ledger: namespace, tenant: (request) => request.headers.get("x-tenant"), tenantShards: (_r, env) => env.TENANT_SHARDS })();
  make({ ledger: new TenantLedgers(namespace), tenant: "acme", leaseSeconds: 30, retentionSeconds: 30, problemBase: "https://errors.example.com/" })();
  make({ ledger: () => client, failurePolicy: "open", maxBodyBytes: 0 })();
});

test("targetOf cuts the target out of the URL verbatim, as the gateway's target_of (shared vectors: tests/fixtures/targets.json)", async () => {
  const { targetOf } = await import("../../client/rules/fingerprint.js");
  const { readFileSync } = await import("node:fs");
  const { vectors } = JSON.parse(readFileSync(new URL("../fixtures/targets.json", import.meta.url), "utf8"));
  assert.ok(vectors.length >= 8);
  for (const { url, target } of vectors) assert.equal(targetOf(url), target, url);
});

test("an option name the middleware does not know is a TypeError naming it, the nearest name, and ours for another library's name", async () => {
  const { withIdempotency, LedgerClient } = await import("../../client/index.js");
  const { idempotency } = await import("../../client/middleware/hono.js");
  const namespace = { idFromName: () => ({}), get: () => ({ fetch: async () => new Response() }) };
  const ledger = LedgerClient.forTenant(namespace, "acme");
  // The options of hono-idempotency, node-idempotency and the seed package's middleware, as a migrating
  // team passes them (a variable, so no TypeScript check catches them), and typos of ours.
  for (const [name, message] of [
    ["headerName", /unknown option "headerName" \(ours is "key": a header name, or a function returning the key\)/],
    ["idempotencyKey", /unknown option "idempotencyKey" \(ours is "key"/],
    ["cacheKeyPrefix", /unknown option "cacheKeyPrefix" \(ours is "tenant"/],
    ["skipRequest", /unknown option "skipRequest" \(ours is "protectedMethods"/],
    ["onError", /unknown option "onError" \(ours is "problemBase"/],
    ["store", /unknown option "store" \(ours is "ledger"/],
    ["scope", /unknown option "scope" \(ours is "tenant"/],
    ["ttl", /unknown option "ttl" \(ours is "retentionSeconds"/],
    ["lease", /unknown option "lease" \(ours is "leaseSeconds"/],
    ["methods", /unknown option "methods" \(ours is "protectedMethods"/],
    ["maxBodySize", /unknown option "maxBodySize" \(ours is "maxBodyBytes"/],
    ["maxKeyLength", /unknown option "maxKeyLength" \(a key is 1-255/],
    ["onCacheHit", /unknown option "onCacheHit" \(ours is "onReplayed"/],
    ["onCacheMiss", /unknown option "onCacheMiss" \(ours is "onStored"/],
    ["dangerouslyAllowGlobalKeys", /unknown option "dangerouslyAllowGlobalKeys" \(ours is "tenant"/],
    ["prefix", /unknown option "prefix" \(ours is "tenant"/],
    ["problems", /unknown option "problems" \(ours is "problemBase"/],
    ["retentionSecond", /unknown option "retentionSecond" \(did you mean "retentionSeconds"\?\)/],
    ["leaseSecs", /unknown option "leaseSecs" \(did you mean "leaseSeconds"\?\)/],
    ["failurepolicy", /unknown option "failurepolicy" \(did you mean "failurePolicy"\?\)/],
    ["onStore", /unknown option "onStore" \(did you mean "onStored"\?\)/],
    ["zzz", /unknown option "zzz"; the options are "ledger", /],
  ]) {
    const options = { ledger, [name]: "x" };
    assert.throws(() => withIdempotency(() => new Response(), options), (e) => e instanceof TypeError && message.test(e.message), name);
    assert.throws(() => idempotency(options), (e) => e instanceof TypeError && message.test(e.message), `hono: ${name}`);
  }
  for (const bad of ["ledger", 42, [ledger]]) {
    assert.throws(() => withIdempotency(() => new Response(), /** @type {any} */ (bad)), /options must be an object/, String(bad));
  }
  // A valid options object made in plain JS (not a literal TypeScript checks) is still accepted.
  const options = Object.assign({}, { ledger, leaseSeconds: 30, retentionSeconds: 60, onStored: () => {} });
  withIdempotency(() => new Response(), options);
  idempotency(options);
});

test("knownOptions: the nearest name is suggested only when it is near, and an inherited name is not an option", async () => {
  const { knownOptions } = await import("../../client/rules/defaults.js");
  const known = ["retentionSeconds", "maxKeys"];
  assert.throws(() => knownOptions("x", { maxkey: 1 }, known), /unknown option "maxkey" \(did you mean "maxKeys"\?\)/);
  assert.throws(() => knownOptions("x", { colour: 1 }, known), (e) => !/did you mean/.test(e.message));
  // Another library's name whose counterpart this object does not have gets the nearest name instead.
  assert.throws(() => knownOptions("x", { store: 1 }, known), (e) => /unknown option "store"/.test(e.message) && !/ours is "ledger"/.test(e.message));
  const inherited = Object.create({ notAnOption: 1 });
  inherited.maxKeys = 5;
  assert.equal(knownOptions("x", inherited, known), inherited);
  assert.deepEqual(knownOptions("x", undefined, known), {});
});

test("a tenant's jurisdiction: TENANT_JURISDICTIONS parsed as the gateway does, and every path to its objects asks namespace.jurisdiction(J) for it", async () => {
  const { JURISDICTIONS, parseTenantJurisdictions, inJurisdiction } = await import("../../client/rules/tenant.js");
  const { LedgerClient, TenantLedgers } = await import("../../client/index.js");
  const { ledgerStore } = await import("../../client/middleware/store.js");
  assert.deepEqual([...JURISDICTIONS], ["eu", "fedramp", "fedramp-high", "us"]);
  assert.deepEqual([...parseTenantJurisdictions('{"acme-eu": "eu", "org/team": "fedramp-high"}')], [["acme-eu", "eu"], ["org/team", "fedramp-high"]]);
  assert.equal(parseTenantJurisdictions(undefined).size, 0);
  assert.equal(parseTenantJurisdictions(" ").size, 0);
  // The same refusals as the gateway (tests/host/config.rs): the tenant and the value named.
  for (const [raw, message] of [
    ['{"acme-eu": "mars"}', /TENANT_JURISDICTIONS: "acme-eu": "mars" is not a jurisdiction/],
    ['{"acme-eu": 1}', /1 is not a jurisdiction/],
    ['{"": "eu"}', /"" is not a valid tenant id/],
    ['["eu"]', /JSON object/],
    ["eu", /not valid JSON/],
  ]) assert.throws(() => parseTenantJurisdictions(raw), (e) => e instanceof TypeError && message.test(e.message), raw);
  // A namespace stand-in that records the jurisdiction asked for and the names asked of each namespace.
  const asked = [];
  const namespaceOf = (jurisdiction) => ({
    idFromName: (name) => { asked.push({ jurisdiction, name }); return name; },
    get: () => ({ fetch: async () => Response.json({ outcome: "claimed", generation: 1, takeover: false }) }),
    jurisdiction: (j) => namespaceOf(j),
  });
  const ns = namespaceOf(null);
  assert.equal(inJurisdiction(ns, undefined), ns);
  assert.throws(() => inJurisdiction(ns, "mars"), TypeError);
  assert.throws(() => inJurisdiction({ idFromName() {}, get() {} }, "eu"), /no jurisdiction\(\)/);
  const claim = { key: "k", fingerprint: { digest: "sha256:" + "0".repeat(64), components: [] } };
  await LedgerClient.forTenant(ns, "acme-eu", { jurisdiction: "eu" }).claim(claim).catch(() => {});
  assert.throws(() => LedgerClient.forTenant(ns, "acme", { region: "eu" }), /unknown option "region"/);
  const ledgers = new TenantLedgers(ns, '{"acme-eu": 2}', '{"acme-eu": "eu"}');
  await ledgers.claim("acme-eu", claim).catch(() => {});
  await ledgers.claim("acme", claim).catch(() => {});
  const store = ledgerStore({ ledger: ns, tenant: "org/team", jurisdiction: "fedramp-high" });
  await store.claim({ id: "k", fingerprint: null, now: 0, leaseMs: 1000, expiresAt: 60_000 });
  assert.throws(() => ledgerStore({ ledger: ns, tenant: "acme", jurisdiction: "mars" }), /"mars" is not a jurisdiction/);
  assert.deepEqual(asked, [
    { jurisdiction: "eu", name: "acme-eu" },
    { jurisdiction: "eu", name: "acme-eu/shard-0-of-2" }, // shardOf("k", 2)
    { jurisdiction: null, name: "acme" },
    { jurisdiction: "fedramp-high", name: "~org%2Fteam" },
  ]);
});
