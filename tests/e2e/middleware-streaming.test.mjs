// The middleware streams like the gateway (docs/clients.md, "Streaming"):
// the route's body is read no further than maxStoredBodyBytes + 1 bytes
// before its key is completed. Within the cap it is stored and replayed
// byte for byte; past it the key is completed as a tombstone at once and
// the body streams on to its caller as it comes, memory bounded — for the
// Hono middleware and withIdempotency, in a real app (bundled with
// esbuild: tests/e2e/workers/streaming-app.ts) bound to the built Worker's
// real TenantLedger in workerd.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { startGateway, read, bundledWorkerModules } from "./harness.mjs";
import { captureBounded, captureResponse } from "../../client/index.js";
import { storedBodyBytes } from "../../client/rules/stored.js";

const CAP = 4096; // the app's maxStoredBodyBytes
const streamingApp = {
  name: "streaming-app",
  modules: bundledWorkerModules("streaming-app"),
  compatibilityDate: "2026-11-01",
  durableObjects: { LEDGER_NS: { className: "TenantLedger", scriptName: "gateway", useSQLite: true } },
};

let gw, app;
before(async () => {
  gw = await startGateway({ workers: [streamingApp] });
  app = await gw.mf.getWorker("streaming-app");
});
after(async () => { await gw?.dispose(); });

/** The two middlewares over the same streamed routes: name, path, the app's run counter, the ledger's tenant. */
const MIDDLEWARES = [
  { name: "hono", path: "/hono/stream", route: "hono", tenant: "stream-hono" },
  { name: "withIdempotency", path: "/fetch/stream", route: "fetch", tenant: "stream-fetch" },
];

/** A protected POST with `key`, the stream chosen by `query` (see streaming-app.ts). */
const post = (path, key, query = {}) => app.fetch(`https://stream${path}?${new URLSearchParams(query)}`, {
  method: "POST", headers: { "content-type": "text/plain", "idempotency-key": key }, body: "go",
});
const runs = async (route) => (await (await app.fetch(`https://stream/runs/${route}`)).json()).runs;
/** Opens a gate; true when a stream was still held at it. */
const openGate = async (id) => (await (await app.fetch(`https://stream/gate/${id}`, { method: "POST" })).json()).held;
const lookup = async (object, key) => {
  const stub = await gw.ledger(object);
  return (await (await stub.fetch("https://l/rpc/v1/lookup", { method: "POST", body: JSON.stringify({ key }) })).json()).record;
};
/** The bytes the app streams for `chunks` chunks of `size`. */
const expected = (chunks, size) => {
  const out = Buffer.alloc(chunks * size);
  for (let i = 0; i < chunks; i++) for (let j = 0; j < size; j++) out[i * size + j] = (i * 31 + j) & 0xff;
  return out;
};
/** Reads a body to its end, with when its first bytes came (ms since `t0`). */
async function timedBody(response, t0) {
  const reader = response.body.getReader();
  const chunks = [];
  let first = null;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (first === null && value.length > 0) first = performance.now() - t0;
    chunks.push(Buffer.from(value));
  }
  return { body: Buffer.concat(chunks), first, end: performance.now() - t0 };
}
/** The tombstone's replay, as the gateway answers it. */
function assertTombstoneReplay(r, originalStatus = 200) {
  assert.equal(r.status, 500);
  const doc = JSON.parse(r.text);
  assert.match(doc.type, /\/idempotency-response-not-retained$/);
  assert.equal(doc.original_status, originalStatus);
  assert.equal(r.headers["idempotent-replayed"], "true");
}

