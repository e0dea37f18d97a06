// idempotency-ledger/queues on real local Queues (Miniflare's queue broker
// in workerd: batches, per-message ack/retry with delays, max_retries, a
// dead-letter queue) against the real ledgers: the TenantLedger of the
// packaged script (the external shape) and a Ledger in the tenant's own
// Durable Object (the Durable Object shape). tests/e2e/workers/queue-app.mjs
// fails where each message says (before its effect, after it by throwing,
// after it by settling only past the deadline, after it by never settling,
// after its ack by losing it).
//
// A seeded schedule: 30 orders, 10 of them sent twice, 2 that always fail
// ("poison"), each delivery's fault drawn for its first three attempts. It
// asserts, for every key, once every message is acked or dead-lettered:
//   - Durable Object shape: exactly one charge per order that was acked,
//     none for the poison ones; every record completed, none in flight;
//   - external shape: at most one effect per lease (key, generation), at
//     least one per acked order, none for the poison ones; every record
//     completed or released, none in flight;
//   - every message acked once at most, acked + dead-lettered = sent;
//   - and, as a control, the same schedule without the wrapper charges
//     some order twice (the faults are real).
// One seed in `npm test`; `SEED=n SEEDS=k` runs k seeds from n (each about
// half a minute).
//
// "Timeouts": local Queues do not enforce a consumer's wall time, so a
// timeout is a handler (or an object's answer) that does not settle within
// the wrapper's own deadline (`timeoutSeconds`): "timeout" settles a second
// later, within the lease; "hang" never settles, as a consumer the runtime
// ended (docs/consumers.md "How it is tested").
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { ledgerWorker } from "../../worker/testing.mjs";
import { Rng, seeds } from "./harness.mjs";

const ROOT = new URL("../../", import.meta.url).pathname;
const MAX_RETRIES = 10;

const logs = [];
let mf, app;
before(async () => {
  const ledger = ledgerWorker({ name: "idempotency-ledger" });
  const consumerOf = (queue) => ({ maxBatchSize: 4, maxBatchTimeout: 0.2, maxRetries: MAX_RETRIES, deadLetterQueue: `${queue}-dlq`, retryDelay: 0 });
  const dlq = { maxBatchSize: 10, maxBatchTimeout: 0.2, maxRetries: 0 };
  mf = new Miniflare(convertV4MiniflareOptions({
    handleStructuredLogs({ level, message }) {
      logs.push(message);
      if (process.env.E2E_LOGS) console.log(`[workerd ${level}] ${message}`);
    },
    workers: [
      ledger,
      {
        name: "queue-app",
        modulesRoot: ROOT,
        modules: [{ type: "ESModule", path: `${ROOT}tests/e2e/workers/queue-app.mjs` }, ...ledger.modules.filter((m) => !m.path.endsWith("worker/entry.mjs"))],
        compatibilityDate: "2026-11-01",
        durableObjects: {
          JOURNAL: { className: "Journal", useSQLite: true },
          PAYMENTS: { className: "Payments", useSQLite: true },
          LEDGER: { className: "TenantLedger", scriptName: "idempotency-ledger", useSQLite: true },
          DOWN: { className: "Down", useSQLite: true },
        },
        queueProducers: { ORDERS: { queueName: "orders" }, PAYMENTS_QUEUE: { queueName: "payments" }, NAIVE: { queueName: "naive" } },
        queueConsumers: {
          orders: consumerOf("orders"), payments: consumerOf("payments"), naive: consumerOf("naive"),
          "orders-dlq": dlq, "payments-dlq": dlq, "naive-dlq": dlq,
        },
      },
    ],
  }));
  await mf.ready;
  app = await mf.getWorker("queue-app");
});
after(async () => { await mf?.dispose(); });


const ACCOUNTS = ["acme", "globex", "initech"];
const FAULTS = ["before", "after", "timeout", "hang", "lost"];

/** The schedule of one seed: bodies to send (duplicates included, shuffled), and the poison orders. */
function schedule(seed, base) {
  const random = new Rng(seed).next;
  const orders = [];
  for (let i = 0; i < 30; i++) {
    const order = base + i;
    const faults = i < 2
      ? Array(MAX_RETRIES + 1).fill("before")
      : Array.from({ length: 3 }, () => (random() < 0.5 ? "none" : FAULTS[Math.floor(random() * FAULTS.length)]));
    orders.push({ account: ACCOUNTS[Math.floor(random() * ACCOUNTS.length)], order, amount: 100 + Math.floor(random() * 9900), faults });
  }
  const sends = [...orders, ...orders.slice(2, 12)];
  for (let i = sends.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [sends[i], sends[j]] = [sends[j], sends[i]];
  }
  return { orders, sends, poison: new Set(orders.slice(0, 2).map((o) => o.order)) };
}

