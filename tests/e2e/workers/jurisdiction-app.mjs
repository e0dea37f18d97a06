// A JavaScript Worker over the deployed TenantLedger namespace (LEDGER,
// script "gateway"), for tests/e2e/jurisdictions.test.mjs: the package's
// `jurisdiction` option on each path to a tenant's objects — withIdempotency,
// ledgerStore, LedgerClient.forTenant, Workflows `once` — and the deployed LedgerService
// (SERVICE). Local workerd refuses `jurisdiction(J)`, so LEDGER is wrapped
// in a stand-in whose `jurisdiction("eu")` answers the gateway's eu
// namespace (LEDGER_EU, class TenantLedgerEu of
// tests/e2e/workers/jurisdiction-entry.mjs) and records each call
// (`GET /asked`); `?real=1` hands over the real binding instead.
import { LedgerClient, fingerprint, withIdempotency } from "../../../client/index.js";
import { ledgerStore } from "../../../client/middleware/store.js";
import { once } from "../../../client/consumers/workflows.js";

const asked = [];
let runs = 0;

const standIn = (env) =>
  new Proxy(env.LEDGER, {
    get(target, name) {
      if (name === "jurisdiction") {
        return (j) => {
          asked.push(j);
          if (j !== "eu") throw new Error("Jurisdiction restrictions are not implemented in workerd");
          return env.LEDGER_EU;
        };
      }
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
const namespace = (request, env) => (new URL(request.url).searchParams.has("real") ? env.LEDGER : standIn(env));
const tenant = (request) => request.headers.get("x-tenant") ?? "acme";
const jurisdiction = (request) => request.headers.get("x-jurisdiction");

const handler = withIdempotency(async (request) => {
  runs += 1;
  return new Response(`ran ${await request.text()}`, { status: 201 });
}, { ledger: namespace, tenant, jurisdiction });

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/asked") return Response.json({ asked, runs });
    if (url.pathname === "/wrapped") return handler(request, env, ctx);
    const key = request.headers.get("idempotency-key");
    const fp = await fingerprint({ method: "POST", target: "/x", headers: new Headers(), fingerprintHeaders: [], body: new Uint8Array() });
    if (url.pathname === "/store") {
      const store = ledgerStore({ ledger: namespace(request, env), tenant: tenant(request), jurisdiction: jurisdiction(request) ?? undefined });
      const now = Date.now();
      return Response.json(await store.claim({ id: key, fingerprint: fp.digest, now, leaseMs: 30_000, expiresAt: now + 3_600_000 }));
    }
    if (url.pathname === "/client") {
      const client = LedgerClient.forTenant(namespace(request, env), tenant(request), { jurisdiction: jurisdiction(request) });
      try {
        return Response.json(await client.claim({ key, fingerprint: fp }));
      } catch (e) {
        return Response.json({ error: e.message, problem: e.problem ?? null }, { status: e.status ?? 599 });
      }
    }
    if (url.pathname === "/workflow") {
      // The step's callback run as the engine's first attempt runs it (the engine itself: tests/e2e/workflows.test.mjs).
      const step = { do: (_name, ...rest) => rest.at(-1)() };
      const options = { ledger: namespace(request, env), tenant: tenant(request), jurisdiction: jurisdiction(request), key };
      try {
        return Response.json(await once(step, "charge", options, () => { runs += 1; return { ran: runs }; }));
      } catch (e) {
        return Response.json({ error: e.message }, { status: 500 });
      }
    }
    if (url.pathname === "/service") return Response.json(await env.SERVICE.claim(tenant(request), { key, fingerprint: fp }));
    return new Response("not found", { status: 404 });
  },
};
