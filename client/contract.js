// @ts-check
// The Idempotency-Key contract as the gateway applies it, for middleware:
// `withIdempotency` (plain fetch handlers) and `idempotency-ledger/hono`
// (./hono.js) share `idempotencyContract`: its options (checked once, when
// the middleware is made), the key, the body limit, the claim, the route's
// one run, its settlement and the hooks. Where the ledger comes from is
// ./sources.js; the key and the bounded body ./request.js.
//
// What must stay true: nothing runs unless the key was claimed (or, under
// failurePolicy "open", the runtime refused the claim as overloaded); a
// configuration error (the options against the ledger) is 500
// misconfigured, never an outage; the route's response reaches its caller
// and its error is rethrown whatever the settlement or a hook comes to; a
// route's body is read no further than maxStoredBodyBytes + 1 bytes before
// its key is completed, so a larger one streams once its tombstone landed.
import { DEFAULTS, MAX_BODY_CEILING, MAX_WAIT_SECONDS, MAX_WINDOW_SECONDS, STORED_BODY_CEILING, tokenListOption, wholeOption } from "./defaults.js";
import { encoder, sha256hex } from "./bytes.js";
import { fingerprint, targetOf } from "./fingerprint.js";
import { problemResponse } from "./problems.js";
import { LedgerError } from "./rpc.js";
import { landedEarlier, settle } from "./settle.js";
import { captureBounded } from "./stored.js";
import { preferWait } from "./waiting.js";
import { refusalResponse } from "./answer.js";
import { readBody, requestBody, requestKey } from "./request.js";
import { ledgerSource } from "./sources.js";
/**
 * @import { StoredResponse } from "./stored.js"
 * @import { ClaimOutcome, WaitedAnswer } from "./rpc.js"
 * @import { LedgerSource, TenantLedgerCalls, TenantShardsValue } from "./sources.js"
 */

/** @typedef {LedgerSource} IdempotencyLedgerSource What the `ledger` option gives (./sources.js). */
/** @typedef {import("./sources.js").LedgerServiceCalls} LedgerServiceCalls A tenant-first ledger: a `LedgerService` binding. */
/** @typedef {TenantLedgerCalls} OneTenantLedger One tenant's claim / complete / release (a `LedgerClient` has them). */

/**
 * A value an option gives per request: `(...args) => T`, sync or async.
 * @template {unknown[]} A
 * @template T
 * @typedef {(...args: A) => T | Promise<T>} PerRequest
 */

