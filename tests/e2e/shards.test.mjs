// A tenant bigger than one object: key-hash sharding (TENANT_SHARDS) in
// proxy mode and over JS RPC, resharding under live traffic, the byte quota
// (MAX_DB_BYTES_PER_OBJECT). Real origin, real TenantLedger objects.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  startGateway, unleased, startOrigin, deferred, read, json, slug, orderInit, wranglerVars, eventually, rpcCaller,
  ROOT, ACME, GLOBEX, DEMO_TOKENS, GATEWAY_MODULES,
} from "./harness.mjs";
import { shardOf, shardObjectName, fingerprint } from "../../client/index.js";

const post = (key, headers = {}) => ({
  method: "POST",
  headers: { authorization: ACME, "content-type": "text/plain", "idempotency-key": key, ...headers },
  body: `charge ${key}`,
});
const stats = async (request) => (await json(await request("/v1/idempotency/stats", { headers: { authorization: ACME } }))).json;
/**
 * The record `name`'s object answers for `key`. While the tenant is resharded a current-layout object
 * asks the previous layout for a key it does not hold; `previous` (that layout's object count) says the
 * caller asked it already, so the answer is the object's own record.
 */
const lookupAt = async (gw, name, key, previous) => {
  const stub = await gw.ledger(name);
  const headers = previous === undefined ? {} : { "ledger-previous-asked": String(previous) };
  const r = await stub.fetch("https://l/rpc/v1/lookup", { method: "POST", headers, body: JSON.stringify({ key }) });
  return (await r.json()).record;
};
/** Every page of the gateway's key listing (`query` without the cursor), with a hook run before each next page. */
async function listAll(request, query = "", between = async () => {}) {
  const pages = [];
  let cursor = null;
  do {
    const sep = query && cursor ? "&" : "";
    const r = await json(await request(`/v1/idempotency-keys?${query}${cursor ? `${sep}cursor=${cursor}` : ""}`, { headers: { authorization: ACME } }));
    assert.equal(r.status, 200, JSON.stringify(r.json));
    pages.push(r.json.keys);
    cursor = r.json.next_cursor;
    if (cursor !== null) await between();
    assert.ok(pages.length < 500, "the walk ends");
  } while (cursor !== null);
  return pages;
}
/** Every key one object holds (RPC list, every page), with its sweep_at. */
async function heldBy(gw, name, state) {
  const stub = await gw.ledger(name);
  const out = [];
  let after = null;
  do {
    const r = await (await stub.fetch("https://l/rpc/v1/list", { method: "POST", body: JSON.stringify({ state, limit: 100, ...(after ? { after } : {}) }) })).json();
    out.push(...r.keys);
    after = r.next;
  } while (after !== null);
  return out;
}
/** An origin that answers each key's run with its own body and counts runs per key. */
async function countingOrigin(hold = () => null) {
  const runs = new Map();
  const origin = await startOrigin(async (req) => {
    const key = req.headers["idempotency-key"];
    runs.set(key, (runs.get(key) ?? 0) + 1);
    await hold(key);
    return { status: 201, headers: { "content-type": "text/plain" }, body: `ran ${key} #${runs.get(key)}` };
  });
  return { origin, runs };
}

test("a sharded tenant: keys spread over its objects, every guarantee holds, stats sum, introspection routes by key", async () => {
  const held = deferred();
  const { origin, runs } = await countingOrigin((key) => (key === "busy" ? held.promise : null));
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, TENANT_SHARDS: '{"acme": 4}' } });
  try {
    const keys = Array.from({ length: 40 }, (_, i) => `sharded-${i}`);
    for (const key of keys) assert.equal((await read(await gw.request("/charges", post(key)))).status, 201);
    for (const key of keys.slice(0, 10)) {
      const replay = await read(await gw.request("/charges", post(key)));
      assert.equal(replay.headers["idempotent-replayed"], "true");
      assert.equal(replay.text, `ran ${key} #1`);
    }
    // Each key is in exactly the object the layout names, and nowhere else.
    const perShard = [0, 0, 0, 0];
    for (const key of keys) {
      const index = await shardOf(key, 4);
      perShard[index] += 1;
      assert.equal((await lookupAt(gw, shardObjectName("acme", index, 4), key))?.state, "completed");
      assert.equal(await lookupAt(gw, shardObjectName("acme", (index + 1) % 4, 4), key), null);
      assert.equal(await lookupAt(gw, "acme", key), null, "the unsharded object holds nothing");
    }
    assert.ok(perShard.every((n) => n > 0), `every shard holds keys: ${perShard}`);
    // Introspection finds any key; stats are the sum over the four objects.
    assert.equal((await json(await gw.request("/v1/idempotency-keys/sharded-7", { headers: { authorization: ACME } }))).json.state, "completed");
    const s = await stats(gw.request);
    assert.equal(s.completed, 40);
    assert.equal(s.replays, 10);
    assert.ok(s.db_bytes > 0);
    // The trend is summed minute by minute over the four objects.
    assert.equal(s.trend.length, 60);
    assert.equal(s.trend.reduce((n, m) => n + m.claims, 0), s.claims);
    assert.equal(s.trend.reduce((n, m) => n + m.replays, 0), 10);
    assert.equal(s.limits.max_keys, Number(wranglerVars().MAX_KEYS_PER_TENANT ?? 1_000_000));
    // 409, 422 and waiting on a sharded key.
    const first = gw.request("/charges", post("busy")).then(read);
    await origin.waitForRequests(41);
    assert.equal((await read(await gw.request("/charges", post("busy")))).status, 409);
    const waiter = gw.request("/charges", post("busy", { prefer: "wait=10" })).then(read);
    await eventually(async () => (await stats(gw.request)).waiting === 1);
    held.resolve();
    assert.equal((await first).status, 201);
    assert.equal((await waiter).headers["idempotent-replayed"], "true");
    const reused = await json(await gw.request("/charges", { ...post("sharded-1"), body: "other" }));
    assert.equal(reused.status, 422);
    for (const [key, n] of runs) assert.equal(n, 1, `${key} ran once`);
  } finally { held.resolve(); await gw.dispose(); await origin.close(); }
});

