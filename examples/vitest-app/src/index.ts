// The app under test: POST /charges runs once per Idempotency-Key; the
// ledger is the TenantLedger of the idempotency-ledger Worker, one object
// per tenant (here the tenant is the x-tenant header; a real app derives
// it from its authentication).
import { LedgerClient, withIdempotency } from "idempotency-ledger";

let charges = 0; // how often the handler really ran (per isolate)

const charge = withIdempotency(
  async (request: Request) => {
    charges++;
    const { amount } = await request.json<{ amount: number }>();
    return Response.json({ id: crypto.randomUUID(), amount }, { status: 201 });
  },
  { ledger: (request: Request, env: Env) => LedgerClient.forTenant(env.LEDGER, request.headers.get("x-tenant") ?? "demo") },
);

export default {
  async fetch(request, env, ctx): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/charges") return charge(request, env, ctx);
    if (url.pathname === "/ran") return Response.json({ charges });
    return new Response("not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
