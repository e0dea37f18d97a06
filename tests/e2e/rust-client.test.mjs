// The example crate (examples/embedded-ledger), built to a Worker against
// the packaged crate (scripts/build-example.sh, after cargo package): library
// mode (its own Durable Object embedding the ledger beside its own table)
// and the typed Rust client calling the gateway's TenantLedger via script_name.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, read, ROOT } from "./harness.mjs";

const example = `${ROOT}examples/embedded-ledger/build`;
const rustWorker = {
  name: "rust-example",
  modulesRoot: example,
  modules: [
    { type: "ESModule", path: `${example}/index.js` },
    { type: "CompiledWasm", path: `${example}/index_bg.wasm` },
  ],
  compatibilityDate: "2026-11-01",
  durableObjects: {
    WALLET: { className: "Wallet", useSQLite: true },
    TENANT_LEDGER: { className: "TenantLedger", scriptName: "gateway", useSQLite: true },
  },
};

let gw, rust;
before(async () => {
  gw = await startGateway({ workers: [rustWorker] });
  rust = await gw.mf.getWorker("rust-example");
});
after(async () => { await gw?.dispose(); });

const op = async (name, payload, tenant = "rust-tenant") =>
  (await rust.fetch(`https://rust/ledger/${tenant}/${name}`, { method: "POST", body: JSON.stringify(payload) })).json();
const transfer = (key, amount) => rust.fetch("https://rust/wallet/alice/transfer", { method: "POST", headers: { "idempotency-key": key }, body: String(amount) }).then(read);
const balance = async () => (await (await rust.fetch("https://rust/wallet/alice/balance")).json()).balance;

test("library mode: a transfer and its ledger record commit together, once per key", async () => {
  const first = await transfer("t-1", 25);
  assert.equal(first.status, 201);
  assert.deepEqual(JSON.parse(first.text), { transfer: 1, amount: 25, balance: 25 });
  const results = await Promise.all(Array.from({ length: 10 }, () => transfer("t-1", 25)));
  for (const r of results) {
    assert.equal(r.headers["idempotent-replayed"], "true");
    assert.ok(r.body.equals(first.body));
  }
  assert.equal(await balance(), 25, "retries moved no money");
  assert.equal((await transfer("t-1", 30)).status, 422, "same key, different amount");
  assert.equal((await transfer("t-2", 5)).status, 201);
  assert.equal(await balance(), 30);
});

test("typed Rust client: claim, complete, replay against the deployed TenantLedger", async () => {
  assert.deepEqual(await op("claim", { key: "r-1", body: "amount=1" }), { outcome: "claimed", generation: 1, takeover: false });
  assert.equal((await op("claim", { key: "r-1", body: "amount=1" })).outcome, "in_flight");
  assert.deepEqual(await op("complete", { key: "r-1", generation: 1, response_text: "paid" }), { outcome: "stored" });
  const replay = await op("claim", { key: "r-1", body: "amount=1" });
  assert.equal(replay.outcome, "completed");
  assert.equal(Buffer.from(replay.response.body, "base64").toString(), "paid");
  assert.deepEqual(await op("claim", { key: "r-1", body: "amount=2" }), { outcome: "mismatch", differs: ["body"] });
});

test("typed Rust client: release, reclaim, and fencing of a stale generation", async () => {
  assert.equal((await op("claim", { key: "r-2", body: "x" })).generation, 1);
  assert.deepEqual(await op("release", { key: "r-2", generation: 1 }), { outcome: "released" });
  assert.deepEqual(await op("claim", { key: "r-2", body: "x" }), { outcome: "claimed", generation: 2, takeover: false });
  const stale = await op("complete", { key: "r-2", generation: 1, response_text: "stale" });
  assert.deepEqual(stale, { outcome: "fenced_out", current: { state: "in_flight", generation: 2 } });
  assert.equal((await op("release", { key: "r-2", generation: 1 })).outcome, "fenced_out");
  const record = await op("lookup", { key: "r-2" });
  assert.equal(record.record.generation, 2);
  const stats = await op("stats", {});
  assert.equal(stats.fenced_out, 2);
  const refused = await op("complete", { key: "r-2", generation: 0, response_text: "x" });
  assert.equal(refused.status, 400);
});

test("typed Rust client: evict a completed key; the next claim runs again above its generation", async () => {
  assert.equal((await op("claim", { key: "r-3", body: "x" })).generation, 1);
  assert.deepEqual(await op("complete", { key: "r-3", generation: 1, response_text: "failed" }), { outcome: "stored" });
  // While an owner holds the key, nothing is evicted.
  assert.equal((await op("claim", { key: "r-4", body: "x" })).outcome, "claimed");
  const busy = await op("evict", { key: "r-4" });
  assert.equal(busy.outcome, "in_flight");
  assert.ok(busy.retry_after_ms > 0);
  const gone = await op("evict", { key: "r-3" });
  assert.equal(gone.outcome, "evicted");
  assert.equal(gone.record.key, "r-3");
  assert.equal(gone.record.state, "completed");
  assert.equal(gone.record.response_status, 200);
  assert.deepEqual(await op("evict", { key: "r-3" }), { outcome: "not_found" });
  assert.deepEqual(await op("claim", { key: "r-3", body: "x" }), { outcome: "claimed", generation: 2, takeover: false });
  // The owner of generation 1 stays fenced out.
  assert.equal((await op("complete", { key: "r-3", generation: 1, response_text: "late" })).outcome, "fenced_out");
  assert.equal((await op("stats", {})).evicted, 1);
  assert.equal((await op("evict", { key: "" })).status, 400);
});
