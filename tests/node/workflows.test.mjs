// idempotency-ledger/workflows' arguments, checked before anything is
// claimed: a TypeError naming the option (the ledger is never called, so
// none is needed here); and the `jurisdiction` option routed through
// `namespace.jurisdiction(J)` (a recording namespace stand-in; in workerd:
// tests/e2e/jurisdictions.test.mjs). Its behaviour against the real ledger,
// in a real Workflow, cron trigger and alarm: tests/e2e/workflows.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { once, onceScheduled } from "../../client/consumers/workflows.js";
import { LedgerClient } from "../../client/rpc/client.js";

const unreached = { fetch: async () => { throw new Error("the ledger must not be called"); } };
const ledger = new LedgerClient(unreached);
const step = { do: () => { throw new Error("step.do must not be called"); } };
const effect = () => { throw new Error("the effect must not run"); };
/** A TenantLedger namespace stand-in no call may reach. */
const namespace = { idFromName: () => { throw new Error("no object may be named"); }, get: () => unreached, jurisdiction: () => namespace };

test("once refuses bad arguments with a TypeError naming them, before any step or claim", () => {
  for (const [options, message] of [
    [{ ledger, key: "k", ttl: 60 }, /unknown option "ttl" \(ours is "retentionSeconds"/],
    [{ ledger, key: "k", leaseSecs: 60 }, /unknown option "leaseSecs" \(did you mean "leaseSeconds"\?\)/],
    [{ ledger, key: "k", retries: 3 }, /unknown option "retries"/],
    [{ ledger }, /options\.key must be a string/],
    [{ ledger, key: "" }, /options\.key: the key is empty/],
    [{ ledger, key: "caf\u00e9" }, /options\.key: the key may contain only printable ASCII/],
    [{ ledger, key: "k".repeat(256) }, /options\.key: the key is 256 characters long/],
    [{ ledger, key: "k", leaseSeconds: 0 }, /leaseSeconds must be a whole number 1\.\.43200/],
    [{ ledger, key: "k", leaseSeconds: 43201 }, /leaseSeconds must be a whole number 1\.\.43200/],
    [{ ledger, key: "k", retentionSeconds: 1.5 }, /retentionSeconds must be a whole number/],
    [{ ledger, key: "k", config: "fast" }, /options\.config must be step\.do's config object/],
    [{ ledger, key: "k", tenant: "acme" }, /a LedgerClient is already one tenant's object/],
    [{ key: "k" }, /needs options\.ledger/],
    [{ ledger: () => ledger, key: "k" }, /are values here/],
    [{ ledger: namespace, tenant: "acme", key: "k", jurisdiction: () => "eu" }, /are values here/],
    [{ ledger: namespace, tenant: "acme", key: "k", jurisdiction: "mars" }, /options\.jurisdiction: "mars" is not a jurisdiction/],
    [{ ledger, key: "k", jurisdiction: "eu" }, /options\.jurisdiction routes a TenantLedger namespace/],
    [{ ledger: namespace, tenant: "acme", key: "k", jurisdictions: "eu" }, /unknown option "jurisdictions" \(did you mean "jurisdiction"\?\)/],
    [undefined, /needs options/],
  ]) {
    assert.throws(() => once(step, "charge", /** @type {any} */ (options), effect), (e) => e instanceof TypeError && message.test(e.message), JSON.stringify(options));
  }
  assert.throws(() => once(/** @type {any} */ (null), "charge", { ledger, key: "k" }, effect), /needs a Workflow step/);
  assert.throws(() => once(step, "", { ledger, key: "k" }, effect), /name must be the step's name/);
  assert.throws(() => once(step, "charge", { ledger, key: "k" }, /** @type {any} */ (null)), /effect must be a function/);
});

test("onceScheduled refuses bad arguments with a TypeError naming them, and takes no key", () => {
  for (const [when, name, options, message] of [
    [{ scheduledTime: 0 }, "nightly", { ledger, key: "k" }, /unknown option "key"/],
    [{ scheduledTime: 0 }, "nightly", { ledger, config: {} }, /unknown option "config"/],
    ["yesterday", "nightly", { ledger }, /when must be the ScheduledController/],
    [{ scheduledTime: NaN }, "nightly", { ledger }, /when must be the ScheduledController/],
    [new Date(NaN), "nightly", { ledger }, /when must be the ScheduledController/],
    [0, "n\u00e4chtlich", { ledger }, /the key \(from name\): the key may contain only printable ASCII/],
    [0, "n".repeat(250), { ledger }, /the key \(from name\): the key is \d+ characters long/],
  ]) {
    assert.throws(() => onceScheduled(/** @type {any} */ (when), name, /** @type {any} */ (options), effect), (e) => e instanceof TypeError && message.test(e.message), String(name));
  }
});

test("once and onceScheduled with jurisdiction reach the tenant's object through namespace.jurisdiction(J), and run the effect there", async () => {
  const asked = [];
  /** A namespace stand-in recording the jurisdiction and name asked; its object grants and stores. */
  const namespaceOf = (jurisdiction) => ({
    idFromName: (name) => { asked.push({ jurisdiction, name }); return name; },
    get: () => ({
      fetch: async (url) => Response.json(url.endsWith("/claim") ? { outcome: "claimed", generation: 1, takeover: false } : { outcome: "stored" }),
    }),
    jurisdiction: (j) => namespaceOf(j),
  });
  const runStep = { do: (_name, ...rest) => rest.at(-1)() };
  let runs = 0;
  const charge = () => { runs += 1; return { charged: runs }; };
  assert.deepEqual(await once(runStep, "charge", { ledger: namespaceOf(null), tenant: "org/team", jurisdiction: "eu", key: "wf-1" }, charge), { charged: 1 });
  assert.deepEqual(await onceScheduled(0, "nightly", { ledger: namespaceOf(null), tenant: "acme", jurisdiction: "fedramp" }, charge), { charged: 2 });
  assert.deepEqual(await once(runStep, "charge", { ledger: namespaceOf(null), tenant: "acme", jurisdiction: null, key: "wf-2" }, charge), { charged: 3 });
  assert.deepEqual(asked, [
    { jurisdiction: "eu", name: "~org%2Fteam" }, { jurisdiction: "eu", name: "~org%2Fteam" }, // claim, complete
    { jurisdiction: "fedramp", name: "acme" }, { jurisdiction: "fedramp", name: "acme" },
    { jurisdiction: null, name: "acme" }, { jurisdiction: null, name: "acme" }, // null: unrestricted
  ]);
});
