// A JavaScript Worker that calls a deployed TenantLedger through the npm
// package's client (bound as LEDGER with script_name). Used by clients.test.mjs.
import {
  LedgerClient, LedgerError, fingerprint, captureResponse, replayResponse, withIdempotency,
} from "../../../client/index.js";

let charges = 0; // the "side effect" this Worker protects
let wrappedRuns = 0; // runs of the handler behind withIdempotency

// One line of middleware around a plain fetch handler.
const wrapped = withIdempotency(async (request) => {
  wrappedRuns += 1;
  const text = await request.text();
  if (text === "explode") throw new Error("the handler failed");
  // A slow first run (its own timer), for retries that wait for it.
  if (text.startsWith("slow")) await new Promise((r) => setTimeout(r, 3_000));
  return Response.json({ run: wrappedRuns, got: text }, { status: 201, headers: { location: `/runs/${wrappedRuns}` } });
}, { ledger: (request, env) => LedgerClient.forTenant(env.LEDGER, request.headers.get("x-tenant") ?? "js-tenant") });

async function raw(client, op, call) {
  try {
    switch (op) {
      case "claim": {
        const { request, ...rest } = call;
        return Response.json(await client.claim({ ...rest, fingerprint: await fingerprint(request) }));
      }
      case "complete": return Response.json(await client.complete(call));
      case "release": return Response.json(await client.release(call));
      case "lookup": return Response.json(await client.lookup(call.key));
      case "stats": return Response.json(await client.stats());
    }
    return new Response("no such op", { status: 404 });
  } catch (e) {
    if (e instanceof LedgerError) return Response.json({ error: e.message, status: e.status, problem: e.problem }, { status: 599 });
    throw e;
  }
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const tenant = request.headers.get("x-tenant") ?? "js-tenant";
    const client = LedgerClient.forTenant(env.LEDGER, tenant);
    if (url.pathname.startsWith("/raw/")) return raw(client, url.pathname.slice(5), await request.json());
    if (url.pathname.startsWith("/wrapped")) {
      try {
        return await wrapped(request, env, ctx);
      } catch (e) {
        return new Response(`handler threw: ${e.message}`, { status: 500 });
      }
    }

    if (url.pathname === "/charge" && request.method === "POST") {
      // The whole contract in a few lines: claim, run once, complete, replay.
      const key = request.headers.get("idempotency-key");
      const body = new Uint8Array(await request.arrayBuffer());
      const fp = await fingerprint({ method: request.method, target: url.pathname + url.search, headers: request.headers, body });
      const claim = await client.claim({ key, fingerprint: fp });
      if (claim.outcome === "completed") return replayResponse(claim.response);
      if (claim.outcome !== "claimed") return Response.json(claim, { status: claim.outcome === "mismatch" ? 422 : 409 });
      charges += 1;
      const response = Response.json({ charge: charges, amount: new TextDecoder().decode(body) }, { status: 201 });
      const stored = await captureResponse(response.clone());
      await client.complete({ key, generation: claim.generation, response: stored });
      return response;
    }
    return new Response("not found", { status: 404 });
  },
};
