// A large schema-1 ledger upgrades in bounded steps (docs/operations.md):
// the built TenantLedger starts over a v1 database of 100,000 records
// (tests/e2e/workers/v1-ledger.mjs), answers 503 with Retry-After while
// records are still moving, carries the upgrade on by its alarm with no
// traffic, and then serves every record and counter it had. Settlement is
// never refused by the upgrade: a claim the v1 code granted is completed
// during it and replays afterward; the 503 every other call gets carries
// its Retry-After through the gateway and the JS middleware.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  startGateway, startOrigin, jsClientWorker, read, json, slug, eventually, GATEWAY_MODULES, ACME, GLOBEX,
} from "./harness.mjs";
import { fingerprint } from "../../client/index.js";

const ROOT = new URL("../../", import.meta.url).pathname;
let gw;
/** The gateway with its TenantLedger over a schema-1 database (tests/e2e/workers/v1-ledger.mjs). */
const v1Gateway = ({ vars = {}, workers = [] } = {}) => startGateway({
  vars,
  workers,
  gateway: {
    modules: [{ type: "ESModule", path: `${ROOT}tests/e2e/workers/v1-ledger.mjs` }, ...GATEWAY_MODULES],
    durableObjects: { TENANT_LEDGER: { className: "V1Ledger", useSQLite: true } },
  },
});
before(async () => { gw = await v1Gateway(); });
after(async () => { await gw?.dispose(); });

const rpc = async (object, call, body, on = gw) => {
  const stub = await on.ledger(object);
  const r = await stub.fetch(`https://ledger/rpc/v1/${call}`, { method: "POST", body: JSON.stringify(body) });
  return { status: r.status, headers: Object.fromEntries(r.headers), json: await r.json() };
};

test("a 100,000-record v1 ledger answers 503 with Retry-After while it upgrades, finishes by its alarm, and keeps every record", async () => {
  const first = await rpc("big-v1", "lookup", { key: "v1-000042" });
  assert.equal(first.status, 503, JSON.stringify(first.json));
  assert.equal(first.headers["retry-after"], "1");
  assert.match(first.json.detail, /upgrading/);
  assert.ok(gw.events("idempotency.schema_upgraded").some((e) => e.from === 1), "the upgrade began");
  // No further request: the alarm carries it on. Then every record is there.
  const deadline = Date.now() + 60_000;
  while (!gw.events("idempotency.schema_upgrade_done").length) {
    assert.ok(Date.now() < deadline, "the upgrade finished before the deadline");
    await new Promise((r) => setTimeout(r, 250));
  }
  const looked = await rpc("big-v1", "lookup", { key: "v1-000042" });
  assert.equal(looked.status, 200, JSON.stringify(looked.json));
  assert.equal(looked.json.record.state, "completed");
  const stats = (await rpc("big-v1", "stats", {})).json;
  assert.equal(stats.records, 100_000);
  assert.equal(stats.completed, 100_000);
  assert.equal(stats.claims, 100_000, "the v1 counters were kept");
  assert.equal(stats.replays, 7);
});

const charge = (key, auth) => ({
  method: "POST",
  headers: { authorization: auth, "content-type": "text/plain", "idempotency-key": key },
  body: `charge ${key}`,
});

test("settlement is never refused by the upgrade: a claim the v1 code granted completes during it and replays afterward; other calls get 503 with Retry-After through the gateway and the JS middleware", async () => {
  const origin = await startOrigin(() => ({ status: 201, headers: { "content-type": "text/plain" }, body: "ran again" }));
  // A claim of the v1 code, its run still at the origin when the new code starts.
  const held = charge("held-before-upgrade", ACME);
  const fp = await fingerprint({ method: "POST", target: "/charges", headers: held.headers, body: new TextEncoder().encode(held.body) });
  const js = jsClientWorker("js-client", { className: "V1Ledger", scriptName: "gateway", useSQLite: true });
  const up = await v1Gateway({
    vars: { ORIGIN_URL: origin.url, V1_IN_FLIGHT: JSON.stringify([{ key: "held-before-upgrade", generation: 1, fingerprint: fp }]) },
    workers: [js],
  });
  try {
    // (a) The owner's completion is the object's first call: the upgrade
    // has begun (40,000 of 100,000 records moved) and the record is still
    // set aside, yet the completion is stored.
    const stored = { status: 201, headers: [["content-type", "text/plain"]], body: Buffer.from("charged once").toString("base64") };
    const done = await rpc("acme", "complete", { key: "held-before-upgrade", generation: 1, response: stored }, up);
    assert.equal(done.status, 200, JSON.stringify(done.json));
    assert.deepEqual(done.json, { outcome: "stored" });
    assert.ok(up.events("idempotency.schema_upgraded").some((e) => e.from === 1), "the upgrade began");

    // (b) A new claim through the gateway during another object's upgrade
    // (its first call): 503 with the object's Retry-After; nothing runs.
    const refused = await json(await up.request("/charges", charge("new-during-upgrade", GLOBEX)));
    assert.equal(refused.status, 503, JSON.stringify(refused.json));
    assert.equal(slug(refused.json), "idempotency-store-unavailable");
    assert.equal(refused.headers["retry-after"], "1", "the gateway passes the object's Retry-After on");
    // ... and through withIdempotency over a LedgerClient.
    const worker = await up.mf.getWorker("js-client");
    const wrapped = await worker.fetch("https://js/wrapped", { method: "POST", headers: { "idempotency-key": "js-during-upgrade", "x-tenant": "js-upgrading" }, body: "one" });
    assert.equal(wrapped.status, 503, await wrapped.clone().text());
    assert.equal(wrapped.headers.get("retry-after"), "1", "the middleware passes the object's Retry-After on");
    assert.match((await wrapped.json()).type, /idempotency-store-unavailable$/);

    // Once acme's upgrade is done, the held key replays: the origin never runs it again.
    await eventually(async () => (await rpc("acme", "lookup", { key: "held-before-upgrade" }, up)).status === 200, { ms: 60_000 });
    const replay = await read(await up.request("/charges", held));
    assert.deepEqual([replay.status, replay.headers["idempotent-replayed"], replay.text], [201, "true", "charged once"]);
    assert.equal(origin.requests.length, 0, "the origin never ran the held key a second time");
    const record = (await rpc("acme", "lookup", { key: "held-before-upgrade" }, up)).json.record;
    assert.deepEqual([record.state, record.generation], ["completed", 1]);
  } finally { await up.dispose(); await origin.close(); }
});