/**
 * The middleware's options. `A` is what every callback and hook is given
 * after its own first argument: `[c]` (Hono's Context) for the Hono
 * middleware, `[request, env, ctx]` for `withIdempotency`.
 * @template {unknown[]} A
 * @typedef {object} IdempotencyOptions
 * @property {LedgerSource | PerRequest<A, LedgerSource | null | undefined>} ledger The ledger: a `LedgerClient`
 *   (one tenant's object), a `LedgerService` service binding or a TenantLedger Durable Object namespace (both
 *   with `tenant`), or a function returning one, e.g. `(c) => c.env.LEDGER`. A function that throws or
 *   returns nothing (a binding missing from the Worker's configuration) is the server's configuration error:
 *   `500 misconfigured` whatever `failurePolicy` says, and nothing runs; a thrown message is only logged
 *   (`idempotency.ledger_failed`), never answered.
 * @property {string | PerRequest<A, string | null | undefined>} [tenant] The tenant, for a binding or a
 *   namespace: 1–64 of `A-Z a-z 0-9 . _ -`, e.g. `(c) => c.get("tenant")`. Anything else at request time is
 *   `500 misconfigured` and nothing runs. Given with a `LedgerClient`: a TypeError (it is one tenant's object).
 * @property {TenantShardsValue | PerRequest<A, TenantShardsValue | null | undefined>} [tenantShards] TENANT_SHARDS, for
 *   a namespace: keys are placed and resharding followed as the gateway does (`TenantLedgers`). Invalid: a TypeError
 *   when the middleware is made, or `500 misconfigured` naming TENANT_SHARDS from a function. Default: every tenant
 *   is one object. With any other source: a TypeError (a `LedgerService` routes with its own TENANT_SHARDS).
 * @property {readonly string[]} [protectedMethods] Default `["POST", "PATCH"]` (as PROTECTED_METHODS).
 * @property {boolean} [required] Default `true`: a protected request without a key gets
 *   `400 idempotency-key-missing` (as IDEMPOTENCY_REQUIRED).
 * @property {readonly string[]} [fingerprintHeaders] Default `["content-type"]` (as FINGERPRINT_HEADERS).
 * @property {readonly string[]} [storedHeaders] Default `["content-type", "location", "etag"]` (as STORED_RESPONSE_HEADERS).
 * @property {number} [maxStoredBodyBytes] Default 1 MiB (as MAX_STORED_BODY_BYTES). The route's body is read no further
 *   than this (+ 1 byte) before the key is completed: a body within it is stored and answered; a larger one completes
 *   the key as a tombstone at once (retries, even while it still streams, get `500
 *   idempotency-response-not-retained`) and then streams to its caller as it comes, memory bounded by this plus a chunk.
 * @property {number} [maxBodyBytes] The largest request body, default 1 MiB, at most 16 MiB (as MAX_REQUEST_BODY_BYTES):
 *   a larger `Content-Length`, or more bytes read, is `413 request-too-large`; nothing is claimed or run.
 * @property {number} [waitSeconds] Seconds a retry waits for an in-flight first run when it does not send
 *   `Prefer: wait=N` (as IN_FLIGHT_WAIT_SECONDS). Default 0.
 * @property {number} [maxWaitSeconds] The most any request waits (as IN_FLIGHT_WAIT_MAX_SECONDS). Default 10; 0..300.
 * @property {number} [leaseSeconds] The claim's lease, 1..31536000 (as LEASE_SECONDS). Default: the object's.
 * @property {number} [retentionSeconds] How long a completed key is replayed, 1..31536000, sent with the claim and
 *   the completion (as RETENTION_SECONDS). Default: the object's. Not shorter than `leaseSeconds` (else a TypeError)
 *   nor, when `leaseSeconds` is not given, than the object's own lease: otherwise the object refuses the claim and
 *   the middleware answers `500 misconfigured` (as any claim the object refuses with a 4xx: the middleware's own call).
 * @property {PerRequest<[response: Response, ...args: A], boolean>} [shouldStore] Whether the route's response is
 *   stored; `false` releases the key instead (the response is still returned; a retry runs again). Default: every
 *   response is stored, 5xx included (as RELEASE_ON_5XX=false). Read its status and headers, not its body. A
 *   `shouldStore` that throws counts as `false`.
 * @property {"closed" | "open"} [failurePolicy] Default `"closed"` (as FAILURE_POLICY): a claim that cannot reach
 *   the ledger is `503 idempotency-store-unavailable`. `"open"`: when the ledger was *certainly not reached* — the
 *   runtime refused the claim as `overloaded` before delivering it, and only then — the route runs unprotected
 *   (nothing claimed or stored) and an `idempotency.unprotected` warning is logged; any other failure may have
 *   reached the ledger and is `503` whatever the policy, as the gateway. A configuration error (a `ledger` function
 *   that throws or gives none, a wrong tenant, a claim the object refuses) is `500 misconfigured` under both.
 * @property {string} [problemBase] The base URI of every problem document's `type` (`type` is problemBase + slug),
 *   an absolute URL. Default: the catalog's base (`base` in docs/problems.json).
 * @property {PerRequest<[event: ReplayedEvent, ...args: A], void>} [onReplayed] Called once when a request is
 *   answered with a stored response.
 * @property {PerRequest<[event: ConflictEvent, ...args: A], void>} [onConflict] Called once when a claim is refused:
 *   the key is in flight (409), was used for a different request (422) or the ledger is full (429).
 * @property {PerRequest<[event: StoredEvent, ...args: A], void>} [onStored] Called once when the route's response
 *   has been stored (the completion landed).
 * @property {(failure: SettlementFailure) => void | Promise<void>} [onSettlementFailed] Called when a completion
 *   or a release still fails after its retries (the handler's response is returned, or its error rethrown,
 *   all the same). Default: one `console.error` JSON line, `{"event":"idempotency.complete_failed"` (or
 *   `release_failed`) `,"key":<12 hex of the key's SHA-256>,"error":<message>}`.
 *
 * A hook (`onReplayed`, `onConflict`, `onStored`, `onSettlementFailed`) is awaited; one that throws or
 * rejects is ignored: it never changes the answer.
 */

