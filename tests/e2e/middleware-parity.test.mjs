// Middleware parity: the Hono middleware and withIdempotency with the
// gateway's options (shouldStore, failurePolicy, maxBodyBytes, lease and
// retention, problemBase, hooks) over every ledger source kind — a
// LedgerClient, the LedgerService binding, the TenantLedger namespace
// routed with TENANT_SHARDS — and the Hono guide's plain one-line use (a
// route reading its JSON body, throwing, slow under Prefer: wait), in a
// real Hono app (bundled with esbuild) bound to the built Worker's real
// objects in workerd.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, read, eventually, bundledWorkerModules } from "./harness.mjs";
import { shardOf, shardObjectName } from "../../client/index.js";

const TENANT_SHARDS = '{"shardy": 4}';
const parityApp = {
  name: "parity-app",
  modules: bundledWorkerModules("parity-app"),
  compatibilityDate: "2026-11-01",
  bindings: { TENANT_SHARDS },
  durableObjects: { LEDGER_NS: { className: "TenantLedger", scriptName: "gateway", useSQLite: true } },
  serviceBindings: {
    LEDGER_SVC: { name: "gateway", entrypoint: "LedgerService" },
    BROKEN: { name: "broken-ledger", entrypoint: "BrokenLedger" },
  },
};
// A ledger Worker that is reached and fails: every call throws.
const brokenLedger = {
  name: "broken-ledger", modules: true, compatibilityDate: "2026-11-01",
  script: `
    import { WorkerEntrypoint } from "cloudflare:workers";
    let calls = 0;
    export class BrokenLedger extends WorkerEntrypoint {
      async claim() { calls++; throw new Error("the ledger Worker failed"); }
      async complete() { calls++; throw new Error("the ledger Worker failed"); }
      async release() { calls++; throw new Error("the ledger Worker failed"); }
    }
    export default { fetch() { return Response.json({ calls }); } }`,
};

let gw, app;
before(async () => {
  // The objects run with the same TENANT_SHARDS as the app: "shardy" is four objects.
  gw = await startGateway({ vars: { TENANT_SHARDS }, workers: [parityApp, brokenLedger] });
  app = await gw.mf.getWorker("parity-app");
});
after(async () => { await gw?.dispose(); });

/** A POST to /<route>/charge (or `path`) with the key (null: none), body and headers. */
const post = (route, key, body = "10.00", headers = {}, path = `/${route}/charge`) => app.fetch(`https://parity${path}`, {
  method: "POST",
  headers: { "content-type": "text/plain", ...(key === null ? {} : { "idempotency-key": key }), ...headers },
  body,
}).then(read);
const runs = async (route) => (await (await app.fetch(`https://parity/runs/${route}`)).json()).runs;
const lookup = async (object, key) => {
  const stub = await gw.ledger(object);
  return (await (await stub.fetch("https://l/rpc/v1/lookup", { method: "POST", body: JSON.stringify({ key }) })).json()).record;
};
const told = async () => (await app.fetch("https://parity/told")).json();
const problem = (r) => ({ status: r.status, type: JSON.parse(r.text).type, contentType: r.headers["content-type"] });

test("a LedgerClient: the route runs once, replays, and reads its parsed key with c.get(\"idempotencyKey\")", async () => {
  const first = await post("client", '"pc-1"');
  assert.equal(first.status, 201);
  assert.equal(JSON.parse(first.text).key, "pc-1", "the sf-string's content, as parsed");
  const replay = await post("client", "pc-1");
  assert.equal(replay.headers["idempotent-replayed"], "true");
  assert.equal(replay.headers["x-should-retry"], "false", "a middleware replay is final");
  assert.equal(first.headers["x-should-retry"], undefined, "a first answer says nothing of retrying");
  assert.ok(replay.body.equals(first.body));
  assert.equal(await runs("client"), 1);
  assert.equal((await lookup("parity-client", "pc-1")).state, "completed");
});

/** A POST of JSON to the guide-style /payments/charge route (key null: none). */
const charge = (key, body, extra = {}) => app.fetch("https://parity/payments/charge", {
  method: "POST",
  headers: { "content-type": "application/json", ...(key === null ? {} : { "idempotency-key": key }), ...extra },
  body: JSON.stringify(body),
}).then(read);
const paymentRuns = async () => (await app.fetch("https://parity/payments/runs").then((r) => r.json())).runs;