const keyOf = (o) => `order-${o.account}-${o.order}`;
const getJson = async (path) => {
  const res = await app.fetch(`https://queue-app${path}`);
  assert.equal(res.status, 200, `${path}: ${res.status}`);
  return res.json();
};
const countBy = (rows, f) => rows.reduce((m, r) => m.set(f(r), (m.get(f(r)) ?? 0) + 1), new Map());

for (const seed of seeds(1)) {
  test(`seed ${seed}: every message acked or dead-lettered; one charge per order in the object, one effect per lease outside it; nothing in flight`, async () => {
    const base = seed * 1000;
    const { orders, sends, poison } = schedule(seed, base);
    const mine = (r) => r.n >= base && r.n < base + 1000;
    const started = Date.now();
    for (const queue of ["orders", "payments", "naive"]) {
      const res = await app.fetch("https://queue-app/send", { method: "POST", body: JSON.stringify({ queue, bodies: sends }) });
      assert.equal(res.status, 200);
    }
    // Every message of every queue ends acked or dead-lettered (generous: a loaded 2-core machine).
    let journal;
    const deadline = Date.now() + 150_000;
    for (;;) {
      journal = await getJson("/journal");
      const done = ["orders", "payments", "naive"].every((queue) => {
        const acked = new Set(journal.settled.filter((r) => r.queue === queue && r.action === "ack" && mine(r)).map((r) => r.message));
        const dead = new Set(journal.dead.filter((r) => r.queue === queue && mine(r)).map((r) => r.message));
        return acked.size + dead.size >= sends.length;
      });
      if (done) break;
      assert.ok(Date.now() < deadline, `messages still unsettled after 150 s: ${JSON.stringify(journal.settled.filter(mine).length)} settlements`);
      await new Promise((r) => setTimeout(r, 500));
    }

    const sent = countBy(sends, (o) => o.order);
    for (const queue of ["orders", "payments", "naive"]) {
      const acks = journal.settled.filter((r) => r.queue === queue && r.action === "ack" && mine(r));
      const dead = journal.dead.filter((r) => r.queue === queue && mine(r));
      // A message is acked once at most, never both acked and dead-lettered; each order's messages all end.
      assert.equal(new Set(acks.map((r) => r.message)).size, acks.length, `${queue}: a message acked twice`);
      for (const r of dead) assert.ok(!acks.some((a) => a.message === r.message), `${queue}: ${r.message} acked and dead-lettered`);
      const ended = countBy([...acks, ...dead], (r) => r.n);
      for (const [order, count] of sent) assert.equal(ended.get(order), count, `${queue}: order ${order} sent ${count}, ended ${ended.get(order)}`);
      // Every other order is acked (its faults end by the fourth attempt, well within max_retries).
      for (const o of orders) if (!poison.has(o.order)) assert.ok(acks.some((r) => r.n === o.order), `${queue}: order ${o.order} never acked`);
      // The poison orders end in the dead-letter queue, after max_retries.
      for (const order of poison) assert.equal(dead.filter((r) => r.n === order).length, sent.get(order), `${queue}: poison order ${order} not dead-lettered`);
    }

    // The Durable Object shape: exactly one charge per acked order, none for the poison ones.
    const ackedOrders = new Set(journal.settled.filter((r) => r.queue === "payments" && r.action === "ack" && mine(r)).map((r) => r.n));
    for (const account of ACCOUNTS) {
      const mineHere = orders.filter((o) => o.account === account);
      const q = new URLSearchParams({ account });
      for (const o of mineHere) q.append("key", keyOf(o));
      const { charges, records } = await getJson(`/payments?${q}`);
      const perKey = countBy(charges.filter((c) => c.ord >= base && c.ord < base + 1000), (c) => c.key);
      for (const o of mineHere) {
        const expected = ackedOrders.has(o.order) ? 1 : 0;
        assert.equal(perKey.get(keyOf(o)) ?? 0, expected, `payments: ${keyOf(o)} charged ${perKey.get(keyOf(o)) ?? 0} times`);
        assert.equal(records[keyOf(o)]?.state ?? null, expected ? "completed" : null, `payments: ${keyOf(o)} record ${JSON.stringify(records[keyOf(o)])}`);
      }
    }

    // The external shape: at most one effect per lease; at least one per acked order; every record settled.
    const effects = journal.effects.filter((e) => e.queue === "orders" && orders.some((o) => keyOf(o) === e.key));
    const perLease = countBy(effects, (e) => `${e.key}@${e.generation}`);
    for (const [lease, count] of perLease) assert.equal(count, 1, `orders: ${lease} ran its effect ${count} times under one lease`);
    const perKey = countBy(effects, (e) => e.key);
    const ackedExternal = new Set(journal.settled.filter((r) => r.queue === "orders" && r.action === "ack" && mine(r)).map((r) => r.n));
    let reruns = 0;
    for (const o of orders) {
      const n = perKey.get(keyOf(o)) ?? 0;
      if (poison.has(o.order)) assert.equal(n, 0, `orders: poison ${keyOf(o)} ran`);
      else if (ackedExternal.has(o.order)) assert.ok(n >= 1, `orders: ${keyOf(o)} acked without its effect`);
      reruns += Math.max(0, n - 1);
      const { record } = await getJson(`/record?${new URLSearchParams({ tenant: o.account, key: keyOf(o) })}`);
      if (record !== null) assert.notEqual(record.state, "in_flight", `orders: ${keyOf(o)} left in flight`);
      if (ackedExternal.has(o.order)) assert.equal(record?.state, "completed", `orders: ${keyOf(o)} acked but ${JSON.stringify(record)}`);
      if (poison.has(o.order)) assert.equal(record?.state, "released", `orders: poison ${keyOf(o)} ${JSON.stringify(record)}`);
      // Each effect ran under a lease the ledger granted: never past the record's generation.
      for (const e of effects.filter((x) => x.key === keyOf(o))) assert.ok(record && e.generation <= record.generation, `orders: ${keyOf(o)} effect at generation ${e.generation} beyond ${record?.generation}`);
    }

    // The control: the same schedule without the wrapper charges some order more than once.
    const naive = countBy(journal.effects.filter((e) => e.queue === "naive" && orders.some((o) => keyOf(o) === e.key)), (e) => e.key);
    const naiveRepeats = [...naive.values()].filter((n) => n > 1).length;
    assert.ok(naiveRepeats > 0, "the faults never repeated an effect without the wrapper: the schedule tests nothing");
    console.log(`# seed ${seed}: ${((Date.now() - started) / 1000).toFixed(1)} s; without the wrapper ${naiveRepeats} of ${orders.length} orders charged more than once; Durable Object shape 0; external shape reran ${reruns} effect(s) on a new lease (a throw after the effect, or a lease that ended unsettled)`);
  });
}

