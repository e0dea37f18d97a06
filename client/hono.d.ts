// Types for idempotency-ledger/hono (./hono.js).
import type { MiddlewareHandler } from "hono";
import type { IdempotencyOptions } from "./index.js";

/**
 * Hono middleware with the gateway's Idempotency-Key contract:
 * `app.use("/payments/*", idempotency({ ledger: (request, env) => LedgerClient.forTenant(env.LEDGER, tenantOf(request)) }))`.
 * The route runs once per key; its response is stored and replayed
 * (`Idempotent-Replayed: true`); a route that throws releases the key.
 * Invalid options throw a TypeError when the middleware is made.
 */
export declare function idempotency<Env extends object = any>(options: IdempotencyOptions<Env>): MiddlewareHandler<{ Bindings: Env }>;
