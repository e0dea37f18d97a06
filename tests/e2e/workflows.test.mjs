// idempotency-ledger/workflows in workerd: a Workflow's steps, a cron
// trigger and a Durable Object alarm, whose effects must happen once per
// key while the platform runs them at least once. The Workflow runs on
// Miniflare's local Workflows engine (real step retries and restarts),
// its ledger is the gateway's real TenantLedger behind a link that loses
// answers after the object applied the call, and every effect is counted
// by a SQLite Durable Object (tests/e2e/workers/workflow-app.mjs).
//
// Seeded: each seed plans its keys' failures (the effect failing before it
// takes effect, the step's result lost after it ran, lost claim and
// completion answers), instances sharing a business key run concurrently,
// and some instances are restarted whole once complete. One seed in
// `npm test`; `SEED=n SEEDS=k node --test --test-timeout=0 tests/e2e/workflows.test.mjs` for more.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { CLIENT_MODULES, ROOT, Rng, eventually, seeds, startGateway } from "./harness.mjs";
import { LedgerClient } from "../../client/rpc/client.js";

const TENANT = "workflows";

/**
 * A link in front of the real TenantLedger that loses the answer of the
 * first claim of a key marked `~lc` and the first completion of a key
 * marked `~lk` after the object applied them (not a fake ledger: every call
 * is served by the real object).
 */
const linkWorker = {
  name: "link", modules: true,
  durableObjects: {
    LINK: { className: "LedgerLink", useSQLite: true },
    REAL: { className: "TenantLedger", scriptName: "gateway" },
  },
  script: `
    const lost = new Set();
    export class LedgerLink {
      constructor(state, env) { this.state = state; this.env = env; }
      async fetch(request) {
        const path = new URL(request.url).pathname;
        const body = await request.text();
        const real = this.env.REAL.get(this.env.REAL.idFromName(this.state.id.name));
        const answer = await real.fetch(request.url, { method: request.method, headers: request.headers, body });
        let key = "";
        try { key = JSON.parse(body).key ?? ""; } catch {}
        const mark = path === "/rpc/v1/claim" ? "~lc" : path === "/rpc/v1/complete" ? "~lk" : null;
        if (mark !== null && key.includes(mark) && !lost.has(path + key)) {
          lost.add(path + key);
          await answer.arrayBuffer();
          throw new Error("connection reset after the object answered " + path);
        }
        return answer;
      }
    }
    // The answers it lost, for the test to check its plan was carried out.
    export default { fetch() { return Response.json([...lost]); } }`,
};

const appWorker = {
  name: "wf-app",
  modulesRoot: ROOT,
  modules: [
    { type: "ESModule", path: `${ROOT}tests/e2e/workers/workflow-app.mjs` },
    ...CLIENT_MODULES,
  ],
  compatibilityDate: "2026-11-01",
  durableObjects: {
    EFFECTS: { className: "Effects", useSQLite: true },
    NIGHTLY: { className: "Nightly", useSQLite: true },
    LEDGER: { className: "LedgerLink", scriptName: "link" },
  },
  workflows: { PAYMENTS: { name: "payments", className: "Payments" } },
};

let gw, app, link, ledger;
before(async () => {
  gw = await startGateway({ workers: [linkWorker, appWorker] });
  app = await gw.mf.getWorker("wf-app");
  link = await gw.mf.getWorker("link");
  ledger = LedgerClient.forTenant(await gw.mf.getDurableObjectNamespace("TENANT_LEDGER"), TENANT);
});
after(async () => { await gw?.dispose(); });

const call = async (path, init) => {
  const res = await app.fetch(`https://app${path}`, init);
  assert.equal(res.status, 200, `${path}: ${res.status}`);
  return res.json();
};
const counts = async () => Object.fromEntries((await call("/counts")).map((r) => [r.key, r]));
const runs = () => call("/runs");
const status = (id) => call(`/status?id=${encodeURIComponent(id)}`);


/** Waits until every instance is complete; fails at once on one that errored. */
async function allComplete(ids, done = () => true) {
  await eventually(async () => {
    const states = await Promise.all(ids.map(status));
    const errored = states.findIndex((s) => s.status === "errored" || s.status === "terminated");
    if (errored !== -1) assert.fail(`instance ${ids[errored]} ${states[errored].status}: ${JSON.stringify(states[errored].error)}`);
    return states.every((s) => s.status === "complete") && (await done());
  }, { ms: 180_000, every: 500 });
}

