// The in-place schema upgrade in workerd: a TenantLedger whose SQLite
// database was written by the v1 code (tests/fixtures/ledger-v1.sqlite, the
// same file the host migration tests use) starts under this version and
// keeps every record, generation, lease, stored response and counter; so
// do objects the v3, v5, v8 and v9 code wrote (ledger-v3.sqlite,
// ledger-v5.sqlite, ledger-v8.sqlite, ledger-v9.sqlite).
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGateway, orderInit, read, json, orders, sha256hex, ACME, ROOT } from "./harness.mjs";
import { fingerprint } from "../../client/rules/fingerprint.js";

/** An operator's token for acme: evicting a key through the gateway needs one. */
const OPERATOR = "Bearer operator-token-acme";
const OPERATOR_TOKENS = JSON.stringify({ [sha256hex("operator-token-acme")]: "acme" });

/** The ledger schema this code writes (src/ledger/schema/mod.rs SCHEMA_VERSION). */
const SCHEMA_VERSION = 10;

/** Every SQLite file below `dir` (the persisted Durable Object databases). */
function sqliteFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sqliteFiles(path));
    else if (name.endsWith(".sqlite")) out.push(path);
  }
  return out;
}

/** A read of the gateway with acme's token. */
const get = (gw, path) => gw.request(path, { headers: { authorization: ACME } });

/**
 * Runs `body` against a gateway whose acme object starts on `fixture`
 * (tests/fixtures/, a database an earlier version wrote): acme's object is
 * created, the gateway stopped, its database replaced by the fixture, and
 * the gateway started again on the same persisted state.
 */
async function fromFixture(fixture, body) {
  const dir = mkdtempSync(join(tmpdir(), "ledger-fixture-"));
  // An operator's token: evicting a key through the gateway needs one.
  const opts = { shared: { resourcePersistencePath: dir }, vars: { OPERATOR_TOKENS } };
  try {
    const first = await startGateway(opts);
    assert.equal((await get(first, "/v1/idempotency/stats")).status, 200);
    await first.dispose();
    const files = sqliteFiles(dir).filter((f) => !f.includes("metadata"));
    assert.equal(files.length, 1, `one object database: ${files}`);
    rmSync(`${files[0]}-wal`, { force: true });
    rmSync(`${files[0]}-shm`, { force: true });
    copyFileSync(`${ROOT}tests/fixtures/${fixture}`, files[0]);
    const gw = await startGateway(opts);
    try {
      await body(gw);
    } finally { await gw.dispose(); }
  } finally { rmSync(dir, { recursive: true, force: true }); }
}

test("an object written by the v1 code upgrades on its first start and answers as before", async () => {
  await fromFixture("ledger-v1.sqlite", async (gw) => {
    const s = (await json(await get(gw, "/v1/idempotency/stats"))).json;
    assert.deepEqual(
      [s.records, s.in_flight, s.completed, s.released, s.claims, s.replays, s.reused, s.in_use, s.takeovers, s.fenced_out],
      [6, 2, 3, 1, 8, 2, 1, 1, 2, 1],
      JSON.stringify(s),
    );
    const done = (await json(await get(gw, "/v1/idempotency-keys/done"))).json;
    assert.deepEqual([done.state, done.generation, done.replays, done.response_status], ["completed", 1, 2, 201]);

    // The embedded order written by v1 replays byte for byte; no second order.
    const replay = await read(await gw.request("/v1/orders", orderInit({ key: "order-1", body: '{"sku":"A","quantity":1}' })));
    assert.equal(replay.status, 201);
    assert.equal(replay.headers["idempotent-replayed"], "true");
    assert.equal(JSON.parse(replay.text).id, "ord_00000001");
    assert.equal((await orders(gw)).length, 1);

    // A completed key replays its stored bytes; an in-flight key is still in flight.
    const again = await read(await gw.request("/v1/orders", orderInit({ key: "done", body: "a" })));
    assert.deepEqual([again.status, again.text, again.headers["idempotent-replayed"]], [201, '{"id":1}', "true"]);
    const busy = await json(await gw.request("/v1/orders", orderInit({ key: "busy", body: "c" })));
    assert.equal(busy.status, 409);
    const taken = (await json(await get(gw, "/v1/idempotency-keys/taken"))).json;
    assert.deepEqual([taken.state, taken.generation], ["in_flight", 3]);
    assert.ok(gw.events("idempotency.schema_upgraded").length === 1, "the upgrade is logged once");
  });
});