test("sharding an embedded tenant is refused loudly; bad TENANT_SHARDS is misconfigured", async () => {
  for (const vars of [{ TENANT_SHARDS: '{"acme": 2}' }, { TENANT_SHARDS: '{"acme": 0}' }, { TENANT_SHARDS: "eight" }]) {
    const gw = await startGateway({ vars });
    try {
      const r = await json(await gw.request("/v1/orders", orderInit({ key: "emb-1" })));
      assert.equal(r.status, 500, JSON.stringify(vars));
      assert.equal(slug(r.json), "misconfigured");
      assert.match(r.json.detail, /TENANT_SHARDS/);
      assert.ok(gw.events("idempotency.misconfigured").length >= 1);
    } finally { await gw.dispose(); }
  }
});

test("raising a tenant's shard count under live traffic never runs a key twice; completed keys still replay", async () => {
  const dir = mkdtempSync(join(tmpdir(), "reshard-"));
  const held = deferred();
  const { origin, runs } = await countingOrigin((key) => (key === "old-busy" ? held.promise : null));
  try {
    // Before: one object per tenant. Ten keys complete; one stays in flight.
    const before = await startGateway({ vars: { ORIGIN_URL: origin.url }, shared: { resourcePersistencePath: dir } });
    const old = Array.from({ length: 10 }, (_, i) => `old-${i}`);
    try {
      for (const key of old) assert.equal((await read(await before.request("/charges", post(key)))).status, 201);
      before.request("/charges", post("old-busy")).catch(() => {});
      await origin.waitForRequests(11);
    } finally { await before.dispose(); }

    // After: four shards, the single object as the previous layout. A
    // gateway still on the old configuration (a deploy rolling out) sends
    // traffic to the same objects at the same time.
    const oldGateway = {
      name: "old-gateway",
      modulesRoot: ROOT,
      modules: GATEWAY_MODULES,
      compatibilityDate: "2026-11-01",
      bindings: { ...wranglerVars(), ORIGIN_URL: origin.url, API_TOKENS: JSON.stringify(DEMO_TOKENS) },
      durableObjects: { TENANT_LEDGER: { className: "TenantLedger", scriptName: "gateway" } },
    };
    const after = await startGateway({
      vars: { ORIGIN_URL: origin.url, TENANT_SHARDS: '{"acme": {"shards": 4, "previous": 1}}' },
      shared: { resourcePersistencePath: dir },
      workers: [oldGateway],
    });
    try {
      const stale = await after.mf.getWorker("old-gateway");
      const viaOld = (path, init) => stale.fetch(new URL(path, "http://old.test"), init);
      const fresh = Array.from({ length: 20 }, (_, i) => `new-${i}`);
      // Live traffic: every key, several times, through both gateways at once.
      const sends = [];
      for (const key of [...old, ...fresh]) {
        for (let i = 0; i < 2; i++) {
          sends.push(after.request("/charges", post(key)).then(read).then((r) => ({ key, via: "new", ...r })));
          sends.push(viaOld("/charges", post(key)).then(read).then((r) => ({ key, via: "old", ...r })));
        }
      }
      const answers = await Promise.all(sends);
      for (const a of answers) {
        if (a.via === "new") {
          assert.ok([201, 409].includes(a.status), `${a.key} via the new gateway: ${a.status}`);
        } else {
          // The old configuration asks only the single object: it answers
          // for its own keys and sends new ones elsewhere (421).
          if (a.key.startsWith("new-")) {
            assert.equal(a.status, 421, `${a.key} via the old gateway`);
            assert.match(JSON.parse(a.text).type, /idempotency-key-moved$/);
          } else {
            assert.equal(a.status, 201, `${a.key} via the old gateway`);
            assert.equal(a.headers["idempotent-replayed"], "true");
          }
        }
      }
      for (const key of [...old, ...fresh]) {
        assert.equal(runs.get(key), 1, `${key} ran exactly once`);
        const replay = await read(await after.request("/charges", post(key)));
        assert.equal(replay.headers["idempotent-replayed"], "true", key);
        assert.equal(replay.text, `ran ${key} #1`);
      }
      // Old keys stay in the previous layout; new keys live in the new one only.
      for (const key of old) assert.equal((await lookupAt(after, "acme", key))?.state, "completed");
      for (const key of fresh) {
        assert.equal(await lookupAt(after, "acme", key), null, `${key} was never created in the retired object`);
        const home = shardObjectName("acme", await shardOf(key, 4), 4);
        assert.equal((await lookupAt(after, home, key))?.state, "completed");
      }
      // The key in flight in the previous layout is still its owner's: 409, no second run.
      assert.equal((await read(await after.request("/charges", post("old-busy")))).status, 409);
      assert.equal(runs.get("old-busy"), 1);
      const s = await stats(after.request);
      assert.equal(s.completed, 30);
      assert.equal(s.in_flight, 1);
      // The listing covers both layouts while resharding: every key once.
      const listed = (await listAll(after.request, "limit=6")).flat().map((k) => k.key);
      assert.deepEqual([...listed].sort(), [...old, ...fresh, "old-busy"].sort());
      assert.deepEqual((await listAll(after.request, "state=in_flight")).flat().map((k) => k.key), ["old-busy"]);
    } finally { await after.dispose(); }
  } finally { held.resolve(); await origin.close(); rmSync(dir, { recursive: true, force: true }); }
});

