// The floor for `npm run bench:http`: a bare JavaScript Worker + SQLite
// Durable Object doing what the product's embedded orders app does for a
// fresh POST — same bearer-token → tenant routing (SHA-256 of the token
// looked up in API_TOKENS, idFromName(tenant)), same order validation and
// INSERT, same 201 answer — with **no idempotency at all**. Whatever the
// product costs beyond this is the price of the Idempotency-Key contract.
import { DurableObject } from "cloudflare:workers";

let tokens = null;
const encoder = new TextEncoder();

async function tenantOf(request, env) {
  tokens ??= JSON.parse(env.API_TOKENS);
  const auth = request.headers.get("authorization") ?? "";
  const [scheme, token] = auth.split(" ");
  if (scheme?.toLowerCase() !== "bearer" || !token) return null;
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(token.trim()));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return tokens[hex] ?? null;
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/health") return Response.json({ status: "ok" });
    const tenant = await tenantOf(request, env);
    if (!tenant) return new Response("unauthorized", { status: 401 });
    const stub = env.ORDERS.get(env.ORDERS.idFromName(tenant));
    return stub.fetch(request);
  },
};

export class Orders extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS orders (
      seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, sku TEXT NOT NULL,
      quantity INTEGER NOT NULL, created_at INTEGER NOT NULL)`);
  }

  async fetch(request) {
    if (request.method !== "POST") return new Response("method not allowed", { status: 405 });
    let order;
    try {
      order = JSON.parse(await request.text());
    } catch {
      return Response.json({ title: "invalid-order" }, { status: 400 });
    }
    const { sku, quantity } = order ?? {};
    if (typeof sku !== "string" || sku.length < 1 || sku.length > 64 || !Number.isInteger(quantity) || quantity < 1 || quantity > 1000) {
      return Response.json({ title: "invalid-order" }, { status: 400 });
    }
    const now = Date.now();
    const seq = this.sql.exec("SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM orders").one().seq;
    const id = `ord_${String(seq).padStart(8, "0")}`;
    this.sql.exec("INSERT INTO orders (seq, id, sku, quantity, created_at) VALUES (?, ?, ?, ?, ?)", seq, id, sku, quantity, now);
    return Response.json(
      { id, sku, quantity, created_at: new Date(now).toISOString() },
      { status: 201, headers: { location: `/v1/orders/${id}` } },
    );
  }
}
