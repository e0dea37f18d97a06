// The reference a user compares the product to (issue 45): what a careful
// engineer writes in an afternoon — a JavaScript Worker and a SQLite
// Durable Object with the same contract for the same orders app. The
// Worker authenticates as the floor does (bench/floor/worker.js),
// validates the Idempotency-Key, fingerprints method + path + content
// type + raw body (SHA-256) and forwards to the tenant's object, which
// claims the key (`INSERT … ON CONFLICT DO NOTHING RETURNING`), replays a
// completed record, answers 422 for another request under the key and
// 409 while it is in flight, and otherwise inserts the order and completes
// the record in one `transactionSync`. No sweep, no counters, no logs, no
// leases taken over. Used by `npm run bench:cpu` and `bench:cold`.
import { DurableObject } from "cloudflare:workers";

let tokens = null;
const encoder = new TextEncoder();
const hex = (buf) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join("");
const problem = (status, slug) => Response.json({ type: `https://idempotency-ledger.dev/problems/${slug}`, status }, { status, headers: { "content-type": "application/problem+json" } });

async function tenantOf(request, env) {
  tokens ??= JSON.parse(env.API_TOKENS);
  const [scheme, token] = (request.headers.get("authorization") ?? "").split(" ");
  if (scheme?.toLowerCase() !== "bearer" || !token) return null;
  return tokens[hex(await crypto.subtle.digest("SHA-256", encoder.encode(token.trim())))] ?? null;
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/health") return Response.json({ status: "ok" });
    const tenant = await tenantOf(request, env);
    if (!tenant) return problem(401, "unauthorized");
    const key = request.headers.get("idempotency-key");
    if (!key || key.length > 255 || !/^[\x20-\x7e]+$/.test(key)) return problem(400, "idempotency-key-invalid");
    const body = await request.arrayBuffer();
    const parts = `${request.method}\n${url.pathname}\n${request.headers.get("content-type") ?? ""}\n${hex(await crypto.subtle.digest("SHA-256", body))}`;
    const fingerprint = hex(await crypto.subtle.digest("SHA-256", encoder.encode(parts)));
    const stub = env.STORE.get(env.STORE.idFromName(tenant));
    return stub.fetch("https://store/orders", { method: "POST", headers: { "idempotency-key": key, "x-fingerprint": fingerprint }, body });
  },
};

export class Store extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.storage = ctx.storage;
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS keys (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL,
      status INTEGER, body TEXT, location TEXT) WITHOUT ROWID`);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS orders (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
      sku TEXT NOT NULL, quantity INTEGER NOT NULL, created_at INTEGER NOT NULL)`);
  }

  async fetch(request) {
    const key = request.headers.get("idempotency-key");
    const fingerprint = request.headers.get("x-fingerprint");
    const claimed = this.sql.exec("INSERT INTO keys (key, fingerprint) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING key", key, fingerprint).toArray();
    if (claimed.length === 0) {
      const row = this.sql.exec("SELECT fingerprint, status, body, location FROM keys WHERE key = ?", key).one();
      if (row.fingerprint !== fingerprint) return problem(422, "idempotency-key-reused");
      if (row.status === null) return problem(409, "idempotency-key-in-use");
      return new Response(row.body, { status: row.status, headers: { "content-type": "application/json", location: row.location, "idempotent-replayed": "true" } });
    }
    let order;
    try { order = JSON.parse(await request.text()); } catch { order = null; }
    const { sku, quantity } = order ?? {};
    if (typeof sku !== "string" || sku.length < 1 || sku.length > 64 || !Number.isInteger(quantity) || quantity < 1 || quantity > 1000) {
      this.sql.exec("DELETE FROM keys WHERE key = ?", key);
      return problem(400, "invalid-order");
    }
    const now = Date.now();
    const answer = this.storage.transactionSync(() => {
      const seq = this.sql.exec("SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM orders").one().seq;
      const id = `ord_${String(seq).padStart(8, "0")}`;
      this.sql.exec("INSERT INTO orders (seq, id, sku, quantity, created_at) VALUES (?, ?, ?, ?, ?)", seq, id, sku, quantity, now);
      const body = JSON.stringify({ id, sku, quantity, created_at: new Date(now).toISOString() });
      this.sql.exec("UPDATE keys SET status = 201, body = ?, location = ? WHERE key = ?", body, `/v1/orders/${id}`, key);
      return { body, location: `/v1/orders/${id}` };
    });
    return new Response(answer.body, { status: 201, headers: { "content-type": "application/json", location: answer.location } });
  }
}
