// Other Workers calling the ledger (docs/contract.md §3): a JavaScript Worker using the
// npm package's client, bound to the real TenantLedger with script_name.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, unleased, read, json, eventually, jsClientWorker, ACME } from "./harness.mjs";

const jsWorker = jsClientWorker("js-client", { className: "TenantLedger", scriptName: "gateway", useSQLite: true });

let gw, js;
before(async () => {
  gw = await startGateway({ workers: [jsWorker] });
  js = await gw.mf.getWorker("js-client");
});
after(async () => { await gw?.dispose(); });

const call = async (op, payload, tenant = "js-tenant") =>
  (await js.fetch(`https://js/raw/${op}`, { method: "POST", headers: { "x-tenant": tenant }, body: JSON.stringify(payload) })).json();
const request = { method: "POST", target: "/payments", headers: { "content-type": "application/json" }, body: '{"amount":5}' };
const stored = (text) => ({ status: 200, headers: [["content-type", "text/plain"]], body: Buffer.from(text).toString("base64") });

test("JS client: claim, run once, complete, then replay", async () => {
  const init = () => ({ method: "POST", headers: { "idempotency-key": "js-charge-1", "content-type": "text/plain" }, body: "42.00" });
  const first = await read(await js.fetch("https://js/charge", init()));
  assert.equal(first.status, 201);
  assert.deepEqual(JSON.parse(first.text), { charge: 1, amount: "42.00" });
  const replay = await read(await js.fetch("https://js/charge", init()));
  assert.equal(replay.status, 201);
  assert.equal(replay.headers["idempotent-replayed"], "true");
  assert.ok(replay.body.equals(first.body), "the stored bytes");
  const other = await read(await js.fetch("https://js/charge", { ...init(), body: "43.00" }));
  assert.equal(other.status, 422);
  assert.deepEqual(JSON.parse(other.text).differs, ["body"]);
});

test("JS client: claim, release, reclaim at the next generation; stale generations are fenced out", async () => {
  assert.deepEqual(unleased(await call("claim", { key: "js-rel", request })), { outcome: "claimed", generation: 1, takeover: false });
  assert.deepEqual(await call("release", { key: "js-rel", generation: 1 }), { outcome: "released" });
  assert.deepEqual(unleased(await call("claim", { key: "js-rel", request })), { outcome: "claimed", generation: 2, takeover: false });
  const stale = await call("complete", { key: "js-rel", generation: 1, response: stored("stale") });
  assert.deepEqual(stale, { outcome: "fenced_out", current: { state: "in_flight", generation: 2 } });
  assert.equal((await call("release", { key: "js-rel", generation: 1 })).outcome, "fenced_out");
  assert.deepEqual(await call("complete", { key: "js-rel", generation: 2, response: stored("fresh") }), { outcome: "stored" });
  const replay = await call("claim", { key: "js-rel", request });
  assert.equal(replay.outcome, "completed");
  assert.equal(Buffer.from(replay.response.body, "base64").toString(), "fresh");
  const record = await call("lookup", { key: "js-rel" });
  assert.equal(record.generation, 2);
  assert.ok((await call("stats", {})).fenced_out >= 2);
});

test("JS client: a refused call surfaces the object's problem", async () => {
  const bad = await call("complete", { key: "", generation: 1, response: stored("x") });
  assert.equal(bad.status, 400);
  assert.equal(bad.problem.type.split("/").pop(), "invalid-rpc");
});

test("the JS fingerprint equals the gateway's: a key completed from JS replays through the gateway", async () => {
  const body = '{"sku":"XLANG","quantity":1}';
  const claim = await call("claim", { key: "xlang-1", request: { method: "POST", target: "/v1/orders", headers: { "content-type": "application/json" }, body } }, "acme");
  assert.equal(claim.outcome, "claimed");
  assert.equal((await call("complete", { key: "xlang-1", generation: 1, response: stored("stored-from-js") }, "acme")).outcome, "stored");
  const viaGateway = await read(await gw.request("/v1/orders", {
    method: "POST",
    headers: { authorization: ACME, "idempotency-key": "xlang-1", "content-type": "application/json" },
    body,
  }));
  assert.equal(viaGateway.headers["idempotent-replayed"], "true");
  assert.equal(viaGateway.text, "stored-from-js");
});

test("withIdempotency: one line of middleware gives a fetch handler the gateway's contract", async () => {
  const send = (key, body, extra = {}) => js.fetch("https://js/wrapped/charge", {
    method: "POST", headers: { "content-type": "text/plain", ...(key === null ? {} : { "idempotency-key": key }), ...extra }, body,
  }).then(read);
  const first = await send('"mw-1"', "10.00");
  assert.equal(first.status, 201);
  const run = JSON.parse(first.text).run;
  // A bare key and the sf-string form are the same key (parsed as the gateway does).
  const replay = await send("mw-1", "10.00");
  assert.equal(replay.status, 201);
  assert.equal(replay.headers["idempotent-replayed"], "true");
  assert.ok(replay.body.equals(first.body));
  assert.equal(replay.headers.location, `/runs/${run}`);
  const reused = await send("mw-1", "11.00");
  assert.equal(reused.status, 422);
  assert.equal(JSON.parse(reused.text).type, "https://idempotency-ledger.dev/problems/idempotency-key-reused");
  assert.deepEqual(JSON.parse(reused.text).differs, ["body"]);
  const missing = await send(null, "1");
  assert.equal(missing.status, 400);
  assert.match(JSON.parse(missing.text).type, /idempotency-key-missing$/);
  const invalid = await send('"open', "1");
  assert.equal(invalid.status, 400);
  assert.match(JSON.parse(invalid.text).type, /idempotency-key-invalid$/);
  // A handler that throws releases the key: the retry runs again.
  const boom = await send("mw-2", "explode");
  assert.equal(boom.status, 500);
  const lookup = await call("lookup", { key: "mw-2" });
  assert.equal(lookup.state, "released");
  const unprotected = await js.fetch("https://js/wrapped/charge", { method: "GET" }).then(read);
  assert.equal(unprotected.status, 201, "GET is not protected: the handler runs");
});

test("withIdempotency: a retry with Prefer: wait=N waits for the slow first run and gets its replay", async () => {
  const send = (extra = {}) => js.fetch("https://js/wrapped/charge", {
    method: "POST", headers: { "content-type": "text/plain", "idempotency-key": "mw-slow", ...extra }, body: "slow 1",
  }).then(read);
  const first = send();
  // The retry is sent once the first run holds the key.
  await eventually(async () => (await call("lookup", { key: "mw-slow" }))?.state === "in_flight", { every: 50 });
  const retry = await send({ prefer: "wait=10" });
  const original = await first;
  assert.equal(original.status, 201);
  assert.equal(retry.status, 201, "the waiter gets the answer, not 409");
  assert.equal(retry.headers["idempotent-replayed"], "true");
  assert.equal(retry.headers["preference-applied"], "wait=10");
  assert.ok(retry.body.equals(original.body), "the same bytes as the first run");
  const noWait = await send();
  assert.equal(noWait.headers["idempotent-replayed"], "true");
});
