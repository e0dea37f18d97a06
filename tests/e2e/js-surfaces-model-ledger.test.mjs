// A seeded, repeatable randomized test of the JS surfaces, in the spirit of
// the core's model-checked suite (tests/host/model.rs): random sequences
// of requests — single ones, retries, concurrent same-key bursts, reused
// keys — against a small reference model, in real workerd (Miniflare),
// checking after every step that the surface answered as the model says
// and that the invariants hold over what the objects really hold.
//
//   node --test tests/e2e/js-surfaces-model-ledger.test.mjs                 # the default seed (24)
//   SEED=7 node --test tests/e2e/js-surfaces-model-ledger.test.mjs          # another seed
//   SEED=100 SEEDS=20 node --test tests/e2e/js-surfaces-model-ledger.test.mjs   # seeds 100..119
//
// Each run prints its seed; a failure names the seed and the step (what
// was sent), so `SEED=<seed>` replays the same requests. The sequence is
// a function of the seed alone, except where the wall clock decides (a
// lease that ran out sooner than expected on a very slow machine; said
// in the output when it happens).
//
// The middleware's suite, with the same seeds: js-surfaces-model-middleware.test.mjs;
// what both share (violations, replays compared byte for byte):
// js-surfaces-model.mjs.
//
// Subject 1, `Ledger.handle` in a JS Durable Object of our own
// (tests/e2e/workers/ledger-model.mjs: a SQLite class, `new Ledger(ctx,
// { maxStoredBodyBytes: 64, required: false })` once per object). Every
// request's JSON body (fingerprinted: the same for every request of one
// key) tells its `run` to insert a row into the object's own
// `effects(n, key)` table and then answer (`{status, json}`, `{status,
// body}` as a string, Uint8Array or ArrayBuffer, no body) of a size within
// or past the cap, or throw, fail in SQL, or answer what must be refused:
// a Promise, a `Response`, a status out of range, a non-object, a json
// value JSON cannot encode, a body of the wrong type, an invalid header.
// Some requests are unprotected: a POST without a key (`required: false`)
// or a PUT (not a protected method), with or without a key header. The
// invariants, over the object's own tables (GET /state: the effects,
// `lookup(key)`, `stats()`):
// - at most one effect row per key;
// - a key whose first accepted run committed has exactly one effect row,
//   its first answer is the one its instruction and that row make (status,
//   every header given, the body byte for byte), and every later answer is
//   a replay byte-equal to it (status, stored headers, body; a body over
//   the cap: 500 idempotency-response-not-retained with original_status),
//   marked `idempotent-replayed: true`, with no new row;
// - a refused or throwing run commits nothing: no row, `lookup` null, and
//   the key stays free (a later good run of it — same key, another
//   instruction — runs as a new key; the same instruction is refused again);
// - a different instruction on a committed key is 422 (differs body), no row;
// - an unprotected request runs in a transaction too: a good one commits
//   its row and answers as given, records nothing for a key header it
//   has; one that throws or is refused commits nothing;
// - a `Response` answer is refused like a Promise (a TypeError, nothing
//   committed), as client/ledger/ledger.js and docs/typescript.md have it
//   (RESPONSE_ANSWERS: were it "stored", it would have to be stored byte
//   for byte — never committed with an answer other than the one given);
// - `stats()` agrees: completed == records == claims == distinct keys with
//   an effect row (nothing is swept or left in flight by this ledger),
//   replays and reused equal the replays and 422s answered.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { startGateway, read, seeds, Rng, ROOT } from "./harness.mjs";
import { Violations, show, problemType, problemDoc, STORED, replayProblem } from "./js-surfaces-model.mjs";
import { bodyOf, bytesOf, jsonOf, headerPairsOf } from "./workers/ledger-model-bodies.mjs";

const SEED_LIST = seeds(24);
/** Per test: generous for the default single seed, and growing with SEEDS. */
const TIMEOUT_MS = 110_000 * SEED_LIST.length;

// ---------------------------------------------------------------- the Worker

/** The Durable Object of subject 1, with the package's modules as ledgerWorker() lists them. */
const ledgerModel = {
  name: "ledger-model",
  compatibilityDate: "2026-11-01",
  modulesRoot: ROOT,
  modules: [
    { type: "ESModule", path: `${ROOT}tests/e2e/workers/ledger-model.mjs` },
    { type: "ESModule", path: `${ROOT}tests/e2e/workers/ledger-model-bodies.mjs` },
    { type: "ESModule", path: `${ROOT}build/index.js` },
    { type: "CompiledWasm", path: `${ROOT}build/index_bg.wasm` },
    { type: "ESModule", path: `${ROOT}build/ledger/index.js` },
    { type: "CompiledWasm", path: `${ROOT}build/ledger/index_bg.wasm` },
    ...readdirSync(`${ROOT}client`, { recursive: true }).filter((f) => f.endsWith(".js")).sort().map((f) => ({ type: "ESModule", path: `${ROOT}client/${f}` })),
  ],
  durableObjects: { MODEL: { className: "ModelLedger", useSQLite: true } },
};

