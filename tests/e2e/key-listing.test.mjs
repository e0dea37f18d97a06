// The key listing on the wire (docs/contract.md §2.7): GET /v1/idempotency-keys
// through the built gateway, on real SQLite-backed Durable Objects — pages
// that join without a duplicate or a gap while orders keep arriving, state
// filters and their order, each key as the lookup shows it, and bad
// parameters refused with nothing changed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, orderInit, read, json, slug, ACME, GLOBEX } from "./harness.mjs";
import { fingerprint } from "../../client/index.js";

let gw;
after(async () => { await gw?.dispose(); });

const get = (path, auth = ACME) => gw.request(path, { headers: { authorization: auth } });
const order = async (key) => assert.equal((await read(await gw.request("/v1/orders", orderInit({ key })))).status, 201);

/** Every page of a listing (`query` without the cursor), with a hook run before each next page. */
async function walk(query, between = async () => {}, auth = ACME) {
  const pages = [];
  let cursor = null;
  do {
    const sep = query ? "&" : "";
    const r = await json(await get(`/v1/idempotency-keys?${query}${cursor ? `${sep}cursor=${cursor}` : ""}`, auth));
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.deepEqual(Object.keys(r.json).sort(), ["keys", "next_cursor"]);
    pages.push(r.json.keys);
    cursor = r.json.next_cursor;
    if (cursor !== null) {
      assert.match(cursor, /^[A-Za-z0-9_-]+$/);
      await between();
    }
    assert.ok(pages.length < 500, "the walk ends");
  } while (cursor !== null);
  return pages;
}

/** RPC on acme's object, for the states the orders app never leaves a key in. */
async function rpc(route, call) {
  const stub = await gw.ledger("acme");
  const r = await stub.fetch(`https://ledger/rpc/v1/${route}`, { method: "POST", body: JSON.stringify(call) });
  return r.json();
}

const initial = [];
before(async () => {
  gw = await startGateway();
  // 30 orders (completed), 6 keys in flight, 4 released, one after another.
  const fp = await fingerprint({ method: "POST", target: "/v1/orders", headers: {}, body: new TextEncoder().encode("x") });
  for (let i = 0; i < 40; i++) {
    const key = `list-${String(i).padStart(2, "0")}`;
    initial.push(key);
    if (i % 10 === 3 || i % 10 === 7) {
      assert.equal((await rpc("claim", { key, fingerprint: fp })).outcome, "claimed");
    } else if (i % 10 === 5) {
      await rpc("claim", { key, fingerprint: fp });
      assert.equal((await rpc("release", { key, generation: 1 })).outcome, "released");
    } else {
      await order(key);
    }
  }
});

test("every key is listed once, newest first, each exactly as its lookup shows it", async () => {
  // A replay answered by the gateway's replay cache is counted before the listing reads.
  await order("list-00");
  await order("list-00");
  const pages = await walk("limit=7");
  assert.ok(pages.every((p) => p.length <= 7));
  const keys = pages.flat();
  assert.deepEqual(keys.map((k) => k.key), [...initial].reverse());
  for (const k of keys) {
    const looked = await json(await get(`/v1/idempotency-keys/${k.key}`));
    assert.deepEqual(k, looked.json, k.key);
  }
  assert.equal(keys.find((k) => k.key === "list-00").replays, 2);
  const created = keys.map((k) => Date.parse(k.created_at));
  assert.deepEqual(created, [...created].sort((a, b) => b - a), "newest first");
  // Another tenant sees none of them.
  assert.deepEqual((await walk("", undefined, GLOBEX)).flat(), []);
});

test("a state filter lists that state only: in flight oldest first, completed and released newest first", async () => {
  const inFlight = (await walk("state=in_flight&limit=3")).flat();
  assert.deepEqual(inFlight.map((k) => k.key), initial.filter((_, i) => i % 10 === 3 || i % 10 === 7), "oldest first: the stuck ones first");
  assert.ok(inFlight.every((k) => k.state === "in_flight" && k.lease_expires_at !== null));
  const released = (await walk("state=released&limit=2")).flat();
  assert.deepEqual(released.map((k) => k.key), initial.filter((_, i) => i % 10 === 5).reverse());
  const completed = await walk("state=completed");
  assert.equal(completed.flat().length, 28);
  assert.ok(completed.flat().every((k) => k.state === "completed" && k.response_status === 201));
});

