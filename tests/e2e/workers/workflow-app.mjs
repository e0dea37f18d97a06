// A Worker whose effects must happen once (idempotency-ledger/workflows)
// where the platform runs code at least once: a Workflow (`Payments`) whose
// steps fail and retry, a cron trigger (`scheduled`) and a Durable Object
// alarm (`Nightly`). Every effect is recorded by `Effects`, a SQLite
// Durable Object, which counts how often each key took effect; the tests
// read those counts. LEDGER is the real TenantLedger of the gateway script,
// or a `LedgerLink` in front of it (tests/e2e/workflows.test.mjs).
//
// Failures are planned per key, by marks in the key, so a seed decides them:
//   ~failN   the effect itself fails its first N attempts (before it takes effect)
//   ~lostN   the step's result is lost after the step body returned, N times
//            (the step is retried, as when its engine restarts mid-step)
import { DurableObject, WorkflowEntrypoint } from "cloudflare:workers";
import { once, onceScheduled } from "../../../client/consumers/workflows.js";

const TENANT = "workflows";
const mark = (key, name) => Number(new RegExp(`~${name}(\\d+)`).exec(key)?.[1] ?? 0);

/** Counts effects and attempts per key (the test's observable). */
export class Effects extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS effects (key TEXT PRIMARY KEY, took INTEGER NOT NULL, attempts INTEGER NOT NULL, lost INTEGER NOT NULL DEFAULT 0)");
  }
  /** One attempt of `key`'s effect: it fails its first `~failN` attempts, else takes effect. */
  async apply(key, delayMs = 0) {
    const sql = this.ctx.storage.sql;
    sql.exec("INSERT INTO effects (key, took, attempts) VALUES (?, 0, 1) ON CONFLICT(key) DO UPDATE SET attempts = attempts + 1", key);
    const { attempts } = sql.exec("SELECT attempts FROM effects WHERE key = ?", key).one();
    if (attempts <= mark(key, "fail")) throw new Error(`planned failure ${attempts} of ${key}`);
    if (delayMs > 0) await scheduler.wait(delayMs);
    sql.exec("UPDATE effects SET took = took + 1 WHERE key = ?", key);
    return { charge: `ch_${key}`, attempt: attempts };
  }
  /** Should this step's result be lost (its `~lostN` first returns)? */
  loseResult(key) {
    const sql = this.ctx.storage.sql;
    sql.exec("INSERT INTO effects (key, took, attempts, lost) VALUES (?, 0, 0, 0) ON CONFLICT(key) DO NOTHING", key);
    const { lost } = sql.exec("SELECT lost FROM effects WHERE key = ?", key).one();
    if (lost >= mark(key, "lost")) return false;
    sql.exec("UPDATE effects SET lost = lost + 1 WHERE key = ?", key);
    return true;
  }
  /** An instance's run reached its end with `output` (a restart's run ends again). */
  finished(instanceId, output) {
    this.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS finished (id TEXT PRIMARY KEY, runs INTEGER NOT NULL, output TEXT NOT NULL)");
    this.ctx.storage.sql.exec("INSERT INTO finished VALUES (?, 1, ?) ON CONFLICT(id) DO UPDATE SET runs = runs + 1, output = excluded.output", instanceId, JSON.stringify(output));
  }
  runs() {
    this.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS finished (id TEXT PRIMARY KEY, runs INTEGER NOT NULL, output TEXT NOT NULL)");
    return Object.fromEntries(this.ctx.storage.sql.exec("SELECT id, runs, output FROM finished").toArray()
      .map((r) => [r.id, { runs: r.runs, output: JSON.parse(r.output) }]));
  }
  counts() {
    return this.ctx.storage.sql.exec("SELECT key, took, attempts, lost FROM effects ORDER BY key").toArray();
  }
}

const effects = (env) => env.EFFECTS.get(env.EFFECTS.idFromName("all"));

/**
 * The step as `once` sees it, losing a step's result after its body ran
 * (`~lostN`): the engine retries the step, as when it fails mid-step.
 */
