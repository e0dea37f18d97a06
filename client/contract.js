// @ts-check
// The Idempotency-Key contract as the gateway applies it, for middleware:
// `withIdempotency` (plain fetch handlers) and `idempotency-ledger/hono`
// (./hono.js) share `idempotencyContract`.
import { DEFAULTS } from "./defaults.js";
import { fingerprint } from "./fingerprint.js";
import { IdempotencyKeyError, parseIdempotencyKey } from "./key.js";
import { problemResponse } from "./problems.js";
import { captureResponse } from "./stored.js";
import { preferWait } from "./waiting.js";
import { refusalResponse } from "./answer.js";
/** @import { LedgerClient } from "./rpc.js" */

/**
 * @template Env
 * @typedef {object} IdempotencyOptions
 * @property {(request: Request, env: Env) => LedgerClient} ledger The ledger to use for this request,
 *   e.g. `LedgerClient.forTenant(env.LEDGER, tenantOf(request))`.
 * @property {readonly string[]} [protectedMethods] Default `["POST", "PATCH"]` (as PROTECTED_METHODS).
 * @property {boolean} [required] Default `true`: a protected request without a key gets
 *   `400 idempotency-key-missing` (as IDEMPOTENCY_REQUIRED).
 * @property {readonly string[]} [fingerprintHeaders] Default `["content-type"]` (as FINGERPRINT_HEADERS).
 * @property {readonly string[]} [storedHeaders] Default `["content-type", "location", "etag"]` (as STORED_RESPONSE_HEADERS).
 * @property {number} [maxStoredBodyBytes] Default 1 MiB; larger responses are stored as tombstones (as MAX_STORED_BODY_BYTES).
 * @property {number} [waitSeconds] Seconds a retry waits for an in-flight first run when it does not send
 *   `Prefer: wait=N` (as IN_FLIGHT_WAIT_SECONDS). Default 0.
 * @property {number} [maxWaitSeconds] The most any request waits (as IN_FLIGHT_WAIT_MAX_SECONDS). Default 10; 0..300.
 */

/**
 * What a framework adapter's `next(body)` resolves to: the route's response, and whether it failed (then the key is released).
 * @typedef {object} RouteResult
 * @property {Response} response
 * @property {boolean} failed
 */

/**
 * One protected request, as an adapter hands it to `run`.
 * @template Env
 * @typedef {object} ContractRun
 * @property {Request} request
 * @property {Env} env
 * @property {{ waitUntil(promise: Promise<unknown>): void }} [ctx]
 * @property {() => Promise<Uint8Array>} readBody
 * @property {(body: Uint8Array | undefined) => Promise<RouteResult>} next
 */

/**
 * @template Env
 * @typedef {object} IdempotencyContract
 * @property {(method: string) => boolean} protects
 * @property {(args: ContractRun<Env>) => Promise<Response>} run
 */

/**
 * The options with their defaults, checked (a TypeError naming what is wrong).
 * @template Env
 * @param {IdempotencyOptions<Env>} options
 */
function settle(options) {
  const {
    ledger,
    protectedMethods = DEFAULTS.protectedMethods,
    required = DEFAULTS.required,
    fingerprintHeaders = DEFAULTS.fingerprintHeaders,
    storedHeaders = DEFAULTS.storedHeaders,
    maxStoredBodyBytes = DEFAULTS.maxStoredBodyBytes,
    waitSeconds = DEFAULTS.waitSeconds,
    maxWaitSeconds = DEFAULTS.maxWaitSeconds,
  } = options;
  if (typeof ledger !== "function") throw new TypeError("idempotency middleware needs options.ledger(request, env)");
  for (const [name, v] of /** @type {const} */ ([["waitSeconds", waitSeconds], ["maxWaitSeconds", maxWaitSeconds]])) {
    if (!Number.isSafeInteger(v) || v < 0 || v > 300) throw new TypeError(`idempotency middleware: ${name} must be a whole number 0..300`);
  }
  if (waitSeconds > maxWaitSeconds) throw new TypeError("idempotency middleware: waitSeconds exceeds maxWaitSeconds");
  if (!Number.isSafeInteger(maxStoredBodyBytes) || maxStoredBodyBytes < 0) throw new TypeError("idempotency middleware: maxStoredBodyBytes must be a whole number");
  const methods = new Set(protectedMethods.map((m) => String(m).toUpperCase()));
  return { ledger, methods, required, fingerprintHeaders, storedHeaders, maxStoredBodyBytes, waitSeconds, maxWaitSeconds };
}

/**
 * The key of a protected request, or the problem answer when it has none
 * (and one is required) or an invalid one. `null`: run unprotected.
 * @param {Request} request
 * @param {boolean} required
 * @returns {{ key: string } | { answer: Response } | null}
 */
