// What idempotency costs in billed Durable Object units: SQLite rows
// written and read (the platform's own `rowsWritten` / `rowsRead` of every
// cursor), statements, object calls, `setAlarm` calls (each billed as a
// row written) and alarm invocations, per operation, for the product and
// for a floor without idempotency, in one run.
//
//   npm run bench:cost [-- --n 40 --check]
//
// Runs the built Worker in workerd (Miniflare) with its TenantLedger class
// wrapped by bench/cost/product.mjs, which meters the object's storage (no
// estimate: the figures are the cursors'), and the floor (bench/floor) the
// same way (bench/cost/metered.mjs). Each scenario sends `n` sequential
// operations to a fresh object and divides. Rows are deterministic, so
// `--check` asserts the bounds in bench/cost/bounds.mjs (npm test runs it),
// and the byte quota's bound on db_bytes under large answers (QUOTA);
// docs/development.md carries the latest table.
import { queueConsumer } from "../client/consumers/queues.js";
import { benchOptions } from "./lib.mjs";
import { BOUNDS } from "./cost/bounds.mjs";
import { encode, expectStatus, fp, order, recorder, settle, start } from "./cost/metered.mjs";
import { ACME, eventually, orderInit, startOrigin } from "../scripts/workerd.mjs";

const opts = benchOptions({
  n: { default: 40, help: "sequential operations per scenario (BOUNDS hold at 40)", whole: true },
  check: { default: false, help: "fail unless every operation is within BOUNDS (npm test runs this)" },
  statements: { default: false, help: "break each operation's rows down by statement" },
}, { usage: "npm run bench:cost -- [options]" });
const N = opts.n;
const { results, record } = recorder(opts.statements);

// ---- the floor -------------------------------------------------------------
{
  const floor = await start({ floor: true });
  await expectStatus(await floor.request("/v1/orders", order()), 201); // tables exist
  await floor.meter();
  for (let i = 0; i < N; i++) await expectStatus(await floor.request("/v1/orders", order()), 201);
  await settle();
  record("floor: fresh POST (order insert only)", await floor.meter(), N);
  await floor.mf.dispose();
}

