// Streams (docs/contract.md §2.6): unprotected requests and responses pass
// through as they arrive, and a protected response too large to store
// streams to its caller while the gateway keeps at most MAX_STORED_BODY_BYTES
// + 1 bytes of it — the record a tombstone, the origin run once.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { createHash } from "node:crypto";
import { startGateway, deferred, json, slug, eventually, ACME } from "./harness.mjs";

/** An origin that sends `first` bytes, then waits for `release`, then the rest. */
async function drippingOrigin({ first, rest, status = 200 }) {
  const release = deferred();
  const state = { finished: false, runs: 0, received: [] };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      state.runs++;
      state.received.push(Buffer.concat(chunks));
      res.writeHead(status, { "content-type": "application/octet-stream" });
      res.write(Buffer.alloc(first, 97));
      await release.promise;
      res.end(Buffer.alloc(rest, 98), () => { state.finished = true; });
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  server.unref();
  return { url: `http://127.0.0.1:${server.address().port}`, state, release, close: () => { server.closeAllConnections?.(); server.close(); } };
}

/** Reads the first chunk of a streamed body, then the rest once `after` ran. */
async function firstThenRest(response, after) {
  const reader = response.body.getReader();
  const head = await reader.read();
  assert.ok(!head.done && head.value.length > 0, "a first chunk arrived");
  await after();
  const chunks = [Buffer.from(head.value)];
  for (;;) {
    const step = await reader.read();
    if (step.done) break;
    chunks.push(Buffer.from(step.value));
  }
  return Buffer.concat(chunks);
}

test("an unprotected response streams: the first bytes arrive while the origin is still sending", async () => {
  const origin = await drippingOrigin({ first: 64 * 1024, rest: 704 * 1024 });
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url } });
  try {
    const r = await gw.request("/download", { headers: { authorization: ACME } });
    assert.equal(r.status, 200);
    const body = await firstThenRest(r, async () => {
      assert.equal(origin.state.finished, false, "the first bytes came before the origin finished");
      origin.release.resolve();
    });
    assert.equal(body.length, 768 * 1024);
  } finally { origin.release.resolve(); await gw.dispose(); origin.close(); }
});

test("an unprotected request body passes through to the origin byte for byte", async () => {
  const origin = await drippingOrigin({ first: 1, rest: 1 });
  origin.release.resolve();
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url } });
  try {
    const payload = Buffer.alloc(512 * 1024, 7);
    payload.write("the exact bytes", 1000);
    const r = await gw.request("/upload", { method: "PUT", headers: { authorization: ACME }, body: payload });
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    assert.equal(createHash("sha256").update(origin.state.received[0]).digest("hex"), createHash("sha256").update(payload).digest("hex"));
  } finally { await gw.dispose(); origin.close(); }
});

test("a protected response over MAX_STORED_BODY_BYTES streams to its caller, then replays as a tombstone; the origin runs once", async () => {
  const origin = await drippingOrigin({ first: 96 * 1024, rest: 160 * 1024 });
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, MAX_STORED_BODY_BYTES: "65536" } });
  const post = () => ({ method: "POST", headers: { authorization: ACME, "idempotency-key": "big-1", "content-type": "text/plain" }, body: "x" });
  try {
    const r = await gw.request("/report", post());
    assert.equal(r.status, 200);
    const body = await firstThenRest(r, async () => {
      assert.equal(origin.state.finished, false, "the first bytes came before the origin finished");
      origin.release.resolve();
    });
    assert.equal(body.length, 256 * 1024, "the caller got the whole body");
    // The key completes (as a tombstone) once the whole body went through.
    await eventually(async () => (await json(await gw.request("/v1/idempotency-keys/big-1", { headers: { authorization: ACME } }))).json?.state === "completed");
    const replay = await json(await gw.request("/report", post()));
    assert.equal(replay.status, 500);
    assert.equal(slug(replay.json), "idempotency-response-not-retained");
    assert.equal(replay.json.original_status, 200);
    assert.equal(replay.headers["idempotent-replayed"], "true");
    assert.equal(origin.state.runs, 1);
  } finally { origin.release.resolve(); await gw.dispose(); origin.close(); }
});

