// A TypeScript Worker that calls the deployed ledger over JS RPC: a service
// binding to the `LedgerService` entrypoint, fully typed by the package's
// declarations. Compiled by esbuild in js-rpc.test.mjs; type-checked by
// `tsc -p tests/types`.
import { fingerprint, replayResponse, captureResponse } from "../../../client/index.js";
import type { LedgerServiceRpc, ClaimCall, ListCall } from "../../../client/index.js";

interface Env {
  LEDGER: LedgerServiceRpc;
}

let charges = 0; // the side effect this Worker protects

/** Runs one RPC method as the test asks and answers its result (or its error). */
async function raw(env: Env, op: string, tenant: string, arg: unknown): Promise<Response> {
  try {
    switch (op) {
      case "claim": return Response.json(await env.LEDGER.claim(tenant, arg as ClaimCall));
      case "complete": return Response.json(await env.LEDGER.complete(tenant, arg as Parameters<LedgerServiceRpc["complete"]>[1]));
      case "release": return Response.json(await env.LEDGER.release(tenant, arg as Parameters<LedgerServiceRpc["release"]>[1]));
      case "lookup": return Response.json(await env.LEDGER.lookup(tenant, arg as string));
      case "list": return Response.json(await env.LEDGER.list(tenant, arg as ListCall));
      case "stats": return Response.json(await env.LEDGER.stats(tenant));
      case "execute": return Response.json(await env.LEDGER.execute(tenant, arg as Parameters<LedgerServiceRpc["execute"]>[1]));
    }
    return new Response("no such op", { status: 404 });
  } catch (e) {
    const error = e as Error;
    return Response.json({ name: error.name, message: error.message }, { status: 599 });
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/raw") {
      const { op, tenant, arg } = (await request.json()) as { op: string; tenant: string; arg: unknown };
      return raw(env, op, tenant, arg);
    }
    if (url.pathname === "/charge" && request.method === "POST") {
      // The contract over typed JS RPC: claim, run once, complete, replay.
      const key = request.headers.get("idempotency-key") ?? "";
      const tenant = request.headers.get("x-tenant") ?? "acme";
      const body = new Uint8Array(await request.arrayBuffer());
      const fp = await fingerprint({ method: request.method, target: url.pathname, headers: request.headers, body });
      const claim = await env.LEDGER.claim(tenant, { key, fingerprint: fp, wait_ms: 5_000 });
      switch (claim.outcome) {
        case "completed": return replayResponse(claim.response);
        case "claimed": break;
        default: return Response.json(claim, { status: 409 });
      }
      charges += 1;
      const response = Response.json({ charge: charges }, { status: 201 });
      await env.LEDGER.complete(tenant, { key, generation: claim.generation, response: await captureResponse(response.clone()) });
      return response;
    }
    return new Response("not found", { status: 404 });
  },
};
