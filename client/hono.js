// @ts-check
// idempotency-ledger/hono: the Idempotency-Key contract as Hono middleware.
//
//   import { idempotency } from "idempotency-ledger/hono";
//   app.use("/payments/*", idempotency({
//     ledger: (request, env) => LedgerClient.forTenant(env.LEDGER, tenantOf(request)),
//   }));
//
// The same contract as the gateway and `withIdempotency` (one shared
// implementation, `idempotencyContract`): the key parsed by the gateway's
// rules, the gateway's fingerprint, claim (waiting with `Prefer: wait=N`),
// the route runs once, its response completed — or the key released when
// the route throws (Hono turns the error into a response; the middleware
// sees `c.error`) — and refusals answered with the gateway's problem
// documents and `Retry-After`; replays carry `Idempotent-Replayed: true`.
// Completion and release are retried as the gateway's and run under
// `c.executionCtx.waitUntil`; an unreachable ledger is answered `503
// idempotency-store-unavailable`.
// No runtime import of Hono: any Hono 4 app can use it.
import { idempotencyContract } from "./contract.js";
/** @import { MiddlewareHandler } from "hono" */
/** @import { IdempotencyOptions } from "./contract.js" */

/**
 * Hono middleware with the gateway's Idempotency-Key contract:
 * `app.use("/payments/*", idempotency({ ledger: (request, env) => LedgerClient.forTenant(env.LEDGER, tenantOf(request)) }))`.
 * The route runs once per key; its response is stored and replayed
 * (`Idempotent-Replayed: true`); a route that throws releases the key.
 * Invalid options throw a TypeError when the middleware is made.
 * @template {object} [Env=any]
 * @param {IdempotencyOptions<Env>} options as `withIdempotency`'s
 * @returns {MiddlewareHandler<{ Bindings: Env }>}
 */
export function idempotency(options) {
  const contract = idempotencyContract(options);
  return async function idempotencyMiddleware(c, next) {
    if (!contract.protects(c.req.method)) return next();
    let ctx;
    try { ctx = c.executionCtx; } catch { ctx = undefined; } // absent outside Workers
    const response = await contract.run({
      request: c.req.raw,
      env: c.env,
      ctx,
      // Read through Hono's body cache, so the route's c.req.json() / text()
      // still work; raw readers get a fresh copy of the same bytes.
      readBody: async () => {
        const body = new Uint8Array(await c.req.arrayBuffer());
        if (!["GET", "HEAD"].includes(c.req.method)) c.req.raw = new Request(c.req.raw, { body });
        return body;
      },
      next: async () => {
        await next();
        return { response: c.res, failed: c.error !== undefined };
      },
    });
    if (response !== c.res) c.res = response;
    return c.res;
  };
}