// ---- the product: calls at the object ----------------------------------------
{
  const p = await start();
  await expectStatus(await p.request("/v1/orders", order("warm")), 201); // schema, alarm
  await p.meter();

  for (let i = 0; i < N; i++) await expectStatus(await p.request("/v1/orders", order(`fresh-${i}`)), 201);
  await settle();
  record("embedded fresh key", await p.meter(), N);

  for (let i = 0; i < N; i++) await expectStatus(await p.request("/v1/orders", order("fresh-0")), 201);
  await settle();
  record("replay (object path)", await p.meter(), N);

  for (let i = 0; i < N; i++) await expectStatus(await p.request("/v1/orders", orderInit({ key: "fresh-0", body: '{"sku":"OTHER","quantity":1}' })), 422);
  await settle();
  record("mismatch 422", await p.meter(), N);

  const body = "amount=100";
  const f = await fp(body);
  const stored = { status: 201, headers: [["content-type", "text/plain"]], body: encode("ok") };
  for (let i = 0; i < N; i++) {
    const c = await p.ledger.claim({ key: `proxy-${i}`, fingerprint: f });
    await p.ledger.complete({ key: `proxy-${i}`, generation: c.generation, response: stored });
  }
  await settle();
  record("proxy fresh key (claim + complete)", await p.meter(), N);

  await p.ledger.claim({ key: "busy", fingerprint: f });
  await p.meter();
  for (let i = 0; i < N; i++) {
    const c = await p.ledger.claim({ key: "busy", fingerprint: f });
    if (c.outcome !== "in_flight") throw new Error(`expected in_flight, got ${c.outcome}`);
  }
  await settle();
  record("in-use 409", await p.meter(), N);

  for (let i = 0; i < N; i++) {
    const c = await p.ledger.claim({ key: `release-${i}`, fingerprint: f });
    await p.ledger.release({ key: `release-${i}`, generation: c.generation });
  }
  await settle();
  record("release (claim + release)", await p.meter(), N);

  for (let i = 0; i < N; i++) await p.ledger.claim({ key: `takeover-${i}`, fingerprint: f, lease_seconds: 1 });
  await new Promise((r) => setTimeout(r, 1_200));
  await p.meter();
  for (let i = 0; i < N; i++) {
    const c = await p.ledger.claim({ key: `takeover-${i}`, fingerprint: f, lease_seconds: 1 });
    if (!c.takeover) throw new Error(`expected a takeover, got ${JSON.stringify(c)}`);
  }
  await settle();
  record("takeover (the taking claim)", await p.meter(), N);

  // Queue messages through idempotency-ledger/queues' external shape, as a
  // consumer runs it (its claim, its completion or release), batches of 10.
  const consume = (handler) => queueConsumer({ ledger: () => p.ledger, key: (m) => `queue-${m.body.n}`, concurrency: 1, handler });
  const deliver = async (consumer, prefix, want) => {
    for (let from = 0; from < N; from += 10) {
      const messages = Array.from({ length: Math.min(10, N - from) }, (_, j) => {
        const m = { id: `${prefix}-${from + j}`, timestamp: new Date(), body: { n: from + j }, attempts: 1, acked: false, retried: false };
        return Object.assign(m, { ack: () => { m.acked = true; }, retry: () => { m.retried = true; } });
      });
      await consumer({ queue: "bench", messages }, {});
      const wrong = messages.find((m) => (want === "ack" ? !m.acked : !m.retried));
      if (wrong) throw new Error(`queue message ${wrong.id}: expected ${want}`);
    }
  };
  await p.meter();
  await deliver(consume((m) => ({ charged: m.body.n })), "fresh", "ack");
  await settle();
  record("queue message, fresh key (claim + complete)", await p.meter(), N);
  await deliver(consume(() => { throw new Error("must not run"); }), "again", "ack");
  await settle();
  record("queue message redelivered (replay, not run)", await p.meter(), N);
  const throwing = queueConsumer({ ledger: () => p.ledger, key: (m) => `queue-threw-${m.body.n}`, concurrency: 1, handler: () => { throw new Error("declined"); } });
  const error = console.error;
  console.error = () => {}; // each throw is logged (idempotency.queue_handler_threw): not the bench's output
  try { await deliver(throwing, "threw", "retry"); } finally { console.error = error; }
  await settle();
  record("queue message, handler threw (claim + release)", await p.meter(), N);

  for (let i = 0; i < N; i++) await p.ledger.lookup("fresh-0");
  await settle();
  record("lookup", await p.meter(), N);

  for (let i = 0; i < N; i++) {
    const e = await p.ledger.evict(`proxy-${i}`);
    if (e.outcome !== "evicted") throw new Error(`expected an eviction, got ${JSON.stringify(e)}`);
  }
  await settle();
  record("evict (a completed key)", await p.meter(), N);

  for (let i = 0; i < N; i++) {
    const e = await p.ledger.evict("busy");
    if (e.outcome !== "in_flight") throw new Error(`expected in_flight, got ${JSON.stringify(e)}`);
  }
  await settle();
  record("evict refused (in flight, 409)", await p.meter(), N);

  for (let i = 0; i < N; i++) {
    const e = await p.ledger.evict(`never-${i}`);
    if (e.outcome !== "not_found") throw new Error(`expected not_found, got ${JSON.stringify(e)}`);
  }
  await settle();
  record("evict, unknown key (404)", await p.meter(), N);

  // The keys taken over above are in flight, their 1 s leases long ended:
  // each eviction also removes the record's entry in the in-flight index.
  for (let i = 0; i < N; i++) {
    const e = await p.ledger.evict(`takeover-${i}`);
    if (e.outcome !== "evicted" || e.record?.state !== "in_flight") throw new Error(`expected an in-flight eviction, got ${JSON.stringify(e)}`);
  }
  await settle();
  record("evict (in flight, its lease ended)", await p.meter(), N);

  for (let i = 0; i < N; i++) await p.ledger.stats();
  await settle();
  record("stats", await p.meter(), N);
  await p.mf.dispose();
}

