// Integration tests of the app through the real ledger (the packaged
// TenantLedger in workerd): one charge per key, replays, 422, 400.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

const charge = (key: string | undefined, body: unknown, tenant = "acme") =>
  SELF.fetch("https://app.test/charges", {
    method: "POST",
    headers: { "content-type": "application/json", "x-tenant": tenant, ...(key ? { "idempotency-key": key } : {}) },
    body: JSON.stringify(body),
  });
const ran = async () => ((await (await SELF.fetch("https://app.test/ran")).json()) as { charges: number }).charges;

describe("POST /charges behind idempotency-ledger", () => {
  it("runs once per key and replays the first answer byte for byte", async () => {
    const before = await ran();
    const first = await charge("order-1", { amount: 500 });
    expect(first.status).toBe(201);
    const firstBody = await first.text();
    const retry = await charge("order-1", { amount: 500 });
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(await retry.text()).toBe(firstBody);
    expect(await ran()).toBe(before + 1);
  });

  it("answers 422 when the key is reused for another request", async () => {
    await (await charge("order-2", { amount: 500 })).arrayBuffer();
    const reused = await charge("order-2", { amount: 900 });
    expect(reused.status).toBe(422);
    expect(((await reused.json()) as { type: string }).type).toMatch(/idempotency-key-reused$/);
  });

  it("asks for a key", async () => {
    const missing = await charge(undefined, { amount: 1 });
    expect(missing.status).toBe(400);
  });

  it("keeps tenants apart: the same key in another tenant runs again", async () => {
    const before = await ran();
    await (await charge("order-3", { amount: 1 }, "acme")).arrayBuffer();
    const other = await charge("order-3", { amount: 1 }, "globex");
    expect(other.headers.get("idempotent-replayed")).toBeNull();
    expect(await ran()).toBe(before + 2);
  });
});
