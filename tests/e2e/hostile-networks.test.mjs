// What a hostile network does to a request, and that it never runs a key
// twice or takes the gateway down: an origin whose body breaks off, one
// answering `101`, hop-by-hop headers, a client that hangs up, a chunked
// body past the limit, a completion lost on its way to the object — in
// workerd, with real origins on 127.0.0.1.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { startGateway, startOrigin, deferred, json, read, slug, eventually, lossyLinkWorker, ACME } from "./harness.mjs";

const post = (key, body = "amount=100") => ({
  method: "POST",
  headers: { authorization: ACME, "content-type": "application/x-www-form-urlencoded", "idempotency-key": key },
  body,
});

test("a body that breaks off after the headers keeps the key: 502 incomplete, a retry is 409, the origin ran once", async () => {
  const origin = await startOrigin(() => ({ status: 200, headers: { "content-length": "100" }, partial: "only part of it" }));
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url } });
  try {
    const first = await json(await gw.request("/charges", post("broken-1")));
    assert.equal(first.status, 502);
    assert.equal(slug(first.json), "origin-response-incomplete");
    const retry = await json(await gw.request("/charges", post("broken-1")));
    assert.equal(retry.status, 409, "the origin ran: the key is not released");
    assert.equal(slug(retry.json), "idempotency-key-in-use");
    assert.equal(origin.requests.length, 1);
  } finally { await gw.dispose(); await origin.close(); }
});

test("an origin answering 101 Switching Protocols gets a 502 and the gateway keeps serving", async () => {
  const server = createServer((socket) => {
    socket.once("data", () => socket.end("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x-test\r\n\r\n"));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  server.unref();
  const gw = await startGateway({ vars: { ORIGIN_URL: `http://127.0.0.1:${server.address().port}` } });
  try {
    for (let i = 0; i < 2; i++) {
      const r = await json(await gw.request("/upgrade", post(`upgrade-${i}`)));
      assert.equal(r.status, 502);
      assert.ok(["origin-invalid-response", "origin-unavailable"].includes(slug(r.json)), slug(r.json));
    }
    assert.equal((await gw.request("/health")).status, 200);
    assert.deepEqual(gw.events("idempotency.panic"), []);
  } finally { await gw.dispose(); server.close(); }
});

test("methods are forwarded verbatim, and hop-by-hop headers are not", async () => {
  const origin = await startOrigin(() => ({ status: 207, headers: { "content-type": "application/xml" }, body: "<multistatus/>" }));
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url } });
  try {
    const r = await read(await gw.request("/dav/file", {
      method: "PROPFIND",
      headers: { authorization: ACME, depth: "1", "proxy-authorization": "Basic c2VjcmV0", trailer: "x-sum" },
    }));
    assert.equal(r.status, 207);
    assert.equal(r.text, "<multistatus/>");
    const seen = origin.requests[0];
    assert.equal(seen.method, "PROPFIND", "not rewritten to GET");
    assert.equal(seen.headers.depth, "1");
    assert.equal(seen.headers["proxy-authorization"], undefined);
    assert.equal(seen.headers.trailer, undefined);
  } finally { await gw.dispose(); await origin.close(); }
});

test("a client that hangs up mid-request does not stop the completion: the key completes and replays", async () => {
  const held = deferred();
  const origin = await startOrigin((_req, n) => (n === 1 ? held.promise : { status: 500, body: "ran twice" }));
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url } });
  try {
    const hangUp = new AbortController();
    const first = gw.request("/charges", { ...post("hangup-1"), signal: hangUp.signal }).catch((e) => e);
    await origin.waitForRequests(1);
    hangUp.abort();
    await first;
    held.resolve({ status: 201, headers: { "content-type": "text/plain" }, body: "charged once" });
    await eventually(async () => {
      const rec = await json(await gw.request("/v1/idempotency-keys/hangup-1", { headers: { authorization: ACME } }));
      return rec.status === 200 && rec.json.state === "completed";
    }, { ms: 60_000 });
    const retry = await read(await gw.request("/charges", post("hangup-1")));
    assert.equal(retry.status, 201);
    assert.equal(retry.text, "charged once");
    assert.equal(retry.headers["idempotent-replayed"], "true");
    assert.equal(origin.requests.length, 1, "the origin ran once");
  } finally { await gw.dispose(); await origin.close(); }
});

test("a chunked body with no Content-Length is refused with 413 as soon as it passes the limit", async () => {
  const gw = await startGateway({ vars: { MAX_REQUEST_BODY_BYTES: "64" } });
  const chunked = (parts) => new ReadableStream({
    start(controller) {
      for (const p of parts) controller.enqueue(new TextEncoder().encode(p));
      controller.close();
    },
  });
  try {
    const big = await json(await gw.request("/v1/orders", {
      method: "POST", duplex: "half",
      headers: { authorization: ACME, "idempotency-key": "chunked-big" },
      body: chunked(['{"sku":"A",', '"quantity":1,', `"pad":"${"p".repeat(100)}"}`]),
    }));
    assert.equal(big.status, 413);
    assert.equal(slug(big.json), "request-too-large");
    const rec = await gw.request("/v1/idempotency-keys/chunked-big", { headers: { authorization: ACME } });
    assert.equal(rec.status, 404, "nothing was claimed");
    const small = await json(await gw.request("/v1/orders", {
      method: "POST", duplex: "half",
      headers: { authorization: ACME, "idempotency-key": "chunked-small" },
      body: chunked(['{"sku":"A",', '"quantity":1}']),
    }));
    assert.equal(small.status, 201, "a chunked body within the limit is read whole");
    assert.equal(small.json.sku, "A");
  } finally { await gw.dispose(); }
});

// A lossy link in front of the real TenantLedger (not a fake ledger: every
// call that gets through is served by the real object): the first `complete`
// is dropped before it reaches the object, as a broken connection would.
const lossyLink = lossyLinkWorker();

test("a completion whose first attempt is lost is retried: the key completes and replays", async () => {
  const origin = await startOrigin(() => ({ status: 201, headers: { "content-type": "text/plain" }, body: "charged once" }));
  const gw = await startGateway({
    vars: { ORIGIN_URL: origin.url },
    workers: [lossyLink],
    gateway: {
      durableObjects: {
        TENANT_LEDGER: { className: "LossyLink", scriptName: "lossy" },
        OWN_LEDGER: { className: "TenantLedger", useSQLite: true },
      },
    },
  });
  try {
    const first = await read(await gw.request("/charges", post("lossy-1")));
    assert.equal(first.status, 201);
    assert.equal(first.text, "charged once");
    await eventually(() => gw.logs.some((l) => l.includes("lossy-link: dropped a complete call")));
    const retry = await read(await gw.request("/charges", post("lossy-1")));
    assert.equal(retry.headers["idempotent-replayed"], "true");
    assert.equal(retry.text, "charged once");
    assert.equal(origin.requests.length, 1);
    assert.deepEqual(gw.events("idempotency.complete_failed"), []);
  } finally { await gw.dispose(); await origin.close(); }
});