function keyOf(request, required) {
  const field = request.headers.get("idempotency-key");
  if (field === null) {
    return required ? { answer: problemResponse("idempotency-key-missing", { args: { method: request.method } }) } : null;
  }
  try {
    return { key: parseIdempotencyKey(field) };
  } catch (e) {
    if (e instanceof IdempotencyKeyError) return { answer: problemResponse("idempotency-key-invalid", { detail: e.message }) };
    throw e;
  }
}

/**
 * The Idempotency-Key contract as the gateway applies it, for middleware:
 * `withIdempotency` (plain fetch handlers) and `idempotency-ledger/hono`
 * share it. Options are checked here, once, when the middleware is made
 * (a TypeError on invalid options).
 *
 * `run({ request, env, ctx, readBody, next })` answers one request whose
 * method is protected: parse the key (same rules), fingerprint (same
 * components), claim (waiting if asked), call `next(body)` once — which
 * resolves to `{ response, failed }` — then complete with its response, or
 * release the key when it failed (threw, or the framework turned an error
 * into a response), and answer refusals with the gateway's problem
 * documents. Exported for framework adapters; most code wants
 * `withIdempotency` or the Hono middleware.
 * @template Env
 * @param {IdempotencyOptions<Env>} options
 * @returns {IdempotencyContract<Env>}
 */
export function idempotencyContract(options) {
  const o = settle(options ?? /** @type {IdempotencyOptions<Env>} */ ({}));
  return {
    protects: (method) => o.methods.has(String(method).toUpperCase()),
    async run({ request, env, ctx, readBody, next }) {
      const keyed = keyOf(request, o.required);
      if (keyed === null) return (await next(undefined)).response;
      if ("answer" in keyed) return keyed.answer;
      const { key } = keyed;
      const body = await readBody();
      const url = new URL(request.url);
      const fp = await fingerprint({ method: request.method, target: url.pathname + url.search, headers: request.headers, fingerprintHeaders: o.fingerprintHeaders, body });
      const client = o.ledger(request, env);
      // As the gateway: wait for an in-flight first run when asked (or by default).
      const asked = preferWait(request.headers.get("prefer"));
      const seconds = Math.min(asked ?? o.waitSeconds, o.maxWaitSeconds);
      const claim = await client.claim({ key, fingerprint: fp, ...(seconds > 0 ? { wait_ms: seconds * 1000 } : {}) });
      /** @param {Response} response */
      const applied = (response) => {
        if (asked === null || claim.waited_ms === undefined) return response;
        const out = new Response(response.body, response);
        out.headers.set("preference-applied", `wait=${seconds}`);
        return out;
      };
      if (claim.outcome !== "claimed") return applied(refusalResponse(claim));
      let result;
      try {
        result = await next(body);
      } catch (e) {
        await client.release({ key, generation: claim.generation });
        throw e;
      }
      if (result.failed) {
        await client.release({ key, generation: claim.generation });
        return result.response;
      }
      const stored = await captureResponse(result.response.clone(), { storedHeaders: o.storedHeaders, maxStoredBodyBytes: o.maxStoredBodyBytes });
      const completion = client.complete({ key, generation: claim.generation, response: stored });
      ctx?.waitUntil?.(completion.catch(() => {}));
      await completion;
      return applied(result.response);
    },
  };
}

/**
 * Wraps a fetch handler `(request, env, ctx) => Response` with the
 * Idempotency-Key contract, as the gateway applies it: parse the key (same
 * rules), fingerprint (same components), claim, run the handler once,
 * complete with its response (released instead if it throws, and the error
 * rethrown), and answer refusals with the gateway's problem documents.
 *
 * options.ledger(request, env) must return a `LedgerClient` (e.g.
 * `LedgerClient.forTenant(env.LEDGER, tenantOf(request))`).
 * @template Env
 * @template [Ctx=unknown]
 * @param {(request: Request, env: Env, ctx: Ctx) => Response | Promise<Response>} handler
 * @param {IdempotencyOptions<Env>} options
 * @returns {(request: Request, env: Env, ctx: Ctx) => Promise<Response>}
 */
export function withIdempotency(handler, options) {
  const contract = idempotencyContract(options);
  return async (request, env, ctx) => {
    if (!contract.protects(request.method)) return handler(request, env, ctx);
    return contract.run({
      request, env, ctx: /** @type {{ waitUntil(promise: Promise<unknown>): void } | undefined} */ (ctx),
      readBody: async () => new Uint8Array(await request.arrayBuffer()),
      // The handler gets a request whose body can still be read.
      next: async (body) => {
        const replayable = body === undefined ? request
          : new Request(request, { body: ["GET", "HEAD"].includes(request.method) ? undefined : /** @type {Uint8Array<ArrayBuffer>} */ (body) });
        return { response: await handler(replayable, env, ctx), failed: false };
      },
    });
  };
}