test("Hono: the route runs once per key; replays carry Idempotent-Replayed and the same bytes", async () => {
  const before = await paymentRuns();
  const first = await charge('"h-1"', { amount: "10.00" });
  assert.equal(first.status, 201);
  assert.equal(first.headers.location, `/payments/${before + 1}`);
  assert.equal(JSON.parse(first.text).amount, "10.00", "the route still reads its JSON body");
  const replay = await charge("h-1", { amount: "10.00" });
  assert.equal(replay.status, 201);
  assert.equal(replay.headers["idempotent-replayed"], "true");
  assert.ok(replay.body.equals(first.body));
  assert.equal(replay.headers.location, first.headers.location);
  assert.equal(await paymentRuns(), before + 1, "the route ran once");
  // Concurrent retries of a fresh key: still one run.
  const burst = await Promise.all(Array.from({ length: 8 }, () => charge("h-burst", { amount: "1.00" })));
  assert.equal(await paymentRuns(), before + 2);
  for (const r of burst) assert.ok([201, 409].includes(r.status), `got ${r.status}`);
});

test("Hono: refusals are the gateway's problem documents", async () => {
  await charge("h-2", { amount: "1" });
  const reused = await charge("h-2", { amount: "2" });
  assert.equal(reused.status, 422);
  assert.equal(reused.headers["content-type"], "application/problem+json");
  assert.match(JSON.parse(reused.text).type, /idempotency-key-reused$/);
  assert.deepEqual(JSON.parse(reused.text).differs, ["body"]);
  const missing = await charge(null, { amount: "1" });
  assert.equal(missing.status, 400);
  assert.match(JSON.parse(missing.text).type, /idempotency-key-missing$/);
  const invalid = await charge('"open', { amount: "1" });
  assert.equal(invalid.status, 400);
  assert.match(JSON.parse(invalid.text).type, /idempotency-key-invalid$/);
  const unprotected = await app.fetch("https://parity/payments/runs");
  assert.equal(unprotected.status, 200, "GET passes through");
});

test("Hono: a route that throws releases the key, and the retry runs again", async () => {
  const before = await paymentRuns();
  const boom = await charge("h-3", { amount: "1", explode: true });
  assert.equal(boom.status, 500, "Hono's own error response");
  assert.equal((await lookup("parity-payments", "h-3")).state, "released");
  const again = await charge("h-3", { amount: "1", explode: true });
  assert.equal(again.status, 500);
  assert.equal(await paymentRuns(), before + 2, "released: the retry ran the route again");
});

test("Hono: a retry with Prefer: wait=10 waits for the slow first run and replays it", async () => {
  const first = charge("h-slow", { amount: "3", slow: true });
  await eventually(async () => (await lookup("parity-payments", "h-slow"))?.state === "in_flight", { every: 50 });
  const retry = await charge("h-slow", { amount: "3", slow: true }, { prefer: "wait=10" });
  const original = await first;
  assert.equal(retry.status, 201);
  assert.equal(retry.headers["idempotent-replayed"], "true");
  assert.equal(retry.headers["preference-applied"], "wait=10");
  assert.ok(retry.body.equals(original.body));
});

test("the LedgerService binding with the tenant from c.var: the key lives in that tenant's object", async () => {
  const first = await post("service", "ps-1", "5.00", { "x-tenant": "svc-a" });
  assert.equal(first.status, 201);
  assert.deepEqual([JSON.parse(first.text).tenant, JSON.parse(first.text).key], ["svc-a", "ps-1"]);
  const replay = await post("service", "ps-1", "5.00", { "x-tenant": "svc-a" });
  assert.equal(replay.headers["idempotent-replayed"], "true");
  assert.ok(replay.body.equals(first.body));
  // Another tenant, the same key: its own object, its own run.
  const other = await post("service", "ps-1", "5.00", { "x-tenant": "svc-b" });
  assert.equal(other.status, 201);
  assert.equal(other.headers["idempotent-replayed"], undefined);
  assert.equal(await runs("service"), 2);
  assert.equal((await lookup("svc-a", "ps-1")).state, "completed");
  assert.equal((await lookup("svc-b", "ps-1")).state, "completed");
  const reused = await post("service", "ps-1", "6.00", { "x-tenant": "svc-a" });
  assert.equal(reused.status, 422);
  assert.deepEqual(JSON.parse(reused.text).differs, ["body"]);
});

