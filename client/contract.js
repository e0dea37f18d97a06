// @ts-check
// The Idempotency-Key contract as the gateway applies it, for middleware:
// `withIdempotency` (plain fetch handlers) and `idempotency-ledger/hono`
// (./hono.js) share `idempotencyContract`.
import { DEFAULTS } from "./defaults.js";
import { encoder, sha256hex } from "./bytes.js";
import { fingerprint } from "./fingerprint.js";
import { IdempotencyKeyError, parseIdempotencyKey } from "./key.js";
import { problemResponse } from "./problems.js";
import { LedgerError } from "./rpc.js";
import { landedEarlier, settle } from "./settle.js";
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
 * @property {(failure: SettlementFailure) => void | Promise<void>} [onSettlementFailed] Called when a completion
 *   or a release still fails after its retries (the handler's response is returned, or its error rethrown,
 *   all the same). Default: one `console.error` JSON line, `{"event":"idempotency.complete_failed"` (or
 *   `release_failed`) `,"key":<12 hex of the key's SHA-256>,"error":<message>}`. A hook that throws is ignored.
 */

/**
 * A completion or release that failed after its retries: what `onSettlementFailed` is given.
 * @typedef {object} SettlementFailure
 * @property {"complete" | "release"} operation
 * @property {string} key The request's Idempotency-Key (parsed).
 * @property {number} generation The claim's generation.
 * @property {unknown} error The last attempt's error (a `LedgerError`, or an `Error` for an answer without a known outcome).
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
 * @property {{ waitUntil(promise: Promise<unknown>): void }} [ctx] Settlements run under its `waitUntil`.
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
function checked(options) {
  const {
    ledger,
    protectedMethods = DEFAULTS.protectedMethods,
    required = DEFAULTS.required,
    fingerprintHeaders = DEFAULTS.fingerprintHeaders,
    storedHeaders = DEFAULTS.storedHeaders,
    maxStoredBodyBytes = DEFAULTS.maxStoredBodyBytes,
    waitSeconds = DEFAULTS.waitSeconds,
    maxWaitSeconds = DEFAULTS.maxWaitSeconds,
    onSettlementFailed = logSettlementFailure,
  } = options;
  if (typeof ledger !== "function") throw new TypeError("idempotency middleware needs options.ledger(request, env)");
  if (typeof onSettlementFailed !== "function") throw new TypeError("idempotency middleware: onSettlementFailed must be a function");
  for (const [name, v] of /** @type {const} */ ([["waitSeconds", waitSeconds], ["maxWaitSeconds", maxWaitSeconds]])) {
    if (!Number.isSafeInteger(v) || v < 0 || v > 300) throw new TypeError(`idempotency middleware: ${name} must be a whole number 0..300`);
  }
  if (waitSeconds > maxWaitSeconds) throw new TypeError("idempotency middleware: waitSeconds exceeds maxWaitSeconds");
  if (!Number.isSafeInteger(maxStoredBodyBytes) || maxStoredBodyBytes < 0) throw new TypeError("idempotency middleware: maxStoredBodyBytes must be a whole number");
  const methods = new Set(protectedMethods.map((m) => String(m).toUpperCase()));
  return { ledger, methods, required, fingerprintHeaders, storedHeaders, maxStoredBodyBytes, waitSeconds, maxWaitSeconds, onSettlementFailed };
}

/**
 * The default `onSettlementFailed`: the gateway's log line (the key as a
 * short hash, never the key itself).
 * @param {SettlementFailure} failure
 */
async function logSettlementFailure({ operation, key, error }) {
  const hash = (await sha256hex(encoder.encode(key))).slice(0, 12);
  const message = error instanceof Error ? error.message : String(error);
  console.error(JSON.stringify({ event: `idempotency.${operation}_failed`, key: hash, error: message }));
}

/**
 * The answer to a claim that failed, as the gateway's `read_failure`
 * (src/contract/answer.rs), nothing having run: a problem document the
 * object rendered for a refusal of the call (4xx) is passed through as it
 * is; no answer, a 5xx or anything else is `503 idempotency-store-unavailable`.
 * An error that is not a `LedgerError` (a bug, not the ledger) is rethrown.
 * @param {unknown} error
 * @returns {Response}
 */
function claimFailure(error) {
  if (!(error instanceof LedgerError)) throw error;
  const { status, problem } = error;
  if (status !== null && status < 500 && problem !== null && typeof problem === "object" && !Array.isArray(problem)) {
    return new Response(JSON.stringify(problem), { status, headers: { "content-type": "application/problem+json" } });
  }
  return problemResponse("idempotency-store-unavailable");
}

