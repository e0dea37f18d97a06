// The one options check of the JS surfaces (client/rules/check-options.js):
// its kinds and messages, and every surface that takes options made through
// it — the middleware, new Ledger, the store, the Queue consumer and the
// Workflows helpers refuse an unknown name and a wrong kind alike.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { checkOptions } from "../../client/rules/check-options.js";
import { withIdempotency } from "../../client/index.js";
import { idempotency } from "../../client/middleware/hono.js";
import { ledgerStore } from "../../client/middleware/store.js";
import { queueConsumer } from "../../client/consumers/queues.js";
import { once, onceScheduled } from "../../client/consumers/workflows.js";

const ROOT = new URL("../../", import.meta.url).pathname;

test("checkOptions fills defaults and refuses each kind by name", () => {
  const spec = {
    n: { whole: [1, 10], default: 5 }, h: { tokens: "header" }, b: { boolean: true }, p: { oneOf: ["a", "b"], default: "a" },
    f: { function: " of the message" }, x: { any: true },
  };
  assert.deepEqual(checkOptions("w", undefined, spec), { n: 5, h: undefined, b: undefined, p: "a", f: undefined, x: undefined });
  assert.deepEqual(checkOptions("w", { n: 3, h: ["X-A"], b: false, p: "b", x: null }, spec), { n: 3, h: ["X-A"], b: false, p: "b", f: undefined, x: null });
  for (const [options, message] of [
    [{ m: 1 }, /^w: unknown option "m"/],
    [{ n: 11 }, /^w: n must be/],
    [{ n: 1.5 }, /^w: n must be/],
    [{ h: ["bad header"] }, /^w: h /],
    [{ b: "yes" }, /^w: b must be a boolean$/],
    [{ p: "c" }, /^w: p must be "a" or "b"$/],
    [{ f: 1 }, /^w: f must be a function of the message$/],
    [[], /^w: options must be an object$/],
  ]) {
    assert.throws(() => checkOptions("w", options, spec), (e) => e instanceof TypeError && message.test(e.message), JSON.stringify(options));
  }
});

test("every surface refuses an unknown option and a wrong kind through the one check", () => {
  const ledger = { claim() {}, complete() {}, release() {} };
  for (const [where, make] of [
    ["idempotency middleware", (o) => withIdempotency(() => new Response(), o)],
    ["idempotency middleware", (o) => idempotency(o)],
    ["idempotency-ledger/store", (o) => ledgerStore({ ledger, ...o })],
    ["idempotency-ledger/queues", (o) => queueConsumer({ handler() {}, ledger: () => ledger, ...o })],
    ["idempotency-ledger/workflows once", (o) => once({ do() {} }, "step", { ledger, tenant: "acme", key: "k", ...o }, () => 1)],
    ["idempotency-ledger/workflows onceScheduled", (o) => onceScheduled(0, "job", { ledger, tenant: "acme", ...o }, () => 1)],
  ]) {
    assert.throws(() => make({ bogus: 1 }), (e) => e instanceof TypeError && e.message.startsWith(`${where}: unknown option "bogus"`), where);
    if (where !== "idempotency-ledger/store") {
      assert.throws(() => make({ leaseSeconds: 0.5 }), (e) => e instanceof TypeError && e.message.startsWith(`${where}: leaseSeconds must be`), where);
    }
  }
});

test("the surfaces' modules take their options through checkOptions (new Ledger's too: it loads the wasm, so read here)", () => {
  for (const path of ["client/middleware/options.js", "client/middleware/store.js", "client/ledger/ledger.js", "client/consumers/queues.js", "client/consumers/workflows.js"]) {
    assert.match(readFileSync(`${ROOT}${path}`, "utf8"), /\bcheckOptions\(/, path);
  }
});
