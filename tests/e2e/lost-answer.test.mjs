// A claim's lost answer (docs/contract.md §3): the object granted the key
// (or ran the request), the gateway's read of the answer threw, and the
// gateway sends the call again — answered the same grant, or the replay of
// the run — instead of a 503 and a lease-long 409. The built Worker in
// workerd, its TenantLedger wrapped to drop answers after applying them
// (tests/e2e/workers/lost-answer-entry.mjs).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, unleased, startOrigin, jsClientWorker, GATEWAY_MODULES, orderInit, orders, read, json, ACME } from "./harness.mjs";
import { fingerprint } from "../../client/rules/fingerprint.js";

const ROOT = new URL("../../", import.meta.url).pathname;
const LOSING = {
  modules: [{ type: "ESModule", path: `${ROOT}tests/e2e/workers/lost-answer-entry.mjs` }, ...GATEWAY_MODULES],
  durableObjects: { TENANT_LEDGER: { className: "LosingLedger", useSQLite: true } },
};
// A lease far longer than any test: a 409 or a takeover would show.
const VARS = { LEASE_SECONDS: "300", RETENTION_SECONDS: "3600", ORIGIN_TIMEOUT_SECONDS: "30" };

const charge = (key) => ({
  method: "POST",
  headers: { authorization: ACME, "content-type": "application/json", "idempotency-key": key },
  body: '{"amount":100}',
});
const lookup = async (gw, key) =>
  json(await gw.request(`/v1/idempotency-keys/${encodeURIComponent(key)}`, { headers: { authorization: ACME } }));

let origin;
let proxy;
before(async () => {
  origin = await startOrigin(() => ({ status: 201, headers: { "content-type": "text/plain" }, body: "charged" }));
  proxy = await startGateway({
    vars: { ...VARS, ORIGIN_URL: origin.url, FAILURE_POLICY: "open" },
    gateway: LOSING,
    // The npm package's LedgerClient, bound to the same losing objects.
    workers: [jsClientWorker("js-client", { className: "LosingLedger", scriptName: "gateway", useSQLite: true })],
  });
});
after(async () => {
  await proxy?.dispose();
  await origin?.close();
});

test("proxy mode: a claim whose answer is lost is sent again and granted: one origin call, 201, no 409", async () => {
  const key = "lose-once-proxy";
  const started = Date.now();
  const first = await read(await proxy.request("/charges", charge(key)));
  assert.equal(first.status, 201, first.text);
  assert.equal(first.text, "charged");
  assert.ok(Date.now() - started < 60_000, "answered well inside the lease, not after it");
  assert.equal(origin.requests.filter((r) => r.headers["idempotency-key"] === key).length, 1, "the origin ran once");
  const record = await lookup(proxy, key);
  assert.equal(record.json.state, "completed");
  assert.equal(record.json.generation, 1, "the first grant ran: no takeover");
  const again = await read(await proxy.request("/charges", charge(key)));
  assert.equal(again.status, 201);
  assert.equal(again.headers["idempotent-replayed"], "true");
  assert.equal(origin.requests.filter((r) => r.headers["idempotency-key"] === key).length, 1);
  assert.ok(proxy.events("idempotency.ledger_answer_lost").some((e) => e.call === "/rpc/v1/claim"), "the gateway logs the lost answer");
  assert.ok(proxy.events("idempotency.claim_repeated").length >= 1, "the object logs the repeated grant");
});

test("proxy mode, FAILURE_POLICY=open: a claim whose answers are always lost is 503 and never runs unprotected", async () => {
  const key = "lose-always-proxy";
  const lost = () => proxy.events("idempotency.ledger_answer_lost").filter((e) => e.call === "/rpc/v1/claim").length;
  const before = lost();
  const r = await json(await proxy.request("/charges", charge(key)));
  assert.equal(r.status, 503);
  assert.equal(lost() - before, 2, "sent again twice before giving up");
  const record = await lookup(proxy, key);
  assert.equal(record.json.state, "in_flight");
  assert.equal(record.json.generation, 1, "the repeats took nothing over");
  assert.match(r.json.type, /idempotency-store-unavailable$/);
  assert.equal(origin.requests.filter((q) => q.headers["idempotency-key"] === key).length, 0, "the origin was not called");
  assert.equal(proxy.events("idempotency.unprotected").length, 0);
});

test("embedded mode: an execute whose answer is lost is sent again: 201 with one order, no 409", async () => {
  const gw = await startGateway({ vars: VARS, gateway: LOSING });
  try {
    const before = (await orders(gw)).length;
    const first = await json(await gw.request("/v1/orders", orderInit({ key: "lose-once-embedded" })));
    assert.equal(first.status, 201, JSON.stringify(first.json));
    assert.equal((await orders(gw)).length, before + 1, "one order");
    const again = await json(await gw.request("/v1/orders", orderInit({ key: "lose-once-embedded" })));
    assert.equal(again.status, 201);
    assert.equal(again.json.id, first.json.id, "the same order");
    assert.equal((await orders(gw)).length, before + 1);
  } finally { await gw.dispose(); }
});