test("a sharded tenant's keys are listed in one order over its objects, by the gateway and by JS RPC, while keys keep arriving", async () => {
  const tsLike = rpcCaller();
  const { origin } = await countingOrigin();
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, TENANT_SHARDS: '{"acme": 4}' }, workers: [tsLike] });
  try {
    const caller = await gw.mf.getWorker("rpc-caller");
    const rpc = async (op, ...args) => (await caller.fetch("https://c/", { method: "POST", body: JSON.stringify({ op, args }) })).json();
    const keys = Array.from({ length: 40 }, (_, i) => `listed-${String(i).padStart(2, "0")}`);
    for (const key of keys) assert.equal((await read(await gw.request("/charges", post(key)))).status, 201);
    const fp = await fingerprint({ method: "POST", target: "/charges", headers: {}, body: new TextEncoder().encode("x") });
    const busy = Array.from({ length: 6 }, (_, i) => `busy-${i}`);
    for (const key of busy) assert.equal((await rpc("claim", "acme", { key, fingerprint: fp })).outcome, "claimed");
    // The one order: every object's keys sorted by (sweep_at, key).
    const objects = [0, 1, 2, 3].map((i) => shardObjectName("acme", i, 4));
    const everyKey = async (state, newestFirst) => {
      const all = (await Promise.all(objects.map((name) => heldBy(gw, name, state)))).flat();
      const order = (a, b) => (a.sweep_at - b.sweep_at) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
      return all.sort((a, b) => (newestFirst ? order(b, a) : order(a, b))).map((k) => k.key);
    };
    const expected = await everyKey(undefined, true);
    assert.deepEqual([...expected].sort(), [...keys, ...busy].sort());
    // Pages of 7 while three new keys arrive before each next page: no key twice, none missed.
    let n = 0;
    const arriving = async () => { for (let i = 0; i < 3; i++) await read(await gw.request("/charges", post(`arrived-${n++}`))); };
    const pages = await listAll(gw.request, "limit=7", arriving);
    assert.ok(pages.every((p) => p.length <= 7));
    assert.ok(n > 0);
    assert.deepEqual(pages.flat().map((k) => k.key), expected);
    const listedBusy = (await listAll(gw.request, "state=in_flight&limit=2")).flat();
    assert.deepEqual(listedBusy.map((k) => k.key), await everyKey("in_flight", false));
    assert.deepEqual(listedBusy.map((k) => k.key).sort(), busy);
    const completed = (await listAll(gw.request, "state=completed&limit=9")).flat().map((k) => k.key);
    assert.deepEqual(completed, await everyKey("completed", true));
    // TenantLedgers.list (LedgerService) merges the same way.
    const viaRpc = [];
    let after;
    do {
      const page = await rpc("list", "acme", { limit: 11, ...(after ? { after } : {}) });
      assert.ok(Array.isArray(page.keys), JSON.stringify(page));
      viaRpc.push(...page.keys.map((k) => k.key));
      after = page.next;
    } while (after !== null);
    assert.deepEqual(viaRpc, await everyKey(undefined, true));
  } finally { await gw.dispose(); await origin.close(); }
});

test("JS RPC routes a sharded tenant's keys like the gateway (claim, complete, lookup, stats)", async () => {
  const tsLike = rpcCaller();
  const { origin } = await countingOrigin();
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, TENANT_SHARDS: '{"acme": 4}' }, workers: [tsLike] });
  try {
    const caller = await gw.mf.getWorker("rpc-caller");
    const rpc = async (op, ...args) => (await caller.fetch("https://c/", { method: "POST", body: JSON.stringify({ op, args }) })).json();
    const fp = await fingerprint({ method: "POST", target: "/charges", headers: { "content-type": "text/plain" }, body: new TextEncoder().encode("charge rpc-1") });
    const claim = await rpc("claim", "acme", { key: "rpc-1", fingerprint: fp });
    assert.equal(claim.outcome, "claimed", JSON.stringify(claim));
    const stored = { status: 201, headers: [["content-type", "text/plain"]], body: Buffer.from("via rpc").toString("base64") };
    assert.equal((await rpc("complete", "acme", { key: "rpc-1", generation: claim.generation, response: stored })).outcome, "stored");
    const home = shardObjectName("acme", await shardOf("rpc-1", 4), 4);
    assert.equal((await lookupAt(gw, home, "rpc-1"))?.state, "completed");
    assert.equal((await rpc("lookup", "acme", "rpc-1")).state, "completed");
    // The gateway finds the same object: the key completed over RPC replays through it.
    const viaGateway = await read(await gw.request("/charges", post("rpc-1")));
    assert.equal(viaGateway.headers["idempotent-replayed"], "true");
    assert.equal(viaGateway.text, "via rpc");
    const summed = await rpc("stats", "acme");
    assert.equal(summed.completed, 1);
    assert.equal(summed.trend.length, 60, "TenantLedgers sums the trend minute by minute");
    assert.equal(summed.trend.reduce((n, m) => n + m.claims, 0), 1);
    assert.match((await rpc("execute", "acme", {})).error, /sharded tenant/);
  } finally { await gw.dispose(); await origin.close(); }
});

