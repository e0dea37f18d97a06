// A seeded, repeatable randomized test of the JS surfaces, in the spirit of
// the core's model-checked suite (tests/host/model.rs): random sequences
// of requests — single ones, retries, concurrent same-key bursts, reused
// keys — against a small reference model, in real workerd (Miniflare),
// checking after every step that the surface answered as the model says
// and that the invariants hold over what the objects really hold.
//
//   node --test tests/e2e/js-surfaces-model.test.mjs                 # the default seed (24)
//   SEED=7 node --test tests/e2e/js-surfaces-model.test.mjs          # another seed
//   SEED=100 SEEDS=20 node --test tests/e2e/js-surfaces-model.test.mjs   # seeds 100..119
//
// Each run prints its seed; a failure names the seed and the step (what
// was sent), so `SEED=<seed>` replays the same requests. The sequence is
// a function of the seed alone, except where the wall clock decides (a
// lease that ran out sooner than expected on a very slow machine; said
// in the output when it happens).
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
//   committed), as client/ledger.js and docs/typescript.md have it
//   (RESPONSE_ANSWERS: were it "stored", it would have to be stored byte
//   for byte — never committed with an answer other than the one given);
// - `stats()` agrees: completed == records == claims == distinct keys with
//   an effect row (nothing is swept or left in flight by this ledger),
//   replays and reused equal the replays and 422s answered.
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
import { readdirSync } from "node:fs";
import { startGateway, read, bundledWorkerModules, ROOT } from "./harness.mjs";
import { bodyOf, bytesOf, jsonOf, headerPairsOf } from "./workers/ledger-model-bodies.mjs";

// ---------------------------------------------------------------- seeds