test("an invalid or missing tenant is 500 misconfigured with a clear detail, and nothing runs or is claimed", async () => {
  const before = await runs("service");
  for (const headers of [{ "x-tenant": "bad/tenant" }, { "x-tenant": "x".repeat(65) }, {}]) {
    const r = await post("service", "pt-bad", "1", headers);
    assert.equal(r.status, 500, JSON.stringify(headers));
    const doc = JSON.parse(r.text);
    assert.match(doc.type, /\/misconfigured$/);
    assert.match(doc.detail, /tenant must be 1-64 characters/);
  }
  assert.equal(await runs("service"), before);
  assert.equal(await lookup("bad", "pt-bad"), null);
  // A tenant callback that throws: the same answer, naming what threw.
  const threw = await post("tenant-throws", "pt-throws", "1");
  assert.equal(threw.status, 500);
  assert.match(JSON.parse(threw.text).type, /\/misconfigured$/);
  assert.match(JSON.parse(threw.text).detail, /options\.tenant threw/);
  assert.ok(!threw.text.includes("no session"), "the callback's own message is logged, never answered");
  await eventually(() => gw.events("idempotency.tenant_failed").some((e) => e.error === "no session"));
  assert.equal(await runs("tenant-throws"), 0);
});

test("the TenantLedger namespace with TENANT_SHARDS: a sharded tenant's keys live in their shard objects; an unsharded tenant in its one object", async () => {
  const keys = Array.from({ length: 12 }, (_, i) => `pn-${i}`);
  for (const key of keys) assert.equal((await post("namespace", key, key, { "x-tenant": "shardy" })).status, 201);
  const perShard = [0, 0, 0, 0];
  for (const key of keys) {
    const index = await shardOf(key, 4);
    perShard[index] += 1;
    assert.equal((await lookup(shardObjectName("shardy", index, 4), key))?.state, "completed", key);
    assert.equal(await lookup("shardy", key), null, "the tenant's unsharded object holds nothing");
  }
  assert.ok(perShard.filter((n) => n > 0).length >= 2, `keys spread over the shards: ${perShard}`);
  const replay = await post("namespace", "pn-3", "pn-3", { "x-tenant": "shardy" });
  assert.equal(replay.headers["idempotent-replayed"], "true");
  // The same keys through the LedgerService (which routes with the gateway's own TENANT_SHARDS) are the same records.
  const viaService = await post("service", "pn-3", "pn-3", { "x-tenant": "shardy" });
  assert.equal(viaService.status, 422, "the same record, claimed for a different target");
  assert.deepEqual(JSON.parse(viaService.text).differs, ["target"]);
  assert.equal((await post("namespace", "pn-plain", "x", { "x-tenant": "plain-ns" })).status, 201);
  assert.equal((await lookup("plain-ns", "pn-plain")).state, "completed");
  assert.equal(await runs("namespace"), 13);
});

test("shouldStore false releases the key: the 5xx reaches its caller and a retry runs again; a 2xx is stored", async () => {
  const failed = await post("nostore", "pns-1", "status=503");
  assert.equal(failed.status, 503);
  assert.equal((await lookup("parity-nostore", "pns-1")).state, "released");
  const retry = await post("nostore", "pns-1", "status=503");
  assert.equal(retry.status, 503);
  assert.equal(retry.headers["idempotent-replayed"], undefined);
  assert.equal(await runs("nostore"), 2, "released: the retry ran again");
  assert.equal((await post("nostore", "pns-2", "fine")).status, 201);
  assert.equal((await post("nostore", "pns-2", "fine")).headers["idempotent-replayed"], "true");
  assert.equal(await runs("nostore"), 3);
});