for (const { name, path, route, tenant } of MIDDLEWARES) {
  test(`${name}: a response past maxStoredBodyBytes streams — headers and first bytes long before its end, the whole body, a tombstone, one run`, async () => {
    const key = `${route}-drip`;
    const stream = { chunks: 17, size: 8192, every: 300 };
    const before = await runs(route);
    const t0 = performance.now();
    const r = await post(path, key, stream);
    const headersAt = performance.now() - t0;
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "application/octet-stream");
    assert.equal(r.headers.get("x-route"), "streamed", "the route's own headers");
    assert.equal(r.headers.get("idempotent-replayed"), null);
    const { body, first, end } = await timedBody(r, t0);
    console.log(`${name}: headers after ${headersAt.toFixed(0)} ms, first bytes after ${first.toFixed(0)} ms, the end after ${end.toFixed(0)} ms`);
    assert.ok(end >= 16 * 300 * 0.9, `the route's stream took its time (${end} ms)`);
    assert.ok(first < end / 2, `the first bytes (${first} ms) came long before the end (${end} ms)`);
    assert.ok(headersAt < end / 2, `the headers (${headersAt} ms) came long before the end (${end} ms)`);
    assert.ok(body.equals(expected(17, 8192)), "the whole body, byte for byte");
    const record = await lookup(tenant, key);
    assert.equal(record.state, "completed");
    assert.equal(record.retained, false, "a tombstone: the body passed maxStoredBodyBytes");
    assert.equal(record.response_status, 200);
    const retry = await read(await post(path, key, stream));
    assertTombstoneReplay(retry);
    assert.equal(await runs(route), before + 1, "the route ran once");
  });

  test(`${name}: a retry sent while the first response still streams gets the tombstone's replay — not 409, not a second run`, async () => {
    const key = `${route}-held`;
    const gate = `${route}-gate`;
    const stream = { chunks: 4, size: 8192, gate };
    const before = await runs(route);
    const r = await post(path, key, stream);
    assert.equal(r.status, 200);
    const reader = r.body.getReader();
    const head = await reader.read();
    assert.ok(!head.done && head.value.length > 0, "the first bytes came while the route is held");
    // The route is held after its first chunk until the gate opens: the first stream is still running.
    const retry = await read(await post(path, key, stream));
    assertTombstoneReplay(retry);
    assert.equal(await runs(route), before + 1, "the retry did not run the route");
    assert.equal(await openGate(gate), true, "the first run's stream was still held when the retry was answered");
    const chunks = [Buffer.from(head.value)];
    for (let step = await reader.read(); !step.done; step = await reader.read()) chunks.push(Buffer.from(step.value));
    assert.ok(Buffer.concat(chunks).equals(expected(4, 8192)), "the first caller still gets the whole body");
    assert.equal((await lookup(tenant, key)).retained, false);
    assert.equal(await runs(route), before + 1);
  });

  test(`${name}: a response within maxStoredBodyBytes is stored and replayed byte for byte, as before`, async () => {
    const key = `${route}-small`;
    const stream = { chunks: 4, size: CAP / 4, every: 20 }; // the cap exactly, in four chunks
    const before = await runs(route);
    const first = await read(await post(path, key, stream));
    assert.equal(first.status, 200);
    assert.ok(first.body.equals(expected(4, CAP / 4)));
    assert.equal(first.headers["x-route"], "streamed");
    const record = await lookup(tenant, key);
    assert.equal(record.state, "completed");
    assert.equal(record.retained, true);
    const replay = await read(await post(path, key, stream));
    assert.equal(replay.status, 200);
    assert.equal(replay.headers["idempotent-replayed"], "true");
    assert.equal(replay.headers["content-type"], "application/octet-stream");
    assert.equal(replay.headers.etag, '"stream-v1"');
    assert.ok(replay.body.equals(first.body), "the stored answer, byte for byte");
    assert.equal(await runs(route), before + 1);
  });

  test(`${name}: a body that breaks off past maxStoredBodyBytes errors its caller's stream; the key stays a tombstone and the route never runs again`, async () => {
    const key = `${route}-broken`;
    const stream = { chunks: 17, size: 8192, fail: 3 }; // 24 KiB, then the stream errors
    const before = await runs(route);
    const r = await post(path, key, stream);
    assert.equal(r.status, 200, "the headers went out: the body passed the cap");
    await assert.rejects(r.arrayBuffer(), "the caller's stream errors");
    const record = await lookup(tenant, key);
    assert.equal(record.state, "completed");
    assert.equal(record.retained, false);
    assert.equal(record.response_status, 200);
    for (let i = 0; i < 2; i++) assertTombstoneReplay(await read(await post(path, key, stream)));
    assert.equal(await runs(route), before + 1, "the route ran once");
  });
}