/**
 * What `onReplayed` is given.
 * @typedef {object} ReplayedEvent
 * @property {string} key The request's Idempotency-Key (parsed).
 * @property {number} generation The generation that completed.
 * @property {number} status The status answered (a tombstone's replay: 500).
 */

/**
 * What `onConflict` is given.
 * @typedef {object} ConflictEvent
 * @property {string} key
 * @property {"in_flight" | "mismatch" | "ledger_full"} outcome The claim's refusal.
 * @property {number} status 409, 422 or 429.
 * @property {string[]} [differs] For a mismatch: what differed (`["body"]`, …).
 */

/**
 * What `onStored` is given.
 * @typedef {object} StoredEvent
 * @property {string} key
 * @property {number} generation
 * @property {number} status The stored response's status.
 * @property {boolean} retained false: the body was too large and the record is a tombstone.
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

const WHO = "idempotency middleware";
/** @param {string} name @param {unknown} value @param {number} min @param {number} max */
const wholeNumber = (name, value, min, max) => wholeOption(WHO, name, value, min, max);

/**
 * @param {string} name
 * @param {unknown} hook
 */
function optionalFunction(name, hook) {
  if (hook !== undefined && typeof hook !== "function") throw new TypeError(`idempotency middleware: ${name} must be a function`);
}

/**
 * The options with their defaults, checked (a TypeError naming what is wrong).
 * @template {unknown[]} A
 * @param {IdempotencyOptions<A>} options
 */
function checked(options) {
  const {
    ledger, tenant, tenantShards,
    protectedMethods = DEFAULTS.protectedMethods,
    required = DEFAULTS.required,
    fingerprintHeaders = DEFAULTS.fingerprintHeaders,
    storedHeaders = DEFAULTS.storedHeaders,
    maxStoredBodyBytes = DEFAULTS.maxStoredBodyBytes,
    maxBodyBytes = DEFAULTS.maxBodyBytes,
    waitSeconds = DEFAULTS.waitSeconds,
    maxWaitSeconds = DEFAULTS.maxWaitSeconds,
    leaseSeconds, retentionSeconds,
    shouldStore, failurePolicy = DEFAULTS.failurePolicy, problemBase,
    onReplayed, onConflict, onStored,
    onSettlementFailed = logSettlementFailure,
  } = options;
  if (typeof onSettlementFailed !== "function") throw new TypeError("idempotency middleware: onSettlementFailed must be a function");
  for (const [name, hook] of /** @type {const} */ ([["shouldStore", shouldStore], ["onReplayed", onReplayed], ["onConflict", onConflict], ["onStored", onStored]])) {
    optionalFunction(name, hook);
  }
  wholeNumber("waitSeconds", waitSeconds, 0, MAX_WAIT_SECONDS);
  wholeNumber("maxWaitSeconds", maxWaitSeconds, 0, MAX_WAIT_SECONDS);
  if (waitSeconds > maxWaitSeconds) throw new TypeError("idempotency middleware: waitSeconds exceeds maxWaitSeconds");
  wholeNumber("maxStoredBodyBytes", maxStoredBodyBytes, 0, STORED_BODY_CEILING);
  if (typeof required !== "boolean") throw new TypeError("idempotency middleware: required must be a boolean");
  tokenListOption(WHO, "fingerprintHeaders", fingerprintHeaders);
  tokenListOption(WHO, "storedHeaders", storedHeaders);
  tokenListOption(WHO, "protectedMethods", protectedMethods, "method");
  wholeNumber("maxBodyBytes", maxBodyBytes, 0, MAX_BODY_CEILING);
  if (leaseSeconds !== undefined) wholeNumber("leaseSeconds", leaseSeconds, 1, MAX_WINDOW_SECONDS);
  if (retentionSeconds !== undefined) wholeNumber("retentionSeconds", retentionSeconds, 1, MAX_WINDOW_SECONDS);
  if (leaseSeconds !== undefined && retentionSeconds !== undefined && retentionSeconds < leaseSeconds) {
    throw new TypeError("idempotency middleware: retentionSeconds is shorter than leaseSeconds (a record must outlive its lease)");
  }
  if (failurePolicy !== "closed" && failurePolicy !== "open") throw new TypeError('idempotency middleware: failurePolicy must be "closed" or "open"');
  if (problemBase !== undefined && !(typeof problemBase === "string" && URL.canParse(problemBase) && problemBase.endsWith("/"))) {
    throw new TypeError("idempotency middleware: problemBase must be an absolute URL ending in / (type = problemBase + slug)");
  }
  const methods = new Set(protectedMethods.map((m) => String(m).toUpperCase()));
  return {
    source: ledgerSource(/** @type {{ ledger?: unknown; tenant?: unknown; tenantShards?: unknown }} */ ({ ledger, tenant, tenantShards })),
    methods, required, fingerprintHeaders, storedHeaders, maxStoredBodyBytes, maxBodyBytes, waitSeconds, maxWaitSeconds,
    leaseSeconds, retentionSeconds, shouldStore, failurePolicy, problemBase,
    onReplayed, onConflict, onStored, onSettlementFailed,
  };
}

