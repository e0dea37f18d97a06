// An app protected by withIdempotency over a LedgerService binding to the
// packaged ledger Worker running beside it (./wrangler.jsonc).
import { withIdempotency, type LedgerServiceRpc } from "idempotency-ledger";

interface DevEnv {
  LEDGER: LedgerServiceRpc;
}

export default {
  fetch: withIdempotency(
    async (request: Request) => Response.json({ id: crypto.randomUUID(), body: await request.text() }, { status: 201 }),
    { ledger: (_request: Request, env: DevEnv) => env.LEDGER, tenant: "acme" },
  ),
} satisfies ExportedHandler<DevEnv>;
