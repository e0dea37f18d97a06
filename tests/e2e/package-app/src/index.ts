// A user's TypeScript Worker, written against the installed npm package
// only (no Rust, no checkout): tests/e2e/package.test.mjs copies this
// project to a temporary folder, installs the packed tarball, checks the
// types (wrangler types, then tsc) and bundles it with wrangler.
//
// Routed by the `x-app` header, so every path reaches each part as sent:
// - gateway   the packaged gateway itself (idempotency-ledger/worker).
// - payments  Payments, this Worker's own Durable Object, exactly-once over
//             its own `charges` table (idempotency-ledger/ledger); the
//             object is named by `x-tenant`.
// - rpc       withIdempotency over the LedgerService binding (typed by
//             `wrangler types` as Service<LedgerService>).
// - short     ShortLived: the embedded ledger with a 6 s retention, swept
//             by the object's own alarm.
// - tiny      Tiny: a database limit (maxDbBytes) every new key is over.
// - otherwise a plain handler protected by withIdempotency, its ledger the
//             packaged TenantLedger bound in this Worker.
import { DurableObject } from "cloudflare:workers";
import { LedgerClient, withIdempotency } from "idempotency-ledger";
import { Ledger } from "idempotency-ledger/ledger";
import { fetchGateway } from "idempotency-ledger/worker";

export { TenantLedger, LedgerService } from "idempotency-ledger/worker";

/** Charges, each one the answer to one Idempotency-Key. */
export class Payments extends DurableObject<Env> {
  ledger: Ledger;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS charges (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL)");
    this.ledger = new Ledger(ctx, { maxKeys: 1000, maxBodyBytes: 4096 });
  }

  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const op = request.headers.get("x-op");
    if (op === "count") {
      const row = this.ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM charges").one();
      return Response.json({ charges: row.n });
    }
    if (op === "lookup") return Response.json(this.ledger.lookup(url.searchParams.get("key") ?? ""));
    if (op === "stats") return Response.json(this.ledger.stats());
    // This class has no alarm() handler: armSweep must say so, never throw.
    if (op === "arm") return Response.json({ armed: await this.ledger.armSweep() });
    if (url.pathname !== "/charges") {
      // Any other path: the body echoed back, stored and replayed.
      return this.ledger.handle(request, ({ body }) => ({ status: 201, headers: { "content-type": "application/octet-stream" }, body }));
    }
    return this.ledger.handle(request, ({ text }) => {
      const amount = Number(text());
      if (!Number.isSafeInteger(amount)) throw new Error(`not an amount: ${text()}`);
      const { id } = this.ctx.storage.sql
        .exec<{ id: number }>("INSERT INTO charges (amount) VALUES (?) RETURNING id", amount)
        .one();
      // A charge of 13 fails after its write: the write must be rolled back.
      if (amount === 13) throw new Error("the card network refused 13");
      return { status: 201, headers: { location: `/charges/${id}` }, json: { id, amount } };
    });
  }
}

/** Records kept 6 s, swept by the object's alarm (`armSweep`, `alarm`). */
export class ShortLived extends DurableObject<Env> {
  ledger = new Ledger(this.ctx, { retentionSeconds: 6, sweepIntervalSeconds: 1 });

  async fetch(request: Request): Promise<Response> {
    if (request.headers.get("x-op") === "stats") return Response.json(this.ledger.stats());
    const response = await this.ledger.handle(request, ({ body }) => ({ status: 201, body }));
    await this.ledger.armSweep();
    return response;
  }

  async alarm(): Promise<void> {
    await this.ledger.alarm();
  }
}

/** A database limit no write fits under: every new key is ledger_full. */
export class Tiny extends DurableObject<Env> {
  ledger = new Ledger(this.ctx, { maxDbBytes: 1 });

  async fetch(request: Request): Promise<Response> {
    return this.ledger.handle(request, ({ body }) => ({ status: 201, body }));
  }
}

const overRpc = withIdempotency(
  async (request: Request) => Response.json({ id: crypto.randomUUID(), body: await request.text() }, { status: 201 }),
  { ledger: (_request: Request, env: Env) => env.LEDGER_RPC, tenant: "acme" },
);

const orders = withIdempotency(
  async (request: Request) => {
    const order = { id: crypto.randomUUID(), body: await request.text() };
    return Response.json(order, { status: 201 });
  },
  { ledger: (_request: Request, env: Env) => LedgerClient.forTenant(env.TENANT_LEDGER, "acme") },
);

export default {
  async fetch(request, env, ctx): Promise<Response> {
    switch (request.headers.get("x-app")) {
      case "payments":
        return env.PAYMENTS.get(env.PAYMENTS.idFromName(request.headers.get("x-tenant") ?? "acme")).fetch(request);
      case "gateway":
        return fetchGateway(request, env, ctx);
      case "rpc":
        return overRpc(request, env, ctx);
      case "short":
        return env.SHORT_LIVED.get(env.SHORT_LIVED.idFromName("short")).fetch(request);
      case "tiny":
        return env.TINY.get(env.TINY.idFromName("tiny")).fetch(request);
      default:
        return orders(request, env, ctx);
    }
  },
} satisfies ExportedHandler<Env>;
