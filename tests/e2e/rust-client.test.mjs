// The example crate (examples/embedded-ledger), built to a Worker against
// the packaged crate (scripts/build-example.sh, after cargo package): library
// mode (its own Durable Object embedding the ledger beside its own table),
// the typed Rust client calling the gateway's TenantLedger via script_name,
// and its Queue consumer (`#[event(queue)]`, src/queue.rs) paying once per key
// through a payment service this suite counts.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, unleased, read, eventually, ROOT } from "./harness.mjs";
import { LedgerClient } from "../../client/rpc/client.js";

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
  serviceBindings: { PAYMENTS: "payments" },
  queueConsumers: { payments: { maxBatchSize: 4, maxBatchTimeout: 1, maxRetries: 10, retryDelay: 0 } },
};

/**
 * The payment service the consumer calls: counts, per key, the attempts and
 * the payments that took effect; a key marked `~failN` is refused (500,
 * nothing paid) its first N attempts. `/send` enqueues jobs on the queue.
 */
const paymentsWorker = {
  name: "payments", modules: true, compatibilityDate: "2026-11-01",
  durableObjects: { BOOK: { className: "Book", useSQLite: true } },
  queueProducers: { JOBS: { queueName: "payments" } },
  script: `
    import { DurableObject } from "cloudflare:workers";
    export class Book extends DurableObject {
      constructor(ctx, env) {
        super(ctx, env);
        ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS paid (key TEXT PRIMARY KEY, attempts INTEGER NOT NULL, took INTEGER NOT NULL)");
      }
      charge(key) {
        const sql = this.ctx.storage.sql;
        sql.exec("INSERT INTO paid VALUES (?, 1, 0) ON CONFLICT(key) DO UPDATE SET attempts = attempts + 1", key);
        const { attempts } = sql.exec("SELECT attempts FROM paid WHERE key = ?", key).one();
        if (attempts <= Number(/~fail(\\d)/.exec(key)?.[1] ?? 0)) return false;
        sql.exec("UPDATE paid SET took = took + 1 WHERE key = ?", key);
        return true;
      }
      counts() { return this.ctx.storage.sql.exec("SELECT key, attempts, took FROM paid").toArray(); }
    }
    export default {
      async fetch(request, env) {
        const book = env.BOOK.get(env.BOOK.idFromName("book"));
        const path = new URL(request.url).pathname;
        if (path === "/send") {
          await env.JOBS.sendBatch((await request.json()).map((body) => ({ body })));
          return new Response("sent");
        }
        if (path === "/counts") return Response.json(await book.counts());
        const { key, amount } = await request.json();
        if (!(await book.charge(key))) return new Response("declined for now", { status: 500 });
        return Response.json({ receipt: "r_" + key, amount });
      },
    };`,
};

let gw, rust;
before(async () => {
  gw = await startGateway({ workers: [rustWorker, paymentsWorker] });
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
  assert.deepEqual(unleased(await op("claim", { key: "r-1", body: "amount=1" })), { outcome: "claimed", generation: 1, takeover: false });
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
  assert.deepEqual(unleased(await op("claim", { key: "r-2", body: "x" })), { outcome: "claimed", generation: 2, takeover: false });
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
  assert.deepEqual(unleased(await op("claim", { key: "r-3", body: "x" })), { outcome: "claimed", generation: 2, takeover: false });
  // The owner of generation 1 stays fenced out.
  assert.equal((await op("complete", { key: "r-3", generation: 1, response_text: "late" })).outcome, "fenced_out");
  assert.equal((await op("stats", {})).evicted, 1);
  assert.equal((await op("evict", { key: "" })).status, 400);
});

test("Rust Queue consumer: each payment is made once per key across failures, redeliveries and duplicate messages; nothing is left in flight", async () => {
  const payments = await gw.mf.getWorker("payments");
  const send = async (jobs) => assert.equal(await (await payments.fetch("https://payments/send", { method: "POST", body: JSON.stringify(jobs) })).text(), "sent");
  const paid = async () => Object.fromEntries((await (await payments.fetch("https://payments/counts")).json()).map((r) => [r.key, r]));
  // Duplicates in one batch, a payment that fails twice before it goes through, and a job with no key (its message id is its key).
  await send([{ key: "q-1", amount: 10 }, { key: "q-1", amount: 10 }, { key: "q-2~fail2", amount: 20 }, { amount: 30 }, { key: "q-3", amount: 40 }]);
  const first = await eventually(async () => {
    const p = await paid();
    return ["q-1", "q-2~fail2", "q-3"].every((k) => p[k]?.took === 1) && Object.keys(p).length === 4 ? p : null;
  }, { ms: 60_000, every: 250 });
  assert.equal(first["q-2~fail2"].attempts, 3, "retried until the payment went through");
  const idKeyed = Object.keys(first).find((k) => !k.startsWith("q-"));
  assert.equal(first[idKeyed].took, 1, "a job without a key is paid once, under its message id");
  // A producer's retry (the same key and job, a new message) and the key reused for another job: neither pays.
  await send([{ key: "q-1", amount: 10 }, { key: "q-3", amount: 99 }]);
  await eventually(() => gw.logs.some((l) => l.includes("q-3 was used for another job")) && gw.logs.some((l) => l.includes("q-1 was paid before")), { ms: 60_000 });
  assert.deepEqual(await paid(), first, "no payment was made twice");
  const ledger = LedgerClient.forTenant(await gw.mf.getDurableObjectNamespace("TENANT_LEDGER"), "payments-consumer");
  for (const key of ["q-1", "q-2~fail2", "q-3", idKeyed]) {
    const record = await ledger.lookup(key);
    assert.equal(record?.state, "completed", `${key} is ${record?.state}`);
    assert.equal(record.generation, key === "q-2~fail2" ? 3 : 1, `${key}: a failed payment released its key, a duplicate never claimed it`);
  }
});