test("an object written by the v3 code gains the per-minute trend on its first start and keeps every record and counter", async () => {
  await fromFixture("ledger-v3.sqlite", async (gw) => {
    const s = (await json(await get(gw, "/v1/idempotency/stats"))).json;
    assert.deepEqual(
      [s.records, s.in_flight, s.completed, s.released, s.claims, s.replays, s.reused, s.in_use],
      [3, 1, 1, 1, 3, 1, 1, 1],
      JSON.stringify(s),
    );
    assert.equal(s.trend.length, 60);
    assert.ok(s.trend.every((m) => m.claims + m.replays + m.reused + m.in_use + m.takeovers + m.fenced_out + m.swept === 0), "the hour starts empty");
    assert.equal(s.quota_tombstones, 0, "the counter schema 5 added starts at 0");
    assert.equal(gw.events("idempotency.schema_upgraded").find((e) => e.from === 3)?.to, SCHEMA_VERSION);
    const done = (await json(await get(gw, "/v1/idempotency-keys/done"))).json;
    assert.deepEqual([done.state, done.generation, done.replays, done.response_status], ["completed", 1, 1, 201]);
    // The v3 record replays its stored bytes, and the replay is trended.
    const again = await read(await gw.request("/v1/orders", orderInit({ key: "done", body: "a" })));
    assert.deepEqual([again.status, again.text, again.headers["idempotent-replayed"]], [201, '{"id":1}', "true"]);
    const listed = (await json(await get(gw, "/v1/idempotency-keys?state=in_flight"))).json;
    assert.deepEqual(listed.keys.map((k) => k.key), ["busy"]);
    const after = (await json(await get(gw, "/v1/idempotency/stats"))).json;
    assert.equal(after.replays, 2);
    assert.equal(after.trend.reduce((n, m) => n + m.replays, 0), 1);
  });
});

test("an object written by the v5 code gains the claim attempt on its first start and keeps every record and counter", async () => {
  await fromFixture("ledger-v5.sqlite", async (gw) => {
    const s = (await json(await get(gw, "/v1/idempotency/stats"))).json;
    assert.deepEqual(
      [s.records, s.in_flight, s.completed, s.released, s.claims, s.replays, s.reused, s.in_use],
      [3, 1, 1, 1, 3, 1, 1, 1],
      JSON.stringify(s),
    );
    assert.equal(gw.events("idempotency.schema_upgraded").find((e) => e.from === 5)?.to, SCHEMA_VERSION);
    const again = await read(await gw.request("/v1/orders", orderInit({ key: "done", body: "a" })));
    assert.deepEqual([again.status, again.text, again.headers["idempotent-replayed"]], [201, '{"id":1}', "true"]);
    // A claim under a named attempt on the upgraded object: granted, and its repeat answered the same.
    const stub = await gw.ledger("acme");
    const fp = await fingerprint({ method: "POST", target: "/x", headers: new Headers(), fingerprintHeaders: [], body: new Uint8Array() });
    const claim = async () => (await json(await stub.fetch("https://ledger/rpc/v1/claim", {
      method: "POST", body: JSON.stringify({ key: "fresh", fingerprint: fp, attempt: "after-upgrade" }),
    }))).json;
    const granted = await claim();
    assert.equal(granted.outcome, "claimed");
    assert.deepEqual(await claim(), granted, "the repeat is answered the same grant");
    const after = (await json(await get(gw, "/v1/idempotency/stats"))).json;
    assert.equal(after.replays, 2);
  });
});