let gw, objectWorker;
before(async () => {
  gw = await startGateway({
    vars: { LEASE_SECONDS: "2", RETENTION_SECONDS: "60", ORIGIN_TIMEOUT_SECONDS: "1", LOG_LEVEL: "warn" },
    workers: [ledgerModel],
  });
  objectWorker = await gw.mf.getWorker("ledger-model");
});
after(async () => { await gw?.dispose(); });

// ================================================================ subject 1: Ledger.handle

const CAP = 64;
const S1_STEPS = 100;

/**
 * What a `Response` answer of `run` comes to: "refused" (a TypeError,
 * nothing committed), as client/ledger/ledger.js and docs/typescript.md have it
 * since fbe480c; "stored" would hold it to being stored and replayed byte
 * for byte. Either way: nothing committed unless the answer was accepted,
 * and an accepted answer is the one given.
 */
const RESPONSE_ANSWERS = "refused";

/** The error name each refused behaviour must be rethrown with. */
const REFUSED = {
  throw: "Error", sqlerror: "Error", promise: "TypeError", badstatus: "TypeError", nonobject: "TypeError",
  badjson: "TypeError", badbody: "TypeError", badheader: "TypeError",
};
if (RESPONSE_ANSWERS === "refused") REFUSED.response = "TypeError";
const GOOD = ["json", "text", "bytes", "buffer", "empty"];

/** A body size: small, around the cap, or past it. */
const sizeOf = (rng) => rng.weighted([[3, [0, 40]], [4, [CAP - 8, CAP + 8]], [2, [CAP + 9, 300]]]).reduce((lo, hi) => rng.int(lo, hi));

/** A random instruction of `kind` ("good", "response" or a REFUSED behaviour). */
function instruction(rng, kind, req) {
  const i = { b: kind === "good" ? rng.pick(GOOD) : kind, v: rng.int(0, 1e9) };
  if (req !== undefined) i.req = req;
  if (kind === "good" || kind === "response") {
    const s = rng.weighted([[2, undefined], [2, 200], [4, 201], [1, 202], [1, 204], [1, 400], [1, 409], [1, 422], [1, 500], [1, 503]]);
    if (s !== undefined) i.s = s;
    i.z = sizeOf(rng);
    if (s === 204) { i.z = 0; if (i.b === "json" || i.b === "buffer") i.b = "empty"; }
    const ct = rng.pick([undefined, undefined, "text/plain; charset=utf-8", "application/octet-stream", "application/vnd.model+json"]);
    if (ct) i.ct = ct;
    if (rng.chance(0.4)) i.loc = true;
    if (rng.chance(0.3)) i.etag = true;
    if (rng.chance(0.4)) i.extra = true;
    i.hf = rng.int(0, 2);
  } else if (kind === "badstatus") {
    i.s = rng.pick([99, 100, 199, 600, 1000, 200.5]);
    i.z = rng.int(0, 20);
  } else if (kind === "badjson" || kind === "badbody") {
    i.z = rng.int(0, 2); // which wrong value
  }
  return i;
}

/** The first answer an accepted instruction must give with effect row `n`. */
function expectedAnswer(i, n) {
  const status = i.s ?? 200;
  const headers = headerPairsOf(i, n);
  let body;
  switch (i.b) {
    case "json":
      body = Buffer.from(JSON.stringify(jsonOf(n, i.z)));
      if (!i.ct) headers.unshift(["content-type", "application/json"]);
      break;
    case "text": body = Buffer.from(bodyOf(n, i.z)); break;
    case "bytes": case "buffer": case "response": body = Buffer.from(bytesOf(n, i.z)); break;
    case "empty": body = Buffer.alloc(0); break;
    default: throw new Error(`no answer for ${i.b}`);
  }
  if (i.b === "response" && status === 204) body = Buffer.alloc(0);
  return { status, headers, body: status === 204 ? Buffer.alloc(0) : body, retained: body.length <= CAP };
}

