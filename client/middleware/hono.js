// @ts-check
// idempotency-ledger/hono: the Idempotency-Key contract as Hono middleware.
//
//   import { idempotency } from "idempotency-ledger/hono";
//   app.use("/payments/*", idempotency<AppEnv>({
//     ledger: (c) => c.env.LEDGER,          // a LedgerService binding, a namespace or a LedgerClient
//     tenant: (c) => c.get("tenant"),       // set by the app's auth middleware
//   }));
//   app.post("/payments/charge", (c) => charge(c.get("idempotencyKey")));
//
// The same contract as the gateway and `withIdempotency` (one shared
// implementation, `idempotencyContract`): the key parsed by the gateway's
// rules, the body bounded by `maxBodyBytes`, the gateway's fingerprint,
// claim (waiting with `Prefer: wait=N`), the route runs once, its response
// completed — or the key released when the route throws (Hono turns the
// error into a response; the middleware sees `c.error`) or `shouldStore`
// says no — and refusals answered with the gateway's problem documents and
// `Retry-After`; replays carry `Idempotent-Replayed: true`. Completion and
// release are retried as the gateway's and run under
// `c.executionCtx.waitUntil`; an unreachable ledger is answered `503
// idempotency-store-unavailable`. Every callback and hook is given Hono's
// `c`; the route reads its key with `c.get("idempotencyKey")`.
// No runtime import of Hono: any Hono 4 app can use it.
import { idempotencyContract } from "./contract.js";
import { readBody } from "../rules/request.js";
/** @import { Context, Env, MiddlewareHandler } from "hono" */
/** @import { IdempotencyOptions } from "./contract.js" */

/**
 * The variable the middleware sets for the route: `c.get("idempotencyKey")`,
 * the request's parsed Idempotency-Key. Set on every request the middleware
 * protects (a protected method with a valid key); absent on the others.
 * @typedef {{ idempotencyKey: string }} IdempotencyVariables
 */

/**
 * Hono middleware with the gateway's Idempotency-Key contract:
 * `app.use("/payments/*", idempotency<AppEnv>({ ledger: (c) => c.env.LEDGER, tenant: (c) => c.get("tenant") }))`.
 * The route runs once per key; its response is stored and replayed
 * (`Idempotent-Replayed: true`); a route that throws releases the key.
 * Invalid options throw a TypeError when the middleware is made.
 *
 * `E` is the app's Hono environment, as in `new Hono<E>()`
 * (`{ Bindings: …; Variables: … }`): the callbacks' `c` is typed by it.
 * Without it `c.env` and `c.var` are empty (`{}`), so reading a binding or
 * a variable is a type error until `E` is given.
 * @template {Env} [E={}]
 * @param {IdempotencyOptions<[c: Context<E>]>} options as `withIdempotency`'s, each callback and hook given `c`
 * @returns {MiddlewareHandler<E & { Variables: IdempotencyVariables }>}
 */
export function idempotency(options) {
  const contract = idempotencyContract(options);
  return async function idempotencyMiddleware(c, next) {
    if (!contract.protects(c.req.method)) return next();
    let ctx;
    try { ctx = c.executionCtx; } catch { ctx = undefined; } // absent outside Workers
    const response = await contract.run({
      request: c.req.raw,
      args: [/** @type {Context<E>} */ (/** @type {unknown} */ (c))],
      ctx,
      // Read once, bounded; the route's c.req.json() / text() and raw
      // readers then get the same bytes. A body an earlier middleware read
      // through Hono's cache is taken from there (and still bounded).
      readBody: async (limit) => {
        const body = c.req.raw.bodyUsed ? new Uint8Array(await c.req.arrayBuffer()) : await readBody(c.req.raw, limit);
        if (body === null || body.byteLength > limit) return null;
        if (!["GET", "HEAD"].includes(c.req.method)) c.req.raw = new Request(c.req.raw, { body: /** @type {Uint8Array<ArrayBuffer>} */ (body) });
        return body;
      },
      next: async (_body, key) => {
        if (key !== null) c.set("idempotencyKey", key);
        await next();
        return { response: c.res, failed: c.error !== undefined };
      },
    });
    if (response !== c.res) c.res = response;
    return c.res;
  };
}
