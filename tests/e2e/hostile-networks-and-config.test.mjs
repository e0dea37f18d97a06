// Paths that could run something twice or take the gateway down under
// hostile networks and careless configuration, in workerd with
// real origins on 127.0.0.1.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { startGateway, startOrigin, deferred, json, read, slug, eventually, lossyLinkWorker, ACME, DEMO_TOKENS, sha256hex } from "./harness.mjs";

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

test("API_TOKENS with a repeated or case-colliding hash is misconfigured", async () => {
  const acme = sha256hex("dev-token-acme");
  for (const raw of [`{"${acme}":"acme","${acme}":"globex"}`, `{"${acme}":"acme","${acme.toUpperCase()}":"globex"}`]) {
    const gw = await startGateway({ apiTokens: raw });
    try {
      const r = await json(await gw.request("/v1/orders", { method: "POST", headers: { authorization: ACME, "idempotency-key": "k" }, body: "{}" }));
      assert.equal(r.status, 500);
      assert.equal(slug(r.json), "misconfigured");
      assert.match(r.json.detail, /API_TOKENS/);
    } finally { await gw.dispose(); }
  }
  // The demo map itself is fine.
  assert.equal(Object.keys(DEMO_TOKENS).length, 2);
});

test("no client path reaches the object's RPC routes through the application route", async () => {
  // POST is unprotected here, so it goes to the embedded app's route.
  const gw = await startGateway({ vars: { PROTECTED_METHODS: "PATCH" } });
  try {
    for (const path of ["/%2e%2e/rpc/v1/stats", "/..%2frpc%2fv1%2fstats", "/app/../rpc/v1/stats", "/%2E%2E/%2E%2E/rpc/v1/claim", "/rpc/v1/stats"]) {
      const r = await json(await gw.request(path, { method: "POST", headers: { authorization: ACME, "content-type": "application/json" }, body: "{}" }));
      assert.equal(r.status, 404, path);
      assert.equal(slug(r.json), "not-found", path);
      assert.equal(r.json.records, undefined, `${path} must not answer stats`);
    }
    // The application itself still answers through the same route.
    const created = await json(await gw.request("/v1/orders", { method: "POST", headers: { authorization: ACME }, body: '{"sku":"A","quantity":1}' }));
    assert.equal(created.status, 201);
  } finally { await gw.dispose(); }
});

// The JS origin verification of docs/proxy-mode.md, verbatim.
import { createHmac, createHash, timingSafeEqual } from "node:crypto"; // or Web Crypto in a Worker

export function verifyGatewaySignature({ header, tenant, method, target, idempotencyKey = "", body, secret, now = Date.now() / 1000 }) {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? "");
  if (!m || Math.abs(now - Number(m[1])) > 300) return false;
  const payload = `${m[1]}\n${tenant}\n${method}\n${target}\n${idempotencyKey}\n${createHash("sha256").update(body).digest("hex")}`;
  const expected = createHmac("sha256", secret).update(payload).digest();
  return timingSafeEqual(expected, Buffer.from(m[2], "hex"));
}