test("embedded mode, over the byte quota: an execute whose answer is lost is answered its own run again, not the tombstone's 500 (issue 44, item 7)", async () => {
  // MAX_DB_BYTES_PER_OBJECT at its minimum: the order is inserted and its
  // record completes, but the response is kept only as a tombstone.
  const gw = await startGateway({ vars: { ...VARS, MAX_DB_BYTES_PER_OBJECT: "65536" }, gateway: LOSING });
  try {
    const before = (await orders(gw)).length;
    const first = await json(await gw.request("/v1/orders", orderInit({ key: "lose-once-quota" })));
    assert.equal(first.status, 201, JSON.stringify(first.json));
    assert.match(first.json.id, /^ord_/, "the order the run created, answered again from the object's memory");
    assert.equal((await orders(gw)).length, before + 1, "one order");
    assert.ok(gw.events("idempotency.ledger_answer_lost").some((e) => e.call === "/rpc/v1/execute"), "the answer was lost and the execute sent again");
    assert.ok(gw.events("idempotency.quota_tombstone").length >= 1 || (await json(await gw.request("/v1/idempotency-keys/lose-once-quota", { headers: { authorization: ACME } }))).json.retained === false, "kept only as a tombstone");
    // A client's own retry is not that attempt: it gets the tombstone's replay, and no second order.
    const retry = await json(await gw.request("/v1/orders", orderInit({ key: "lose-once-quota" })));
    assert.equal(retry.status, 500, JSON.stringify(retry.json));
    assert.match(retry.json.type, /idempotency-response-not-retained$/);
    assert.equal((await orders(gw)).length, before + 1);
  } finally { await gw.dispose(); }
});

test("RPC claim: the same attempt is answered its grant; another attempt meets the lease; a hostile one is refused and changes nothing", async () => {
  const fp = await fingerprint({ method: "POST", target: "/x", headers: new Headers(), fingerprintHeaders: [], body: new Uint8Array() });
  const stub = await proxy.ledger("acme");
  const claim = async (body) => {
    const r = await stub.fetch("https://ledger/rpc/v1/claim", { method: "POST", body: JSON.stringify(body) });
    return { status: r.status, json: await r.json() };
  };
  const first = await claim({ key: "rpc-attempt", fingerprint: fp, attempt: "a-1" });
  assert.deepEqual(unleased(first.json), { outcome: "claimed", generation: 1, takeover: false });
  const lease = (await lookup(proxy, "rpc-attempt")).json.lease_expires_at;
  const repeat = await claim({ key: "rpc-attempt", fingerprint: fp, attempt: "a-1" });
  assert.deepEqual(repeat.json, first.json, "the same grant");
  assert.equal((await lookup(proxy, "rpc-attempt")).json.lease_expires_at, lease, "the lease is not extended");
  assert.equal((await claim({ key: "rpc-attempt", fingerprint: fp, attempt: "a-2" })).json.outcome, "in_flight");
  assert.equal((await claim({ key: "rpc-attempt", fingerprint: fp })).json.outcome, "in_flight");
  for (const attempt of ["", "a".repeat(65), "a b", "a/../b", "é", 7, {}]) {
    const r = await claim({ key: "rpc-hostile", fingerprint: fp, attempt });
    assert.equal(r.status, 400, JSON.stringify(attempt));
    assert.match(r.json.type, /invalid-rpc$/);
  }
  assert.equal((await lookup(proxy, "rpc-hostile")).status, 404, "nothing was claimed");
});

test("JS LedgerClient: a claim that names its attempt is sent again when its answer is lost; an unnamed one is not", async () => {
  const js = await proxy.mf.getWorker("js-client");
  const call = async (op, payload) =>
    (await js.fetch(`https://js/raw/${op}`, { method: "POST", headers: { "x-tenant": "js-tenant" }, body: JSON.stringify(payload) })).json();
  const request = { method: "POST", target: "/payments", headers: { "content-type": "application/json" }, body: '{"amount":5}' };
  assert.deepEqual(
    unleased(await call("claim", { key: "lose-once-js", request, attempt: crypto.randomUUID() })),
    { outcome: "claimed", generation: 1, takeover: false },
  );
  const unnamed = await call("claim", { key: "lose-once-js-unnamed", request });
  assert.equal(unnamed.status, null, JSON.stringify(unnamed));
  assert.match(unnamed.error, /ledger unreachable/);
  // It was granted all the same: the key now waits out its lease.
  assert.equal((await call("claim", { key: "lose-once-js-unnamed", request })).outcome, "in_flight");
});
