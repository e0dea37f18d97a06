// The JS package's limits and rules are the core's: each value and the
// lease/retention rule come from tests/fixtures/limits.json, which
// tests/host/vectors.rs holds the Rust constants to as well (Node only).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const fixture = JSON.parse(readFileSync(new URL("../fixtures/limits.json", import.meta.url), "utf8"));

test("every limit the JS package applies is the fixture's (and so the core's)", async () => {
  const defaults = await import("../../client/rules/defaults.js");
  const { MAX_SHARDS, LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT } = await import("../../client/rpc/shards.js");
  const { MAX_KEY_LENGTH } = await import("../../client/rules/key.js");
  const { SETTLE_RETRY_DELAYS_MS } = await import("../../client/rpc/settle.js");
  const { LOST_ANSWER_RETRY_DELAYS_MS } = await import("../../client/rpc/client.js");
  const { NULL_BODY } = await import("../../client/rules/stored.js");
  const l = fixture.limits;
  assert.equal(defaults.MAX_WINDOW_SECONDS, l.max_window_seconds);
  assert.equal(defaults.STORED_BODY_CEILING, l.stored_body_ceiling);
  assert.equal(defaults.MAX_BODY_CEILING, l.max_request_body_ceiling);
  assert.equal(defaults.MAX_WAIT_SECONDS, l.max_wait_seconds);
  assert.equal(MAX_SHARDS, l.max_shards);
  assert.equal(LIST_DEFAULT_LIMIT, l.list_default_limit);
  assert.equal(LIST_MAX_LIMIT, l.list_max_limit);
  assert.equal(MAX_KEY_LENGTH, l.max_key_length);
  assert.deepEqual([...SETTLE_RETRY_DELAYS_MS], l.settle_retry_delays_ms);
  assert.deepEqual([...LOST_ANSWER_RETRY_DELAYS_MS], l.lost_answer_retry_delays_ms);
  assert.deepEqual([...NULL_BODY].sort(), [...l.null_body_statuses].sort());
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
  const max = fixture.limits.max_wait_seconds;
  assert.doesNotThrow(() => withIdempotency(() => new Response("ok"), { ledger, maxWaitSeconds: max }));
  assert.throws(() => withIdempotency(() => new Response("ok"), { ledger, maxWaitSeconds: max + 1 }), TypeError);
});