test("a protected 5xx over MAX_STORED_BODY_BYTES under RELEASE_ON_5XX streams to its caller and releases the key: a retry runs again", async () => {
  const origin = await drippingOrigin({ first: 96 * 1024, rest: 32 * 1024, status: 503 });
  origin.release.resolve();
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, MAX_STORED_BODY_BYTES: "65536", RELEASE_ON_5XX: "true" } });
  const post = () => ({ method: "POST", headers: { authorization: ACME, "idempotency-key": "big-5xx", "content-type": "text/plain" }, body: "x" });
  try {
    const first = await gw.request("/report", post());
    assert.equal(first.status, 503);
    assert.equal(Buffer.from(await first.arrayBuffer()).length, 128 * 1024, "the caller got the whole body");
    assert.equal((await json(await gw.request("/v1/idempotency-keys/big-5xx", { headers: { authorization: ACME } }))).json.state, "released");
    const retry = await gw.request("/report", post());
    assert.equal(retry.status, 503);
    await retry.arrayBuffer();
    assert.equal(retry.headers.get("idempotent-replayed"), null, "the retry ran, it was not replayed");
    assert.equal(origin.state.runs, 2);
  } finally { await gw.dispose(); origin.close(); }
});

test("a retry while a protected response over the cap still streams gets the tombstone's replay (not 409); the origin runs once", async () => {
  const origin = await drippingOrigin({ first: 96 * 1024, rest: 32 * 1024 });
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, MAX_STORED_BODY_BYTES: "65536" } });
  const post = () => ({ method: "POST", headers: { authorization: ACME, "idempotency-key": "big-during", "content-type": "text/plain" }, body: "x" });
  try {
    const first = await gw.request("/report", post());
    assert.equal(first.status, 200);
    const body = await firstThenRest(first, async () => {
      assert.equal(origin.state.finished, false, "the first response is still streaming");
      // The key was completed as a tombstone before the first byte went out.
      const record = await json(await gw.request("/v1/idempotency-keys/big-during", { headers: { authorization: ACME } }));
      assert.equal(record.json.state, "completed");
      assert.equal(record.json.retained, false);
      const retry = await json(await gw.request("/report", post()));
      assert.equal(retry.status, 500, "the tombstone's replay, not 409");
      assert.equal(slug(retry.json), "idempotency-response-not-retained");
      assert.equal(retry.json.original_status, 200);
      assert.equal(retry.headers["idempotent-replayed"], "true");
      origin.release.resolve();
    });
    assert.equal(body.length, 128 * 1024, "the first caller still got the whole body");
    assert.equal(origin.state.runs, 1);
  } finally { origin.release.resolve(); await gw.dispose(); origin.close(); }
});

test("a protected response that breaks off past the cap leaves the tombstone: after the lease a retry replays it, never a takeover or a second run", async () => {
  let runs = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      runs++;
      res.writeHead(200, { "content-type": "application/octet-stream" });
      res.write(Buffer.alloc(96 * 1024, 97), () => setTimeout(() => res.destroy(), 50));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  server.unref();
  const gw = await startGateway({ vars: { ORIGIN_URL: `http://127.0.0.1:${server.address().port}`, MAX_STORED_BODY_BYTES: "65536", LEASE_SECONDS: "5", ORIGIN_TIMEOUT_SECONDS: "3" } });
  const post = () => ({ method: "POST", headers: { authorization: ACME, "idempotency-key": "big-broken", "content-type": "text/plain" }, body: "x" });
  try {
    const first = await gw.request("/report", post());
    assert.equal(first.status, 200, "status and headers went out before the body broke off");
    await assert.rejects(first.arrayBuffer(), "the caller's stream breaks too");
    // Past the lease: a key left in flight would now be taken over and run again.
    await new Promise((r) => setTimeout(r, 5500));
    const retry = await json(await gw.request("/report", post()));
    assert.equal(retry.status, 500);
    assert.equal(slug(retry.json), "idempotency-response-not-retained");
    assert.equal(retry.headers["idempotent-replayed"], "true");
    const record = await json(await gw.request("/v1/idempotency-keys/big-broken", { headers: { authorization: ACME } }));
    assert.equal(record.json.state, "completed");
    assert.equal(record.json.generation, 1, "never taken over");
    assert.equal(runs, 1, "the origin ran once");
  } finally { await gw.dispose(); server.closeAllConnections?.(); server.close(); }
});
