// A Hono app protected by `idempotency-ledger/hono`, bound to the real
// TenantLedger (script_name). Bundled by esbuild in hono.test.mjs (Hono
// included); type-checked by `tsc -p tests/types`.
import { Hono } from "hono";
import { idempotency } from "../../../client/hono.js";
import { LedgerClient, type LedgerNamespace } from "../../../client/index.js";

type AppEnv = { Bindings: { LEDGER: LedgerNamespace } };

const app = new Hono<AppEnv>();
let runs = 0; // the side effect the middleware protects

app.use("/payments/*", idempotency<AppEnv>({
  ledger: (c) => LedgerClient.forTenant(c.env.LEDGER, c.req.header("x-tenant") ?? "hono-tenant"),
}));

app.post("/payments/charge", async (c) => {
  runs += 1;
  const body = await c.req.json<{ amount: string; explode?: boolean; slow?: boolean }>();
  if (body.explode) throw new Error("the route failed");
  if (body.slow) await new Promise((r) => setTimeout(r, 3_000));
  return c.json({ run: runs, amount: body.amount }, 201, { location: `/payments/${runs}` });
});

app.get("/payments/runs", (c) => c.json({ runs }));

export default app;