/** The workerd process Miniflare spawned for this file (a child of this process). */
function workerdPid() {
  const pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d)).filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      return ppid === process.pid && readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "workerd";
    } catch { return false; }
  });
  assert.equal(pids.length, 1, `one workerd child of this process (${pids})`);
  return pids[0];
}
const rssBytes = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) * 1024;

test("withIdempotency: memory stays bounded however large the streamed body — workerd's RSS grows far less than the body", async () => {
  const MiB = 1024 * 1024;
  const total = Number(process.env.STREAM_MEMORY_MIB ?? 1024) * MiB;
  const pid = workerdPid();
  // A first, small run: the route, the middleware and the ledger's object are warm before the baseline.
  await (await post("/memory/stream", "memory-warm", { total: 256 * 1024 })).arrayBuffer();
  const baseline = rssBytes(pid);
  let peak = baseline;
  const sampler = setInterval(() => { peak = Math.max(peak, rssBytes(pid)); }, 100);
  try {
    const t0 = performance.now();
    const r = await post("/memory/stream", "memory-big", { total });
    assert.equal(r.status, 200);
    const reader = r.body.getReader();
    let received = 0;
    for (let step = await reader.read(); !step.done; step = await reader.read()) received += step.value.length;
    const seconds = (performance.now() - t0) / 1000;
    peak = Math.max(peak, rssBytes(pid));
    const growth = peak - baseline;
    console.log(`withIdempotency streamed ${(received / MiB).toFixed(0)} MiB in ${seconds.toFixed(1)} s (${(received / MiB / seconds).toFixed(0)} MiB/s); workerd RSS ${(baseline / MiB).toFixed(0)} MiB at the start, peak growth ${(growth / MiB).toFixed(1)} MiB`);
    assert.equal(received, total, "every byte arrived");
    assert.ok(growth < Math.min(150 * MiB, total / 3), `workerd's RSS grew ${(growth / MiB).toFixed(1)} MiB for a ${(total / MiB).toFixed(0)} MiB body`);
  } finally {
    clearInterval(sampler);
  }
  const record = await lookup("stream-memory", "memory-big");
  assert.equal(record.state, "completed");
  assert.equal(record.retained, false);
  assertTombstoneReplay(await read(await post("/memory/stream", "memory-big", { total })));
  assert.equal(await runs("memory"), 2, "the warm-up and the big run, each once");
});

// captureBounded itself, in Node (the same Web streams): what it reads before it resolves, and what it hands on.

/** A source of `chunks` chunks of `size` bytes (chunkAt's pattern) that counts its pulls and sees its cancel. */
function source({ chunks, size, fail = null }) {
  const seen = { pulled: 0, cancelled: null };
  const body = new ReadableStream({
    pull(controller) {
      if (seen.pulled === fail) return controller.error(new Error("upstream reset"));
      if (seen.pulled === chunks) return controller.close();
      const bytes = Buffer.alloc(size);
      for (let j = 0; j < size; j++) bytes[j] = (seen.pulled * 31 + j) & 0xff;
      seen.pulled += 1;
      controller.enqueue(new Uint8Array(bytes));
    },
    cancel(reason) { seen.cancelled = reason ?? "cancelled"; },
  }, { highWaterMark: 0 });
  return { seen, response: new Response(body, { status: 201, statusText: "Made", headers: { "content-type": "application/octet-stream", "set-cookie": "a=b", "x-other": "1" } }) };
}

