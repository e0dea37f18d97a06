// idempotency-ledger/hono: a real Hono app (bundled with esbuild) protected
// by one line of middleware, bound to the real TenantLedger in workerd.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, read, eventually, bundledWorkerModules } from "./harness.mjs";

const honoWorker = {
  name: "hono-app",
  modules: bundledWorkerModules("hono-app"),
  compatibilityDate: "2026-11-01",
  durableObjects: { LEDGER: { className: "TenantLedger", scriptName: "gateway", useSQLite: true } },
};

let gw, app;
before(async () => {
  gw = await startGateway({ workers: [honoWorker] });
  app = await gw.mf.getWorker("hono-app");
});
after(async () => { await gw?.dispose(); });

const charge = (key, body, extra = {}) => app.fetch("https://hono/payments/charge", {
  method: "POST",
  headers: { "content-type": "application/json", ...(key === null ? {} : { "idempotency-key": key }), ...extra },
  body: JSON.stringify(body),
}).then(read);
const runs = async () => (await app.fetch("https://hono/payments/runs").then((r) => r.json())).runs;

test("Hono: the route runs once per key; replays carry Idempotent-Replayed and the same bytes", async () => {
  const before = await runs();
  const first = await charge('"h-1"', { amount: "10.00" });
  assert.equal(first.status, 201);
  assert.equal(first.headers.location, `/payments/${before + 1}`);
  assert.equal(JSON.parse(first.text).amount, "10.00", "the route still reads its JSON body");
  const replay = await charge("h-1", { amount: "10.00" });
  assert.equal(replay.status, 201);
  assert.equal(replay.headers["idempotent-replayed"], "true");
  assert.ok(replay.body.equals(first.body));
  assert.equal(replay.headers.location, first.headers.location);
  assert.equal(await runs(), before + 1, "the route ran once");
  // Concurrent retries of a fresh key: still one run.
  const burst = await Promise.all(Array.from({ length: 8 }, () => charge("h-burst", { amount: "1.00" })));
  assert.equal(await runs(), before + 2);
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
  const unprotected = await app.fetch("https://hono/payments/runs");
  assert.equal(unprotected.status, 200, "GET passes through");
});

test("Hono: a route that throws releases the key, and the retry runs again", async () => {
  const before = await runs();
  const boom = await charge("h-3", { amount: "1", explode: true });
  assert.equal(boom.status, 500, "Hono's own error response");
  const ledger = await gw.ledger("hono-tenant");
  const looked = await (await ledger.fetch("https://l/rpc/v1/lookup", { method: "POST", body: JSON.stringify({ key: "h-3" }) })).json();
  assert.equal(looked.record.state, "released");
  const again = await charge("h-3", { amount: "1", explode: true });
  assert.equal(again.status, 500);
  assert.equal(await runs(), before + 2, "released: the retry ran the route again");
});

test("Hono: a retry with Prefer: wait=10 waits for the slow first run and replays it", async () => {
  const first = charge("h-slow", { amount: "3", slow: true });
  const ledger = await gw.ledger("hono-tenant");
  await eventually(async () => (await (await ledger.fetch("https://l/rpc/v1/lookup", { method: "POST", body: JSON.stringify({ key: "h-slow" }) })).json()).record?.state === "in_flight", { every: 50 });
  const retry = await charge("h-slow", { amount: "3", slow: true }, { prefer: "wait=10" });
  const original = await first;
  assert.equal(retry.status, 201);
  assert.equal(retry.headers["idempotent-replayed"], "true");
  assert.equal(retry.headers["preference-applied"], "wait=10");
  assert.ok(retry.body.equals(original.body));
});