for (const seed of seeds(1)) {
  test(`seed ${seed}: a Workflow whose steps fail and retry, and instances restarted whole, take each effect once per key; nothing is left in flight`, async () => {
    const random = new Rng(seed).next;
    const pick = (n) => Math.floor(random() * n);
    // Business keys, each with its planned failures, and 1-3 instances sharing it.
    const plans = Array.from({ length: 5 }, (_, i) => {
      let key = `s${seed}-order-${i}`;
      if (pick(2)) key += `~fail${1 + pick(2)}`;
      if (pick(2)) key += `~lost${1 + pick(2)}`;
      if (pick(3) === 0) key += "~lc";
      if (pick(3) === 0) key += "~lk";
      return { key, instances: 1 + pick(3), delayMs: pick(4) * 100 };
    });
    const instances = plans.flatMap((p) => Array.from({ length: p.instances }, (_, j) => ({ id: `s${seed}-i${plans.indexOf(p)}-${j}`, plan: p })));
    await Promise.all(instances.map(({ id, plan }) =>
      call(`/create?id=${id}`, { method: "POST", body: JSON.stringify({ key: plan.key, delayMs: plan.delayMs }) })));
    const ids = instances.map((i) => i.id);
    await allComplete(ids, async () => {
      const finished = await runs();
      return ids.every((id) => finished[id]);
    });

    const took = await counts();
    const firstRuns = await runs();
    for (const { key } of plans) assert.equal(took[key]?.took, 1, `${key}: one charge across retries and ${plans.find((p) => p.key === key).instances} concurrent instances`);
    for (const id of ids) assert.equal(took[`${id}:receipt`]?.took, 1, `${id}: one receipt`);
    for (const { id, plan } of instances) {
      // What step.do answered is the effect's result, the same for every instance of the key.
      assert.equal(firstRuns[id].output.charge.charge, `ch_${plan.key}`);
      assert.deepEqual(firstRuns[id].output.charge, firstRuns[instances.find((i) => i.plan === plan).id].output.charge);
    }
    // Every planned failure happened (the test exercises the retries it claims to).
    const lostAnswers = await (await link.fetch("https://link/")).json();
    for (const { key } of plans) {
      const fails = Number(/~fail(\d)/.exec(key)?.[1] ?? 0);
      assert.ok(took[key].attempts >= fails + 1, `${key}: ${took[key].attempts} attempts`);
      assert.equal(took[key].lost, Number(/~lost(\d)/.exec(key)?.[1] ?? 0), `${key}: step results lost`);
      assert.equal(lostAnswers.includes(`/rpc/v1/claim${key}`), key.includes("~lc"), `${key}: a claim's answer lost`);
      assert.equal(lostAnswers.includes(`/rpc/v1/complete${key}`), key.includes("~lk"), `${key}: a completion's answer lost`);
    }

    // Restart some instances whole: every step runs again, no effect does.
    const restarted = ids.filter((_, i) => i % 2 === seed % 2);
    for (const id of restarted) await call(`/restart?id=${id}`, { method: "POST" });
    await allComplete(restarted, async () => {
      const now = await runs();
      return restarted.every((id) => now[id].runs > firstRuns[id].runs);
    });
    const after = await runs();
    for (const id of restarted) assert.deepEqual(after[id].output, firstRuns[id].output, `${id}: a restarted instance answers the stored results`);
    const tookAfter = await counts();
    for (const [key, c] of Object.entries(tookAfter)) assert.ok(c.took <= 1, `${key} took effect ${c.took} times`);
    assert.deepEqual(Object.keys(tookAfter).filter((k) => took[k]?.took === 1 && tookAfter[k].took !== 1), []);

    // Nothing is left in flight: every key is completed on the ledger.
    for (const key of [...plans.map((p) => p.key), ...ids.map((id) => `${id}:receipt`)]) {
      const record = await ledger.lookup(key);
      assert.equal(record?.state, "completed", `${key} is ${record?.state}`);
    }
  });
}

test("a cron trigger fired several times for one scheduled time takes its effect once, and answers alike", async () => {
  const scheduledTime = Date.UTC(2026, 11, 3, 18, 0, 0);
  const fire = (t) => app.scheduled({ scheduledTime: t, cron: "0 * * * *" });
  // Concurrent deliveries: one runs the effect; the others find it in flight and fail (retried by the platform).
  const first = await Promise.all(Array.from({ length: 4 }, () => fire(scheduledTime)));
  assert.ok(first.some((r) => r.outcome === "ok"), JSON.stringify(first));
  // Later deliveries of the same time answer the stored result.
  for (let i = 0; i < 3; i++) assert.equal((await fire(scheduledTime)).outcome, "ok");
  // Another time is another run.
  assert.equal((await fire(scheduledTime + 3_600_000)).outcome, "ok");
  const took = await counts();
  assert.equal(took[`cron@${scheduledTime}`].took, 1);
  assert.equal(took[`cron@${scheduledTime + 3_600_000}`].took, 1);
  const key = `scheduled:hourly-report@${new Date(scheduledTime).toISOString()}`;
  assert.equal((await ledger.lookup(key))?.state, "completed");
});

test("an alarm retried after its effect took place does not take it again", async () => {
  const at = Date.now() + 500;
  assert.equal(await (await app.fetch(`https://app/nightly?at=${at}`, { method: "POST" })).text(), "armed");
  // The first run throws after its effect; workerd retries the alarm (after about 2 s).
  const state = await eventually(async () => {
    const s = await call("/nightly");
    return s.runs >= 2 && s.result !== null ? s : null;
  }, { ms: 60_000, every: 250 });
  assert.equal(state.result.charge, `ch_alarm@${at}`);
  const took = await counts();
  assert.equal(took[`alarm@${at}`].took, 1, "one effect across the alarm's retry");
  assert.equal(state.result.attempt, 1, "the retry answered the first run's stored result");
});

test("a key given to two effects is refused for the second, which does not run", async () => {
  const r = await call("/mismatch?id=m-1");
  assert.equal(r.first, "charged");
  assert.equal(r.second.name, "TypeError");
  assert.match(r.second.message, /already stands for another effect than "refund"/);
  assert.equal((await counts())["m-1:refund"], undefined);
});
