// A seeded, repeatable randomized test of the JS surfaces, in the spirit of
// the core's model-checked suite (tests/host/model.rs): random sequences
// of requests — single ones, retries, concurrent same-key bursts, reused
// keys — against a small reference model, in real workerd (Miniflare),
// checking after every step that the surface answered as the model says
// and that the invariants hold over what the objects really hold.
//
//   node --test tests/e2e/js-surfaces-model-middleware.test.mjs                 # the default seed (24)
//   SEED=7 node --test tests/e2e/js-surfaces-model-middleware.test.mjs          # another seed
//   SEED=100 SEEDS=20 node --test tests/e2e/js-surfaces-model-middleware.test.mjs   # seeds 100..119
//
// Each run prints its seed; a failure names the seed and the step (what
// was sent), so `SEED=<seed>` replays the same requests. The sequence is
// a function of the seed alone, except where the wall clock decides (a
// lease that ran out sooner than expected on a very slow machine; said
// in the output when it happens).
//
// Ledger.handle's suite, with the same seeds: js-surfaces-model-ledger.test.mjs;
// this suite's model and checks (the link's orders, the settle rule, the
// route's answers, the checks over what reached the object):
// js-surfaces-model.mjs.
//
// Subject 2, `withIdempotency` (POST /fetch/op, over a LedgerClient) and
// the Hono middleware (POST /hono/op, over TenantLedgers, tenant first) in
// tests/e2e/workers/model-app.ts, over the built Worker's real TenantLedger
// objects (LEASE_SECONDS=2, RETENTION_SECONDS=60), each ledger behind a
// lossy link: for every request the test orders, by its PRNG, the fate of
// its claim and of each attempt of its completion or release — "ok" (goes
// through), "drop" (throws before calling: never reached the object),
// "lost" (calls through, then throws: landed, answer lost). The route
// records an effect (in the app isolate) and answers a random status and
// body (within or past maxStoredBodyBytes = 64, some streamed), or throws.
// What the model allows, and checks:
// - A claim that was dropped or lost is 503 idempotency-store-unavailable
//   and the route does not run. A lost claim that landed leaves the key in
//   flight (a new generation, lease 2 s): until the lease ends a retry is
//   409 in-use; after it a retry takes over and runs.
// - The route runs only for a request whose own claim answered `claimed`;
//   every 2xx that is not a replay carries its own request's `x-run` and
//   has an effect.
// - A completion is attempted up to 3 times while the link fails (the
//   settle rule); it *landed* if any attempt reached the object. A landed
//   completion stores the first caller's answer (allowlisted headers, body
//   or a tombstone past 64 bytes) and every later answer for the key is a
//   byte-equal replay; the key never runs again. A landed release frees
//   the key: the next request runs again (a second effect, allowed). A
//   settlement that never landed leaves the key in flight, so a second
//   effect is allowed only for a takeover (the object says `takeover`) by
//   a claim made after the first run's lease ended (no earlier than the
//   first run's claim + 2 s), and only if none of the first run's
//   completion or release attempts reached the object. This is checked for
//   every pair of consecutive effects of a key, from the link's log (what
//   really reached the object) and the effects' times, whatever the model
//   predicted.
// - A settlement that never got an answer (no "ok" attempt) is reported to
//   onSettlementFailed; one that got an answer is not.
// - After every step the object's record (state, generation, lease,
//   response status, retained) is what the model says.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, read, bundledWorkerModules, seeds, Rng } from "./harness.mjs";
import {
  Violations, show, problemType, linkOrders, settled, routeInstruction, routeAnswer, storedOf, routeAnswerProblem, middlewareChecks,
} from "./js-surfaces-model.mjs";

const SEED_LIST = seeds(24);
/** Per test: generous for the default single seed, and growing with SEEDS. */
const TIMEOUT_MS = 110_000 * SEED_LIST.length;

// ---------------------------------------------------------------- the Workers

const LEASE_SECONDS = 2;
const LEASE_MS = LEASE_SECONDS * 1000;

/** The app of subject 2, bundled with Hono; its ledger the gateway's TenantLedger namespace. */
const modelApp = {
  name: "model-app",
  modules: bundledWorkerModules("model-app"),
  compatibilityDate: "2026-11-01",
  durableObjects: { LEDGER_NS: { className: "TenantLedger", scriptName: "gateway", useSQLite: true } },
};