test("captureBounded: a body within the cap is stored and handed on whole, with the status, status text and headers", async () => {
  const { seen, response } = source({ chunks: 4, size: 1024 });
  const { stored, response: out, streaming } = await captureBounded(response, { maxStoredBodyBytes: 4096 });
  assert.equal(streaming, false);
  assert.deepEqual([stored.status, stored.headers], [201, [["content-type", "application/octet-stream"]]]);
  assert.ok(Buffer.from(storedBodyBytes(stored)).equals(expected(4, 1024)));
  assert.deepEqual([out.status, out.statusText, out.headers.get("x-other"), out.headers.get("set-cookie")], [201, "Made", "1", "a=b"]);
  assert.ok(Buffer.from(await out.arrayBuffer()).equals(expected(4, 1024)));
  assert.equal(seen.pulled, 4);
});

test("captureBounded: past the cap it resolves a tombstone having read at most the cap + 1 bytes and one chunk; the rest is pulled as the caller reads, and its cancel reaches the route", async () => {
  const { seen, response } = source({ chunks: 100, size: 1000 });
  const { stored, response: out, streaming } = await captureBounded(response, { maxStoredBodyBytes: 4096 });
  assert.equal(streaming, true);
  assert.deepEqual(stored, { status: 201, headers: [["content-type", "application/octet-stream"]], body: null });
  assert.equal(seen.pulled, 5, "4,096 + 1 bytes reached in the fifth chunk of 1,000; nothing read ahead");
  assert.equal([out.status, out.statusText, out.headers.get("x-other")].join(), "201,Made,1");
  const reader = out.body.getReader();
  const got = [];
  for (let i = 0; i < 7; i++) got.push(Buffer.from((await reader.read()).value));
  assert.ok(Buffer.concat(got).equals(expected(7, 1000)), "the prefix, then the rest in order");
  assert.ok(seen.pulled <= 8, `pulled as read (${seen.pulled})`);
  await reader.cancel("caller left");
  assert.equal(seen.cancelled, "caller left", "the caller's cancel cancels the route's body");
  // The whole of a large body, in order.
  const whole = source({ chunks: 50, size: 1000 });
  const captured = await captureBounded(whole.response, { maxStoredBodyBytes: 10 });
  assert.ok(Buffer.from(await captured.response.arrayBuffer()).equals(expected(50, 1000)));
});

test("captureBounded: a body that breaks off is a tombstone; its caller gets the bytes that came, then the error; null bodies are stored empty", async () => {
  for (const [fail, cap] of [[2, 4096], [6, 4096]]) { // within the cap, past it
    const { response } = source({ chunks: 10, size: 1000, fail });
    const { stored, response: out } = await captureBounded(response, { maxStoredBodyBytes: cap });
    assert.equal(stored.body, null);
    assert.equal(stored.status, 201);
    const reader = out.body.getReader();
    const got = [];
    await assert.rejects(async () => { for (;;) { const step = await reader.read(); if (step.done) break; got.push(Buffer.from(step.value)); } }, /upstream reset/);
    assert.ok(Buffer.concat(got).equals(expected(fail, 1000)), `fail at ${fail}: the bytes before the break`);
  }
  for (const response of [new Response(null, { status: 204 }), new Response(null, { status: 201, headers: { location: "/x" } })]) {
    const { stored, response: out } = await captureBounded(response);
    assert.equal(stored.body, "");
    assert.equal(out, response, "handed on as it is");
  }
  await assert.rejects(async () => { const used = new Response("x"); await used.text(); await captureBounded(used); }, "an already-read body cannot be captured");
});

test("captureResponse reads no further than the cap + 1 bytes: past it, a tombstone and the rest cancelled", async () => {
  const { seen, response } = source({ chunks: 1000, size: 1000 });
  assert.deepEqual(await captureResponse(response, { maxStoredBodyBytes: 4096 }), { status: 201, headers: [["content-type", "application/octet-stream"]], body: null });
  assert.equal(seen.pulled, 5);
  assert.notEqual(seen.cancelled, null);
  const within = source({ chunks: 4, size: 1024 });
  assert.ok(Buffer.from(storedBodyBytes(await captureResponse(within.response, { maxStoredBodyBytes: 4096 }))).equals(expected(4, 1024)));
});
