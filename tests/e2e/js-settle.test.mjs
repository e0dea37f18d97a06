// withIdempotency's completion through a lossy link in front of the real
// TenantLedger (not a fake ledger: every call that gets through is served by
// the real object): the first `complete` is dropped before it reaches the
// object, as a reset connection would. The middleware retries it as the
// gateway does (client/rpc/settle.js), so the key still completes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, read, eventually, lossyLinkWorker, jsClientWorker } from "./harness.mjs";

const lossyLink = lossyLinkWorker();

// The JS Worker of clients.test.mjs (withIdempotency at /wrapped), its
// LEDGER bound to the lossy link instead of the TenantLedger itself.
const jsWorker = jsClientWorker("js-lossy", { className: "LossyLink", scriptName: "lossy" });

let gw, js;
before(async () => {
  gw = await startGateway({ workers: [lossyLink, jsWorker] });
  js = await gw.mf.getWorker("js-lossy");
});
after(async () => { await gw?.dispose(); });

const send = (key, body) => js.fetch("https://js/wrapped/charge", {
  method: "POST", headers: { "content-type": "text/plain", "idempotency-key": key, "x-tenant": "js-lossy" }, body,
}).then(read);

test("withIdempotency: a completion whose first attempt is lost is retried; the key completes and replays", async () => {
  const first = await send("js-lossy-1", "10.00");
  assert.equal(first.status, 201);
  const { run } = JSON.parse(first.text);
  await eventually(() => gw.logs.some((l) => l.includes("lossy-link: dropped a complete call")));
  // The real object holds the completed record (looked up there, past the link).
  const ledger = await gw.ledger("js-lossy");
  const looked = await (await ledger.fetch("https://l/rpc/v1/lookup", { method: "POST", body: JSON.stringify({ key: "js-lossy-1" }) })).json();
  assert.equal(looked.record.state, "completed");
  assert.equal(looked.record.generation, 1);
  const retry = await send("js-lossy-1", "10.00");
  assert.equal(retry.status, 201);
  assert.equal(retry.headers["idempotent-replayed"], "true");
  assert.ok(retry.body.equals(first.body), "the stored bytes");
  // The handler ran once: the next fresh key is its second run.
  const next = await send("js-lossy-2", "11.00");
  assert.equal(JSON.parse(next.text).run, run + 1);
  assert.deepEqual(gw.events("idempotency.complete_failed"), []);
});