const DEFAULT_SEED = 24;
function wholeEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a whole number, not ${JSON.stringify(raw)}`);
  return value;
}
const FIRST_SEED = wholeEnv("SEED", DEFAULT_SEED);
const SEED_COUNT = Math.max(1, wholeEnv("SEEDS", 1));
const SEED_LIST = Array.from({ length: SEED_COUNT }, (_, i) => FIRST_SEED + i);
/** Per test: generous for the default single seed, and growing with SEEDS. */
const TIMEOUT_MS = 110_000 * SEED_COUNT;

/** mulberry32: a small seeded PRNG, floats in [0, 1). */
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Rng {
  constructor(seed) { this.next = mulberry32(seed); }
  /** A whole number in lo..hi (both included). */
  int(lo, hi) { return lo + Math.floor(this.next() * (hi - lo + 1)); }
  chance(p) { return this.next() < p; }
  pick(items) { return items[Math.floor(this.next() * items.length)]; }
  /** One of `[weight, value]` pairs, by weight. */
  weighted(pairs) {
    let r = this.next() * pairs.reduce((s, [w]) => s + w, 0);
    for (const [w, value] of pairs) { if ((r -= w) < 0) return value; }
    return pairs[pairs.length - 1][1];
  }
}

/** Violations of one seed: the first few of each invariant, with the step that broke it. */
class Violations {
  constructor(subject, seed) {
    this.subject = subject;
    this.seed = seed;
    this.list = [];
    this.step = 0;
    this.what = "";
  }
  /** Records a violation unless `ok`; `detail` may be a function (only called on failure). */
  check(ok, invariant, detail) {
    if (!ok) this.list.push({ invariant, step: this.step, what: this.what, detail: typeof detail === "function" ? detail() : detail });
    return Boolean(ok);
  }
  summary() {
    const byInvariant = new Map();
    for (const v of this.list) {
      if (!byInvariant.has(v.invariant)) byInvariant.set(v.invariant, []);
      byInvariant.get(v.invariant).push(v);
    }
    const lines = [];
    for (const [invariant, vs] of byInvariant) {
      lines.push(`  [${this.subject}] SEED=${this.seed}: "${invariant}" broken ${vs.length} time(s); first at step ${vs[0].step}:`);
      for (const v of vs.slice(0, 2)) lines.push(`      step ${v.step}: ${v.what}\n        ${v.detail}`);
    }
    return lines.join("\n");
  }
}

const show = (value) => JSON.stringify(value, (_k, v) => (v instanceof Uint8Array || Buffer.isBuffer(v) ? `<${v.length} bytes: ${Buffer.from(v).toString("hex").slice(0, 48)}…>` : v));
const problemType = (r) => { try { return JSON.parse(r.text).type?.split("/").pop() ?? null; } catch { return null; } };
const problemDoc = (r) => { try { return JSON.parse(r.text); } catch { return null; } };
const STORED = ["content-type", "location", "etag"];

// ---------------------------------------------------------------- the Workers

const LEASE_SECONDS = 2;
const LEASE_MS = LEASE_SECONDS * 1000;

/** The Durable Object of subject 1, with the package's modules as ledgerWorker() lists them. */
const ledgerModel = {
  name: "ledger-model",
  compatibilityDate: "2026-11-01",
  modulesRoot: ROOT,
  modules: [
    { type: "ESModule", path: `${ROOT}tests/e2e/workers/ledger-model.mjs` },
    { type: "ESModule", path: `${ROOT}tests/e2e/workers/ledger-model-bodies.mjs` },
    { type: "ESModule", path: `${ROOT}worker/wasm.mjs` },
    { type: "ESModule", path: `${ROOT}build/index.js` },
    { type: "CompiledWasm", path: `${ROOT}build/index_bg.wasm` },
    { type: "ESModule", path: `${ROOT}build/ledger/index.js` },
    { type: "CompiledWasm", path: `${ROOT}build/ledger/index_bg.wasm` },
    ...readdirSync(`${ROOT}client`).filter((f) => f.endsWith(".js")).sort().map((f) => ({ type: "ESModule", path: `${ROOT}client/${f}` })),
  ],
  durableObjects: { MODEL: { className: "ModelLedger", useSQLite: true } },
};
/** The app of subject 2, bundled with Hono; its ledger the gateway's TenantLedger namespace. */
const modelApp = {
  name: "model-app",
  modules: bundledWorkerModules("model-app"),
  compatibilityDate: "2026-11-01",
  durableObjects: { LEDGER_NS: { className: "TenantLedger", scriptName: "gateway", useSQLite: true } },
};

let gw, objectWorker, appWorker;
before(async () => {
  gw = await startGateway({
    vars: { LEASE_SECONDS: String(LEASE_SECONDS), RETENTION_SECONDS: "60", ORIGIN_TIMEOUT_SECONDS: "1", LOG_LEVEL: "warn" },
    workers: [modelApp, ledgerModel],
  });
  objectWorker = await gw.mf.getWorker("ledger-model");
  appWorker = await gw.mf.getWorker("model-app");
});
after(async () => { await gw?.dispose(); });

// ================================================================ subject 1: Ledger.handle

const CAP = 64;
const S1_STEPS = 100;

/**
 * What a `Response` answer of `run` comes to: "refused" (a TypeError,
 * nothing committed), as client/ledger.js and docs/typescript.md have it
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

/** Is `r` a replay byte-equal to `first` (its stored headers and body, or a tombstone)? Returns a problem or null. */
function replayProblem(r, first) {
  if (r.headers["idempotent-replayed"] !== "true") return `not marked idempotent-replayed (status ${r.status}, ${r.text.slice(0, 120)})`;
  if (!first.retained) {
    const doc = problemDoc(r);
    if (r.status !== 500 || problemType(r) !== "idempotency-response-not-retained") return `want 500 not-retained, got ${r.status} ${r.text.slice(0, 120)}`;
    if (doc.original_status !== first.status) return `original_status ${doc.original_status}, want ${first.status}`;
    return null;
  }
  if (r.status !== first.status) return `status ${r.status}, want ${first.status}`;
  if (!r.body.equals(first.body)) return `body ${show(r.body)}, want ${show(first.body)}`;
  for (const name of STORED) if (r.headers[name] !== first.headers[name]) return `header ${name}: ${r.headers[name]}, want ${first.headers[name]}`;
  for (const name of Object.keys(r.headers)) {
    if (!STORED.includes(name) && name !== "idempotent-replayed" && name !== "x-should-retry" && name !== "content-length") return `unexpected header ${name}: ${r.headers[name]}`;
  }
  if (r.headers["x-should-retry"] !== "false") return `x-should-retry ${r.headers["x-should-retry"]}, want false`;
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

// ================================================================ subject 2: the middleware over a lossy link

const S2_STEPS = 70;
const MIDDLEWARE_CAP = 64;

/** One request's link orders: its claim's fate and each attempt's of a completion or release. */
function linkOrders(rng) {
  const settlement = () => rng.weighted([
    [60, ["ok"]], [10, ["drop", "ok"]], [8, ["lost", "ok"]], [3, ["drop", "lost", "ok"]],
    [4, ["lost", "drop", "drop"]], [3, ["drop", "drop", "lost"]], [12, ["drop", "drop", "drop"]],
  ]);
  return { claim: rng.weighted([[74, "ok"], [13, "drop"], [13, "lost"]]), complete: settlement(), release: settlement() };
}

/** What a settlement with these attempt fates comes to under the settle rule (3 attempts, retried while the link fails). */
function settled(fates) {
  const used = [];
  for (const f of fates.slice(0, 3)) { used.push(f); if (f === "ok") break; }
  return { attempts: used.length, landed: used.some((f) => f !== "drop"), answered: used.includes("ok") };
}

function routeInstruction(rng) {
  const i = {
    b: rng.chance(0.15) ? "throw" : "answer",
    s: rng.pick([200, 201, 201, 202, 204, 400, 409, 422, 500, 503]),
    z: rng.weighted([[3, [0, 30]], [4, [40, 60]], [2, [61, 200]]]).reduce((lo, hi) => rng.int(lo, hi)),
    v: rng.int(0, 1e9),
  };
  const ct = rng.pick([undefined, "text/plain", "application/octet-stream", "application/json"]);
  if (ct) i.ct = ct;
  if (rng.chance(0.4)) i.loc = true;
  if (rng.chance(0.3)) i.etag = true;
  if (rng.chance(0.2)) i.cookie = true;
  if (rng.chance(0.3)) i.stream = true;
  return i;
}

/** The route's answer for request `req` (as model-app.ts makes it). */
function routeAnswer(i, req) {
  const prefix = `run:${req};`;
  let s = prefix;
  while (s.length < prefix.length + i.z) s += "0123456789abcdef";
  const body = i.s === 204 ? Buffer.alloc(0) : Buffer.from(s.slice(0, prefix.length + i.z));
  const headers = { "x-run": req, "x-extra": "not-stored" };
  if (i.ct) headers["content-type"] = i.ct;
  if (i.loc) headers.location = `/runs/${req}`;
  if (i.etag) headers.etag = `"${req}"`;
  if (i.cookie) headers["set-cookie"] = `run=${req}`;
  return { status: i.s, headers, body };
}

/** What the middleware stores of a route answer: the allowlisted headers, the body or a tombstone. */
function storedOf(answer) {
  const headers = {};
  for (const name of STORED) if (answer.headers[name] !== undefined) headers[name] = answer.headers[name];
  return { status: answer.status, headers, body: answer.body, retained: answer.body.length <= MIDDLEWARE_CAP };
}

/** Is `r` the route's own answer `want` (everything given, byte for byte)? A problem or null. */
function routeAnswerProblem(r, want) {
  if (r.headers["idempotent-replayed"] !== undefined) return "marked idempotent-replayed";
  if (r.status !== want.status) return `status ${r.status}, want ${want.status} (${r.text.slice(0, 120)})`;
  if (!r.body.equals(want.body)) return `body ${show(r.body)}, want ${show(want.body)}`;
  for (const [name, value] of Object.entries(want.headers)) if (r.headers[name] !== value) return `header ${name}: ${r.headers[name]}, want ${value}`;
  return null;
}

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

  /**
   * The generic invariants of key `k`'s effects, from what really reached
   * the object (the link's log): consecutive effects only where allowed.
   */
  function effectInvariants(k) {
    const runs = runsOf.get(k.key) ?? [];
    for (let j = 1; j < runs.length; j++) {
      const a = runs[j - 1];
      const b = runs[j];
      const events = linkOf.get(a.req) ?? [];
      const reached = (op, outcome) => events.some((e) => e.op === op && e.fate !== "drop" && e.answer?.outcome === outcome);
      if (reached("release", "released")) continue; // a landed release frees the key: running again is the contract
      v.check(!reached("complete", "stored"), "a key whose completion landed never runs again",
        () => `${k.key}: ${a.req} completed, then ${b.req} ran`);
      const claimA = events.find((e) => e.op === "claim");
      const claimB = (linkOf.get(b.req) ?? []).find((e) => e.op === "claim");
      v.check(claimB?.answer?.takeover === true, "a second effect after an unsettled run is a takeover",
        () => `${k.key}: ${b.req}'s claim answered ${show(claimB?.answer)}`);
      v.check(claimA !== undefined && b.at >= claimA.at + LEASE_MS - 5, "a second effect after an unsettled run comes only after the first's lease",
        () => `${k.key}: ${a.req} claimed at ${claimA?.at}, ${b.req} ran at ${b.at} (${b.at - (claimA?.at ?? 0)} ms later, lease ${LEASE_MS})`);
    }
  }

  /** Checks that no 2xx reaches a caller from the route without an effect of its own request. */
  function noFreeSuccess(r, req) {
    if (r.status >= 200 && r.status < 300 && r.headers["idempotent-replayed"] === undefined) {
      const runs = [...runsOf.values()].flat();
      v.check(r.headers["x-run"] === req && runs.some((e) => e.req === req), "no 2xx from the route without an effect of its own request",
        () => `${req}: ${r.status} x-run=${r.headers["x-run"]} ${r.text.slice(0, 80)}`);
    }
  }

  /** A replay byte-equal to the stored answer? (tombstone: 500 not-retained). */
  function replayCheck(r, stored, k) {
    return v.check(replayProblem(r, stored) === null, "every replay is byte-equal to the answer that was stored", () => `${k.key}: ${replayProblem(r, stored)}`);
  }

  /** The record the model expects now, checked against the object's. */
  function recordCheck(k, record, t0, t1) {
    const want = k.state === "none" ? null : k.state;
    v.check((record?.state ?? null) === want, "the object's record is in the state the model says", () => `${k.key}: lookup ${show(record)}, model ${k.state} gen ${k.generation}`);
    if (record === null || want === null) return;
    if (k.generation !== null) v.check(record.generation === k.generation, "generations go up by one per claim", () => `${k.key}: gen ${record.generation}, model ${k.generation}`);
    k.generation = record.generation;
    if (record.state === "in_flight") {
      const end = Date.parse(record.lease_expires_at);
      if (k.claimedIn) v.check(end >= t0 + LEASE_MS - 5 && end <= t1 + LEASE_MS + 5, "a claim's lease is LEASE_SECONDS from the claim", () => `${k.key}: lease ends ${end}, claim in [${t0}, ${t1}]`);
      k.leaseEnd = end;
    }
    if (record.state === "completed" && k.stored) {
      v.check(record.response_status === k.stored.status && record.retained === k.stored.retained, "a completed record holds the stored answer's status and retention",
        () => `${k.key}: lookup ${show(record)}, stored status ${k.stored.status} retained ${k.stored.retained}`);
    }
    k.expiresAt = Date.parse(record.expires_at);
  }

  /** Checks one request's link calls and reported failures against its orders. */
  function linkCheck(req, orders, settlement, failuresNow, k) {
    const events = linkOf.get(req) ?? [];
    const claims = events.filter((e) => e.op === "claim");
    v.check(claims.length === 1 && claims[0].fate === orders.claim, "one claim per request", () => `${req}: ${show(claims)}`);
    for (const op of ["complete", "release"]) {
      const attempts = events.filter((e) => e.op === op).length;
      const want = settlement === op ? settled(orders[op]).attempts : 0;
      v.check(attempts === want, `${op} is attempted as the settle rule says (3 tries while the link fails)`, () => `${req}: ${attempts} ${op} attempts, want ${want} for ${show(orders[op])}`);
    }
    if (settlement === null) return; // no run, nothing to settle (its generation may be the runner's)
    const generation = claims[0]?.answer?.generation;
    const reported = failuresNow.filter((f) => f.key === k.key && f.generation === generation);
    const wantReported = !settled(orders[settlement]).answered;
    v.check(reported.length === (wantReported ? 1 : 0) && reported.every((f) => f.operation === settlement),
      "a settlement that never got an answer is reported to onSettlementFailed, once; no other",
      () => `${req}: reported ${show(reported)}, ${settlement} fates ${show(orders[settlement])}`);
  }

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