/** @param {string} key a short hash of the key for a log line (never the key itself) */
async function shortHash(key) {
  return (await sha256hex(encoder.encode(key))).slice(0, 12);
}

/**
 * The default `onSettlementFailed`: the gateway's log line (the key as a
 * short hash, never the key itself).
 * @param {SettlementFailure} failure
 */
async function logSettlementFailure({ operation, key, error }) {
  const message = error instanceof Error ? error.message : String(error);
  console.error(JSON.stringify({ event: `idempotency.${operation}_failed`, key: await shortHash(key), error: message }));
}

/**
 * Calls a hook; one that throws or rejects costs the request nothing.
 * @template {unknown[]} P
 * @param {((...params: P) => unknown) | undefined} hook
 * @param {P} params
 */
async function tell(hook, ...params) {
  if (hook === undefined) return;
  try { await hook(...params); } catch { /* a failing hook never changes the answer */ }
}

/**
 * Did the claim certainly not reach the ledger? Only when the runtime
 * refused the call as `overloaded` before delivering it (Durable Object
 * error properties), as the gateway decides (src/platform/client.rs).
 * @param {unknown} error
 */
function certainlyNotReached(error) {
  return error instanceof LedgerError && error.status === null
    && /** @type {{ overloaded?: unknown } | null | undefined} */ (error.cause)?.overloaded === true;
}

/**
 * The answer to a claim that failed, nothing having run. The call was the
 * middleware's own — formed from its options, the key and the body already
 * checked by the gateway's rules — so an object that refuses it (a 4xx:
 * `invalid-rpc` for a `retentionSeconds` below the object's lease, a
 * `LedgerClient` on a retired shard's object, an object of another RPC
 * version) is the server's configuration, never the end client's doing:
 * `500 misconfigured`, the object's own detail only in the log
 * (`idempotency.misconfigured`, with its status and slug). No answer, a 5xx
 * or anything else is `503 idempotency-store-unavailable`, as the gateway's
 * `read_failure` (src/contract/answer.rs). An error that is not a
 * `LedgerError` (a bug, not the ledger) is rethrown.
 * @param {unknown} error
 * @param {string | undefined} base
 * @returns {Response}
 */
function claimFailure(error, base) {
  if (!(error instanceof LedgerError)) throw error;
  const { status, problem } = error;
  if (status !== null && status >= 400 && status < 500) {
    const doc = problem !== null && typeof problem === "object" && !Array.isArray(problem) ? problem : null;
    const slug = typeof doc?.type === "string" ? doc.type.slice(doc.type.lastIndexOf("/") + 1) : null;
    // A LedgerService binding carries only the message (`ledger refused claim (400): <detail>`).
    const detail = typeof doc?.detail === "string" ? doc.detail : error.message;
    console.error(JSON.stringify({ event: "idempotency.misconfigured", cause: "claim_refused", status, ...(slug ? { problem: slug } : {}), error: detail }));
    return problemResponse("misconfigured", {
      base,
      detail: `the ledger refused the idempotency middleware's claim (${status}${slug ? ` ${slug}` : ""}): check its options against the ledger's configuration; the ledger's detail is in the Worker's log (idempotency.misconfigured)`,
    });
  }
  return problemResponse("idempotency-store-unavailable", { base });
}

const CLAIM_OUTCOMES = new Set(["claimed", "completed", "in_flight", "mismatch", "ledger_full"]);