test("the byte quota: new keys get 429 once an object's database reaches MAX_DB_BYTES_PER_OBJECT; known keys still replay", async () => {
  const gw = await startGateway({ vars: { MAX_DB_BYTES_PER_OBJECT: "65536" } });
  try {
    let full = null;
    for (let i = 0; i < 2_000 && !full; i++) {
      const r = await json(await gw.request("/v1/orders", orderInit({ key: `quota-${i}`, body: JSON.stringify({ sku: "Q".repeat(64), quantity: 1 }) })));
      if (r.status === 429) full = { i, r };
      else assert.equal(r.status, 201);
    }
    assert.ok(full, "the byte quota refused a new key");
    assert.ok(full.i > 0);
    assert.equal(slug(full.r.json), "idempotency-ledger-full");
    assert.match(full.r.headers["retry-after"], /^[1-9][0-9]*$/);
    const replay = await read(await gw.request("/v1/orders", orderInit({ key: "quota-0", body: JSON.stringify({ sku: "Q".repeat(64), quantity: 1 }) })));
    assert.equal(replay.headers["idempotent-replayed"], "true", "a known key is still answered");
    assert.ok((await stats(gw.request)).db_bytes >= 65_536);
  } finally { await gw.dispose(); }
});

test("MAX_KEYS_PER_TENANT stays a tenant's quota when sharded: each object holds its share", async () => {
  const { origin } = await countingOrigin();
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, TENANT_SHARDS: '{"acme": 4}', MAX_KEYS_PER_TENANT: "8" } });
  try {
    const statuses = [];
    for (let i = 0; i < 40; i++) statuses.push((await read(await gw.request("/charges", post(`cap-${i}`)))).status);
    const created = statuses.filter((s) => s === 201).length;
    assert.ok(created <= 8 && created >= 2, `created ${created}`);
    assert.ok(statuses.every((s) => s === 201 || s === 429), JSON.stringify(statuses));
    assert.equal((await stats(gw.request)).records, created);
  } finally { await gw.dispose(); await origin.close(); }
});

test("JS RPC while resharding: complete and release land at the object that granted the key, previous layout or current", async () => {
  const dir = mkdtempSync(join(tmpdir(), "reshard-rpc-"));
  const caller = rpcCaller();
  const { origin } = await countingOrigin();
  const start = (vars) => startGateway({ vars: { ORIGIN_URL: origin.url, ...vars }, shared: { resourcePersistencePath: dir }, workers: [caller] });
  const rpcOf = async (gw) => {
    const worker = await gw.mf.getWorker("rpc-caller");
    return async (op, ...args) => (await worker.fetch("https://c/", { method: "POST", body: JSON.stringify({ op, args }) })).json();
  };
  const fp = await fingerprint({ method: "POST", target: "/charges", headers: {}, body: new TextEncoder().encode("x") });
  const stored = { status: 201, headers: [["content-type", "text/plain"]], body: Buffer.from("done").toString("base64") };
  try {
    // Before: one object. Two keys are granted there and stay in flight.
    const before = await start({});
    try {
      const rpc = await rpcOf(before);
      for (const key of ["granted-old-complete", "granted-old-release"]) {
        assert.deepEqual(unleased(await rpc("claim", "acme", { key, fingerprint: fp })), { outcome: "claimed", generation: 1, takeover: false }, key);
      }
      // The object writes its counts on its own timer; restart once it has.
      await eventually(async () => (await rpc("stats", "acme")).unwritten_counts === 0, { ms: 30_000 });
    } finally { await before.dispose(); }

    // After: four shards, the single object as the previous layout.
    const after = await start({ TENANT_SHARDS: '{"acme": {"shards": 4, "previous": 1}}' });
    try {
      const rpc = await rpcOf(after);
      const home = async (key) => shardObjectName("acme", await shardOf(key, 4), 4);
      for (const key of ["granted-new-complete", "granted-new-release"]) {
        assert.equal((await rpc("claim", "acme", { key, fingerprint: fp })).outcome, "claimed", key);
        assert.equal((await lookupAt(after, await home(key), key))?.state, "in_flight", `${key} was granted by the current layout`);
        assert.equal(await lookupAt(after, "acme", key), null, `${key} never entered the previous layout`);
      }
      // A wrong generation is fenced out by the key's holder: the previous
      // layout's object names the record it holds (the current's would say null).
      const stale = await rpc("complete", "acme", { key: "granted-old-complete", generation: 7, response: stored });
      assert.deepEqual(stale, { outcome: "fenced_out", current: { state: "in_flight", generation: 1 } });

      assert.deepEqual(await rpc("complete", "acme", { key: "granted-old-complete", generation: 1, response: stored }), { outcome: "stored" });
      assert.deepEqual(await rpc("release", "acme", { key: "granted-old-release", generation: 1 }), { outcome: "released" });
      assert.deepEqual(await rpc("complete", "acme", { key: "granted-new-complete", generation: 1, response: stored }), { outcome: "stored" });
      assert.deepEqual(await rpc("release", "acme", { key: "granted-new-release", generation: 1 }), { outcome: "released" });

      const where = { "granted-old-complete": "completed", "granted-old-release": "released" };
      for (const [key, state] of Object.entries(where)) {
        assert.equal((await lookupAt(after, "acme", key))?.state, state, `${key} settled in the previous layout`);
        assert.equal(await lookupAt(after, await home(key), key, 1), null, `${key} was not created in the current layout`);
        assert.equal((await lookupAt(after, await home(key), key))?.state, state, `${key} is looked up where it lives`);
        assert.equal((await rpc("lookup", "acme", key))?.state, state);
      }
      for (const [key, state] of Object.entries({ "granted-new-complete": "completed", "granted-new-release": "released" })) {
        assert.equal((await lookupAt(after, await home(key), key))?.state, state, `${key} settled in the current layout`);
        assert.equal(await lookupAt(after, "acme", key), null);
        assert.equal((await rpc("lookup", "acme", key))?.state, state);
      }
      // A key neither layout holds: the previous layout sends it on (421), the current one fences it out.
      assert.deepEqual(await rpc("release", "acme", { key: "never-claimed", generation: 1 }), { outcome: "fenced_out", current: null });
      const s = await rpc("stats", "acme");
      assert.equal(s.completed, 2, JSON.stringify(s));
      assert.equal(s.in_flight, 0);
      assert.equal(s.claims, 4);
    } finally { await after.dispose(); }
  } finally { await origin.close(); rmSync(dir, { recursive: true, force: true }); }
});

