// idempotency-ledger/queues' options, checked when the consumer is made
// (a TypeError naming the option, as every options object of the package),
// and the result encoding the ledger stores. The consumer against the real
// ledger and real local Queues: tests/e2e/queues.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { queueConsumer } from "../../client/consumers/queues.js";
import { decodeResult, delaySeconds, encodeResult, MAX_RETRY_DELAY_SECONDS } from "../../client/consumers/consumer.js";

const ledger = (_message, env) => env.LEDGER;
const handler = () => 1;

test("an unknown option is a TypeError naming it, with the nearest name", () => {
  assert.throws(() => queueConsumer({ ledger, handler, leaseSecond: 30 }), (e) => e instanceof TypeError && /unknown option "leaseSecond" \(did you mean "leaseSeconds"\?\)/.test(e.message));
  assert.throws(() => queueConsumer({ ledger, handler, ttl: 30 }), (e) => e instanceof TypeError && /unknown option "ttl" \(ours is "retentionSeconds"/.test(e.message));
});

test("exactly one shape: handler (with ledger) or object", () => {
  assert.throws(() => queueConsumer({ ledger }), /either options.handler .* or options.object/);
  assert.throws(() => queueConsumer({ ledger, handler, object: () => null }), /either options.handler .* or options.object/);
  assert.throws(() => queueConsumer({ handler }), /options.handler needs options.ledger/);
  // The object keeps its own records: external-shape options are refused, not ignored.
  for (const name of ["ledger", "tenant", "leaseSeconds", "retentionSeconds", "waitSeconds"]) {
    const value = name === "ledger" ? ledger : name === "tenant" ? "acme" : 30;
    assert.throws(() => queueConsumer({ object: () => null, [name]: value }), new RegExp(`${name} is for the external shape`));
  }
});

test("values are checked: functions, whole numbers in range, a tenant id", () => {
  assert.throws(() => queueConsumer({ ledger: {}, handler }), /ledger must be a function/);
  assert.throws(() => queueConsumer({ ledger, handler: "charge" }), /handler must be a function/);
  assert.throws(() => queueConsumer({ ledger, handler, key: "orderId" }), /key must be a function/);
  assert.throws(() => queueConsumer({ ledger, handler, leaseSeconds: 0 }), /leaseSeconds must be a whole number 1\.\.43200/);
  assert.throws(() => queueConsumer({ ledger, handler, leaseSeconds: 30, timeoutSeconds: 31 }), /timeoutSeconds must be a whole number 1\.\.30/);
  assert.throws(() => queueConsumer({ ledger, handler, concurrency: 0 }), /concurrency must be a whole number 1\.\.100/);
  assert.throws(() => queueConsumer({ ledger, handler, tenant: "" }), /options.tenant must be/);
  assert.equal(typeof queueConsumer({ ledger, handler, tenant: "acme", leaseSeconds: 30, timeoutSeconds: 20, concurrency: 4 }), "function");
});

test("a result round-trips through what the ledger stores; none is 204, an unencodable or too large one a tombstone", async () => {
  for (const value of [{ charged: 1200, id: "ch_1" }, [1, "two"], "text", 0, null, false]) {
    assert.deepEqual(decodeResult(encodeResult(value)), value);
  }
  assert.deepEqual(encodeResult(undefined), { status: 204, headers: [], body: "" });
  assert.equal(decodeResult(encodeResult(undefined)), undefined);
  const cyclic = {}; cyclic.self = cyclic;
  assert.equal(encodeResult(cyclic).body, null);
  assert.equal(encodeResult(10n).body, null);
  assert.equal(decodeResult(encodeResult(10n)), undefined);
  // Larger than the ledger stores (STORED_BODY_CEILING): a tombstone, never a completion the ledger refuses.
  const { STORED_BODY_CEILING } = await import("../../client/rules/defaults.js");
  assert.equal(encodeResult("x".repeat(STORED_BODY_CEILING)).body, null);
  assert.equal(decodeResult(encodeResult("x".repeat(STORED_BODY_CEILING))), undefined);
  assert.equal(decodeResult(encodeResult("x".repeat(STORED_BODY_CEILING - 2))), "x".repeat(STORED_BODY_CEILING - 2));
});

test("retry delays are whole seconds, rounded up, within what Queues take", () => {
  assert.equal(delaySeconds(0), 0);
  assert.equal(delaySeconds(-5), 0);
  assert.equal(delaySeconds(1), 1);
  assert.equal(delaySeconds(59_001), 60);
  assert.equal(delaySeconds(1e12), MAX_RETRY_DELAY_SECONDS);
  assert.equal(delaySeconds(NaN), 0);
});
