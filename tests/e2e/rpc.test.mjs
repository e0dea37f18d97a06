// The object's versioned fetch RPC (docs/contract.md §3), called directly on a real
// TenantLedger: outcomes, fencing, and refusals that change nothing.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { startGateway, unleased, slug } from "./harness.mjs";

let gw, ledger;
before(async () => {
  gw = await startGateway();
  const ns = await gw.mf.getDurableObjectNamespace("TENANT_LEDGER");
  ledger = ns.get(ns.idFromName("rpc-tenant"));
});
after(async () => { await gw?.dispose(); });

const sha = (bytes) => createHash("sha256").update(bytes).digest("hex");
// Mirrors protocol::fingerprint: component digest = sha256(0x01 || u64be len || bytes);
// overall digest = sha256 over (u64be len name || name || u64be len digest || digest).
function component(name, value) {
  const len = Buffer.alloc(8); len.writeBigUInt64BE(BigInt(Buffer.byteLength(value)));
  return { name, digest: sha(Buffer.concat([Buffer.from([1]), len, Buffer.from(value)])) };
}
function fingerprint(body) {
  const components = [component("method", "POST"), component("target", "/charge"), component("body", body)];
  const parts = [];
  for (const c of components) {
    for (const s of [c.name, c.digest]) {
      const len = Buffer.alloc(8); len.writeBigUInt64BE(BigInt(Buffer.byteLength(s)));
      parts.push(len, Buffer.from(s));
    }
  }
  return { digest: sha(Buffer.concat(parts)), components };
}