test("an object's role comes from the name it recorded, not from the runtime handing it over again", async () => {
  const dir = mkdtempSync(join(tmpdir(), "named-"));
  const { origin } = await countingOrigin();
  const vars = { ORIGIN_URL: origin.url, TENANT_SHARDS: '{"acme": {"shards": 4, "previous": 1}}' };
  const start = () => startGateway({ vars, shared: { resourcePersistencePath: dir } });
  const fp = await fingerprint({ method: "POST", target: "/charges", headers: {}, body: new TextEncoder().encode("x") });
  const claimAt = async (stub, key) => {
    const r = await stub.fetch("https://l/rpc/v1/claim", { method: "POST", body: JSON.stringify({ key, fingerprint: fp }) });
    return { status: r.status, body: await r.json() };
  };
  try {
    // The retired object "acme" is reached by name once: it records its name.
    const first = await start();
    let hexId;
    try {
      assert.equal((await read(await first.request("/charges", post("named-1")))).status, 201);
      const ns = await first.mf.getDurableObjectNamespace("TENANT_LEDGER");
      hexId = ns.idFromName("acme").toString();
    } finally { await first.dispose(); }

    const again = await start();
    try {
      const ns = await again.mf.getDurableObjectNamespace("TENANT_LEDGER");
      // Addressed by its id alone (no name from the runtime), it still knows
      // it is retired: a key it does not hold is 421, never claimed there.
      const moved = await claimAt(ns.get(ns.idFromString(hexId)), "never-here");
      assert.equal(moved.status, 421, JSON.stringify(moved.body));
      assert.match(moved.body.type, /idempotency-key-moved$/);
      // An object that never learned its name refuses keyed calls while
      // tenants are sharded: it cannot tell its role.
      const unnamed = await claimAt(ns.get(ns.newUniqueId()), "k");
      assert.equal(unnamed.status, 503, JSON.stringify(unnamed.body));
      assert.match(unnamed.body.type, /idempotency-store-unavailable$/);
    } finally { await again.dispose(); }
  } finally { await origin.close(); rmSync(dir, { recursive: true, force: true }); }
});

test("a TENANT_SHARDS change that would forget live keys is refused, never a second run", async () => {
  const dir = mkdtempSync(join(tmpdir(), "reshard-refused-"));
  const { origin, runs } = await countingOrigin();
  const start = (vars) => startGateway({ vars: { ORIGIN_URL: origin.url, ...vars }, shared: { resourcePersistencePath: dir } });
  const keys = ["live-0", "live-1", "live-2", "live-3"];
  try {
    // One object holds four completed keys.
    const one = await start({});
    try {
      for (const key of keys) assert.equal((await read(await one.request("/charges", post(key)))).status, 201);
    } finally { await one.dispose(); }

    // Four shards without "previous": the keys' old object would never be
    // asked, so every keyed request is refused loudly instead of running.
    const dropped = await start({ TENANT_SHARDS: '{"acme": 4}' });
    try {
      for (const key of [...keys, "brand-new"]) {
        const r = await json(await dropped.request("/charges", post(key)));
        assert.equal(r.status, 500, `${key}: ${r.text}`);
        assert.equal(slug(r.json), "misconfigured");
        assert.match(r.json.detail, /TENANT_SHARDS/);
      }
      assert.ok(dropped.events("idempotency.misconfigured").some((e) => e.variable === "TENANT_SHARDS"));
    } finally { await dropped.dispose(); }
    for (const key of keys) assert.equal(runs.get(key), 1, `${key} ran once`);

    // With "previous" the reshard is accepted: old keys replay, new keys run.
    const resharding = await start({ TENANT_SHARDS: '{"acme": {"shards": 4, "previous": 1}}' });
    try {
      for (const key of keys) {
        const r = await read(await resharding.request("/charges", post(key)));
        assert.deepEqual([r.status, r.headers["idempotent-replayed"]], [201, "true"], key);
      }
      assert.equal((await read(await resharding.request("/charges", post("after-reshard")))).status, 201);
    } finally { await resharding.dispose(); }

    // Dropping "previous" before its window has passed keeps the previous
    // layout in force (logged): old keys still replay, new keys run.
    const early = await start({ TENANT_SHARDS: '{"acme": 4}' });
    try {
      for (const key of keys) {
        const r = await read(await early.request("/charges", post(key)));
        assert.deepEqual([r.status, r.headers["idempotent-replayed"]], [201, "true"], key);
      }
      assert.equal((await read(await early.request("/charges", post("too-early")))).status, 201);
      assert.ok(early.events("idempotency.previous_kept").length > 0);
    } finally { await early.dispose(); }
    for (const key of keys) assert.equal(runs.get(key), 1, `${key} still ran once`);
    assert.equal(runs.get("too-early"), 1);
    assert.equal(runs.get("brand-new"), undefined);
  } finally { await origin.close(); rmSync(dir, { recursive: true, force: true }); }
});