// ---- the sweep at a steady arrival rate ----------------------------------------
{
  const vars = { RETENTION_SECONDS: "2", LEASE_SECONDS: "1", ORIGIN_TIMEOUT_SECONDS: "1", SWEEP_INTERVAL_SECONDS: "1" };
  const p = await start({ vars });
  await p.meter();
  for (let i = 0; i < N; i++) {
    await expectStatus(await p.request("/v1/orders", order(`sweep-${i}`)), 201);
    await new Promise((r) => setTimeout(r, 20));
  }
  await p.meter(); // the fresh keys' own writes and alarm arming are their cost, not the sweep's
  await eventually(async () => (await p.ledger.stats()).records === 0, { ms: 120_000, every: 250 });
  const reading = await p.meter();
  delete reading.calls["/rpc/v1/stats"];
  record("sweep, per record (steady arrival)", reading, N);
  await p.mf.dispose();
}

// ---- reads with a backlog the sweep has not reached -------------------------------
{
  // The alarm sits on the hour grid, so the expired records wait for it.
  const p = await start({ vars: { SWEEP_INTERVAL_SECONDS: "3600" } });
  const f = await fp("backlog");
  for (let start = 0; start < 1000; start += 50) {
    await Promise.all(Array.from({ length: 50 }, (_, j) =>
      p.ledger.claim({ key: `backlog-${start + j}`, fingerprint: f, lease_seconds: 1, retention_seconds: 1 })));
  }
  await new Promise((r) => setTimeout(r, 1_500)); // every one of them expired
  await p.ledger.stats(); // the instance's state row read once
  await p.meter();
  for (let i = 0; i < N; i++) await p.ledger.stats();
  await settle();
  record("stats, 1,000 records expired and unswept", await p.meter(), N);
  for (let i = 0; i < N; i++) await p.ledger.lookup(`backlog-${i}`);
  await settle();
  record("lookup, 1,000 records expired and unswept", await p.meter(), N);
  await p.mf.dispose();
}

// ---- listing with 10,000 records held ---------------------------------------------
{
  const p = await start();
  const f = await fp("listed");
  const stored = { status: 201, headers: [["content-type", "text/plain"]], body: encode("ok") };
  // 9,000 completed, 500 released and 500 in flight (every 20th), in claim order.
  for (let from = 0; from < 10_000; from += 100) {
    await Promise.all(Array.from({ length: 100 }, async (_, j) => {
      const i = from + j;
      const key = `listed-${String(i).padStart(5, "0")}`;
      const c = await p.ledger.claim({ key, fingerprint: f });
      if (c.outcome !== "claimed") throw new Error(`${key}: ${JSON.stringify(c)}`);
      if (i % 20 === 0) return;
      if (i % 20 === 10) await p.ledger.release({ key, generation: c.generation });
      else await p.ledger.complete({ key, generation: c.generation, response: stored });
    }));
  }
  await settle();
  await p.meter();
  // n pages, each after the last: a walk n pages deep (`again`: a walk
  // that ends sooner starts again from its beginning).
  const walk = async (name, call, again = false) => {
    let after = null;
    for (let i = 0; i < N; i++) {
      const page = await p.ledger.list({ ...call, ...(after ? { after } : {}) });
      after = page.next;
      if (after === null && !again) throw new Error(`${name}: the walk ended after ${i + 1} pages`);
    }
    await settle();
    record(name, await p.meter(), N);
  };
  await walk("list, 10,000 records: every state, limit 20 (newest first)", { limit: 20 });
  await walk("list, 10,000 records: completed (9 in 10), limit 100", { state: "completed", limit: 100 });
  // The 500 in flight are 25 pages of 20: that walk starts again.
  await walk("list, 10,000 records: in_flight (1 in 20), limit 20 (oldest first)", { state: "in_flight", limit: 20 }, true);
  await walk("list, 10,000 records: in_flight (1 in 20), limit 1", { state: "in_flight", limit: 1 });
  await p.mf.dispose();
}

