// Generations only grow (docs/contract.md §4), in proxy mode in workerd: a
// slow owner's record is not swept while it may still complete, so a retry
// after its lease takes over at the next generation and the slow owner's
// late completion is fenced out — every replay is the last run's answer.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startGateway, startOrigin, deferred, read, eventually, ACME } from "./harness.mjs";

const post = (key) => ({
  method: "POST",
  headers: { authorization: ACME, "content-type": "text/plain", "idempotency-key": key },
  body: "amount=100",
});

test("a sweep never lets a superseded owner's late answer become the stored one", async () => {
  const firstHeld = deferred();
  const secondHeld = deferred();
  const origin = await startOrigin(async (_req, n) => {
    if (n === 1) { await firstHeld.promise; return { status: 201, body: "A" }; }
    await secondHeld.promise;
    return { status: 201, body: "B" };
  });
  // LEASE 2 s, RETENTION 3 s: A's record leaves its retention window while A
  // still waits for its origin (ORIGIN_TIMEOUT_SECONDS 30).
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, LEASE_SECONDS: "2", RETENTION_SECONDS: "3", SWEEP_INTERVAL_SECONDS: "1" } });
  try {
    const a = gw.request("/charges", post("slow-1")).then(read);
    await origin.waitForRequests(1);
    // Past A's lease and retention, and past a sweep.
    await new Promise((r) => setTimeout(r, 4_500));
    const b = gw.request("/charges", post("slow-1")).then(read);
    await origin.waitForRequests(2);
    firstHeld.resolve();
    assert.equal((await a).text, "A", "the superseded owner's caller still gets its run's answer");
    await eventually(() => gw.events("idempotency.fenced_out").length === 1, { ms: 30_000 });
    secondHeld.resolve();
    assert.equal((await b).text, "B");
    const replay = await read(await gw.request("/charges", post("slow-1")));
    assert.deepEqual([replay.text, replay.headers["idempotent-replayed"]], ["B", "true"], "the stored answer is the last run's");
    const record = JSON.parse((await read(await gw.request("/v1/idempotency-keys/slow-1", { headers: { authorization: ACME } }))).text);
    assert.equal(record.generation, 2, "B took over at the next generation");
  } finally { firstHeld.resolve(); secondHeld.resolve(); await gw.dispose(); await origin.close(); }
});