test("a ledger that cannot be reached, or a tenant that cannot be made, never lets the handler run: retried, then dead-lettered", async () => {
  const base = 999_000;
  const bodies = [
    { account: "down", order: base, amount: 1, faults: [] },
    { account: "", order: base + 1, amount: 1, faults: [] },
  ];
  await app.fetch("https://queue-app/send", { method: "POST", body: JSON.stringify({ queue: "orders", bodies }) });
  const deadline = Date.now() + 90_000;
  let journal;
  for (;;) {
    journal = await getJson("/journal");
    if (bodies.every((b) => journal.dead.some((r) => r.queue === "orders" && r.n === b.order))) break;
    assert.ok(Date.now() < deadline, "not dead-lettered");
    await new Promise((r) => setTimeout(r, 300));
  }
  assert.deepEqual(journal.effects.filter((e) => e.key.endsWith(`-${base}`) || e.key.endsWith(`-${base + 1}`)), []);
  const settled = (n) => journal.settled.filter((r) => r.queue === "orders" && r.n === n);
  assert.equal(settled(base).length, MAX_RETRIES + 1);
  assert.ok(settled(base).every((r) => r.action === "retry" && r.outcome === "unavailable"), JSON.stringify(settled(base)));
  assert.ok(settled(base + 1).every((r) => r.action === "retry" && r.outcome === "misconfigured"), JSON.stringify(settled(base + 1)));
  assert.ok(logs.some((l) => l.includes("idempotency.queue_ledger_unavailable")));
  assert.ok(logs.some((l) => l.includes("idempotency.queue_misconfigured")));
});