test("a key kept longer than RETENTION_SECONDS keeps the previous layout in force until it expires: never a second run", async () => {
  const dir = mkdtempSync(join(tmpdir(), "reshard-long-"));
  const caller = rpcCaller();
  const { origin, runs } = await countingOrigin();
  // Small windows: retention 6 s, so a reshard's window is 6 + 2 + 1 + 1 = 10 s.
  const windows = { RETENTION_SECONDS: "6", LEASE_SECONDS: "2", ORIGIN_TIMEOUT_SECONDS: "1", SWEEP_INTERVAL_SECONDS: "1" };
  const start = (vars) => startGateway({ vars: { ORIGIN_URL: origin.url, ...windows, ...vars }, shared: { resourcePersistencePath: dir }, workers: [caller] });
  const globex = (key) => ({ ...post(key), headers: { ...post(key).headers, authorization: GLOBEX } });
  const YEAR = 31_536_000;
  try {
    // acme's key is completed over RPC with a year's retention (as the
    // middleware's retentionSeconds sends it); globex's with the configured one.
    const one = await start({});
    try {
      const worker = await one.mf.getWorker("rpc-caller");
      const rpc = async (op, ...args) => (await worker.fetch("https://c/", { method: "POST", body: JSON.stringify({ op, args }) })).json();
      const fp = await fingerprint({ method: "POST", target: "/charges", headers: { "content-type": "text/plain" }, body: new TextEncoder().encode("charge kept-a-year") });
      const claim = await rpc("claim", "acme", { key: "kept-a-year", fingerprint: fp, retention_seconds: YEAR });
      assert.equal(claim.outcome, "claimed", JSON.stringify(claim));
      const stored = { status: 201, headers: [["content-type", "text/plain"]], body: Buffer.from("ran once").toString("base64") };
      const done = await rpc("complete", "acme", { key: "kept-a-year", generation: claim.generation, response: stored, retention_seconds: YEAR });
      assert.deepEqual(done, { outcome: "stored" });
      assert.equal((await read(await one.request("/charges", globex("short-lived")))).status, 201);
    } finally { await one.dispose(); }

    const resharding = '{"acme": {"shards": 2, "previous": 1}, "globex": {"shards": 2, "previous": 1}}';
    const during = await start({ TENANT_SHARDS: resharding });
    try {
      const replay = await read(await during.request("/charges", post("kept-a-year")));
      assert.deepEqual([replay.status, replay.text, replay.headers["idempotent-replayed"]], [201, "ran once", "true"]);
      // A new key in each tenant: the current layout asks its registry, which records the reshard.
      assert.equal((await read(await during.request("/charges", post("during")))).status, 201);
      assert.equal((await read(await during.request("/charges", globex("during")))).status, 201);
    } finally { await during.dispose(); }

    // More than the window later.
    await new Promise((r) => setTimeout(r, 11_000));
    const after = await start({ TENANT_SHARDS: '{"acme": 2, "globex": 2}' });
    try {
      // globex's records expired with the window: previous may go.
      assert.equal((await read(await after.request("/charges", globex("after")))).status, 201);
      // acme's object still holds a key for a year: dropping previous keeps
      // the previous layout in force (logged), and the key replays.
      const r = await read(await after.request("/charges", post("kept-a-year")));
      assert.deepEqual([r.status, r.text, r.headers["idempotent-replayed"]], [201, "ran once", "true"]);
      assert.ok(after.events("idempotency.previous_kept").some((e) => /kept until/.test(e.reason ?? "")), JSON.stringify(after.events("idempotency.previous_kept")));
      // acme's new keys are served meanwhile.
      assert.equal((await read(await after.request("/charges", post("new-after")))).status, 201);
    } finally { await after.dispose(); }
    assert.equal(runs.get("kept-a-year"), undefined, "the origin never ran it");
    assert.equal(runs.get("new-after"), 1);

    // With previous named again the key still replays its one answer.
    const back = await start({ TENANT_SHARDS: resharding });
    try {
      const replay = await read(await back.request("/charges", post("kept-a-year")));
      assert.deepEqual([replay.status, replay.text, replay.headers["idempotent-replayed"]], [201, "ran once", "true"]);
    } finally { await back.dispose(); }
  } finally { await origin.close(); rmSync(dir, { recursive: true, force: true }); }
});

