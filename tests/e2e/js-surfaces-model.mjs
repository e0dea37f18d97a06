// What the two js-surfaces model suites share: js-surfaces-model-ledger.test.mjs
// (Ledger.handle in a JS Durable Object) and js-surfaces-model-middleware.test.mjs
// (withIdempotency and the Hono middleware over a lossy link). Both check a
// seeded run against a small reference model and collect its violations
// here; both compare replays byte for byte with replayProblem. The rest is
// the middleware suite's model: the link's orders for each request, the
// settle rule (3 attempts while the link fails), what the route of
// tests/e2e/workers/model-app.ts answers and what the middleware stores of
// it, and the checks over what really reached the object.
//
// What must stay true: nothing here sends a request; every check records
// a violation in `v` (never throws), so one seed reports every invariant
// it broke.

// ---------------------------------------------------------------- violations and answers

/** Violations of one seed: the first few of each invariant, with the step that broke it. */
export class Violations {
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

export const show = (value) => JSON.stringify(value, (_k, v) => (v instanceof Uint8Array || Buffer.isBuffer(v) ? `<${v.length} bytes: ${Buffer.from(v).toString("hex").slice(0, 48)}…>` : v));
export const problemType = (r) => { try { return JSON.parse(r.text).type?.split("/").pop() ?? null; } catch { return null; } };
export const problemDoc = (r) => { try { return JSON.parse(r.text); } catch { return null; } };
export const STORED = ["content-type", "location", "etag"];

/** Is `r` a replay byte-equal to `first` (its stored headers and body, or a tombstone)? Returns a problem or null. */
export function replayProblem(r, first) {
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

// ---------------------------------------------------------------- the middleware's model

export const MIDDLEWARE_CAP = 64;

/** One request's link orders: its claim's fate and each attempt's of a completion or release. */
export function linkOrders(rng) {
  const settlement = () => rng.weighted([
    [60, ["ok"]], [10, ["drop", "ok"]], [8, ["lost", "ok"]], [3, ["drop", "lost", "ok"]],
    [4, ["lost", "drop", "drop"]], [3, ["drop", "drop", "lost"]], [12, ["drop", "drop", "drop"]],
  ]);
  return { claim: rng.weighted([[74, "ok"], [13, "drop"], [13, "lost"]]), complete: settlement(), release: settlement() };
}

/** What a settlement with these attempt fates comes to under the settle rule (3 attempts, retried while the link fails). */
export function settled(fates) {
  const used = [];
  for (const f of fates.slice(0, 3)) { used.push(f); if (f === "ok") break; }
  return { attempts: used.length, landed: used.some((f) => f !== "drop"), answered: used.includes("ok") };
}

export function routeInstruction(rng) {
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
export function routeAnswer(i, req) {
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
export function storedOf(answer) {
  const headers = {};
  for (const name of STORED) if (answer.headers[name] !== undefined) headers[name] = answer.headers[name];
  return { status: answer.status, headers, body: answer.body, retained: answer.body.length <= MIDDLEWARE_CAP };
}

/** Is `r` the route's own answer `want` (everything given, byte for byte)? A problem or null. */
export function routeAnswerProblem(r, want) {
  if (r.headers["idempotent-replayed"] !== undefined) return "marked idempotent-replayed";
  if (r.status !== want.status) return `status ${r.status}, want ${want.status} (${r.text.slice(0, 120)})`;
  if (!r.body.equals(want.body)) return `body ${show(r.body)}, want ${show(want.body)}`;
  for (const [name, value] of Object.entries(want.headers)) if (r.headers[name] !== value) return `header ${name}: ${r.headers[name]}, want ${value}`;
  return null;
}

/**
 * The checks of one middleware seed over what really reached the object:
 * `v` collects violations, `runsOf` (key → effects) and `linkOf` (request
 * → link events) are the app's log so far, `leaseMs` the lease.
 */
export function middlewareChecks({ v, runsOf, linkOf, leaseMs: LEASE_MS }) {
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
  return { effectInvariants, noFreeSuccess, replayCheck, recordCheck, linkCheck };
}
