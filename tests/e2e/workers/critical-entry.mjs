// The deployed entry, plus two test paths: `/__critical` raises the flag
// worker-build's shim sets when the wasm module panics
// (`__worker_init_state.criticalError`), `/__state` shows the flag and the
// shim's instance count, `/__object-stats` calls the tenant "acme"'s
// TenantLedger directly (RPC v1 `stats`, past the gateway). Everything else
// is worker/entry.mjs's default.
import gateway from "../../../worker/entry.mjs";

export { TenantLedger } from "../../../worker/entry.mjs";

export default {
  fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    const state = globalThis.__worker_init_state;
    if (pathname === "/__critical") { state.criticalError = true; return new Response(null, { status: 204 }); }
    if (pathname === "/__object-stats") {
      const stub = env.TENANT_LEDGER.get(env.TENANT_LEDGER.idFromName("acme"));
      return stub.fetch("https://tenant-ledger/rpc/v1/stats", { method: "POST", body: "{}" });
    }
    if (pathname === "/__state") return Response.json({ criticalError: state.criticalError, instanceId: state.instanceId });
    return gateway.fetch(request, env, ctx);
  },
};