test("shouldStore is given a clone: one that reads the body decides on it and takes nothing from the caller or the stored answer", async () => {
  const first = await post("bodyreader", "pbr-1", "10.00");
  assert.equal(first.status, 201);
  assert.equal(JSON.parse(first.text).body, "10.00", "the caller's body is whole");
  const again = await post("bodyreader", "pbr-1", "10.00");
  assert.equal(again.headers["idempotent-replayed"], "true");
  assert.deepEqual(again.body, first.body, "the stored answer is whole");
  assert.equal(await runs("bodyreader"), 1);
});

test("a route whose body breaks off is never run twice: its key is completed as a tombstone, retries get 500 not-retained", async () => {
  try { await post("brokenstream", "pbs-1", "1"); } catch { /* the broken body may fail the caller's read: that is the route's answer */ }
  const record = await eventually(async () => {
    const r = await lookup("parity-brokenstream", "pbs-1");
    return r?.state === "completed" ? r : null;
  });
  assert.equal(record.retained, false);
  assert.equal(record.response_status, 201);
  const retry = await post("brokenstream", "pbs-1", "1");
  assert.equal(retry.status, 500);
  assert.match(JSON.parse(retry.text).type, /idempotency-response-not-retained$/);
  assert.equal(await runs("brokenstream"), 1, "the route ran once");
});

test("failurePolicy: a missing binding or a ledger function that throws is 500 misconfigured under both, nothing runs; a claim the runtime refused as overloaded runs unprotected under open, 503 under closed; a ledger Worker that fails is 503 under both", async () => {
  const misconfigured = { status: 500, type: "https://idempotency-ledger.dev/problems/misconfigured", contentType: "application/problem+json" };
  // A missing binding is the Worker's configuration, not an outage: never run unprotected.
  for (const route of ["open-missing", "closed-missing"]) {
    const r = await post(route, "pc-down", "1");
    assert.deepEqual(problem(r), misconfigured, route);
    assert.match(JSON.parse(r.text).detail, /options\.ledger gave no ledger/);
    assert.equal(await runs(route), 0, `${route}: nothing runs`);
  }
  // A ledger function that throws: the same, its message only in the log.
  const threw = await post("ledger-throws", "pt-ledger", "1");
  assert.deepEqual(problem(threw), misconfigured);
  assert.match(JSON.parse(threw.text).detail, /options\.ledger threw/);
  assert.ok(!threw.text.includes("secret-internal-detail"), "the thrown message is logged, never answered");
  await eventually(() => gw.events("idempotency.ledger_failed").some((e) => e.error === "LEDGER binding lookup failed: secret-internal-detail"));
  assert.equal(await runs("ledger-throws"), 0);

  // Refused as overloaded before delivery: certainly not reached, the one case "open" runs unprotected.
  const open1 = await post("open-overloaded", "po-1", "1");
  assert.equal(open1.status, 201);
  assert.equal(JSON.parse(open1.text).key, "po-1", "the key is still exposed");
  const open2 = await post("open-overloaded", "po-1", "1");
  assert.equal(open2.status, 201);
  assert.equal(open2.headers["idempotent-replayed"], undefined, "nothing was stored");
  assert.equal(await runs("open-overloaded"), 2, "unprotected: every request runs");
  await eventually(() => gw.events("idempotency.unprotected").length >= 2);
  assert.ok(!gw.logs.join("\n").includes("po-1"), "the log line carries a hash, never the key");

  const closed = await post("closed-overloaded", "pc-down", "1");
  assert.deepEqual(problem(closed), { status: 503, type: "https://idempotency-ledger.dev/problems/idempotency-store-unavailable", contentType: "application/problem+json" });
  assert.equal(await runs("closed-overloaded"), 0);

  for (const route of ["open-broken", "closed-broken"]) {
    const r = await post(route, "pb-1", "1");
    assert.equal(r.status, 503, `${route}: the failing ledger may have acted, so nothing runs`);
    assert.match(JSON.parse(r.text).type, /idempotency-store-unavailable$/);
    assert.equal(await runs(route), 0);
  }
  const broken = await (await gw.mf.getWorker("broken-ledger")).fetch("https://b/").then((r) => r.json());
  assert.equal(broken.calls, 2, "each claim reached the failing ledger once; nothing was settled");
});

