// The alarm follows every write, and a failed setAlarm leaves no false
// belief (docs/contract.md §4): the built TenantLedger in workerd, its
// storage's setAlarm made to fail on demand (tests/e2e/workers/faulty-ledger.mjs).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, GATEWAY_MODULES } from "./harness.mjs";
import { fingerprint } from "../../client/rules/fingerprint.js";

const ROOT = new URL("../../", import.meta.url).pathname;
let gw;
before(async () => {
  gw = await startGateway({
    vars: { RETENTION_SECONDS: "120", LEASE_SECONDS: "2", ORIGIN_TIMEOUT_SECONDS: "1", SWEEP_INTERVAL_SECONDS: "1" },
    gateway: {
      modules: [{ type: "ESModule", path: `${ROOT}tests/e2e/workers/faulty-ledger.mjs` }, ...GATEWAY_MODULES],
      durableObjects: { TENANT_LEDGER: { className: "FaultyLedger", useSQLite: true } },
    },
  });
});
after(async () => { await gw?.dispose(); });

const FP = await fingerprint({ method: "POST", target: "/x", headers: new Headers(), fingerprintHeaders: [], body: new Uint8Array() });
const rpc = async (object, call, body) => {
  const stub = await gw.ledger(object);
  const r = await stub.fetch(`https://ledger/rpc/v1/${call}`, { method: "POST", body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
};
const fault = async (object, path, method = "POST") => {
  const stub = await gw.ledger(object);
  const r = await stub.fetch(`https://ledger/__faults/${path}`, { method });
  return { status: r.status, json: await r.json() };
};
/** Polls `check` until it returns a truthy value, or fails after `ms`. */
async function until(check, what, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`not before the deadline: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
/** Waits until the object's alarm is set more than a minute ahead (its first, recounting alarm has run). */
const settledAlarm = (object) => until(async () => {
  const { json } = await fault(object, "alarm", "GET");
  return json.alarm !== null && json.alarm - json.now > 60_000 ? json : null;
}, "the alarm set at the record's expiry");
const response = { status: 201, headers: [], body: Buffer.from("done").toString("base64") };

test("a completion that shortens the retention moves the alarm earlier: the record is swept on time", async () => {
  const o = "alarm-shortened";
  const claim = await rpc(o, "claim", { key: "k", fingerprint: FP });
  assert.equal(claim.json.outcome, "claimed");
  await settledAlarm(o); // at the claim's 120 s retention
  const done = await rpc(o, "complete", { key: "k", generation: claim.json.generation, response, retention_seconds: 3 });
  assert.equal(done.json.outcome, "stored");
  const { json } = await fault(o, "alarm", "GET");
  assert.ok(json.alarm !== null && json.alarm - json.now <= 5_000, `the alarm is ${json.alarm - json.now} ms ahead, not at the record's 3 s`);
  await until(async () => (await rpc(o, "stats", {})).json.records === 0, "the shortened record swept", 20_000);
});

test("a sweep whose setAlarm fails leaves no belief that an alarm is armed: the next write arms one", async () => {
  const o = "alarm-refused";
  assert.equal((await rpc(o, "claim", { key: "a", fingerprint: FP })).json.outcome, "claimed");
  await settledAlarm(o);
  // The platform gave up its retries: no alarm is left. The next sweep cannot set one.
  await fault(o, "delete-alarm");
  await fault(o, "set-alarm?fail=1");
  const ran = await fault(o, "run-alarm");
  assert.equal(ran.status, 500, JSON.stringify(ran.json));
  assert.match(ran.json.error, /setAlarm refused/);
  await fault(o, "set-alarm?fail=0");
  assert.equal((await fault(o, "alarm", "GET")).json.alarm, null);
  // A write: the instance must not believe the old alarm still stands.
  assert.equal((await rpc(o, "claim", { key: "b", fingerprint: FP })).json.outcome, "claimed");
  const { json } = await fault(o, "alarm", "GET");
  assert.notEqual(json.alarm, null, "an alarm is set again after a write");
  assert.ok(gw.events("idempotency.alarm_set_failed").length >= 1, "the failure is logged");
});