test("a claim granted under an accepted layout is completed or released while a refused layout is configured; restored, it replays, never a second run", async () => {
  const dir = mkdtempSync(join(tmpdir(), "reshard-settle-"));
  const { origin, runs } = await countingOrigin();
  const start = (vars) => startGateway({ vars: { ORIGIN_URL: origin.url, ...vars }, shared: { resourcePersistencePath: dir } });
  const resharding = '{"acme": {"shards": 4, "previous": 1}}';
  const home = async (key, n = 4) => shardObjectName("acme", await shardOf(key, n), n);
  const call = async (gw, key, op, body, n = 4) => {
    const stub = await gw.ledger(await home(key, n));
    const r = await stub.fetch(`https://l/rpc/v1/${op}`, { method: "POST", body: JSON.stringify({ key, ...body }) });
    return { status: r.status, json: await r.json() };
  };
  const fpOf = (key) => fingerprint({ method: "POST", target: "/charges", headers: post(key).headers, body: new TextEncoder().encode(`charge ${key}`) });
  const stored = { status: 201, headers: [["content-type", "text/plain"]], body: Buffer.from("charged once").toString("base64") };
  try {
    // Under the accepted reshard, two keys are granted in their current
    // objects; their runs are still at the origin when the ledger is redeployed.
    const accepted = await start({ TENANT_SHARDS: resharding });
    try {
      for (const key of ["settle-complete", "settle-release"]) {
        const claimed = await call(accepted, key, "claim", { fingerprint: await fpOf(key) });
        assert.deepEqual(unleased(claimed.json), { outcome: "claimed", generation: 1, takeover: false }, key);
      }
    } finally { await accepted.dispose(); }

    // A second reshard inside the first one's window: the registry refuses
    // the layout, new claims are 500 misconfigured, but the granted claims
    // (now in the previous layout) still settle.
    const dropped = await start({ TENANT_SHARDS: '{"acme": {"shards": 8, "previous": 4}}' });
    try {
      const fresh = await json(await dropped.request("/charges", post("settle-new")));
      assert.equal(fresh.status, 500, fresh.text);
      assert.equal(slug(fresh.json), "misconfigured");
      const completed = await call(dropped, "settle-complete", "complete", { generation: 1, response: stored });
      assert.deepEqual([completed.status, completed.json], [200, { outcome: "stored" }], JSON.stringify(completed.json));
      const released = await call(dropped, "settle-release", "release", { generation: 1 });
      assert.deepEqual([released.status, released.json], [200, { outcome: "released" }], JSON.stringify(released.json));
      // A new claim is still refused after them.
      const again = await call(dropped, "settle-other", "claim", { fingerprint: await fpOf("settle-other") }, 8);
      assert.equal(again.status, 500, JSON.stringify(again.json));
    } finally { await dropped.dispose(); }

    // The layout restored: the completed key replays; the origin never runs it.
    const restored = await start({ TENANT_SHARDS: resharding });
    try {
      const r = await read(await restored.request("/charges", post("settle-complete")));
      assert.deepEqual([r.status, r.headers["idempotent-replayed"], r.text], [201, "true", "charged once"]);
      assert.equal((await lookupAt(restored, await home("settle-release"), "settle-release"))?.state, "released");
    } finally { await restored.dispose(); }
    assert.equal(runs.get("settle-complete"), undefined, "never run a second time");
    assert.equal(runs.get("settle-new"), undefined);
  } finally { await origin.close(); rmSync(dir, { recursive: true, force: true }); }
});

test("a previous layout kept in force (a record kept past the window) serves new claims and the settlement of a claim already granted", async () => {
  const dir = mkdtempSync(join(tmpdir(), "reshard-held-settle-"));
  const { origin, runs } = await countingOrigin();
  // Small windows: retention 6 s, so a reshard's window is 6 + 2 + 1 + 1 = 10 s.
  const windows = { RETENTION_SECONDS: "6", LEASE_SECONDS: "2", ORIGIN_TIMEOUT_SECONDS: "1", SWEEP_INTERVAL_SECONDS: "1" };
  const start = (vars) => startGateway({ vars: { ORIGIN_URL: origin.url, ...windows, ...vars }, shared: { resourcePersistencePath: dir } });
  const YEAR = 31_536_000;
  const fpOf = (key) => fingerprint({ method: "POST", target: "/charges", headers: post(key).headers, body: new TextEncoder().encode(`charge ${key}`) });
  const stored = { status: 201, headers: [["content-type", "text/plain"]], body: Buffer.from("charged once").toString("base64") };
  const call = async (gw, name, op, body) => {
    const stub = await gw.ledger(name);
    const r = await stub.fetch(`https://l/rpc/v1/${op}`, { method: "POST", body: JSON.stringify(body) });
    return { status: r.status, json: await r.json() };
  };
  const home = async (key) => shardObjectName("acme", await shardOf(key, 2), 2);
  const resharding = '{"acme": {"shards": 2, "previous": 1}}';
  try {
    // The one object keeps a completed key for a year: dropping "previous"
    // will be held until it expires.
    const one = await start({});
    try {
      const claim = await call(one, "acme", "claim", { key: "kept-a-year", fingerprint: await fpOf("kept-a-year"), retention_seconds: YEAR });
      assert.equal(claim.json.outcome, "claimed", JSON.stringify(claim.json));
      assert.deepEqual((await call(one, "acme", "complete", { key: "kept-a-year", generation: 1, response: stored, retention_seconds: YEAR })).json, { outcome: "stored" });
    } finally { await one.dispose(); }

    // During the reshard a key is granted in its current object; its run
    // outlasts the window.
    const during = await start({ TENANT_SHARDS: resharding });
    try {
      const claim = await call(during, await home("held-run"), "claim", { key: "held-run", fingerprint: await fpOf("held-run"), retention_seconds: YEAR });
      assert.deepEqual(unleased(claim.json), { outcome: "claimed", generation: 1, takeover: false });
    } finally { await during.dispose(); }

    await new Promise((r) => setTimeout(r, 11_000));
    const after = await start({ TENANT_SHARDS: '{"acme": 2}' });
    try {
      const fresh = await read(await after.request("/charges", post("new-after")));
      assert.equal(fresh.status, 201, fresh.text);
      assert.ok(after.events("idempotency.previous_kept").some((e) => /kept until/.test(e.reason ?? "")), "the previous layout is kept");
      const completed = await call(after, await home("held-run"), "complete", { key: "held-run", generation: 1, response: stored, retention_seconds: YEAR });
      assert.deepEqual([completed.status, completed.json], [200, { outcome: "stored" }], JSON.stringify(completed.json));
    } finally { await after.dispose(); }

    const back = await start({ TENANT_SHARDS: resharding });
    try {
      const replay = await read(await back.request("/charges", post("held-run")));
      assert.deepEqual([replay.status, replay.headers["idempotent-replayed"], replay.text], [201, "true", "charged once"]);
    } finally { await back.dispose(); }
    assert.equal(runs.get("held-run"), undefined, "never run by the origin");
    assert.equal(runs.get("new-after"), 1);
  } finally { await origin.close(); rmSync(dir, { recursive: true, force: true }); }
});

