// The seed package's store contract (IdempotencyStore: claim / complete /
// release; docs/migrating.md) over the real TenantLedger, written from the
// contract's own words: "claim is atomic: of concurrent claims on one id,
// exactly one answers { status: "claimed", lease }; the others see
// { status: "in-flight", fingerprint } or { status: "completed",
// fingerprint, response }. A record is claimable again once it expires, or
// while in flight past its lease. complete and release act only while the
// lease still holds …; release also leaves a completed record alone."
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, eventually, CLIENT_MODULES, ROOT } from "./harness.mjs";

let gw, app;
before(async () => {
  gw = await startGateway({
    workers: [{
      name: "store-app",
      modulesRoot: ROOT,
      modules: [{ type: "ESModule", path: `${ROOT}tests/e2e/workers/store-app.mjs` }, ...CLIENT_MODULES],
      compatibilityDate: "2026-11-01",
      durableObjects: { LEDGER: { className: "TenantLedger", scriptName: "gateway", useSQLite: true } },
    }],
  });
  app = await gw.mf.getWorker("store-app");
});
after(async () => { await gw?.dispose(); });

const call = async (op, ...args) => (await app.fetch("https://store/", { method: "POST", body: JSON.stringify({ op, args }) })).json();
let ids = 0;
const newId = () => `${"0".repeat(48)}${String(++ids).padStart(8, "0")}${Date.now().toString(16).slice(-8)}`;
const claimOf = (id, { fingerprint = "fp-a", leaseMs = 60_000, ttlMs = 3_600_000 } = {}) => {
  const now = Date.now();
  return { id, fingerprint, now, leaseMs, expiresAt: now + ttlMs };
};
const response = (text) => ({ status: 201, headers: [["content-type", "text/plain"], ["location", "/charges/1"]], body: Buffer.from(text).toString("base64") });

test("concurrent claims on one id: exactly one is claimed, the others see it in flight with its fingerprint", async () => {
  const id = newId();
  const answers = await Promise.all(Array.from({ length: 8 }, () => call("claim", claimOf(id))));
  assert.ok(answers.every((a) => a.ok), JSON.stringify(answers));
  const claimed = answers.filter((a) => a.value.status === "claimed");
  assert.equal(claimed.length, 1, JSON.stringify(answers));
  // The grant, as this store names it: the generation and the claim's lease token.
  assert.match(claimed[0].value.lease, /^1\.[0-9a-f]{32}$/);
  for (const a of answers.filter((x) => x.value.status !== "claimed")) assert.deepEqual(a.value, { status: "in-flight", fingerprint: "fp-a" });
});

test("complete under the lease: every later claim sees it completed, with the response byte for byte", async () => {
  const id = newId();
  const { value: { lease } } = await call("claim", claimOf(id));
  assert.deepEqual(await call("complete", id, lease, response("charged"), Date.now() + 3_600_000), { ok: true });
  const again = await call("claim", claimOf(id));
  assert.deepEqual(again, { ok: true, value: { status: "completed", fingerprint: "fp-a", response: response("charged") } });
});

test("a different fingerprint never looks like the request's; null compares keys alone", async () => {
  const id = newId();
  const { value: { lease } } = await call("claim", claimOf(id));
  const other = await call("claim", claimOf(id, { fingerprint: "fp-b" }));
  assert.equal(other.ok, true);
  assert.notEqual(other.value.fingerprint, "fp-b");
  assert.equal(other.value.status, "in-flight");
  await call("complete", id, lease, response("a"), Date.now() + 3_600_000);
  const keysAlone = newId();
  const first = await call("claim", claimOf(keysAlone, { fingerprint: null }));
  assert.equal(first.value.status, "claimed");
  assert.deepEqual((await call("claim", claimOf(keysAlone, { fingerprint: null }))).value, { status: "in-flight", fingerprint: null });
});

test("a stale lease's complete and release change nothing; the lease that took over completes", async () => {
  const id = newId();
  const stale = await call("claim", claimOf(id, { leaseMs: 1_000 }));
  assert.equal(stale.value.status, "claimed");
  // In flight past its lease (an invocation that died): claimable again.
  const taken = await eventually(async () => {
    const a = await call("claim", claimOf(id, { leaseMs: 60_000 }));
    return a.value.status === "claimed" ? a.value : null;
  }, { ms: 30_000, every: 500 });
  assert.notEqual(taken.lease, stale.value.lease);
  assert.deepEqual(await call("complete", id, stale.value.lease, response("stale"), Date.now() + 3_600_000), { ok: true });
  assert.deepEqual(await call("release", id, stale.value.lease), { ok: true });
  // Still in flight under the new lease: the stale calls changed nothing.
  assert.deepEqual((await call("claim", claimOf(id))).value, { status: "in-flight", fingerprint: "fp-a" });
  await call("complete", id, taken.lease, response("fresh"), Date.now() + 3_600_000);
  assert.deepEqual((await call("claim", claimOf(id))).value.response, response("fresh"));
});

test("release frees the id for the next claim; release leaves a completed record alone", async () => {
  const id = newId();
  const first = await call("claim", claimOf(id));
  assert.deepEqual(await call("release", id, first.value.lease), { ok: true });
  const second = await call("claim", claimOf(id));
  assert.equal(second.value.status, "claimed");
  assert.notEqual(second.value.lease, first.value.lease);
  await call("complete", id, second.value.lease, response("kept"), Date.now() + 3_600_000);
  assert.deepEqual(await call("release", id, second.value.lease), { ok: true });
  assert.deepEqual((await call("claim", claimOf(id))).value, { status: "completed", fingerprint: "fp-a", response: response("kept") });
});

test("a completed record is claimable again once it expires", async () => {
  const id = newId();
  const first = await call("claim", claimOf(id, { leaseMs: 1_000, ttlMs: 2_000 }));
  await call("complete", id, first.value.lease, response("short"), Date.now() + 2_000);
  assert.equal((await call("claim", claimOf(id, { leaseMs: 1_000, ttlMs: 2_000 }))).value.status, "completed");
  await eventually(async () => (await call("claim", claimOf(id, { leaseMs: 1_000, ttlMs: 2_000 }))).value.status === "claimed", { ms: 30_000, every: 500 });
});

test("a call the store cannot take is an IdempotencyStoreError Result, and writes nothing", async () => {
  const id = newId();
  for (const [op, args, message] of [
    ["claim", [{ ...claimOf(id), id: "" }], /id must be/],
    ["claim", [{ ...claimOf(id), leaseMs: -1 }], /leaseMs/],
    ["claim", [{ ...claimOf(id), expiresAt: 0 }], /expiresAt/],
    ["claim", [{ ...claimOf(id), fingerprint: 5 }], /fingerprint/],
    ["complete", [id, "not-a-lease", response("x"), Date.now() + 1000], /lease/],
    ["complete", [id, "1", { status: 201, headers: [["set-cookie", "a=b"]], body: "" }, Date.now() + 1000], /set-cookie/],
    ["release", [id, "0"], /lease/],
  ]) {
    const r = await call(op, ...args);
    assert.equal(r.ok, false, `${op} ${JSON.stringify(args)}`);
    assert.equal(r.error.name, "IdempotencyStoreError");
    assert.match(r.error.message, message);
  }
  assert.equal((await call("claim", claimOf(id))).value.status, "claimed", "nothing was written for the id");
});
