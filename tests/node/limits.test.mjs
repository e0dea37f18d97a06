// The JS package's limits and rules are the core's: every limit it applies
// is the generated constant of src/protocol/limits.json (the home build.rs
// compiles into the crate), and the lease/retention rule is held to the
// vectors of tests/fixtures/limits.json, as tests/host/vectors.rs holds the
// Rust rule (Node only).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const fixture = JSON.parse(readFileSync(new URL("../fixtures/limits.json", import.meta.url), "utf8"));
const home = JSON.parse(readFileSync(new URL("../../src/protocol/limits.json", import.meta.url), "utf8")).limits;

test("every limit the JS package applies is its home's, taken from the generated module", async () => {
  const defaults = await import("../../client/rules/defaults.js");
  const { MAX_SHARDS, LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT } = await import("../../client/rpc/shards.js");
  const { MAX_KEY_LENGTH } = await import("../../client/rules/key.js");
  const { SETTLE_RETRY_DELAYS_MS } = await import("../../client/rpc/settle.js");
  const { LOST_ANSWER_RETRY_DELAYS_MS } = await import("../../client/rpc/client.js");
  const { NULL_BODY } = await import("../../client/rules/stored.js");
  const generated = await import("../../client/generated/limits.js");
  assert.deepEqual(Object.keys(generated).sort(), Object.keys(home).sort(), "one constant per limit");
  for (const [name, { value }] of Object.entries(home)) assert.deepEqual(Array.isArray(value) ? [...generated[name]] : generated[name], value, name);
  // Each module's limit is the generated constant itself, not a copy.
  assert.equal(defaults.MAX_WINDOW_SECONDS, generated.MAX_WINDOW_SECONDS);
  assert.equal(defaults.STORED_BODY_CEILING, generated.STORED_BODY_CEILING);
  assert.equal(defaults.MAX_BODY_CEILING, generated.MAX_REQUEST_BODY_CEILING);
  assert.equal(defaults.MAX_WAIT_SECONDS, generated.MAX_WAIT_SECONDS);
  assert.equal(MAX_SHARDS, generated.MAX_SHARDS);
  assert.equal(LIST_DEFAULT_LIMIT, generated.DEFAULT_LIST_LIMIT);
  assert.equal(LIST_MAX_LIMIT, generated.MAX_LIST_LIMIT);
  assert.equal(MAX_KEY_LENGTH, generated.MAX_KEY_LEN);
  assert.equal(SETTLE_RETRY_DELAYS_MS, generated.SETTLE_RETRY_DELAYS_MS);
  assert.equal(LOST_ANSWER_RETRY_DELAYS_MS, generated.LOST_ANSWER_RETRY_DELAYS_MS);
  assert.ok(Object.isFrozen(SETTLE_RETRY_DELAYS_MS) && Object.isFrozen(LOST_ANSWER_RETRY_DELAYS_MS));
  assert.deepEqual([...NULL_BODY].sort(), [...generated.NULL_BODY_STATUSES].sort());
});

test("the middleware holds leaseSeconds and retentionSeconds to the core's one rule", async () => {
  const { withIdempotency } = await import("../../client/index.js");
  const ledger = { claim: async () => ({}), complete: async () => ({}), release: async () => ({}) };
  assert.ok(fixture.windows.length >= 5);
  for (const { lease_seconds: leaseSeconds, retention_seconds: retentionSeconds, holds } of fixture.windows) {
    const make = () => withIdempotency(() => new Response("ok"), { ledger, leaseSeconds, retentionSeconds });
    if (holds) assert.doesNotThrow(make, `${leaseSeconds}/${retentionSeconds}`);
    else assert.throws(make, /retentionSeconds is shorter than leaseSeconds/, `${leaseSeconds}/${retentionSeconds}`);
  }
});

test("the middleware's wait bounds are the core's", async () => {
  const { withIdempotency } = await import("../../client/index.js");
  const ledger = { claim: async () => ({}), complete: async () => ({}), release: async () => ({}) };
  const max = home.MAX_WAIT_SECONDS.value;
  assert.doesNotThrow(() => withIdempotency(() => new Response("ok"), { ledger, maxWaitSeconds: max }));
  assert.throws(() => withIdempotency(() => new Response("ok"), { ledger, maxWaitSeconds: max + 1 }), TypeError);
});
