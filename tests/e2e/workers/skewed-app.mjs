// A separately deployed app in front of a deployed TenantLedger (bound as
// LEDGER with script_name), configured with its OWN TENANT_SHARDS
// (APP_TENANT_SHARDS: absent, or another layout than the ledger's) — a
// caller whose configuration lags or leads the ledger's. Used by
// skew.test.mjs.
//   POST /charge  withIdempotency over tenant "acme": the handler calls the
//                 real origin (ORIGIN_URL) once per run, with the key, and
//                 sleeps HOLD_MS first when the body says "hold" (an owner
//                 that outlives its lease).
//   POST /raw/OP  TenantLedgers(LEDGER, APP_TENANT_SHARDS)[OP]("acme", call).
import { TenantLedgers, LedgerError, fingerprint, withIdempotency } from "../../../client/index.js";

/** @param {Record<string, string | undefined>} env */
const shards = (env) => env.APP_TENANT_SHARDS || null;

/** The middleware, made on the first request (its lease comes from the environment). */
let charge;
/** @param {Record<string, any>} env */
const chargeOf = (env) => (charge ??= withIdempotency(async (request, env) => {
  const body = await request.text();
  if (body.startsWith("hold")) await new Promise((r) => setTimeout(r, Number(env.HOLD_MS ?? 0)));
  const key = request.headers.get("idempotency-key") ?? "";
  const ran = await fetch(`${env.ORIGIN_URL}/run`, { method: "POST", headers: { "idempotency-key": key }, body });
  return new Response(await ran.text(), { status: 201, headers: { "content-type": "text/plain" } });
}, {
  ledger: (_request, env) => env.LEDGER,
  tenant: "acme",
  tenantShards: (_request, env) => shards(env),
  leaseSeconds: Number(env.APP_LEASE_SECONDS ?? 60),
}));

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/charge") {
      try {
        return await chargeOf(env)(request, env, ctx);
      } catch (e) {
        return new Response(`handler threw: ${e.message}`, { status: 500 });
      }
    }
    if (url.pathname.startsWith("/raw/")) {
      const op = url.pathname.slice(5);
      const call = await request.json();
      try {
        const ledgers = new TenantLedgers(env.LEDGER, shards(env));
        if (op === "claim") {
          const { body, ...rest } = call;
          const fp = await fingerprint({ method: "POST", target: "/charge", headers: new Headers(), body: new TextEncoder().encode(body) });
          return Response.json(await ledgers.claim("acme", { ...rest, fingerprint: fp }));
        }
        return Response.json(await ledgers[op]("acme", call));
      } catch (e) {
        return Response.json({ error: e.message, status: e instanceof LedgerError ? e.status : null }, { status: 599 });
      }
    }
    return new Response("not found", { status: 404 });
  },
};
