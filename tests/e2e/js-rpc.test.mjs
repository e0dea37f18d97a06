// JS RPC: a second (TypeScript) Worker calls the deployed script's
// `LedgerService` entrypoint through a service binding — typed methods with
// a tenant argument over the same RPC v1 and the same real TenantLedger.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { transformSync } from "esbuild";
import { startGateway, unleased, read, json, eventually, ROOT, ACME, CLIENT_MODULES } from "./harness.mjs";
import { fingerprint } from "../../client/index.js";

const source = readFileSync(`${ROOT}tests/e2e/workers/ts-rpc.ts`, "utf8");
const tsWorker = {
  name: "ts-rpc",
  modulesRoot: ROOT,
  modules: [
    { type: "ESModule", path: `${ROOT}tests/e2e/workers/ts-rpc.mjs`, contents: transformSync(source, { loader: "ts", format: "esm", target: "es2022" }).code },
    ...CLIENT_MODULES,
  ],
  compatibilityDate: "2026-11-01",
  serviceBindings: { LEDGER: { name: "gateway", entrypoint: "LedgerService" } },
};

let gw, ts;
before(async () => {
  gw = await startGateway({ workers: [tsWorker] });
  ts = await gw.mf.getWorker("ts-rpc");
});
after(async () => { await gw?.dispose(); });

const rpc = async (op, tenant, arg) => {
  const r = await ts.fetch("https://ts/raw", { method: "POST", body: JSON.stringify({ op, tenant, arg }) });
  return { status: r.status, body: await r.json() };
};
const fp = (body) => fingerprint({ method: "POST", target: "/payments", headers: {}, body: new TextEncoder().encode(body) });
const stored = (text) => ({ status: 201, headers: [["content-type", "text/plain"]], body: Buffer.from(text).toString("base64") });

test("JS RPC: claim, complete, replay, lookup and stats through a service binding", async () => {
  const fingerprint = await fp("5.00");
  const claim = await rpc("claim", "rpc-tenant", { key: "rpc-1", fingerprint });
  assert.equal(claim.status, 200);
  assert.deepEqual(unleased(claim.body), { outcome: "claimed", generation: 1, takeover: false });
  const busy = await rpc("claim", "rpc-tenant", { key: "rpc-1", fingerprint });
  assert.equal(busy.body.outcome, "in_flight");
  const done = await rpc("complete", "rpc-tenant", { key: "rpc-1", generation: 1, response: stored("paid") });
  assert.deepEqual(done.body, { outcome: "stored" });
  const replay = await rpc("claim", "rpc-tenant", { key: "rpc-1", fingerprint });
  assert.equal(replay.body.outcome, "completed");
  assert.equal(Buffer.from(replay.body.response.body, "base64").toString(), "paid");
  const other = await rpc("claim", "rpc-tenant", { key: "rpc-1", fingerprint: await fp("6.00") });
  assert.deepEqual(other.body.differs, ["body"]);
  const record = await rpc("lookup", "rpc-tenant", "rpc-1");
  assert.equal(record.body.state, "completed");
  assert.equal((await rpc("lookup", "another-tenant", "rpc-1")).body, null, "tenants are separate objects");
  const stats = await rpc("stats", "rpc-tenant");
  assert.equal(stats.body.completed, 1);
  assert.equal(stats.body.reused, 1);
  const page = await rpc("list", "rpc-tenant", { state: "completed" });
  assert.deepEqual(page.body.keys.map((k) => [k.key, k.replays]), [["rpc-1", 1]]);
  assert.equal(page.body.next, null);
  assert.deepEqual((await rpc("list", "another-tenant", {})).body, { keys: [], next: null });
  // release and reclaim at the next generation
  await rpc("claim", "rpc-tenant", { key: "rpc-2", fingerprint });
  assert.deepEqual((await rpc("release", "rpc-tenant", { key: "rpc-2", generation: 1 })).body, { outcome: "released" });
  assert.equal((await rpc("claim", "rpc-tenant", { key: "rpc-2", fingerprint })).body.generation, 2);
});

test("JS RPC: bad tenants and bad calls are refused with clear errors and change nothing", async () => {
  const fingerprint = await fp("1");
  for (const tenant of ["", "a\u0000b", "x".repeat(257), 7]) {
    const r = await rpc("claim", tenant, { key: "k", fingerprint });
    assert.equal(r.status, 599);
    assert.equal(r.body.name, "TypeError");
    assert.match(r.body.message, /tenant must be/);
  }
  const bad = await rpc("claim", "rpc-tenant", { key: "", fingerprint });
  assert.equal(bad.status, 599);
  assert.match(bad.body.message, /ledger refused claim \(400\)/);
  const absurd = await rpc("claim", "rpc-tenant", { key: "k-absurd", fingerprint, wait_ms: 10 ** 9 });
  assert.match(absurd.body.message, /wait_ms/);
  assert.equal((await rpc("lookup", "rpc-tenant", "k-absurd")).body, null);
});

test("JS RPC: the TypeScript Worker's protected route runs once; a key completed over RPC replays through the gateway", async () => {
  const charge = (key, tenant = "acme") => ts.fetch("https://ts/charge", {
    method: "POST", headers: { "content-type": "application/json", "idempotency-key": key, "x-tenant": tenant }, body: '{"sku":"SKU-1","quantity":2}',
  }).then(read);
  const first = await charge("ts-1");
  assert.equal(first.status, 201);
  const again = await charge("ts-1");
  assert.ok(again.body.equals(first.body), "the replay is the first answer");
  assert.equal(JSON.parse(again.text).charge, 1);
  // The same tenant, key and request through the gateway: the fingerprints agree.
  const viaGateway = await read(await gw.request("/charge", {
    method: "POST", headers: { authorization: ACME, "content-type": "application/json", "idempotency-key": "ts-1" }, body: '{"sku":"SKU-1","quantity":2}',
  }));
  assert.equal(viaGateway.headers["idempotent-replayed"], "true");
  assert.ok(viaGateway.body.equals(first.body));
});

test("JS RPC: execute runs the embedded orders app once, and a claim with wait_ms waits for a completion", async () => {
  const body = '{"sku":"SKU-9","quantity":1}';
  const fpOrder = await fingerprint({ method: "POST", target: "/v1/orders", headers: { "content-type": "application/json" }, body: new TextEncoder().encode(body) });
  const call = { key: "exec-1", fingerprint: fpOrder, request: { method: "POST", target: "/v1/orders", body: Buffer.from(body).toString("base64") } };
  const ran = await rpc("execute", "acme", call);
  assert.equal(ran.body.outcome, "ran");
  assert.equal(ran.body.response.status, 201);
  assert.equal((await rpc("execute", "acme", call)).body.outcome, "completed");

  const fpw = await fp("wait");
  const first = await rpc("claim", "rpc-tenant", { key: "rpc-wait", fingerprint: fpw });
  const waiting = rpc("claim", "rpc-tenant", { key: "rpc-wait", fingerprint: fpw, wait_ms: 10_000 });
  await eventually(async () => (await rpc("stats", "rpc-tenant")).body.waiting === 1);
  await rpc("complete", "rpc-tenant", { key: "rpc-wait", generation: first.body.generation, response: stored("late") });
  const answer = (await waiting).body;
  assert.equal(answer.outcome, "completed");
  assert.equal(typeof answer.waited_ms, "number");
});