// ---- in flight among 100,000 completed records ------------------------------------
// The completed records are copies of one real completion, seeded in one
// statement by the bench's own route (bench/cost/product.mjs), all claimed
// before the 50 keys held in flight: an oldest-first walk of every record
// would meet them first.
const BUSY = { completed: 100_000, held: 50 };
{
  const p = await start();
  const f = await fp("busy");
  const stored = { status: 201, headers: [["content-type", "text/plain"]], body: encode("ok") };
  const t = await p.ledger.claim({ key: "template", fingerprint: f });
  await p.ledger.complete({ key: "template", generation: t.generation, response: stored });
  const seeded = await (await p.ledger.stub.fetch("https://tenant-ledger/__seed", {
    method: "POST", body: JSON.stringify({ template: "template", count: BUSY.completed }),
  })).json();
  if (seeded.seeded !== BUSY.completed) throw new Error(`seeded ${JSON.stringify(seeded)}`);
  const held = [];
  for (let i = 0; i < BUSY.held; i++) {
    const key = `held-${String(i).padStart(2, "0")}`;
    const c = await p.ledger.claim({ key, fingerprint: f });
    if (c.outcome !== "claimed") throw new Error(`${key}: ${JSON.stringify(c)}`);
    held.push(key);
  }
  await settle();
  await p.meter();
  const same = (got, want, what) => {
    if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${what}: listed ${JSON.stringify(got)}, not ${JSON.stringify(want)}`);
  };
  for (let i = 0; i < N; i++) {
    const page = await p.ledger.list({ state: "in_flight", limit: 100 });
    same(page.keys.map((k) => k.key), held, "one page of 100");
    if (page.next !== null) throw new Error(`one page of 100: the walk goes on (${JSON.stringify(page.next)})`);
  }
  await settle();
  record("list, 100,000 completed records: in_flight (50 held), limit 100 (one page holds them all)", await p.meter(), N);
  let pages = 0;
  for (let i = 0; i < N; i++) {
    const keys = [];
    let after = null;
    do {
      const page = await p.ledger.list({ state: "in_flight", limit: 20, ...(after ? { after } : {}) });
      pages++;
      keys.push(...page.keys.map((k) => k.key));
      after = page.next;
    } while (after !== null);
    same(keys, held, "pages of 20");
  }
  await settle();
  record("list, 100,000 completed records: in_flight (50 held), limit 20 (per page, 3 pages)", await p.meter(), pages);
  await p.mf.dispose();
}

// ---- the byte quota under large answers (docs/contract.md §4) -----------------
// 8 keys in flight at once in proxy mode, each answered with 1,000,000 bytes,
// under MAX_DB_BYTES_PER_OBJECT=65536: every caller gets its whole answer,
// no body is stored (each completion is a counted tombstone), replays say so,
// and db_bytes stays within the stated bound (before: 8,069,120 bytes, 123×
// the quota).
const QUOTA = { keys: 8, body: 1_000_000, maxDbBytes: 65_536, overshootPerRecord: 128 * 1024 };
const quotaChecks = [];
{
  const answer = Buffer.alloc(QUOTA.body, "q");
  let open;
  const gate = new Promise((r) => { open = r; });
  const origin = await startOrigin(async () => { await gate; return { status: 201, headers: { "content-type": "application/octet-stream" }, body: answer }; });
  const p = await start({ vars: { ORIGIN_URL: origin.url, MAX_DB_BYTES_PER_OBJECT: String(QUOTA.maxDbBytes) } });
  try {
    const post = (key) => ({
      method: "POST",
      headers: { authorization: ACME, "content-type": "application/x-www-form-urlencoded", "idempotency-key": key },
      body: "amount=100",
    });
    const keys = Array.from({ length: QUOTA.keys }, (_, i) => `quota-${i}`);
    const firsts = keys.map((key) => p.request("/charges", post(key)).then(async (r) => ({ status: r.status, bytes: Buffer.from(await r.arrayBuffer()) })));
    await origin.waitForRequests(QUOTA.keys); // every key claimed before any completes
    open();
    for (const [i, first] of (await Promise.all(firsts)).entries()) {
      if (first.status !== 201 || !first.bytes.equals(answer)) quotaChecks.push(`${keys[i]}: the caller got ${first.status} with ${first.bytes.length} bytes, not its whole answer`);
    }
    for (const key of keys) {
      const r = await p.request("/charges", post(key));
      const doc = await r.json().catch(() => ({}));
      if (r.status !== 500 || !String(doc.type).endsWith("/idempotency-response-not-retained") || doc.original_status !== 201) {
        quotaChecks.push(`${key}: the replay answered ${r.status} ${JSON.stringify(doc).slice(0, 120)}, not 500 not-retained with original_status 201`);
      }
    }
    if (origin.requests.length !== QUOTA.keys) quotaChecks.push(`the origin ran ${origin.requests.length} times for ${QUOTA.keys} keys`);
    const s = await p.ledger.stats();
    const bound = QUOTA.maxDbBytes + (1 + QUOTA.keys) * QUOTA.overshootPerRecord;
    if (s.db_bytes > bound) quotaChecks.push(`db_bytes ${s.db_bytes} > the stated bound ${bound} (MAX_DB_BYTES_PER_OBJECT ${QUOTA.maxDbBytes} + (1 + ${QUOTA.keys}) × 128 KiB)`);
    if (s.quota_tombstones !== QUOTA.keys) quotaChecks.push(`quota_tombstones ${s.quota_tombstones}, want ${QUOTA.keys}`);
    QUOTA.dbBytes = s.db_bytes;
    QUOTA.bound = bound;
  } finally {
    await p.mf.dispose();
    await origin.close();
  }
}

// ---- the table ---------------------------------------------------------------
const f2 = (x) => x.toFixed(2);
console.log(`\nBilled SQLite rows per operation (${N} sequential operations each, fresh objects, REPLAY_CACHE_BYTES=0, LOG_LEVEL=warn; written includes setAlarm):`);
console.log("| operation | rows written | rows read | statements | object calls | setAlarm | alarms per record |");
console.log("|---|---|---|---|---|---|---|");
for (const r of results) {
  console.log(`| ${r.name} | ${f2(r.written)} | ${f2(r.read)} | ${f2(r.statements)} | ${f2(r.calls)} | ${f2(r.setAlarm)} | ${r.alarmsPerRecord ? f2(r.alarmsPerRecord) : "—"} |`);
}

console.log(`\nByte quota: ${QUOTA.keys} keys in flight answered with ${QUOTA.body} bytes each under MAX_DB_BYTES_PER_OBJECT=${QUOTA.maxDbBytes}: db_bytes ${QUOTA.dbBytes} (bound ${QUOTA.bound})${quotaChecks.length ? "" : ", every answer delivered, none stored, replays not retained"}.`);

if (opts.check) {
  const failed = [...quotaChecks.map((c) => `byte quota: ${c}`)];
  for (const r of results) {
    const b = BOUNDS[r.name];
    if (!b) continue;
    for (const [k, max] of Object.entries(b)) {
      if (r[k] > max + 1e-9) failed.push(`${r.name}: ${k} ${f2(r[k])} > ${max}`);
    }
  }
  if (failed.length) {
    console.error(`\nbench:cost bounds exceeded:\n  ${failed.join("\n  ")}`);
    process.exit(1);
  }
  console.log(`\nbench:cost: every bound holds (${Object.keys(BOUNDS).length - 1} operations).`);
}