test("with ORIGIN_SIGNING_SECRET every forwarded request carries a verifiable signature", async () => {
  const secret = "s3cret-s3cret-s3cret-s3cret-s3cret!";
  const origin = await startOrigin(() => ({ status: 200, body: "ok" }));
  const gw = await startGateway({ vars: { ORIGIN_URL: `${origin.url}/base`, ORIGIN_SIGNING_SECRET: secret } });
  try {
    const forged = { ...post("signed-1"), headers: { ...post("signed-1").headers, "x-idempotency-signature": "t=1,v1=00" } };
    assert.equal((await gw.request("/charges?a=1", forged)).status, 200);
    assert.equal((await gw.request("/status", { headers: { authorization: ACME } })).status, 200);
    for (const seen of origin.requests) {
      const header = seen.headers["x-idempotency-signature"];
      const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
      assert.ok(m, `one gateway signature, the client's dropped: ${header}`);
      assert.ok(Math.abs(Date.now() / 1000 - Number(m[1])) < 300, "signed now");
      // docs/proxy-mode.md's verification, verbatim: t, tenant, METHOD, target, key, sha256(body).
      const target = seen.url.replace(/^\/base/, "");
      const idempotencyKey = seen.headers["idempotency-key"] ?? "";
      const payload = `${m[1]}\n${seen.headers["x-tenant-id"]}\n${seen.method}\n${target}\n${idempotencyKey}\n${createHash("sha256").update(seen.body).digest("hex")}`;
      assert.equal(m[2], createHmac("sha256", secret).update(payload).digest("hex"));
      const args = { header, tenant: seen.headers["x-tenant-id"], method: seen.method, target, idempotencyKey, body: seen.body, secret };
      assert.ok(verifyGatewaySignature(args), "the documented verifier accepts it");
      assert.ok(!verifyGatewaySignature({ ...args, tenant: "globex" }), "a forged tenant is refused");
      assert.ok(!verifyGatewaySignature({ ...args, idempotencyKey: "other-key" }), "a signature is bound to its key");
      assert.ok(!verifyGatewaySignature({ ...args, now: Number(m[1]) + 301 }), "outside the replay window");
    }
  } finally { await gw.dispose(); await origin.close(); }
  const unsigned = await startOrigin(() => ({ status: 200, body: "ok" }));
  const plain = await startGateway({ vars: { ORIGIN_URL: unsigned.url } });
  try {
    await plain.request("/charges", post("unsigned-1"));
    assert.equal(unsigned.requests[0].headers["x-idempotency-signature"], undefined);
  } finally { await plain.dispose(); await unsigned.close(); }
});

test("a retry that waited is signed when it is sent, not when it arrived", async () => {
  const secret = "s3cret-s3cret-s3cret-s3cret-s3cret!";
  const held = deferred();
  // The first run is held open; the key is released (a 500 with
  // RELEASE_ON_5XX) once a waiting retry has arrived, and the retry then runs.
  const origin = await startOrigin(async (_req, n) => {
    if (n === 1) { await held.promise; return { status: 500, body: "first" }; }
    return { status: 200, body: "second" };
  });
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, ORIGIN_SIGNING_SECRET: secret, RELEASE_ON_5XX: "true", IN_FLIGHT_WAIT_MAX_SECONDS: "30" } });
  try {
    const first = gw.request("/charges", post("signed-late"));
    await origin.waitForRequests(1);
    const arrived = Math.floor(Date.now() / 1000);
    const retry = gw.request("/charges", { ...post("signed-late"), headers: { ...post("signed-late").headers, prefer: "wait=20" } });
    // Hold the first run at least two seconds past the retry's arrival.
    await eventually(async () => (await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: ACME } }))).json.waiting === 1);
    await new Promise((r) => setTimeout(r, 2_100));
    held.resolve();
    assert.equal((await first).status, 500);
    const second = await read(await retry);
    assert.deepEqual([second.status, second.text], [200, "second"]);
    const m = /^t=(\d+),/.exec(origin.requests[1].headers["x-idempotency-signature"]);
    assert.ok(Number(m[1]) >= arrived + 2, `signed at ${m[1]}, the retry arrived at ${arrived}`);
  } finally { held.resolve(); await gw.dispose(); await origin.close(); }
});

test("with LOG_HASH_KEY log hashes are keyed HMACs, not plain SHA-256 prefixes", async () => {
  const key = "log-key-0123456789";
  const gw = await startGateway({ vars: { LOG_HASH_KEY: key } });
  try {
    await gw.request("/v1/orders", { method: "POST", headers: { authorization: ACME, "idempotency-key": "order-1" }, body: '{"sku":"A","quantity":1}' });
    await eventually(() => gw.events("idempotency.request").length === 1);
    const line = gw.events("idempotency.request")[0];
    assert.equal(line.key, createHmac("sha256", key).update("order-1").digest("hex").slice(0, 12));
    assert.equal(line.tenant, createHmac("sha256", key).update("acme").digest("hex").slice(0, 12));
    assert.notEqual(line.key, sha256hex("order-1").slice(0, 12));
  } finally { await gw.dispose(); }
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