const CLAIM_OUTCOMES = new Set(["claimed", "completed", "in_flight", "mismatch", "ledger_full"]);

/**
 * Completes (`response` given) or releases the claimed key, retried as the
 * gateway retries (./settle.js), under `ctx.waitUntil` when there is a
 * context, so a client hang-up cannot cancel it; the request awaits the
 * same promise. Never rejects: a settlement that finally fails (an error
 * after the retries, or an answer without a known outcome) is reported
 * through the hook. `fenced_out` is an answer, not a failure (the object
 * logs it).
 * @param {{ client: LedgerClient; key: string; generation: number; ctx?: { waitUntil(promise: Promise<unknown>): void };
 *   report: (failure: SettlementFailure) => void | Promise<void> }} claimed The claimed key of one request.
 * @param {import("./stored.js").StoredResponse} [response]
 * @returns {Promise<void>}
 */
function settlement({ client, key, generation, ctx, report }, response) {
  const operation = response === undefined ? "release" : "complete";
  const call = response === undefined ? () => client.release({ key, generation }) : () => client.complete({ key, generation, response });
  const [success, landedState] = response === undefined ? ["released", "released"] : ["stored", "completed"];
  const done = (async () => {
    let error;
    try {
      const { answer, landed } = await settle(/** @type {() => Promise<{ outcome?: unknown }>} */ (call), {
        landed: (a) => landedEarlier(a, generation, /** @type {"completed" | "released"} */ (landedState)),
      });
      if (landed || answer?.outcome === success) return;
      if (answer?.outcome === "fenced_out") return; // superseded by a later owner: an answer, logged by the object
      error = new Error(`the ledger answered ${operation} without a known outcome`);
    } catch (e) {
      error = e;
    }
    try { await report({ operation, key, generation, error }); } catch { /* a failing hook costs the request nothing */ }
  })();
  ctx?.waitUntil?.(done);
  return done;
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
 * documents. A ledger that cannot be reached for the claim is
 * `503 idempotency-store-unavailable` (nothing ran). Completion and release
 * are retried as the gateway retries them (./settle.js), under
 * `ctx.waitUntil` when there is a context; the run's response is returned
 * and its error rethrown whatever they come to (a final failure goes to
 * `onSettlementFailed`). Exported for framework adapters; most code wants
 * `withIdempotency` or the Hono middleware.
 * @template Env
 * @param {IdempotencyOptions<Env>} options
 * @returns {IdempotencyContract<Env>}
 */
export function idempotencyContract(options) {
  const o = checked(options ?? /** @type {IdempotencyOptions<Env>} */ ({}));
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
      /** @type {import("./rpc.js").ClaimOutcome & import("./rpc.js").WaitedAnswer} */
      let claim;
      try {
        claim = await client.claim({ key, fingerprint: fp, ...(seconds > 0 ? { wait_ms: seconds * 1000 } : {}) });
      } catch (e) {
        return claimFailure(e); // nothing ran
      }
      // An answer without a known outcome: as the gateway, nothing runs.
      if (!CLAIM_OUTCOMES.has(claim?.outcome)) return problemResponse("idempotency-store-unavailable");
      /** @param {Response} response */
      const applied = (response) => {
        if (asked === null || claim.waited_ms === undefined) return response;
        const out = new Response(response.body, response);
        out.headers.set("preference-applied", `wait=${seconds}`);
        return out;
      };
      if (claim.outcome !== "claimed") return applied(refusalResponse(claim));
      const claimed = { client, key, generation: claim.generation, ctx, report: o.onSettlementFailed };
      let result;
      try {
        result = await next(body);
      } catch (e) {
        await settlement(claimed); // released (or reported); the handler's own error is what the caller sees
        throw e;
      }
      if (result.failed) {
        await settlement(claimed);
        return result.response;
      }
      const stored = await captureResponse(result.response.clone(), { storedHeaders: o.storedHeaders, maxStoredBodyBytes: o.maxStoredBodyBytes });
      // The caller whose run produced this response always gets it, whatever the completion comes to.
      await settlement(claimed, stored);
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
 * Completion and release are retried as the gateway retries them, under
 * `ctx.waitUntil`; the handler's response is always returned and its error
 * never masked (a settlement that finally fails goes to `onSettlementFailed`);
 * an unreachable ledger is `503 idempotency-store-unavailable`.
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