/** Does `r` (a first answer) carry exactly the expected answer? Returns a problem or null. */
function firstAnswerProblem(r, want) {
  if (r.headers["idempotent-replayed"] !== undefined) return "marked idempotent-replayed";
  if (r.headers["x-model-threw"] !== undefined) return `handle threw ${r.headers["x-model-threw"]}: ${r.text}`;
  if (r.status !== want.status) return `status ${r.status}, want ${want.status}`;
  if (!r.body.equals(want.body)) return `body ${show(r.body)}, want ${show(want.body)}`;
  const names = new Set(want.headers.map(([name]) => name));
  for (const [name, value] of want.headers) if (r.headers[name] !== value) return `header ${name}: ${r.headers[name]}, want ${value}`;
  for (const name of Object.keys(r.headers)) if (!names.has(name) && name !== "content-length") return `unexpected header ${name}: ${r.headers[name]}`;
  return null;
}


async function runLedgerSeed(seed) {
  const rng = new Rng(seed);
  const v = new Violations("Ledger.handle", seed);
  const object = `model-seed-${seed}`;
  /** @type {Map<string, {key: string, i: object, body: string, done: boolean, first?: object, n?: number, tainted: boolean}>} */
  const keys = new Map();
  const seen = { replays: 0, reused: 0, requests: 0 };
  /** Keyless requests: req → "good" (must have committed its row) or a refused behaviour (must not). */
  const keyless = new Map();
  const started = Date.now();

  const send = (keyHeader, body) => objectWorker.fetch("https://model/op", {
    method: "POST",
    headers: { "x-object": object, "content-type": "application/json", ...(keyHeader === null ? {} : { "idempotency-key": keyHeader }) },
    body,
  }).then(read);
  const state = async () => (await objectWorker.fetch(`https://model/state?keys=${encodeURIComponent(JSON.stringify([...keys.keys()]))}`, {
    headers: { "x-object": object },
  })).json();
  /** The key as sent: bare, or now and then as an sf-string (the same key, parsed). */
  const header = (key) => (rng.chance(0.25) ? `"${key}"` : key);
  const newKind = () => rng.weighted([
    [50, "good"], [10, "response"], [10, "throw"], [5, "sqlerror"], [6, "promise"], [6, "badstatus"], [4, "nonobject"],
    [4, "badjson"], [3, "badbody"], [3, "badheader"],
  ]);
  /** What each kind of step exercised, for the run's line. */
  const covered = new Map();
  const cover = (what, n = 1) => covered.set(what, (covered.get(what) ?? 0) + n);
  const refusedName = (i) => REFUSED[i.b];

  /** Sends `copies` identical requests of model key `k` with instruction `i` at once, and checks the answers. */
  async function keyed(k, i, copies) {
    const body = JSON.stringify(i);
    seen.requests += copies;
    const answers = await Promise.all(Array.from({ length: copies }, () => send(header(k.key), body)));
    const s = await state();
    const rows = s.effects.filter((e) => e.key === k.key);
    const same = body === k.body;
    if (copies > 1) cover("bursts");
    if (k.done && same) {
      cover(k.first.retained ? "replays" : "tombstone replays", copies);
      for (const r of answers) v.check(replayProblem(r, k.first) === null, "a committed key's later answers are replays byte-equal to its first", () => replayProblem(r, k.first));
      v.check(rows.length === 1, "a committed key has exactly one effect row", () => `rows ${show(rows)}`);
      seen.replays += copies;
    } else if (k.done) {
      cover("422 reused", copies);
      for (const r of answers) {
        v.check(r.status === 422 && problemType(r) === "idempotency-key-reused" && show(problemDoc(r)?.differs) === '["body"]',
          "another instruction on a committed key is 422 differs [body]", () => `${r.status} ${r.text.slice(0, 160)}`);
      }
      v.check(rows.length === 1, "a committed key has exactly one effect row", () => `rows ${show(rows)}`);
      seen.reused += copies;
    } else if (refusedName(i) !== undefined) {
      cover(`refused ${i.b}`, copies);
      for (const r of answers) {
        v.check(r.status === 500 && r.headers["x-model-threw"] === refusedName(i), `a ${i.b} run is rethrown as ${refusedName(i)}`,
          () => `${r.status} threw=${r.headers["x-model-threw"]} ${r.text.slice(0, 160)}`);
      }
      v.check(rows.length === 0, "a refused or throwing run commits no effect row", () => `${i.b}: rows ${show(rows)}`);
      v.check(s.lookups[k.key] === null, "a refused or throwing run leaves no record (the key stays free)", () => `${i.b}: lookup ${show(s.lookups[k.key])}`);
      k.i = i; k.body = body;
    } else {
      const ran = answers.filter((r) => r.headers["idempotent-replayed"] === undefined);
      cover(`ran ${i.b}${k.i !== i ? " on a freed key" : ""}`);
      v.check(ran.length === 1, "exactly one of a burst on a free key runs; the others replay it", () => `${ran.length} of ${copies} ran: ${show(answers.map((r) => [r.status, r.headers["x-model-threw"] ?? null, r.text.slice(0, 60)]))}`);
      v.check(rows.length === 1, "an accepted run commits exactly one effect row", () => `rows ${show(rows)}; answers ${show(answers.map((r) => [r.status, r.headers["x-model-threw"] ?? null, r.text.slice(0, 80)]))}`);
      if (rows.length === 1 && ran.length >= 1) {
        const want = expectedAnswer(i, rows[0].n);
        const problem = firstAnswerProblem(ran[0], want);
        v.check(problem === null, "the first answer is the one given (status, headers, body byte for byte)", () => `${i.b}: ${problem}`);
        const first = { status: want.status, body: want.body, retained: want.retained, headers: Object.fromEntries(want.headers.filter(([n]) => STORED.includes(n))) };
        for (const r of answers.filter((a) => a !== ran[0])) {
          v.check(replayProblem(r, first) === null, "a committed key's later answers are replays byte-equal to its first", () => replayProblem(r, first));
        }
        seen.replays += answers.length - ran.length;
        k.done = true; k.first = first; k.n = rows[0].n; k.i = i; k.body = body;
        const record = s.lookups[k.key];
        v.check(record?.state === "completed" && record.response_status === want.status && record.retained === want.retained,
          "a committed key's record is completed with its answer's status and retention", () => `lookup ${show(record)}, want status ${want.status} retained ${want.retained}`);
      } else {
        k.tainted = true;
      }
    }
    if (v.list.length > 0 && v.list[v.list.length - 1].step === v.step) k.tainted = true;
    return s;
  }

  /**
   * A request `run` gets unprotected (key null): a POST without a key
   * (`required: false`), or a method the ledger does not protect (PUT),
   * with or without a key header (never read: no record).
   */
  async function keylessStep(kind, method, withKey) {
    const req = `nk-${seed}-${keyless.size}`;
    const i = instruction(rng, kind, req);
    keyless.set(req, kind === "good" ? "good" : i.b);
    seen.requests += 1;
    const key = `unread-${seed}-${keyless.size}`;
    const r = await objectWorker.fetch("https://model/op", {
      method,
      headers: { "x-object": object, "content-type": "application/json", ...(withKey ? { "idempotency-key": key } : {}) },
      body: JSON.stringify(i),
    }).then(read);
    const s = await objectWorker.fetch(`https://model/state?keys=${encodeURIComponent(JSON.stringify([...keys.keys(), key]))}`, { headers: { "x-object": object } }).then((x) => x.json());
    const rows = s.effects.filter((e) => e.key === `~nokey:${req}`);
    if (withKey) v.check(s.lookups[key] === null, "an unprotected method records nothing for its key header", () => `${method} ${key}: lookup ${show(s.lookups[key])}`);
    if (kind === "good") {
      cover(`unprotected ${method} ran`);
      v.check(rows.length === 1, "an unprotected good run commits exactly its one row", () => `${method}: rows ${show(rows)}`);
      if (rows.length === 1) {
        const problem = firstAnswerProblem(r, expectedAnswer(i, rows[0].n));
        v.check(problem === null, "an unprotected run's answer is the one given", () => `${method}: ${problem}`);
      }
    } else {
      cover(`unprotected ${method} ${i.b}`);
      // Refused as on the keyed path (a status out of range too: a TypeError, not new Response's RangeError after the commit).
      const names = [REFUSED[i.b]];
      v.check(r.status === 500 && names.includes(r.headers["x-model-threw"]), `an unprotected ${i.b} run is rethrown as ${names[0]}`,
        () => `${method} ${show(i)}: ${r.status} threw=${r.headers["x-model-threw"] ?? null} ${r.text.slice(0, 120)}`);
      v.check(rows.length === 0, "an unprotected run that throws (or is refused) commits nothing", () => `${method} ${show(i)}: its row was committed: ${show(rows)}`);
    }
    return s;
  }

  /** The invariants over the object's whole state, whatever the model predicted. */
  function invariants(s) {
    const perKey = new Map();
    for (const e of s.effects) if (!e.key.startsWith("~nokey:")) perKey.set(e.key, (perKey.get(e.key) ?? 0) + 1);
    for (const [key, count] of perKey) v.check(count === 1, "at most one effect row per key", () => `${key}: ${count} rows`);
    for (const k of keys.values()) {
      const record = s.lookups[k.key];
      v.check((record !== null) === perKey.has(k.key), "a key has a record exactly when it has an effect row", () => `${k.key}: rows ${perKey.get(k.key) ?? 0}, lookup ${show(record)}`);
      if (!k.tainted) v.check(k.done === (record !== null), "the object holds a record exactly for the keys the model committed", () => `${k.key}: model done=${k.done}, lookup ${show(record)}`);
    }
    const st = s.stats;
    const withEffect = perKey.size;
    v.check(st.completed === withEffect && st.records === withEffect && st.claims === withEffect,
      "stats: completed == records == claims == distinct keys with an effect row", () => `completed ${st.completed}, records ${st.records}, claims ${st.claims}, keys with an effect ${withEffect}`);
    v.check(st.in_flight === 0 && st.released === 0 && st.takeovers === 0 && st.swept === 0 && st.in_use === 0,
      "stats: nothing in flight, released, taken over or swept", () => show(st));
    v.check(st.replays === seen.replays, "stats: replays == the replays answered", () => `replays ${st.replays}, answered ${seen.replays}`);
    v.check(st.reused === seen.reused, "stats: reused == the 422s answered", () => `reused ${st.reused}, answered ${seen.reused}`);
    const leaked = s.effects.filter((e) => e.key.startsWith("~nokey:") && keyless.get(e.key.slice(7)) !== "good");
    v.check(leaked.length === 0 || v.list.some((x) => x.invariant.startsWith("an unprotected run that throws")), "an unprotected run that throws (or is refused) commits nothing", () => show(leaked));
  }

  for (let step = 1; step <= S1_STEPS; step++) {
    v.step = step;
    const live = [...keys.values()].filter((k) => !k.tainted);
    const action = live.length === 0 ? "new" : rng.weighted([[24, "new"], [8, "newBurst"], [18, "retry"], [8, "retryBurst"], [8, "reuse"], [10, "keyless"]]);
    let s;
    if (action === "new" || action === "newBurst") {
      const key = `k${seed}-${keys.size}`;
      const i = instruction(rng, newKind());
      const k = { key, i, body: JSON.stringify(i), done: false, tainted: false };
      keys.set(key, k);
      const copies = action === "new" ? 1 : rng.int(2, 8);
      v.what = `${copies} × new key ${key} ${show(i)}`;
      s = await keyed(k, i, copies);
    } else if (action === "retry" || action === "retryBurst") {
      // Mostly a committed key (replays); now and then a free one (its run refused again).
      const committed = live.filter((x) => x.done);
      const k = rng.pick(committed.length > 0 && rng.chance(0.7) ? committed : live);
      const copies = action === "retry" ? 1 : rng.int(2, 8);
      v.what = `${copies} × again ${k.key} (${k.done ? "committed" : "free"}) ${k.body}`;
      s = await keyed(k, k.i, copies);
    } else if (action === "reuse") {
      // Another instruction on a key: 422 if committed; a free key (its runs refused) runs it as new.
      const k = rng.pick(live);
      const i = instruction(rng, "good");
      v.what = `1 × other instruction on ${k.key} (${k.done ? "committed" : "free"}) ${show(i)}`;
      s = await keyed(k, i, 1);
    } else {
      const kind = rng.weighted([[5, "good"], [4, "throw"], [1, "promise"], [1, "response"], [2, "badstatus"], [1, "badjson"]]);
      const method = rng.chance(0.6) ? "POST" : "PUT";
      const withKey = method === "PUT" && rng.chance(0.5);
      v.what = `${method} ${withKey ? "with an (unread) key" : "without a key"}, ${kind}`;
      s = await keylessStep(kind, method, withKey);
    }
    invariants(s);
  }
  return { v, requests: seen.requests, keys: keys.size, ms: Date.now() - started, covered };
}

test(`Ledger.handle in a JS Durable Object: seeded random requests keep the model's invariants (seeds ${SEED_LIST.join(", ")})`, { timeout: TIMEOUT_MS }, async () => {
  const failed = [];
  for (const seed of SEED_LIST) {
    const { v, requests, keys, ms, covered } = await runLedgerSeed(seed);
    console.log(`# js-surfaces-model Ledger.handle SEED=${seed}: ${S1_STEPS} steps, ${requests} requests, ${keys} keys, ${ms} ms, ${v.list.length} violation(s)`);
    console.log(`#   covered: ${[...covered].sort().map(([what, n]) => `${what} ×${n}`).join(", ")}`);
    if (v.list.length > 0) failed.push(v.summary());
  }
  assert.equal(failed.length, 0, `invariants broken (reproduce with SEED=<seed>):\n${failed.join("\n")}`);
});