/**
 * One request's claimed key, and what its settlement needs.
 * @typedef {object} Claimed
 * @property {TenantLedgerCalls} ledger
 * @property {string} key
 * @property {number} generation
 * @property {{ waitUntil(promise: Promise<unknown>): void }} [ctx]
 * @property {number} [retentionSeconds]
 * @property {(failure: SettlementFailure) => void | Promise<void>} report
 * @property {(event: StoredEvent) => Promise<void>} stored Tells `onStored`.
 */

/**
 * Completes (`response` given) or releases the claimed key, retried as the
 * gateway retries (./settle.js), under `ctx.waitUntil` when there is a
 * context, so a client hang-up cannot cancel it; the request awaits the
 * same promise. Never rejects: a settlement that finally fails (an error
 * after the retries, or an answer without a known outcome) is reported
 * through the hook. `fenced_out` is an answer, not a failure (the object
 * logs it). A completion that lands tells `onStored`.
 * @param {Claimed} claimed
 * @param {StoredResponse} [response]
 * @returns {Promise<void>}
 */
function settlement({ ledger, key, generation, ctx, retentionSeconds, report, stored }, response) {
  const operation = response === undefined ? "release" : "complete";
  const call = response === undefined ? () => ledger.release({ key, generation })
    : () => ledger.complete({ key, generation, response, ...(retentionSeconds === undefined ? {} : { retention_seconds: retentionSeconds }) });
  const [success, landedState] = response === undefined ? ["released", "released"] : ["stored", "completed"];
  const done = (async () => {
    let error;
    try {
      const { answer, landed } = await settle(/** @type {() => Promise<{ outcome?: unknown }>} */ (call), {
        landed: (a) => landedEarlier(a, generation, /** @type {"completed" | "released"} */ (landedState)),
      });
      if (landed || answer?.outcome === success) {
        if (response !== undefined) await stored({ key, generation, status: response.status, retained: response.body !== null });
        return;
      }
      if (answer?.outcome === "fenced_out") return; // superseded by a later owner: an answer, logged by the object
      error = new Error(`the ledger answered ${operation} without a known outcome`);
    } catch (e) {
      error = e;
    }
    await tell(report, { operation, key, generation, error });
  })();
  ctx?.waitUntil?.(done);
  return done;
}

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
 * (./settle.js), under `ctx.waitUntil` when there is a context; the run's
 * response is returned and its error rethrown whatever they come to (a
 * final failure goes to `onSettlementFailed`). Exported for framework
 * adapters; most code wants `withIdempotency` or the Hono middleware.
 * @template {unknown[]} A
 * @param {IdempotencyOptions<A>} options
 * @returns {IdempotencyContract<A>}
 */