async function call(route, payload, init = {}) {
  const res = await ledger.fetch(`https://ledger/rpc/v1/${route}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof payload === "string" ? payload : JSON.stringify(payload),
    ...init,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

const stored = (text) => ({ status: 200, headers: [["content-type", "text/plain"]], body: Buffer.from(text).toString("base64") });

test("claim, complete, then claim again replays the stored response", async () => {
  const fp = fingerprint("amount=100");
  const c = await call("claim", { key: "rpc-1", fingerprint: fp });
  assert.deepEqual(unleased(c.json), { outcome: "claimed", generation: 1, takeover: false });
  const busy = await call("claim", { key: "rpc-1", fingerprint: fp });
  assert.equal(busy.json.outcome, "in_flight");
  assert.ok(busy.json.retry_after_ms > 0 && busy.json.retry_after_ms <= 60_000);
  assert.deepEqual((await call("complete", { key: "rpc-1", generation: 1, response: stored("charged") })).json, { outcome: "stored" });
  const replay = await call("claim", { key: "rpc-1", fingerprint: fp });
  assert.equal(replay.json.outcome, "completed");
  assert.equal(Buffer.from(replay.json.response.body, "base64").toString(), "charged");
  const other = await call("claim", { key: "rpc-1", fingerprint: fingerprint("amount=999") });
  assert.deepEqual(other.json, { outcome: "mismatch", differs: ["body"] });
});

test("release lets the key run again at the next generation; stale owners are fenced out", async () => {
  const fp = fingerprint("amount=5");
  assert.equal((await call("claim", { key: "rpc-2", fingerprint: fp })).json.generation, 1);
  assert.deepEqual((await call("release", { key: "rpc-2", generation: 1 })).json, { outcome: "released" });
  const again = await call("claim", { key: "rpc-2", fingerprint: fp });
  assert.deepEqual(unleased(again.json), { outcome: "claimed", generation: 2, takeover: false });
  const stale = await call("complete", { key: "rpc-2", generation: 1, response: stored("stale") });
  assert.equal(stale.json.outcome, "fenced_out");
  assert.deepEqual(stale.json.current, { state: "in_flight", generation: 2 });
  assert.equal((await call("release", { key: "rpc-2", generation: 1 })).json.outcome, "fenced_out");
  const lookup = await call("lookup", { key: "rpc-2" });
  assert.equal(lookup.json.record.state, "in_flight");
  assert.equal(lookup.json.record.generation, 2);
  const stats = await call("stats", {});
  assert.ok(stats.json.fenced_out >= 2);
});

test("bad calls are refused with problems and write nothing", async () => {
  const before = (await call("stats", {})).json;
  const cases = [
    ["claim", "{not json", 400],
    ["claim", { key: "x" }, 400],
    ["claim", { key: "", fingerprint: fingerprint("a") }, 400],
    ["claim", { key: "x", fingerprint: { ...fingerprint("a"), digest: "0".repeat(64) } }, 400],
    ["claim", { key: "x", fingerprint: fingerprint("a"), lease_seconds: 0 }, 400],
    // A record must outlive its lease: a shorter retention is refused.
    ["claim", { key: "x", fingerprint: fingerprint("a"), lease_seconds: 20, retention_seconds: 2 }, 400],
    ["claim", { key: "x", fingerprint: fingerprint("a"), retention_seconds: 30 }, 400],
    ["complete", { key: "x", generation: 0, response: stored("a") }, 400],
    // Only a final status can be replayed (a stored 1xx would break every replay).
    ["complete", { key: "x", generation: 1, response: { ...stored("a"), status: 101 } }, 400],
    ["complete", { key: "x", generation: 1, response: { ...stored("a"), status: 600 } }, 400],
    ["complete", { key: "x", generation: 1, response: { status: 200, headers: [["set-cookie", "a=b"]], body: null } }, 400],
    ["release", { key: "x", generation: 1, extra: true }, 400],
    ["list", { limit: 0 }, 400],
    ["list", { limit: 101 }, 400],
    ["list", { state: "done" }, 400],
    ["list", { after: { sweep_at: 1, key: "" } }, 400],
    ["list", { cursor: "abc" }, 400],
    ["nope", {}, 404],
  ];
  for (const [route, payload, status] of cases) {
    const r = await call(route, payload);
    assert.equal(r.status, status, `${route} ${JSON.stringify(payload)}`);
    assert.ok(["invalid-rpc", "not-found"].includes(slug(r.json)));
  }
  const get = await ledger.fetch("https://ledger/rpc/v1/stats");
  assert.equal(get.status, 405);
  const after = (await call("stats", {})).json;
  assert.equal(after.records, before.records);
  assert.equal(after.claims, before.claims);
});

test("list pages through one object's keys: newest first, in flight oldest first, each key as lookup shows it", async () => {
  const ns = await gw.mf.getDurableObjectNamespace("TENANT_LEDGER");
  const object = ns.get(ns.idFromName("rpc-list-tenant"));
  const on = async (route, payload) => {
    const res = await object.fetch(`https://ledger/rpc/v1/${route}`, { method: "POST", body: JSON.stringify(payload) });
    return { status: res.status, json: await res.json() };
  };
  const fp = fingerprint("list");
  const keys = [];
  for (let i = 0; i < 12; i++) {
    const key = `list-${String(i).padStart(2, "0")}`;
    keys.push(key);
    assert.equal((await on("claim", { key, fingerprint: fp })).json.outcome, "claimed");
    if (i % 3 !== 0) assert.equal((await on("complete", { key, generation: 1, response: stored(key) })).json.outcome, "stored");
  }
  const walk = async (call) => {
    const seen = [];
    let after;
    for (let pages = 0; pages < 50; pages++) {
      const page = await on("list", { ...call, ...(after ? { after } : {}) });
      assert.equal(page.status, 200, JSON.stringify(page.json));
      assert.ok(page.json.keys.length <= (call.limit ?? 20));
      seen.push(...page.json.keys);
      if (page.json.next === null) return seen;
      after = page.json.next;
    }
    assert.fail("the walk did not end");
  };
  const all = await walk({ limit: 5 });
  assert.deepEqual(all.map((k) => k.key), [...keys].reverse(), "newest first");
  const { sweep_at, ...record } = all[0];
  assert.ok(Number.isInteger(sweep_at) && sweep_at > Date.now());
  assert.deepEqual(record, (await on("lookup", { key: all[0].key })).json.record);
  const inFlight = await walk({ state: "in_flight", limit: 2 });
  assert.deepEqual(inFlight.map((k) => k.key), keys.filter((_, i) => i % 3 === 0), "oldest first");
  assert.ok(inFlight.every((k) => k.state === "in_flight" && k.lease_expires_at !== null));
  const completed = await walk({ state: "completed" });
  assert.equal(completed.length, 8);
  assert.ok(completed.every((k) => k.state === "completed" && k.response_status === 200 && k.retained === true));
  assert.deepEqual((await walk({ state: "released" })), []);
});