test("a reshard after a lowered retention: a key granted under the longer one replays after previous is dropped, fresh keys are served (issue 33)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "reshard-lowered-"));
  const { origin, runs } = await countingOrigin();
  // The reshard's window under the lowered retention: 10 + 3 + 1 + 2 = 16 s.
  const windows = { LEASE_SECONDS: "3", ORIGIN_TIMEOUT_SECONDS: "1", SWEEP_INTERVAL_SECONDS: "2" };
  const start = (vars) => startGateway({ vars: { ORIGIN_URL: origin.url, ...windows, ...vars }, shared: { resourcePersistencePath: dir }, workers: [rpcCaller()] });
  try {
    // K completes under RETENTION_SECONDS=600.
    const long = await start({ RETENTION_SECONDS: "600" });
    try {
      assert.equal((await read(await long.request("/charges", post("K")))).status, 201);
    } finally { await long.dispose(); }

    // Retention lowered to 10 s with the reshard to 2 shards.
    const resharding = await start({ RETENTION_SECONDS: "10", TENANT_SHARDS: '{"acme": {"shards": 2, "previous": 1}}' });
    try {
      const replay = await read(await resharding.request("/charges", post("K")));
      assert.deepEqual([replay.status, replay.text, replay.headers["idempotent-replayed"]], [201, "ran K #1", "true"]);
      // A new key: its object asks the registry, which records the reshard.
      assert.equal((await read(await resharding.request("/charges", post("during")))).status, 201);
    } finally { await resharding.dispose(); }

    // "previous" dropped 18 s later: past the new window, well inside K's 600 s.
    await new Promise((r) => setTimeout(r, 18_000));
    const dropped = await start({ RETENTION_SECONDS: "10", TENANT_SHARDS: '{"acme": 2}' });
    try {
      const again = await read(await dropped.request("/charges", post("K")));
      assert.deepEqual([again.status, again.text, again.headers["idempotent-replayed"]], [201, "ran K #1", "true"], "K replays its one answer");
      // Fresh keys are served, not refused: the previous layout is kept in
      // force until K's record expires, and said so in the log.
      for (const key of ["fresh-0", "fresh-1", "fresh-2", "fresh-3"]) {
        const r = await read(await dropped.request("/charges", post(key)));
        assert.equal(r.status, 201, `${key}: ${r.text}`);
        assert.equal(r.headers["idempotent-replayed"], undefined, key);
        const replay = await read(await dropped.request("/charges", post(key)));
        assert.equal(replay.headers["idempotent-replayed"], "true", key);
      }
      // JS RPC routes by the same configuration: K is answered by the
      // previous layout it lives in, a fresh key claims and completes in the
      // current one.
      const worker = await dropped.mf.getWorker("rpc-caller");
      const rpc = async (op, ...args) => (await worker.fetch("https://c/", { method: "POST", body: JSON.stringify({ op, args }) })).json();
      const fpOf = (key) => fingerprint({ method: "POST", target: "/charges", headers: { "content-type": "text/plain" }, body: new TextEncoder().encode(`charge ${key}`) });
      const k = await rpc("claim", "acme", { key: "K", fingerprint: await fpOf("K") });
      assert.equal(k.outcome, "completed", JSON.stringify(k));
      const fresh = await rpc("claim", "acme", { key: "rpc-fresh", fingerprint: await fpOf("rpc-fresh") });
      assert.equal(fresh.outcome, "claimed", JSON.stringify(fresh));
      const stored = { status: 201, headers: [["content-type", "text/plain"]], body: Buffer.from("via rpc").toString("base64") };
      assert.deepEqual(await rpc("complete", "acme", { key: "rpc-fresh", generation: fresh.generation, response: stored }), { outcome: "stored" });
      assert.equal((await lookupAt(dropped, shardObjectName("acme", await shardOf("rpc-fresh", 2), 2), "rpc-fresh"))?.state, "completed");
      assert.equal(await lookupAt(dropped, "acme", "rpc-fresh"), null, "never in the previous layout");
      const kept = dropped.events("idempotency.previous_kept");
      assert.ok(kept.length > 0 && kept.every((e) => e.previous === 1 && e.variable === "TENANT_SHARDS"), JSON.stringify(kept));
      assert.equal(dropped.events("idempotency.misconfigured").length, 0, JSON.stringify(dropped.events("idempotency.misconfigured")));
    } finally { await dropped.dispose(); }
    assert.equal(runs.get("K"), 1, "the origin ran K once");
    for (const key of ["fresh-0", "fresh-1", "fresh-2", "fresh-3"]) assert.equal(runs.get(key), 1, key);
  } finally { await origin.close(); rmSync(dir, { recursive: true, force: true }); }
});