function lossy(step, env) {
  return {
    do(name, config, body) {
      return step.do(name, config, async () => {
        const value = await body();
        if (await effects(env).loseResult(`${value?.key ?? name}`)) throw new Error(`planned loss of ${name}'s result`);
        return value;
      });
    },
  };
}

// Enough retries to outwait another instance's run of the same key on a loaded machine (10 s).
const RETRIES = { retries: { limit: 40, delay: 250, backoff: "constant" }, timeout: "2 minutes" };

export class Payments extends WorkflowEntrypoint {
  async run(event, step) {
    const { key, delayMs = 0 } = event.payload;
    const ledger = { ledger: this.env.LEDGER, tenant: TENANT, leaseSeconds: 5 };
    const charge = await once(lossy(step, this.env), "charge", { ...ledger, key, config: RETRIES }, async () => ({
      key, ...(await effects(this.env).apply(key, delayMs)),
    }));
    const receiptKey = `${event.instanceId}:receipt`;
    const receipt = await once(step, "receipt", { ...ledger, key: receiptKey, config: RETRIES }, async () => ({
      key: receiptKey, ...(await effects(this.env).apply(receiptKey)),
    }));
    const output = { charge, receipt };
    await effects(this.env).finished(event.instanceId, output);
    return output;
  }
}

/** A nightly job on a Durable Object alarm: its first run throws after its effect. */
export class Nightly extends DurableObject {
  async fetch(request) {
    if (request.method === "GET") {
      const [runs, result] = await Promise.all([this.ctx.storage.get("runs"), this.ctx.storage.get("result")]);
      return Response.json({ runs, result: result ?? null });
    }
    const at = Number(new URL(request.url).searchParams.get("at"));
    await this.ctx.storage.put("due", at);
    await this.ctx.storage.put("runs", 0);
    await this.ctx.storage.setAlarm(at);
    return new Response("armed");
  }
  async alarm() {
    const runs = (await this.ctx.storage.get("runs")) + 1;
    await this.ctx.storage.put("runs", runs);
    // The time the alarm was set for: the same for every retry of this run.
    const due = await this.ctx.storage.get("due");
    const result = await onceScheduled(due, "nightly-alarm", { ledger: this.env.LEDGER, tenant: TENANT }, () =>
      effects(this.env).apply(`alarm@${due}`));
    await this.ctx.storage.put("result", result);
    if (runs === 1) throw new Error("planned failure after the alarm's effect");
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const id = url.searchParams.get("id");
    switch (url.pathname) {
      case "/create":
        await env.PAYMENTS.create({ id, params: await request.json() });
        return Response.json({ id });
      case "/status":
        return Response.json(await (await env.PAYMENTS.get(id)).status());
      case "/restart":
        await (await env.PAYMENTS.get(id)).restart();
        return Response.json({ id });
      case "/counts":
        return Response.json(await effects(env).counts());
      case "/runs":
        return Response.json(await effects(env).runs());
      case "/mismatch": {
        // The same key under two effects' names: the second is refused. (A step stand-in: no Workflow needed.)
        const step = { do: (_name, _config, body) => body() };
        const options = { ledger: env.LEDGER, tenant: TENANT, key: id, config: {} };
        const first = await once(step, "charge", options, () => "charged");
        try {
          await once(step, "refund", options, () => effects(env).apply(`${id}:refund`));
          return Response.json({ first, second: "ran" });
        } catch (e) {
          return Response.json({ first, second: { name: e.name, message: e.message } });
        }
      }
      case "/nightly":
        return env.NIGHTLY.get(env.NIGHTLY.idFromName("nightly")).fetch(request);
      default:
        return new Response("not found", { status: 404 });
    }
  },

  /** A cron trigger's effect, once per scheduled time. */
  async scheduled(controller, env) {
    await onceScheduled(controller, "hourly-report", { ledger: env.LEDGER, tenant: TENANT }, () =>
      effects(env).apply(`cron@${controller.scheduledTime}`, 300));
  },
};
