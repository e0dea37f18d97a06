// @ts-check
// The Idempotency-Key contract as the gateway applies it, for middleware:
// `withIdempotency` (plain fetch handlers) and `idempotency-ledger/hono`
// (./hono.js) share `idempotencyContract`, which runs the phases of one
// request in order, each in its module: the options, checked once when the
// middleware is made, and the hooks (./options.js); the key and the bounded
// body (../rules/request.js); where the ledger comes from (../rpc/sources.js); the
// claim and its refusals (./claim.js); the route's one run and its
// settlement (./settlement.js), its response captured (./capture.js).
//
// What must stay true: nothing runs unless the key was claimed (or, under
// failurePolicy "open", the runtime refused the claim as overloaded); a
// configuration error (the options against the ledger) is 500
// misconfigured, never an outage; the route's response reaches its caller
// and its error is rethrown whatever the settlement or a hook comes to; a
// route's body is read no further than maxStoredBodyBytes + 1 bytes before
// its key is completed, so a larger one streams once its tombstone landed.
import { readBody, requestBody, requestKey, sourcedKey } from "../rules/request.js";
import { checkedOptions, tell } from "./options.js";
import { claimKey, misconfiguredSource, unreached } from "./claim.js";
import { runClaimed } from "./settlement.js";
/** @import { LedgerSource, TenantLedgerCalls } from "../rpc/sources.js" */

/** @typedef {LedgerSource} IdempotencyLedgerSource What the `ledger` option gives (../rpc/sources.js). */
/** @typedef {import("../rpc/sources.js").LedgerServiceCalls} LedgerServiceCalls A tenant-first ledger: a `LedgerService` binding. */
/** @typedef {TenantLedgerCalls} OneTenantLedger One tenant's claim / complete / release (a `LedgerClient` has them). */
// The options and the hooks' events: ./options.js.
/**
 * @template {unknown[]} A
 * @template T
 * @typedef {import("./options.js").PerRequest<A, T>} PerRequest
 */
/**
 * @template {unknown[]} A
 * @typedef {import("./options.js").IdempotencyOptions<A>} IdempotencyOptions
 */
/** @typedef {import("./options.js").ReplayedEvent} ReplayedEvent */
/** @typedef {import("./options.js").ConflictEvent} ConflictEvent */
/** @typedef {import("./options.js").StoredEvent} StoredEvent */
/** @typedef {import("./options.js").SettlementFailure} SettlementFailure */

/**
 * What a framework adapter's `next(body)` resolves to: the route's response, and whether it failed (then the key is released).
 * @typedef {object} RouteResult
 * @property {Response} response
 * @property {boolean} failed
 */

/**
 * One protected request, as an adapter hands it to `run`.
 * @template {unknown[]} A
 * @typedef {object} ContractRun
 * @property {Request} request
 * @property {A} args What the options' callbacks and hooks are given (Hono: `[c]`; fetch: `[request, env, ctx]`).
 * @property {{ waitUntil(promise: Promise<unknown>): void }} [ctx] Settlements run under its `waitUntil`.
 * @property {(limit: number) => Promise<Uint8Array | null>} readBody The body's bytes, or null once more than
 *   `limit` arrived (read no further); rejects when the body cannot be read (`400 request-body-unreadable`).
 * @property {(body: Uint8Array | undefined, key: string | null) => Promise<RouteResult>} next Runs the route
 *   once, with the body read (`undefined`: not read) and the request's key (null: the request has none) to
 *   expose to it.
 */

/**
 * @template {unknown[]} A
 * @typedef {object} IdempotencyContract
 * @property {(method: string) => boolean} protects
 * @property {(run: ContractRun<A>) => Promise<Response>} run
 */

/**
 * The Idempotency-Key contract as the gateway applies it, for middleware:
 * `withIdempotency` (plain fetch handlers) and `idempotency-ledger/hono`
 * share it. Options are checked here, once, when the middleware is made
 * (a TypeError on invalid options).
 *
 * `run({ request, args, ctx, readBody, next })` answers one request whose
 * method is protected: parse the key (same rules), refuse a body over
 * `maxBodyBytes` (`413 request-too-large`, nothing claimed), resolve the
 * ledger from the options (a wrong tenant, a `ledger` function that throws
 * or gives none: `500 misconfigured`, nothing runs), fingerprint (same
 * components), claim (waiting if asked; a claim the object refuses with a
 * 4xx is the middleware's configuration: `500 misconfigured`), call
 * `next(body, key)` once — which resolves to `{ response, failed }` — then
 * complete with its response (or release the key when it failed — threw,
 * or the framework turned an error into a response — or `shouldStore`
 * said no), and answer refusals with the gateway's problem documents. The
 * route's response body is read no further than `maxStoredBodyBytes` + 1
 * bytes before the completion: larger, it is a tombstone and streams on to
 * its caller. A ledger that cannot be reached for the claim is `503
 * idempotency-store-unavailable` (nothing ran), or, with `failurePolicy:
 * "open"` and a claim the runtime refused as `overloaded`, the route run
 * unprotected.
 * Completion and release are retried as the gateway retries them
 * (../rpc/settle.js), under `ctx.waitUntil` when there is a context; the run's
 * response is returned and its error rethrown whatever they come to (a
 * final failure goes to `onSettlementFailed`). Exported for framework
 * adapters; most code wants `withIdempotency` or the Hono middleware.
 * @template {unknown[]} A
 * @param {IdempotencyOptions<A>} options
 * @returns {IdempotencyContract<A>}
 */