test("a retentionSeconds below the object's lease: the object refuses the middleware's own claim, answered 500 misconfigured (the object's detail in the log), and nothing runs", async () => {
  // The object's LEASE_SECONDS is wrangler.toml's 60; both routes send retention_seconds 1.
  for (const [route, path] of [["short-retention", undefined], ["fetch-short-retention", "/fetch-short-retention/charge"]]) {
    const r = await post(route, "psr-1", "1", {}, path);
    assert.deepEqual(problem(r), { status: 500, type: "https://idempotency-ledger.dev/problems/misconfigured", contentType: "application/problem+json" }, route);
    const doc = JSON.parse(r.text);
    assert.match(doc.detail, /the ledger refused the idempotency middleware's claim \(400( invalid-rpc)?\)/, route);
    assert.ok(!doc.detail.includes("outlive its lease"), `${route}: the object's detail is logged, not answered`);
    assert.equal(await runs(route), 0, `${route}: nothing runs`);
  }
  assert.equal(await lookup("parity-short-retention", "psr-1"), null, "nothing claimed");
  const logged = await eventually(() => {
    const lines = gw.events("idempotency.misconfigured").filter((e) => e.cause === "claim_refused" && /a record must outlive its lease/.test(e.error));
    return lines.length >= 2 ? lines : null;
  });
  assert.deepEqual(logged.map((e) => e.status), [400, 400]);
  assert.equal(logged[0].problem, "invalid-rpc", "a LedgerClient carries the object's problem document");
});

test("maxBodyBytes: a larger body is 413 request-too-large (by Content-Length and by bytes read), nothing is claimed or run", async () => {
  const big = "x".repeat(100);
  const declared = await post("limited", "pl-1", big);
  assert.deepEqual(problem(declared), { status: 413, type: "https://idempotency-ledger.dev/problems/request-too-large", contentType: "application/problem+json" });
  assert.match(JSON.parse(declared.text).detail, /limited to 64 bytes/);
  // No Content-Length: the stream is counted as it is read, and refused once past the limit, unread beyond it.
  const streamed = await (await app.fetch("https://parity/self/stream-to-limited?key=pl-1&chunks=100", { method: "POST" })).json();
  assert.equal(streamed.status, 413);
  assert.match(streamed.answer.type, /request-too-large$/);
  assert.ok(streamed.pulled > 64 && streamed.pulled <= 64 + 3 * 16, `pulled ${streamed.pulled} of ${streamed.total} bytes`);
  assert.equal(await lookup("parity-limited", "pl-1"), null, "nothing claimed");
  assert.equal(await runs("limited"), 0);
  // The same key with a small body: a first run (nothing was claimed before), at the limit exactly.
  const small = await post("limited", "pl-1", "y".repeat(64));
  assert.equal(small.status, 201);
  assert.equal(JSON.parse(small.text).body, "y".repeat(64));
  assert.equal(await runs("limited"), 1);
});

test("leaseSeconds and retentionSeconds are sent: the lease and the expiry the object records are theirs", async () => {
  const held = post("windows", "pw-1", "hold");
  const inFlight = await eventually(async () => {
    const r = await lookup("parity-windows", "pw-1");
    return r?.state === "in_flight" ? r : null;
  }, { every: 50 });
  const lease = Date.parse(inFlight.lease_expires_at) - Date.parse(inFlight.created_at);
  assert.ok(Math.abs(lease - 45_000) <= 1_000, `lease ${lease} ms`);
  await app.fetch("https://parity/gate/windows:pw-1", { method: "POST" });
  assert.equal((await held).status, 201);
  const done = await lookup("parity-windows", "pw-1");
  assert.equal(done.state, "completed");
  const retention = Date.parse(done.expires_at) - Date.parse(done.created_at);
  assert.ok(retention >= 7_200_000 && retention <= 7_260_000, `retention ${retention} ms (from the completion)`);
});

test("problemBase is the base of every problem type the middleware answers", async () => {
  await post("branded", "pbr-1", "1");
  const reused = await post("branded", "pbr-1", "2");
  assert.equal(reused.status, 422);
  assert.equal(JSON.parse(reused.text).type, "https://errors.example.com/idempotency/idempotency-key-reused");
  const missing = await post("branded", null, "1");
  assert.equal(JSON.parse(missing.text).type, "https://errors.example.com/idempotency/idempotency-key-missing");
});

test("hooks: onStored, onReplayed and onConflict are each called once with the key, outcome and status, and given c", async () => {
  const tell = async (n) => eventually(async () => { const t = await told(); return t.length >= n ? t : null; });
  assert.equal((await post("hooked", "ph-1", "1")).status, 201);
  let t = await tell(1);
  assert.deepEqual(t, [{ hook: "onStored", path: "/hooked/charge", event: { key: "ph-1", generation: 1, status: 201, retained: true } }]);
  assert.equal((await post("hooked", "ph-1", "1")).headers["idempotent-replayed"], "true");
  t = await tell(2);
  assert.deepEqual(t[1], { hook: "onReplayed", path: "/hooked/charge", event: { key: "ph-1", generation: 1, status: 201 } });
  assert.equal((await post("hooked", "ph-1", "2")).status, 422);
  t = await tell(3);
  assert.deepEqual(t[2], { hook: "onConflict", path: "/hooked/charge", event: { key: "ph-1", outcome: "mismatch", status: 422, differs: ["body"] } });
  // In flight: the second request is refused while the first is held.
  const held = post("hooked", "ph-2", "hold");
  await eventually(async () => (await lookup("parity-hooked", "ph-2"))?.state === "in_flight", { every: 50 });
  const busy = await post("hooked", "ph-2", "hold");
  assert.equal(busy.status, 409);
  t = await tell(4);
  assert.deepEqual(t[3], { hook: "onConflict", path: "/hooked/charge", event: { key: "ph-2", outcome: "in_flight", status: 409 } });
  await app.fetch("https://parity/gate/hooked:ph-2", { method: "POST" });
  assert.equal((await held).status, 201);
  t = await tell(5);
  assert.deepEqual(t[4], { hook: "onStored", path: "/hooked/charge", event: { key: "ph-2", generation: 1, status: 201, retained: true } });
  assert.equal((await told()).length, 5, "each hook once per outcome, nothing more");
});

test("hooks that throw or reject never change the answer", async () => {
  const first = await post("hooks-throw", "phx-1", "1");
  assert.equal(first.status, 201);
  const replay = await post("hooks-throw", "phx-1", "1");
  assert.equal(replay.status, 201);
  assert.equal(replay.headers["idempotent-replayed"], "true");
  assert.ok(replay.body.equals(first.body));
  assert.equal((await post("hooks-throw", "phx-1", "2")).status, 422);
  assert.equal((await lookup("parity-hooks-throw", "phx-1")).state, "completed");
  assert.equal(await runs("hooks-throw"), 1);
});

test("withIdempotency over the LedgerService binding: callbacks get the request, the handler gets the key as its fourth argument", async () => {
  const send = (key, body, tenant = "fetch-tenant") => app.fetch("https://parity/fetch/charge", {
    method: "POST", headers: { "content-type": "text/plain", "idempotency-key": key, "x-tenant": tenant }, body,
  }).then(read);
  const first = await send('"pf-1"', "42");
  assert.equal(first.status, 201);
  assert.deepEqual(JSON.parse(first.text), { run: 1, key: "pf-1", body: "42" });
  const replay = await send("pf-1", "42");
  assert.equal(replay.headers["idempotent-replayed"], "true");
  assert.ok(replay.body.equals(first.body));
  assert.equal((await lookup("fetch-tenant", "pf-1")).state, "completed");
  const bad = await send("pf-2", "1", "no/such/tenant");
  assert.equal(bad.status, 500);
  assert.match(JSON.parse(bad.text).type, /misconfigured$/);
  const unprotected = await app.fetch("https://parity/fetch/charge").then(read);
  assert.equal(JSON.parse(unprotected.text).key, null, "a GET is not protected: no key");
});

test("key: a legacy header name is read by the key's rules; the Idempotency-Key header is then not read", async () => {
  const first = await post("legacykey", null, "10.00", { "x-idempotency-key": '"legacy-1"' });
  assert.equal(first.status, 201);
  assert.equal(JSON.parse(first.text).key, "legacy-1");
  const replay = await post("legacykey", null, "10.00", { "x-idempotency-key": "legacy-1" });
  assert.equal(replay.headers["idempotent-replayed"], "true");
  assert.ok(replay.body.equals(first.body));
  const other = await post("legacykey", "legacy-1");
  assert.equal(problem(other).type.split("/").pop(), "idempotency-key-missing", "Idempotency-Key is not this route's header");
  const bad = await post("legacykey", null, "10.00", { "x-idempotency-key": "a".repeat(256) });
  assert.equal(problem(bad).type.split("/").pop(), "idempotency-key-invalid");
  assert.equal(await runs("legacykey"), 1);
});

test("key: a function gives the key (a job id); none is a missing key; a throw is 500 misconfigured; the format rules hold", async () => {
  const first = await post("jobkey", null, "10.00", { "x-job-id": "42" });
  assert.equal(first.status, 201);
  assert.equal(JSON.parse(first.text).key, "job:42");
  const again = await post("jobkey", "ignored", "10.00", { "x-job-id": "42" });
  assert.equal(again.headers["idempotent-replayed"], "true");
  assert.equal(problem(await post("jobkey", "some-key")).type.split("/").pop(), "idempotency-key-missing");
  assert.equal(problem(await post("jobkey", null, "1", { "x-job-id": "é".repeat(3) })).type.split("/").pop(), "idempotency-key-invalid");
  assert.equal(problem(await post("jobkey", null, "1", { "x-job-id": "x".repeat(300) })).type.split("/").pop(), "idempotency-key-invalid");
  const thrown = problem(await post("keythrows", "k-1"));
  assert.equal(thrown.status, 500);
  assert.equal(thrown.type.split("/").pop(), "misconfigured");
  assert.equal(await runs("jobkey"), 1);
  assert.equal(await runs("keythrows"), 0);
});

test("fingerprint: false compares keys alone; a function's string is the fingerprint and a different one is 422 differs [\"fingerprint\"]", async () => {
  const first = await post("keysalone", "ka-1", "10.00");
  assert.equal(first.status, 201);
  const otherBody = await post("keysalone", "ka-1", "99.00", { "content-type": "application/json" });
  assert.equal(otherBody.headers["idempotent-replayed"], "true", "keys alone: any request with the key gets its answer");
  assert.ok(otherBody.body.equals(first.body));
  assert.equal(await runs("keysalone"), 1);

  const stamped = await post("nostamp", "ns-1", "amount=5;sent_at=1700000000001");
  assert.equal(stamped.status, 201);
  const retried = await post("nostamp", "ns-1", "amount=5;sent_at=1700000009999");
  assert.equal(retried.headers["idempotent-replayed"], "true", "the field that changes on every retry is not in the fingerprint");
  const changed = await post("nostamp", "ns-1", "amount=6;sent_at=1700000009999");
  assert.equal(changed.status, 422);
  assert.deepEqual(JSON.parse(changed.text).differs, ["fingerprint"]);
  assert.equal(await runs("nostamp"), 1);
});

test("withIdempotency: the key from a function and a custom fingerprint", async () => {
  const send = (job, body) => app.fetch("https://parity/fetch-jobs/charge", {
    method: "POST", headers: { "content-type": "application/json", ...(job === null ? {} : { "x-job-id": job }) }, body: JSON.stringify(body),
  }).then(read);
  const first = await send("job-7", { amount: 5, at: 1 });
  assert.equal(first.status, 201);
  assert.equal(JSON.parse(first.text).key, "job-7");
  const retry = await send("job-7", { amount: 5, at: 2 });
  assert.equal(retry.headers["idempotent-replayed"], "true");
  const reused = await send("job-7", { amount: 6, at: 2 });
  assert.equal(reused.status, 422);
  assert.deepEqual(JSON.parse(reused.text).differs, ["fingerprint"]);
  assert.equal((await send(null, { amount: 5 })).status, 400);
  assert.equal(await runs("fetch-jobs"), 1);
});