let gw, appWorker;
before(async () => {
  gw = await startGateway({
    vars: { LEASE_SECONDS: String(LEASE_SECONDS), RETENTION_SECONDS: "60", ORIGIN_TIMEOUT_SECONDS: "1", LOG_LEVEL: "warn" },
    workers: [modelApp],
  });
  appWorker = await gw.mf.getWorker("model-app");
});
after(async () => { await gw?.dispose(); });

// ================================================================ subject 2: the middleware over a lossy link

const S2_STEPS = 70;

async function runMiddlewareSeed(seed) {
  const rng = new Rng(seed);
  const v = new Violations("withIdempotency / Hono over a lossy link", seed);
  const tenants = { fetch: `jsm-${seed}-fetch`, hono: `jsm-${seed}-hono` };
  const keys = [];
  const cursor = [0, 0, 0];
  const runsOf = new Map(); // key → effects, in order
  const linkOf = new Map(); // req → link events
  const notes = [];
  const covered = new Map();
  const cover = (what, n = 1) => covered.set(what, (covered.get(what) ?? 0) + n);
  let reqNo = 0;
  let requests = 0;
  const started = Date.now();

  // Skip what earlier seeds left in the app's log.
  {
    const log = await (await appWorker.fetch(`https://model/model/log?from=${JSON.stringify(cursor)}`)).json();
    cursor[0] += log.effects.length; cursor[1] += log.link.length; cursor[2] += log.failures.length;
  }

  const send = (k, body, orders, req) => appWorker.fetch(`https://model/${k.surface}/op`, {
    method: "POST",
    headers: {
      "content-type": "application/json", "x-tenant": k.tenant, "x-req": req, "x-link": JSON.stringify(orders),
      ...(k.key === null ? {} : { "idempotency-key": k.key }),
    },
    body,
  }).then(read);
  /** The app's log since the last call: new effects, link events, reported failures. */
  async function log() {
    const l = await (await appWorker.fetch(`https://model/model/log?from=${JSON.stringify(cursor)}`)).json();
    cursor[0] += l.effects.length; cursor[1] += l.link.length; cursor[2] += l.failures.length;
    for (const e of l.effects) { if (!runsOf.has(e.key)) runsOf.set(e.key, []); runsOf.get(e.key).push(e); }
    for (const e of l.link) { if (!linkOf.has(e.req)) linkOf.set(e.req, []); linkOf.get(e.req).push(e); }
    return l;
  }
  const lookup = async (k) => {
    const stub = await gw.ledger(k.tenant);
    return (await (await stub.fetch("https://l/rpc/v1/lookup", { method: "POST", body: JSON.stringify({ key: k.key }) })).json()).record;
  };
  const until = async (t, what) => {
    const deadline = Date.now() + 15_000;
    while (Date.now() <= t) {
      if (Date.now() > deadline) throw new Error(`waited too long for ${what}`);
      await new Promise((r) => setTimeout(r, Math.min(100, Math.max(5, t - Date.now() + 1))));
    }
  };

  /**
   * The key's phase for a claim sent now: "none" (no record), "released",
   * "completed", "live" (in flight, lease clearly ahead), "passed" (in
   * flight, lease over), or "near" (too close to call: the caller waits).
   */
  const phase = (k, now = Date.now()) => {
    if (k.state !== "in_flight") return k.state;
    if (now > k.leaseEnd + 50) return "passed";
    if (k.leaseEnd - now > 1200) return "live";
    return "near";
  };

  const { effectInvariants, noFreeSuccess, replayCheck, recordCheck, linkCheck } = middlewareChecks({ v, runsOf, linkOf, leaseMs: LEASE_MS });

  /**
   * One request (or `copies` identical ones at once) of model key `k` with
   * `orders`, `body` its instruction (k.body unless a mismatch is meant).
   */
  async function step(k, orders, copies, body = k.body) {
    let p = phase(k);
    if (p === "near") {
      await until(k.leaseEnd + 51, `the lease of ${k.key}`);
      p = "passed";
      notes.push(`step ${v.step}: waited out the lease of ${k.key}`);
    }
    const reqs = Array.from({ length: copies }, () => `r${seed}-${++reqNo}`);
    requests += copies;
    const t0 = Date.now();
    const answers = await Promise.all(reqs.map((req) => send(k, body, orders, req)));
    const t1 = Date.now();
    const l = await log();
    const record = k.key === null ? null : await lookup(k);
    const mismatch = body !== k.body;
    const before = { state: k.state, stored: k.stored };
    k.claimedIn = false;

    if (k.key === null) {
      for (const r of answers) v.check(r.status === 400 && problemType(r) === "idempotency-key-missing", "a keyless protected request is 400 key-missing and nothing runs", () => `${r.status} ${r.text.slice(0, 100)}`);
      v.check(l.effects.length === 0 && l.link.length === 0, "a keyless protected request is 400 key-missing and nothing runs", () => show(l));
      return;
    }
    const i = JSON.parse(body);
    const settlementOf = i.b === "throw" ? "release" : "complete";
    if (copies > 1) cover("bursts");
    // Each answer, by what its own claim met at the object (the link's log has the object's real answer).
    let ran = 0;
    for (const [j, r] of answers.entries()) {
      const req = reqs[j];
      const claim = (linkOf.get(req) ?? []).find((e) => e.op === "claim");
      const effects = l.effects.filter((e) => e.req === req);
      noFreeSuccess(r, req);
      if (orders.claim !== "ok") {
        cover(`claim ${orders.claim}${claim?.answer?.outcome === "claimed" ? " (it claimed)" : ""}`);
        v.check(r.status === 503 && problemType(r) === "idempotency-store-unavailable", "a claim the link failed is 503 store-unavailable", () => `${req}: ${r.status} ${r.text.slice(0, 100)}`);
        v.check(effects.length === 0, "nothing runs unless the request's own claim answered claimed", () => `${req}: ${show(effects)}`);
        continue;
      }
      const outcome = claim?.answer?.outcome;
      if (outcome === "claimed") {
        ran += 1;
        cover(`${k.surface} ${i.b === "throw" ? "threw" : "ran"}${claim.answer.takeover ? " (takeover)" : ""} → ${settlementOf} ${settled(orders[settlementOf]).landed ? "landed" : "never landed"}`);
        v.check(effects.length === 1 && effects[0].generation === claim.answer.generation, "a claimed request runs the route once, under its claim's generation", () => `${req}: effects ${show(effects)}, claim ${show(claim.answer)}`);
        if (i.b === "throw") {
          v.check(r.status === 500 && r.headers["x-route-threw"] === "1", "a route that throws answers its error", () => `${req}: ${r.status} ${r.text.slice(0, 100)}`);
        } else {
          const want = routeAnswer(i, req);
          const problem = routeAnswerProblem(r, want);
          v.check(problem === null, "the caller whose run it was gets the route's own answer, byte for byte", () => `${req}: ${problem}`);
        }
      } else {
        v.check(effects.length === 0, "nothing runs unless the request's own claim answered claimed", () => `${req}: claim ${outcome}, effects ${show(effects)}`);
        cover(outcome !== "completed" ? outcome : claim.answer.response?.body === null ? "tombstone replays" : "replays");
        if (outcome === "completed") {
          // Compared below with the stored answer, once it is known.
        } else if (outcome === "in_flight") {
          v.check(r.status === 409 && problemType(r) === "idempotency-key-in-use" && r.headers["retry-after"] !== undefined, "a claim that meets a live lease is 409 in-use with Retry-After", () => `${req}: ${r.status} ${r.text.slice(0, 100)}`);
        } else if (outcome === "mismatch") {
          v.check(r.status === 422 && problemType(r) === "idempotency-key-reused", "a different request on a used key is 422 reused", () => `${req}: ${r.status} ${r.text.slice(0, 100)}`);
        } else {
          v.check(false, "every claim gets an outcome from the object", () => `${req}: ${show(claim)}`);
        }
      }
    }
    // A burst of an answering route runs once: after its run the key is completed or in flight
    // (no lease can end within the burst). One that throws may run again only after a landed
    // release (checked pair by pair in effectInvariants).
    if (i.b !== "throw" || !settled(orders.release).landed) {
      v.check(ran <= 1 || t1 - t0 >= LEASE_MS, "one run per burst, unless a landed release freed the key", () => `${ran} of ${copies} ran in ${t1 - t0} ms`);
    }

    const ranHere = l.effects.filter((e) => reqs.includes(e.req)).map((e) => e.req); // in the order they ran
    // The claims the object answered `claimed` in this step (what reached it, lost or not), by generation.
    const claimedHere = reqs.flatMap((req) => (linkOf.get(req) ?? []).filter((e) => e.op === "claim" && e.answer?.outcome === "claimed"))
      .sort((a, b) => a.answer.generation - b.answer.generation);
    if (p === "live" && claimedHere.length > 0 && !mismatch) {
      // Taken over while the model thought the lease live (over 1.2 s ahead when sent): only on a
      // machine slow enough for the claim to arrive after the lease. Lawful only if it did, by the
      // object's own clock: the new lease (claim + LEASE_MS) or the run (after its claim) tells.
      const first = claimedHere[0];
      const claimedAt = record?.state === "in_flight" && record.generation === first.answer.generation ? Date.parse(record.lease_expires_at) - LEASE_MS : null;
      const runAt = l.effects.find((e) => e.req === first.req)?.at ?? null;
      const early = first.answer.takeover !== true || (claimedAt !== null && claimedAt < k.leaseEnd) || (runAt !== null && runAt < k.leaseEnd);
      v.check(!early, "a claim takes over an in-flight key only after its lease", () => `${k.key}: lease ends ${k.leaseEnd}, claim ${show(first.answer)} at ${claimedAt}, run at ${runAt}`);
      notes.push(`step ${v.step}: a lease the model thought live (${k.leaseEnd - t0} ms ahead when sent) had ended (a slow machine)`);
      p = "passed";
    }
    const claimable = p === "none" || p === "released" || p === "passed";
    // The model's prediction of what the requests did to the key.
    const predicted = (() => {
      if (orders.claim === "drop") return "unchanged";
      if (mismatch) return "unchanged";
      if (!claimable) return "unchanged"; // completed: replays; live: 409s (lost or not)
      if (orders.claim === "lost") return "claimed, no run";
      return "ran";
    })();
    if (predicted === "ran") {
      v.check(ranHere.length >= 1, "the model's claimable key runs", () => `${k.key} (${p}): none of ${copies} ran: ${show(answers.map((r) => [r.status, r.text.slice(0, 40)]))}`);
      v.check(ranHere.length === claimedHere.length, "every claim answered claimed (and delivered) runs the route once", () => `${k.key}: ${ranHere.length} ran, ${claimedHere.length} claimed`);
    } else if (predicted === "claimed, no run") {
      v.check(ranHere.length === 0 && claimedHere.length === 1, "a lost claim of a claimable key claims it once and runs nothing", () => `${k.key} (${p}): ran ${show(ranHere)}, claimed ${claimedHere.length}`);
    } else {
      v.check(ranHere.length === 0 && claimedHere.length === 0, "the key is claimed and run only when the model says it is claimable",
        () => `${k.key} (${p}, claim ${orders.claim}${mismatch ? ", mismatch" : ""}): ran in ${show(ranHere)}, claimed ${claimedHere.length}`);
    }
    // The new model state, from the last claim of this step (every request of a step has the same orders).
    if (claimedHere.length > 0 && (predicted !== "unchanged")) {
      k.generation = k.generation === null ? null : k.generation + claimedHere.length;
      k.claimedIn = true;
      const last = claimedHere[claimedHere.length - 1];
      const lastRan = ranHere.includes(last.req);
      if (!lastRan) k.state = "in_flight";
      else if (!settled(orders[settlementOf]).landed) k.state = "in_flight";
      else if (settlementOf === "release") k.state = "released";
      else {
        const r = answers[reqs.indexOf(last.req)];
        k.state = "completed";
        k.stored = storedOf({ status: r.status, headers: r.headers, body: r.body });
      }
    }
    recordCheck(k, record, t0, t1);
    if (record === null) k.generation = null;
    if (k.claimedIn) k.claimedStep = v.step;
    // Every replay answered equals the stored answer (the one before, or the one this step stored).
    for (const [j, r] of answers.entries()) {
      const claim = (linkOf.get(reqs[j]) ?? []).find((e) => e.op === "claim");
      if (orders.claim === "ok" && claim?.answer?.outcome === "completed") {
        const stored = before.state === "completed" ? before.stored : k.stored;
        if (v.check(stored !== undefined && stored !== null, "a replay is answered only for a key whose completion landed", () => `${reqs[j]}: replayed ${r.status} but the model stored nothing`)) replayCheck(r, stored, k);
      }
      if (r.headers["idempotent-replayed"] !== undefined) {
        v.check(claim?.answer?.outcome === "completed" && orders.claim === "ok", "only a claim answered completed is replayed", () => `${reqs[j]}: claim ${show(claim)}`);
      }
    }
    // Link calls and reported failures, request by request.
    for (const req of reqs) {
      const settlement = l.effects.some((e) => e.req === req) ? settlementOf : null;
      linkCheck(req, orders, settlement, l.failures, k);
    }
    effectInvariants(k);
    if (v.list.some((x) => x.step === v.step)) k.tainted = true;
  }

  const newKey = () => {
    const surface = rng.pick(["fetch", "hono"]);
    const i = routeInstruction(rng);
    const k = { key: `m${seed}-${keys.length}-${surface}`, surface, tenant: tenants[surface], i, body: JSON.stringify(i), state: "none", generation: null, stored: null, tainted: false };
    keys.push(k);
    return k;
  };
  const usable = (k) => !k.tainted && (k.expiresAt === undefined || k.expiresAt - Date.now() > 15_000);

  for (let n = 1; n <= S2_STEPS; n++) {
    v.step = n;
    const live = keys.filter(usable);
    const stuck = live.filter((k) => k.state === "in_flight");
    const settledKeys = live.filter((k) => k.state !== "in_flight");
    const withRecord = live.filter((k) => k.state !== "none");
    let action = rng.weighted([[26, "new"], [8, "newBurst"], [16, "retry"], [8, "burst"], [7, "whileLive"], [12, "afterLease"], [6, "mismatch"], [2, "keyless"]]);
    if ((action === "retry" || action === "burst") && settledKeys.length === 0) action = "new";
    if ((action === "whileLive" || action === "afterLease") && stuck.length === 0) action = "new";
    if (action === "mismatch" && withRecord.length === 0) action = "new";
    const orders = linkOrders(rng);
    const copies = action === "newBurst" || action === "burst" ? rng.int(2, 6) : 1;
    if (action === "new" || action === "newBurst") {
      const k = newKey();
      v.what = `${copies} × new ${k.surface} key ${k.key} ${k.body} link ${show(orders)}`;
      await step(k, orders, copies);
    } else if (action === "retry" || action === "burst") {
      const k = rng.pick(settledKeys);
      v.what = `${copies} × again ${k.key} (${k.state}) link ${show(orders)}`;
      await step(k, orders, copies);
    } else if (action === "whileLive" && stuck.some((x) => x.claimedStep === n - 1)) {
      // A key claimed in the step just before: its lease (2 s) is still well ahead — unless the
      // machine is very slow (then step() waits it out, or finds it over, and says so).
      const k = stuck.find((x) => x.claimedStep === n - 1);
      v.what = `1 × while in flight ${k.key} (${phase(k)}: its lease ends in ${k.leaseEnd - Date.now()} ms) link ${show(orders)}`;
      await step(k, orders, 1);
    } else if (action === "afterLease" || action === "whileLive") {
      const k = rng.pick(stuck);
      await until(k.leaseEnd + 51, `the lease of ${k.key}`);
      v.what = `1 × after the lease ${k.key} link ${show(orders)}`;
      await step(k, orders, 1);
    } else if (action === "mismatch") {
      const k = rng.pick(withRecord);
      const other = JSON.stringify({ ...k.i, v: k.i.v + 1 });
      v.what = `1 × other body on ${k.key} (${k.state}) link ${show(orders)}`;
      await step(k, orders, 1, other);
    } else {
      const k = { key: null, surface: rng.pick(["fetch", "hono"]), tenant: tenants.fetch, body: "{}", state: "none", generation: null };
      v.what = `1 × no key (${k.surface})`;
      await step(k, orders, 1);
    }
  }
  // Drain: every key still in flight is taken over after its lease, over a good link, and then replayed.
  const good = { claim: "ok", complete: ["ok"], release: ["ok"] };
  for (const k of keys.filter((x) => usable(x) && x.state === "in_flight")) {
    v.step += 1;
    await until(k.leaseEnd + 51, `the lease of ${k.key}`);
    v.what = `drain: after the lease ${k.key}, good link`;
    await step(k, good, 1);
    v.step += 1;
    v.what = `drain: again ${k.key} (${k.state}), good link`;
    if (!k.tainted) await step(k, good, 1);
  }
  return { v, requests, keys: keys.length, notes, ms: Date.now() - started, covered };
}

test(`withIdempotency and the Hono middleware over a lossy link to the real TenantLedger: seeded random requests keep the model's invariants (seeds ${SEED_LIST.join(", ")})`, { timeout: TIMEOUT_MS }, async () => {
  const failed = [];
  for (const seed of SEED_LIST) {
    const { v, requests, keys, notes, ms, covered } = await runMiddlewareSeed(seed);
    console.log(`# js-surfaces-model middleware SEED=${seed}: ${S2_STEPS} steps, ${requests} requests, ${keys} keys, ${ms} ms, ${v.list.length} violation(s)${notes.length ? `; ${notes.join("; ")}` : ""}`);
    console.log(`#   covered: ${[...covered].sort().map(([what, n]) => `${what} ×${n}`).join(", ")}`);
    if (v.list.length > 0) failed.push(v.summary());
  }
  assert.equal(failed.length, 0, `invariants broken (reproduce with SEED=<seed>):\n${failed.join("\n")}`);
});
