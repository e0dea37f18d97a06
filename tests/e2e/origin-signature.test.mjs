// The origin signature (ORIGIN_SIGNING_SECRET): every request the gateway
// forwards carries one, the client's own dropped, checked with the JS
// verifier of docs/proxy-mode.md copied verbatim (the Rust one is in
// tests/host/signature.rs), and signed when it is sent, not when it
// arrived — in workerd, with real origins on 127.0.0.1.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startGateway, startOrigin, deferred, json, read, eventually, ACME } from "./harness.mjs";

const post = (key, body = "amount=100") => ({
  method: "POST",
  headers: { authorization: ACME, "content-type": "application/x-www-form-urlencoded", "idempotency-key": key },
  body,
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
