// A Worker consuming two local Queues with idempotency-ledger/queues, for
// tests/e2e/queues.test.mjs, and failing on purpose where its messages say:
//   - "orders": the external shape. The effect is a row in the Journal
//     object (another Durable Object than the ledger: an external effect),
//     the ledger the real TenantLedger of the "idempotency-ledger" script.
//   - "payments": the Durable Object shape. The effect is a row in the
//     tenant's Payments object, written by `Ledger.handle` in the same
//     transaction as the ledger's record.
//   - "naive": the orders' handler without the wrapper (ack after the
//     effect, retry on a throw): what the test's assertions would see
//     without idempotency.
// A message's body is { account, order, amount, faults }: faults[attempts - 1]
// (none past the list) says how this delivery fails:
//   "before"  the handler throws before its effect
//   "after"   the effect lands, then the handler throws
//   "timeout" the effect lands, then the handler settles a second after
//             the wrapper's deadline (within the lease: its result is stored late)
//   "hang"    the effect lands, then the handler never settles (as a
//             consumer the runtime ended: its lease is left to run out)
//   "slow"    the handler takes 400 ms before its effect (how many run at once is counted)
//   "lost"    the effect lands and the message is acked, then the
//             consumer invocation throws: local Queues retry the whole
//             batch, explicit acks lost (as an ack that never reached Queues)
// Every settlement the wrapper made is journaled once the invocation
// returns (so a lost ack is not counted), and so is every dead-lettered message.
import { DurableObject } from "cloudflare:workers";
import { Ledger } from "../../../client/ledger/ledger.js";
import { queueConsumer } from "../../../client/consumers/queues.js";
import { fingerprint } from "../../../client/rules/fingerprint.js";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const faultOf = (body, attempts) => body?.faults?.[attempts - 1] ?? "none";
/** Timings (seconds): the lease, the handler's deadline, how long a "timeout" takes to settle. */
const LEASE_SECONDS = 4;
const TIMEOUT_SECONDS = 2;
const LATE_MS = (TIMEOUT_SECONDS + 1) * 1000;

