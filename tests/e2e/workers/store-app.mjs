// A Worker holding the seed package's store contract over the real
// TenantLedger (idempotency-ledger/store, bound as LEDGER with
// script_name): each request is one store call, its Result answered as
// JSON. Used by store-contract.test.mjs.
import { ledgerStore } from "../../../client/middleware/store.js";

export default {
  async fetch(request, env) {
    const { op, tenant = "store-tenant", args } = await request.json();
    const store = ledgerStore({ ledger: env.LEDGER, tenant });
    const result = await store[op](...args);
    return Response.json(result.ok ? result : { ok: false, error: { name: result.error.name, message: result.error.message } });
  },
};
