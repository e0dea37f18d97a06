// Tenant ids and their objects' names (client/rules/tenant.js,
// LedgerClient.forTenant / forObject, TenantLedgers) against the rule both
// languages pin (tests/fixtures/tenants.json; Rust: tests/host/vectors.rs).
// A tenant id is mapped by the rule, always — even one that looks like
// another tenant's object name — and an object's name goes through
// LedgerClient.forObject, spelled the one way.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { isTenantId, tenantObjectName, isObjectName, parseObjectName, tenantOfObjectName } from "../../client/rules/tenant.js";
import { shardObjectName, LedgerClient, TenantLedgers } from "../../client/index.js";

const { vectors, objects } = JSON.parse(readFileSync(new URL("../fixtures/tenants.json", import.meta.url), "utf8"));

/** A namespace stand-in recording every name asked; each object answers `answer(name, route)`. */
function recordingNamespace(answer = () => ({})) {
  const named = [];
  return {
    named,
    idFromName: (name) => { named.push(name); return name; },
    get: (name) => ({ fetch: async (url) => Response.json(answer(name, new URL(url).pathname.split("/").pop())) }),
  };
}

test("tenant ids and their objects' names follow the one rule both languages pin; no two ids share an object", () => {
  assert.ok(vectors.length >= 20);
  const namespace = recordingNamespace();
  /** @type {Map<string, string>} object name → the tenant whose it is */
  const owners = new Map();
  let refused = 0;
  for (const v of vectors) {
    assert.equal(isTenantId(v.tenant), v.valid, JSON.stringify(v.tenant));
    if (!v.valid) {
      assert.throws(() => LedgerClient.forTenant(namespace, v.tenant), TypeError, JSON.stringify(v.tenant));
      continue;
    }
    assert.equal(tenantObjectName(v.tenant), v.object, JSON.stringify(v.tenant));
    assert.equal(shardObjectName(v.tenant, 1, 2), v.shard_1_of_2);
    assert.equal(shardObjectName(v.tenant, 0, 1), v.object);
    assert.equal(tenantOfObjectName(v.object), v.tenant, "the rule read backwards");
    assert.ok(isObjectName(v.object) && isObjectName(v.shard_1_of_2));
    for (const [i, n] of [[0, 1], [0, 2], [1, 2], [0, 4], [1, 4], [2, 4], [3, 4]]) {
      const name = shardObjectName(v.tenant, i, n);
      assert.equal(owners.get(name) ?? v.tenant, v.tenant, `${name} is two tenants' object`);
      owners.set(name, v.tenant);
    }
    // A tenant id names its object by the rule; one spelled like another tenant's object name (which
    // forTenant took as that object before v1.5) is refused loudly, never sent to another object.
    if (v.object !== v.tenant && isObjectName(v.tenant)) {
      assert.throws(() => LedgerClient.forTenant(namespace, v.tenant), /spelled like an object's name.*forObject.*TenantLedgers/, JSON.stringify(v.tenant));
      refused++;
    } else {
      LedgerClient.forTenant(namespace, v.tenant);
      assert.equal(namespace.named.at(-1), v.object, JSON.stringify(v.tenant));
    }
    // An object's name is taken as it is, through forObject only.
    LedgerClient.forObject(namespace, v.shard_1_of_2);
    assert.equal(namespace.named.at(-1), v.shard_1_of_2);
  }
  assert.ok(refused >= 3, `the fixture's lookalike ids are refused by forTenant (${refused})`);
  // v1.3 ids keep their objects: the name is the id.
  for (const t of ["acme", "globex", "a.b-c_D9"]) assert.equal(tenantObjectName(t), t);
  assert.equal(isTenantId("\ud800"), false, "a lone surrogate is not UTF-8");
});

test("object names have one spelling and one tenant (the fixture's objects); forObject refuses any other name", () => {
  assert.ok(objects.length >= 20);
  const namespace = recordingNamespace();
  for (const v of objects) {
    assert.deepEqual(parseObjectName(v.name), { base: v.base, index: v.index, shards: v.shards }, JSON.stringify(v.name));
    assert.equal(tenantOfObjectName(v.base), v.tenant, JSON.stringify(v.name));
    assert.equal(isObjectName(v.name), v.tenant !== null, JSON.stringify(v.name));
    if (v.tenant === null) {
      assert.throws(() => LedgerClient.forObject(namespace, v.name), (e) => e instanceof TypeError && /forObject needs a tenant's object name/.test(e.message), v.name);
    } else {
      LedgerClient.forObject(namespace, v.name);
      assert.equal(namespace.named.at(-1), v.name);
    }
  }
  for (const bad of [undefined, null, 7, {}]) assert.throws(() => LedgerClient.forObject(namespace, /** @type {any} */ (bad)), TypeError);
  assert.throws(() => LedgerClient.forObject(namespace, "acme", { region: "eu" }), /forObject: unknown option "region"/);
  assert.throws(() => LedgerClient.forTenant(namespace, "a\u0000b"), /needs a tenant id .*LedgerClient\.forObject/);
});

test("TenantLedgers maps every tenant id by the rule for every method: a lookalike id reaches its own objects only", async () => {
  const namespace = recordingNamespace((name, route) => {
    if (route === "stats") return { records: name.length };
    if (route === "list") return { keys: [], next: null };
    if (route === "execute") return { outcome: "ran", generation: 1, takeover: false, retained: true, response: { status: 201, headers: [], body: "" } };
    return { record: null };
  });
  const ledgers = new TenantLedgers(namespace, '{"acme": 2}');
  const call = { key: "k", fingerprint: { digest: `sha256:${"0".repeat(64)}`, components: [] }, request: { method: "POST", target: "/v1/orders", body: "" } };
  for (const [tenant, object] of [["~user%40example.com", "~%7Euser%2540example.com"], ["acme/shard-1-of-2", "~acme%2Fshard-1-of-2"], ["acme/shard-01-of-2", "~acme%2Fshard-01-of-2"], ["~x", "~%7Ex"]]) {
    namespace.named.length = 0;
    await ledgers.stats(tenant);
    await ledgers.list(tenant);
    await ledgers.lookup(tenant, "k");
    await ledgers.execute(tenant, call);
    assert.deepEqual([...new Set(namespace.named)], [object], tenant);
  }
  // A sharded tenant's methods reach its shards, by the names shardObjectName makes.
  namespace.named.length = 0;
  await ledgers.stats("acme");
  assert.deepEqual(namespace.named, ["acme/shard-0-of-2", "acme/shard-1-of-2"]);
});