/** The test's view: effects of the external shape, acks and dead letters of every queue. */
export class Journal extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS effects (queue TEXT, key TEXT, generation INTEGER, message TEXT)`);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS settled (queue TEXT, message TEXT, n INTEGER, key TEXT, outcome TEXT, action TEXT, delay INTEGER)`);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS dead (queue TEXT, message TEXT, n INTEGER)`);
  }
  effect(queue, key, generation, message) {
    this.ctx.storage.sql.exec("INSERT INTO effects VALUES (?, ?, ?, ?)", queue, key, generation, message);
  }
  settled(rows) {
    for (const r of rows) this.ctx.storage.sql.exec("INSERT INTO settled VALUES (?, ?, ?, ?, ?, ?, ?)", r.queue, r.message, r.n, r.key, r.outcome, r.action, r.delay ?? null);
  }
  dead(queue, rows) {
    for (const r of rows) this.ctx.storage.sql.exec("INSERT INTO dead VALUES (?, ?, ?)", queue, r.message, r.n);
  }
  read() {
    const all = (q) => this.ctx.storage.sql.exec(q).toArray();
    return { effects: all("SELECT * FROM effects"), settled: all("SELECT * FROM settled"), dead: all("SELECT * FROM dead") };
  }
}

/** A tenant's payments: the effect and the ledger's record in one transaction. */
export class Payments extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS charges (key TEXT, ord INTEGER, amount INTEGER)");
    this.ledger = new Ledger(ctx);
  }
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/read") {
      const charges = this.ctx.storage.sql.exec("SELECT key, ord, amount FROM charges").toArray();
      const keys = url.searchParams.getAll("key");
      return Response.json({ charges, records: Object.fromEntries(keys.map((k) => [k, this.ledger.lookup(k)])) });
    }
    const attempts = Number(request.headers.get("queue-message-attempts"));
    let fault = "none";
    const answer = await this.ledger.handle(request, ({ key, json }) => {
      const body = json();
      fault = faultOf(body, attempts);
      if (fault === "before") throw new Error("failed before the charge");
      this.ctx.storage.sql.exec("INSERT INTO charges VALUES (?, ?, ?)", key, body.order, body.amount);
      if (fault === "after") throw new Error("failed after the charge (rolled back with it)");
      return { status: 201, json: { charged: body.amount, order: body.order } };
    });
    // Committed, then the answer is late: the consumer's deadline passes first.
    if ((fault === "timeout" || fault === "hang") && answer.headers.get("idempotent-replayed") !== "true") await sleep(LATE_MS);
    return answer;
  }
}

/** A ledger that cannot be reached: every call throws, as an object reset mid-call. */
export class Down extends DurableObject {
  fetch() { throw new Error("the ledger is unreachable"); }
}

const journal = (env) => env.JOURNAL.get(env.JOURNAL.idFromName("journal"));

/** Handlers running at once in this isolate, and the most seen ("slow" messages). */
const running = { now: 0, max: 0 };

/** The external effect: a row in the Journal, then the fault after it. */
async function charge(env, queue, message, key, generation) {
  const fault = faultOf(message.body, message.attempts);
  if (fault === "before") throw new Error("failed before the charge");
  if (fault === "slow") {
    running.max = Math.max(running.max, ++running.now);
    await sleep(400);
    running.now--;
  }
  await journal(env).effect(queue, key, generation, message.id);
  if (fault === "after") throw new Error("failed after the charge");
  if (fault === "timeout") await sleep(LATE_MS);
  if (fault === "hang") await new Promise(() => {});
  return { charged: message.body.amount, order: message.body.order };
}

/** Keys derived from the order, so a message sent twice is one operation. */
const orderKey = (message) => `order-${message.body.account}-${message.body.order}`;

function consumer(queue, options, rows) {
  return queueConsumer({
    key: orderKey,
    timeoutSeconds: TIMEOUT_SECONDS,
    concurrency: 3,
    onSettled: (message, s) => { rows.push({ queue, message: message.id, n: message.body.order, key: s.key, outcome: s.outcome, action: s.action, delay: s.delaySeconds }); },
    ...options,
  });
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/send") {
      const { queue, bodies, batch } = await request.json();
      const binding = { orders: env.ORDERS, payments: env.PAYMENTS_QUEUE, naive: env.NAIVE }[queue];
      // One message per body (a body listed twice is sent twice: two messages, one order); `batch`: one sendBatch.
      if (batch) await binding.sendBatch(bodies.map((body) => ({ body, contentType: "json" })));
      else for (const body of bodies) await binding.send(body, { contentType: "json" });
      return Response.json({ sent: bodies.length });
    }
    if (url.pathname === "/running") return Response.json(running);
    if (url.pathname === "/journal") return Response.json(await journal(env).read());
    if (url.pathname === "/payments") {
      const stub = env.PAYMENTS.get(env.PAYMENTS.idFromName(url.searchParams.get("account")));
      return stub.fetch(`https://payments/read${url.search}`);
    }
    if (url.pathname === "/hold") {
      // Claims a message's key as another consumer would (the same fingerprint), and never settles it.
      const { body, leaseSeconds } = await request.json();
      const fp = await fingerprint({ method: "POST", target: "/consume", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const stub = env.LEDGER.get(env.LEDGER.idFromName(body.account));
      return stub.fetch("https://ledger/rpc/v1/claim", { method: "POST", body: JSON.stringify({ key: orderKey({ body }), fingerprint: fp, lease_seconds: leaseSeconds }) });
    }
    if (url.pathname === "/record") {
      const ns = env.LEDGER;
      const stub = ns.get(ns.idFromName(url.searchParams.get("tenant")));
      return stub.fetch("https://ledger/rpc/v1/lookup", { method: "POST", body: JSON.stringify({ key: url.searchParams.get("key") }) });
    }
    return new Response("not found", { status: 404 });
  },

  async queue(batch, env, ctx_) {
    const rows = [];
    // A late completion is kept going a while, not forever: a "hang" never settles.
    const ctx = { waitUntil: (p) => ctx_.waitUntil(Promise.race([p, sleep(LATE_MS + 1000)])) };
    if (batch.queue.endsWith("-dlq")) {
      await journal(env).dead(batch.queue.slice(0, -4), batch.messages.map((m) => ({ message: m.id, n: m.body.order })));
      batch.ackAll();
      return;
    }
    if (batch.queue === "orders") {
      await consumer("orders", {
        // Account "down": a ledger whose every call fails (an object that is reset on each call).
        ledger: (message, env_) => (message.body.account === "down" ? env_.DOWN : env_.LEDGER),
        tenant: (message) => message.body.account,
        leaseSeconds: LEASE_SECONDS,
        handler: (message, { key, generation, env: e }) => charge(e, "orders", message, key, generation),
      }, rows)(batch, env, ctx);
    } else if (batch.queue === "payments") {
      await consumer("payments", {
        object: (message, env_) => env_.PAYMENTS.get(env_.PAYMENTS.idFromName(message.body.account)),
      }, rows)(batch, env, ctx);
    } else if (batch.queue === "naive") {
      // No ledger: ack after the effect, retry on a throw or a deadline.
      await Promise.all(batch.messages.map(async (message) => {
        try {
          const done = charge(env, "naive", message, orderKey(message), 0);
          const late = await Promise.race([done.then(() => false), sleep(TIMEOUT_SECONDS * 1000).then(() => true)]);
          if (late) throw new Error("timed out");
          message.ack();
          rows.push({ queue: "naive", message: message.id, n: message.body.order, key: orderKey(message), outcome: "ran", action: "ack" });
        } catch {
          message.retry();
        }
      }));
    }
    const lost = batch.messages.some((m) => faultOf(m.body, m.attempts) === "lost");
    // Journaled only when the acks reach the queue: a lost ack is not an ack.
    if (!lost) await journal(env).settled(rows);
    if (lost) throw new Error("the invocation failed after acking: every ack of this batch is lost");
  },
};