export function idempotencyContract(options) {
  const o = checked(options ?? /** @type {IdempotencyOptions<A>} */ ({}));
  const base = o.problemBase;
  const windows = {
    ...(o.leaseSeconds === undefined ? {} : { lease_seconds: o.leaseSeconds }),
    ...(o.retentionSeconds === undefined ? {} : { retention_seconds: o.retentionSeconds }),
  };
  return {
    protects: (method) => o.methods.has(String(method).toUpperCase()),
    async run({ request, args, ctx, readBody, next }) {
      const keyed = requestKey(request, o.required, base);
      if (keyed === null) return (await next(undefined, null)).response;
      if ("answer" in keyed) return keyed.answer;
      const { key } = keyed;
      const read = await requestBody(request, o.maxBodyBytes, base, readBody);
      if ("answer" in read) return read.answer;
      const { body } = read;
      const source = await o.source.resolve(args);
      if ("misconfigured" in source) {
        console.error(JSON.stringify({ event: "idempotency.misconfigured", ...(source.variable ? { variable: source.variable } : {}), error: source.misconfigured }));
        return source.variable
          ? problemResponse("misconfigured", { base, args: { variable: source.variable } })
          : problemResponse("misconfigured", { base, detail: source.misconfigured });
      }
      /** @param {string} reason */
      const unreached = async (reason) => {
        if (o.failurePolicy !== "open") return problemResponse("idempotency-store-unavailable", { base });
        // As the gateway's FAILURE_POLICY=open: run without the ledger, and say so in the logs.
        console.warn(JSON.stringify({ event: "idempotency.unprotected", reason, key: await shortHash(key) }));
        return (await next(body, key)).response;
      };
      const { ledger } = source;
      const fp = await fingerprint({ method: request.method, target: targetOf(request.url), headers: request.headers, fingerprintHeaders: o.fingerprintHeaders, body });
      // As the gateway: wait for an in-flight first run when asked (or by default).
      const asked = preferWait(request.headers.get("prefer"));
      const seconds = Math.min(asked ?? o.waitSeconds, o.maxWaitSeconds);
      /** @type {ClaimOutcome & WaitedAnswer} */
      let claim;
      try {
        claim = await ledger.claim({ key, fingerprint: fp, ...windows, ...(seconds > 0 ? { wait_ms: seconds * 1000 } : {}) });
      } catch (e) {
        if (certainlyNotReached(e)) return unreached(/** @type {Error} */ (e).message);
        return claimFailure(e, base); // nothing ran
      }
      // An answer without a known outcome: as the gateway, nothing runs.
      if (!CLAIM_OUTCOMES.has(claim?.outcome)) return problemResponse("idempotency-store-unavailable", { base });
      /** @param {Response} response */
      const applied = (response) => {
        if (asked === null || claim.waited_ms === undefined) return response;
        const out = new Response(response.body, response);
        out.headers.set("preference-applied", `wait=${seconds}`);
        return out;
      };
      if (claim.outcome !== "claimed") {
        const answer = applied(refusalResponse(claim, { problemBase: base }));
        if (claim.outcome === "completed") {
          await tell(o.onReplayed, { key, generation: claim.generation, status: answer.status }, ...args);
        } else {
          const { outcome } = claim;
          await tell(o.onConflict, { key, outcome, status: answer.status, ...(claim.outcome === "mismatch" ? { differs: claim.differs } : {}) }, ...args);
        }
        return answer;
      }
      /** @type {Claimed} */
      const claimed = {
        ledger, key, generation: claim.generation, ctx, retentionSeconds: o.retentionSeconds, report: o.onSettlementFailed,
        stored: (event) => tell(o.onStored, event, ...args),
      };
      let result;
      try {
        result = await next(body, key);
      } catch (e) {
        await settlement(claimed); // released (or reported); the handler's own error is what the caller sees
        throw e;
      }
      if (result.failed || !(await storing(o.shouldStore, result.response, args))) {
        await settlement(claimed);
        return result.response;
      }
      // The route's body is read with its own reader (no clone), no further
      // than maxStoredBodyBytes + 1 bytes before the key is completed: a
      // body within the cap is stored and answered from those bytes; a
      // larger one completes the key as a tombstone at once and then
      // streams to its caller as it comes (./stored.js captureBounded), so
      // a body that later breaks off, or a caller that goes away, can never
      // lead to a second run, and memory stays bounded. A body that breaks
      // off within the cap is a tombstone too (the route ran in this
      // isolate: never released for a second run); retries get 500
      // idempotency-response-not-retained — loud, and never a second run.
      /** @type {{ stored: StoredResponse; response: Response }} */
      let captured;
      try {
        captured = await captureBounded(result.response, { storedHeaders: o.storedHeaders, maxStoredBodyBytes: o.maxStoredBodyBytes });
      } catch {
        // A body that cannot be read at all (already used): what is known, as a tombstone.
        captured = { stored: { status: result.response.status, headers: [], body: null }, response: result.response };
      }
      // The caller whose run produced this response always gets it, whatever the completion comes to.
      await settlement(claimed, captured.stored);
      return applied(captured.response);
    },
  };
}

/**
 * Is the route's response to be stored? `shouldStore` absent: always (as
 * RELEASE_ON_5XX=false); one that throws: no (the key is released).
 * @template {unknown[]} A
 * @param {IdempotencyOptions<A>["shouldStore"]} shouldStore
 * @param {Response} response
 * @param {A} args
 * @returns {Promise<boolean>}
 */
async function storing(shouldStore, response, args) {
  if (shouldStore === undefined) return true;
  // It is given a clone: a body it reads is never taken from the caller or
  // the stored answer. Once it answers, whatever it left unread of the
  // clone is cancelled, so that branch of the body does not buffer the
  // whole stream while the caller's branch is read.
  const clone = response.clone();
  try {
    return (await shouldStore(clone, ...args)) !== false;
  } catch {
    return false;
  } finally {
    try {
      clone.body?.cancel().catch(() => { /* read to its end, or locked by a reader it kept */ });
    } catch { /* as above */ }
  }
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