test("an object written by the v8 code gains the evicted counter on its first start, keeping its recorded jurisdiction; its keys are evicted", async () => {
  // The v8 fixture is an eu tenant's registry (it recorded jurisdiction "eu"); here it is
  // started as the tenant's object with no TENANT_JURISDICTIONS entry.
  await fromFixture("ledger-v8.sqlite", async (gw) => {
    const s = (await json(await get(gw, "/v1/idempotency/stats"))).json;
    assert.deepEqual(
      [s.records, s.in_flight, s.completed, s.released, s.claims, s.replays, s.evicted],
      [3, 1, 1, 1, 4, 1, 0],
      JSON.stringify(s),
    );
    assert.equal(s.trend.reduce((n, m) => n + m.evicted, 0), 0, "the v8 trend's minutes of seven counts read as none evicted");
    assert.equal(gw.events("idempotency.schema_upgraded").find((e) => e.from === 8)?.to, SCHEMA_VERSION);
    // Schema 7's index of the records in flight is kept: the in-flight listing finds its key.
    const inFlight = (await json(await get(gw, "/v1/idempotency-keys?state=in_flight"))).json;
    assert.deepEqual(inFlight.keys.map((k) => k.key), ["busy"], JSON.stringify(inFlight));
    // Schema 8's recorded jurisdiction is kept: with TENANT_JURISDICTIONS no longer naming the
    // tenant, a claim is refused rather than run outside it.
    const stub = await gw.ledger("acme");
    const fp = await fingerprint({ method: "POST", target: "/x", headers: new Headers(), fingerprintHeaders: [], body: new Uint8Array() });
    const refused = await json(await stub.fetch("https://ledger/rpc/v1/claim", { method: "POST", body: JSON.stringify({ key: "done", fingerprint: fp }) }));
    assert.equal(refused.status, 500, JSON.stringify(refused.json));
    assert.match(JSON.stringify(refused.json), /TENANT_JURISDICTIONS/);
    // Eviction creates no key, so it is not refused: the completed key is removed.
    const gone = await json(await gw.request("/v1/idempotency-keys/done", { method: "DELETE", headers: { authorization: OPERATOR } }));
    assert.equal(gone.status, 200, JSON.stringify(gone.json));
    assert.deepEqual([gone.json.state, gone.json.generation, gone.json.response_status], ["completed", 1, 201]);
    assert.equal((await get(gw, "/v1/idempotency-keys/done")).status, 404);
    const after = (await json(await get(gw, "/v1/idempotency/stats"))).json;
    assert.equal(after.evicted, 1);
    assert.equal(after.trend.reduce((n, m) => n + m.evicted, 0), 1);
  });
});

test("an object written by the v9 code gains lease tokens on its first start: its own grant is settled by generation, every new grant by its token", async () => {
  await fromFixture("ledger-v9.sqlite", async (gw) => {
    const s = (await json(await get(gw, "/v1/idempotency/stats"))).json;
    assert.deepEqual(
      [s.records, s.in_flight, s.completed, s.released, s.claims, s.replays, s.evicted],
      [3, 1, 1, 1, 5, 1, 1],
      JSON.stringify(s),
    );
    assert.equal(gw.events("idempotency.schema_upgraded").find((e) => e.from === 9)?.to, SCHEMA_VERSION);
    const rpc = async (op, call) => {
      const stub = await gw.ledger("acme");
      return json(await stub.fetch(`https://ledger/rpc/v1/${op}`, { method: "POST", body: JSON.stringify(call) }));
    };
    const stored = { status: 200, headers: [], body: Buffer.from("late").toString("base64") };
    // The claim schema 9 granted has no token: one it never had settles nothing...
    const stranger = await rpc("release", { key: "busy", generation: 1, lease: "0".repeat(32) });
    assert.deepEqual(stranger.json, { outcome: "fenced_out", current: { state: "in_flight", generation: 1 } });
    // ...and its owner, older than tokens, completes it by its generation.
    assert.deepEqual((await rpc("complete", { key: "busy", generation: 1, response: stored })).json, { outcome: "stored" });
    // A new grant carries a token; its settlement presents it.
    const fp = await fingerprint({ method: "POST", target: "/x", headers: new Headers(), fingerprintHeaders: [], body: new Uint8Array() });
    const granted = (await rpc("claim", { key: "fresh", fingerprint: fp })).json;
    assert.equal(granted.outcome, "claimed");
    assert.match(granted.lease, /^[0-9a-f]{32}$/);
    // Above the generation floor the v9 eviction raised (its evicted key was at generation 1).
    assert.equal(granted.generation, 2);
    const { generation } = granted;
    assert.equal((await rpc("complete", { key: "fresh", generation, lease: "f".repeat(32), response: stored })).json.outcome, "fenced_out");
    assert.deepEqual((await rpc("complete", { key: "fresh", generation, lease: granted.lease, response: stored })).json, { outcome: "stored" });
  });
});