export function idempotencyContract(options) {
  const o = checkedOptions(options ?? /** @type {IdempotencyOptions<A>} */ ({}));
  const base = o.problemBase;
  return {
    protects: (method) => o.methods.has(String(method).toUpperCase()),
    async run({ request, args, ctx, readBody, next }) {
      const keyed = typeof o.key === "function"
        ? await sourcedKey(o.key, args, { request, required: o.required, base })
        : requestKey(request, o.required, base, o.key);
      if (keyed === null) return (await next(undefined, null)).response;
      if ("answer" in keyed) return keyed.answer;
      const { key } = keyed;
      const read = await requestBody(request, o.maxBodyBytes, base, readBody);
      if ("answer" in read) return read.answer;
      const { body } = read;
      const source = await o.source.resolve(args);
      if ("misconfigured" in source) return misconfiguredSource(source, base);
      const { ledger } = source;
      const claim = await claimKey(o, { request, args, ledger, key, body });
      if ("answer" in claim) return claim.answer;
      if ("unreached" in claim) return unreached(o.failurePolicy, base, key, claim.unreached, () => next(body, key));
      return runClaimed(o, {
        ledger, key, generation: claim.generation, lease: claim.lease, ctx, retentionSeconds: o.retentionSeconds, report: o.onSettlementFailed,
        stored: (event) => tell(o.onStored, event, ...args),
      }, { args, body, next, applied: claim.applied });
    },
  };
}

/**
 * What `withIdempotency` hands its handler as a fourth argument.
 * @typedef {object} IdempotencyInfo
 * @property {string | null} idempotencyKey The request's Idempotency-Key (parsed: an sf-string's
 *   content), or null when the middleware does not protect the request (its method, or no key with `required: false`).
 */

/**
 * Wraps a fetch handler `(request, env, ctx) => Response` with the
 * Idempotency-Key contract, as the gateway applies it: parse the key (same
 * rules), fingerprint (same components), claim, run the handler once,
 * complete with its response (released instead if it throws, and the error
 * rethrown, or when `shouldStore` says no), and answer refusals with the
 * gateway's problem documents. Completion and release are retried as the
 * gateway retries them, under `ctx.waitUntil`; the handler's response is
 * always returned and its error never masked (a settlement that finally
 * fails goes to `onSettlementFailed`); an unreachable ledger is `503
 * idempotency-store-unavailable` (or, `failurePolicy: "open"`, the handler
 * run unprotected when the runtime refused the claim as `overloaded`); a
 * configuration error is `500 misconfigured`. A response larger than
 * `maxStoredBodyBytes` streams to its caller once its tombstone is stored.
 *
 * The handler is called `(request, env, ctx, { idempotencyKey })`: the
 * request's body can still be read, and `idempotencyKey` is its parsed key
 * (null when unprotected). Every callback and hook of the options is given
 * `(…, request, env, ctx)`, e.g. `ledger: (request, env) => env.LEDGER`.
 * @template Env
 * @template [Ctx=unknown]
 * @param {(request: Request, env: Env, ctx: Ctx, idempotency: IdempotencyInfo) => Response | Promise<Response>} handler
 * @param {IdempotencyOptions<[request: Request, env: Env, ctx: Ctx]>} options
 * @returns {(request: Request, env: Env, ctx: Ctx) => Promise<Response>}
 */
export function withIdempotency(handler, options) {
  const contract = idempotencyContract(options);
  return async (request, env, ctx) => {
    if (!contract.protects(request.method)) return handler(request, env, ctx, { idempotencyKey: null });
    return contract.run({
      request, args: [request, env, ctx], ctx: /** @type {{ waitUntil(promise: Promise<unknown>): void } | undefined} */ (ctx),
      readBody: (limit) => readBody(request, limit),
      // The handler gets a request whose body can still be read.
      next: async (body, key) => {
        const replayable = body === undefined ? request
          : new Request(request, { body: ["GET", "HEAD"].includes(request.method) ? undefined : /** @type {Uint8Array<ArrayBuffer>} */ (body) });
        return { response: await handler(replayable, env, ctx, { idempotencyKey: key }), failed: false };
      },
    });
  };
}