/** Waits until `order` has an ack on `queue`, or fails after `ms`; the journal then. */
async function acked(queue, order, ms = 60_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const journal = await getJson("/journal");
    if (journal.settled.some((r) => r.queue === queue && r.n === order && r.action === "ack")) return journal;
    assert.ok(!journal.dead.some((r) => r.queue === queue && r.n === order), `order ${order} was dead-lettered: ${JSON.stringify(journal.settled.filter((r) => r.n === order))}`);
    assert.ok(Date.now() < deadline, `order ${order} not acked: ${JSON.stringify(journal.settled.filter((r) => r.n === order))}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test("a key in flight elsewhere is retried after the lease left, not at once: taken over once the lease ends, within max_retries", async () => {
  const body = { account: "acme", order: 998_000, amount: 5, faults: [] };
  const leaseSeconds = 8;
  const held = await (await app.fetch("https://queue-app/hold", { method: "POST", body: JSON.stringify({ body, leaseSeconds }) })).json();
  assert.equal(held.outcome, "claimed");
  const sentAt = Date.now();
  await app.fetch("https://queue-app/send", { method: "POST", body: JSON.stringify({ queue: "orders", bodies: [body] }) });
  const journal = await acked("orders", body.order, 60_000);
  const rows = journal.settled.filter((r) => r.queue === "orders" && r.n === body.order);
  // One retry while the holder's lease lasts (a consumer retrying at once would spend max_retries on it and
  // dead-letter the message with its key still in flight), then the takeover runs it.
  assert.equal(rows[0].outcome, "busy");
  assert.ok(rows[0].delay >= leaseSeconds - 3 && rows[0].delay <= leaseSeconds, JSON.stringify(rows));
  assert.ok(rows.length <= 3, JSON.stringify(rows));
  assert.equal(rows.at(-1).outcome, "ran");
  assert.ok(Date.now() - sentAt >= (leaseSeconds - 3) * 1000);
  const effects = journal.effects.filter((e) => e.key === `order-acme-${body.order}`);
  assert.deepEqual(effects.map((e) => e.generation), [held.generation + 1]);
  const { record } = await getJson(`/record?${new URLSearchParams({ tenant: "acme", key: `order-acme-${body.order}` })}`);
  assert.equal(record.state, "completed");
});

test("a handler past its deadline keeps its lease: a late result is still stored; one that never comes is taken over after the lease", async () => {
  const late = { account: "globex", order: 997_000, amount: 7, faults: ["timeout"] };
  const hung = { account: "globex", order: 997_001, amount: 7, faults: ["hang"] };
  await app.fetch("https://queue-app/send", { method: "POST", body: JSON.stringify({ queue: "orders", bodies: [late, hung] }) });
  for (const body of [late, hung]) {
    const journal = await acked("orders", body.order, 60_000);
    const key = `order-globex-${body.order}`;
    const rows = journal.settled.filter((r) => r.queue === "orders" && r.n === body.order);
    assert.equal(rows[0].outcome, "timed_out", JSON.stringify(rows));
    assert.ok(rows[0].delay >= 1, JSON.stringify(rows)); // the lease left (4 s lease, 2 s deadline), never at once
    const effects = journal.effects.filter((e) => e.key === key);
    const { record } = await getJson(`/record?${new URLSearchParams({ tenant: "globex", key })}`);
    assert.equal(record.state, "completed");
    if (body === late) {
      // Its result came within the lease: stored, and the redelivery is its replay. One effect.
      assert.equal(rows.at(-1).outcome, "replayed", JSON.stringify(rows));
      assert.equal(effects.length, 1);
      assert.equal(record.generation, 1);
    } else {
      // Never settled: the next delivery after the lease takes the key over and runs it. Two effects, one
      // per lease: the external shape is fenced, not exactly-once.
      assert.equal(rows.at(-1).outcome, "ran", JSON.stringify(rows));
      assert.deepEqual(effects.map((e) => e.generation).sort(), [1, 2]);
      assert.equal(record.generation, 2);
    }
  }
});

test("a batch's keys run concurrently up to the bound, each message acked on its own; a duplicate in the batch waits for its twin and is replayed", async () => {
  const slow = (order) => ({ account: "initech", order, amount: 1, faults: ["slow"] });
  const twin = slow(996_000);
  const bodies = [twin, twin, ...Array.from({ length: 6 }, (_, i) => slow(996_001 + i))];
  // One sendBatch: two batches of 4 (max_batch_size), the twins in the first.
  await app.fetch("https://queue-app/send", { method: "POST", body: JSON.stringify({ queue: "orders", bodies, batch: true }) });
  let journal;
  for (const body of bodies) journal = await acked("orders", body.order, 60_000);
  const rows = journal.settled.filter((r) => r.queue === "orders" && r.n >= 996_000 && r.n < 997_000);
  // Every message settled once, on its first delivery: none was retried because of another.
  assert.equal(rows.length, bodies.length, JSON.stringify(rows));
  assert.ok(rows.every((r) => r.action === "ack"), JSON.stringify(rows));
  assert.deepEqual(rows.filter((r) => r.n === twin.order).map((r) => r.outcome).sort(), ["ran", "replayed"]);
  assert.equal(journal.effects.filter((e) => e.key === `order-initech-${twin.order}`).length, 1);
  const { max } = await getJson("/running");
  assert.ok(max >= 2 && max <= 3, `handlers at once: ${max} (concurrency 3, batches of 4)`);
});