test("pages neither repeat nor skip a key while new orders arrive", async () => {
  let n = 0;
  const arriving = async () => { for (let i = 0; i < 3; i++) await order(`arrived-${n++}`); };
  const newestFirst = (await walk("limit=5", arriving)).flat().map((k) => k.key);
  assert.equal(new Set(newestFirst).size, newestFirst.length, "no key twice");
  assert.ok(n > 0);
  assert.deepEqual(newestFirst, [...initial].reverse(), "every key that was there, in order, and none that arrived behind the cursor");
  // Oldest first, the keys that arrive in flight come after the cursor: each is reached once.
  const fp = await fingerprint({ method: "POST", target: "/v1/orders", headers: {}, body: new TextEncoder().encode("late") });
  let late = 0;
  const claimLate = async () => { if (late < 6) assert.equal((await rpc("claim", { key: `late-${late++}`, fingerprint: fp })).outcome, "claimed"); };
  const oldestFirst = (await walk("state=in_flight&limit=2", claimLate)).flat().map((k) => k.key);
  assert.deepEqual(oldestFirst, [...initial.filter((_, i) => i % 10 === 3 || i % 10 === 7), ...Array.from({ length: late }, (_, i) => `late-${i}`)]);
});

test("bad parameters are 400 invalid-query, final, and change nothing", async () => {
  const statsBefore = (await json(await get("/v1/idempotency/stats"))).json;
  const first = (await json(await get("/v1/idempotency-keys?limit=2"))).json;
  const cursor = first.next_cursor;
  const edited = cursor.slice(0, 5) + (cursor[5] === "A" ? "B" : "A") + cursor.slice(6);
  for (const query of [
    "state=done", "state=", "limit=0", "limit=101", "limit=abc", "limit=2&limit=2", "state=completed&state=released",
    "page=2", "cursor=", "cursor=nope", `cursor=${edited}`, `cursor=${cursor.slice(0, -3)}`,
    `state=completed&cursor=${cursor}`, `state=in_flight&cursor=${cursor}`,
  ]) {
    const r = await json(await get(`/v1/idempotency-keys?${query}`));
    assert.equal(r.status, 400, query);
    assert.equal(slug(r.json), "invalid-query", query);
    assert.equal(r.headers["x-should-retry"], "false", query);
    assert.equal(r.headers["content-type"], "application/problem+json");
  }
  assert.equal((await read(await gw.request("/v1/idempotency-keys"))).status, 401, "the token is required");
  const statsAfter = (await json(await get("/v1/idempotency/stats"))).json;
  for (const counter of ["records", "claims", "replays", "in_use", "reused", "takeovers", "fenced_out", "swept"]) {
    assert.equal(statsAfter[counter], statsBefore[counter], counter);
  }
  // The cursor still continues its own listing.
  const next = await json(await get(`/v1/idempotency-keys?limit=2&cursor=${cursor}`));
  assert.equal(next.status, 200);
  assert.notDeepEqual(next.json.keys.map((k) => k.key), first.keys.map((k) => k.key));
});

test("in a tenant holding 500 completed keys, the first in-flight page holds the key in flight (issue 35)", async () => {
  // globex: 500 completed orders, then one key claimed and held in flight.
  for (let from = 0; from < 500; from += 25) {
    const batch = Array.from({ length: 25 }, (_, j) =>
      gw.request("/v1/orders", orderInit({ key: `busy-${String(from + j).padStart(3, "0")}`, auth: GLOBEX })).then(read));
    for (const r of await Promise.all(batch)) assert.equal(r.status, 201);
  }
  const fp = await fingerprint({ method: "POST", target: "/v1/orders", headers: {}, body: new TextEncoder().encode("held") });
  const stub = await gw.ledger("globex");
  const claim = await (await stub.fetch("https://ledger/rpc/v1/claim", { method: "POST", body: JSON.stringify({ key: "busy-held", fingerprint: fp }) })).json();
  assert.equal(claim.outcome, "claimed");
  const stats = (await json(await get("/v1/idempotency/stats", GLOBEX))).json;
  assert.deepEqual([stats.completed, stats.in_flight], [500, 1]);
  const first = await json(await get("/v1/idempotency-keys?state=in_flight&limit=20", GLOBEX));
  assert.equal(first.status, 200);
  assert.deepEqual(first.json.keys.map((k) => k.key), ["busy-held"]);
  assert.equal(first.json.next_cursor, null, "the walk is done: no completed key stands before it");
  // A page of one, too.
  const one = await json(await get("/v1/idempotency-keys?state=in_flight&limit=1", GLOBEX));
  assert.deepEqual([one.json.keys.map((k) => k.key), one.json.next_cursor], [["busy-held"], null]);
});
