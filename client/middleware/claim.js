// @ts-check
// The middleware's claim (./contract.js) and its refusals: the ledger
// resolved from the options (a configuration error is 500 misconfigured),
// the fingerprint, the claim (waiting when asked, as the gateway), and the
// answers to a claim that is refused (a replay, 409, 422, 429), that fails
// (503, or 500 misconfigured for a claim the object refuses) or that
// certainly never reached the ledger (failurePolicy "open": run unprotected).
import { fingerprint, oneComponent, targetOf } from "../rules/fingerprint.js";
import { decoder } from "../rules/bytes.js";
import { problemResponse } from "../rules/problems.js";
import { LedgerError } from "../rpc/client.js";
import { preferWait } from "../rules/waiting.js";
import { refusalResponse } from "../rules/answer.js";
import { shortHash, tell } from "./options.js";
/**
 * @import { ClaimOutcome, WaitedAnswer } from "../rpc/client.js"
 * @import { Resolved, TenantLedgerCalls } from "../rpc/sources.js"
 * @import { CheckedOptions } from "./options.js"
 * @import { Fingerprint } from "../rules/fingerprint.js"
 */

/**
 * The answer to a ledger the options could not give for this request (a
 * `ledger` function that threw or gave none, a wrong tenant, an invalid
 * TENANT_SHARDS): `500 misconfigured`, logged; nothing is claimed or run.
 * @param {Extract<Resolved, { misconfigured: string }>} source
 * @param {string | undefined} base
 * @returns {Response}
 */
export function misconfiguredSource(source, base) {
  console.error(JSON.stringify({ event: "idempotency.misconfigured", ...(source.variable ? { variable: source.variable } : {}), error: source.misconfigured }));
  return source.variable
    ? problemResponse("misconfigured", { base, args: { variable: source.variable } })
    : problemResponse("misconfigured", { base, detail: source.misconfigured });
}

/**
 * A claim that certainly never reached the ledger: `503
 * idempotency-store-unavailable`, or under failurePolicy "open" (as the
 * gateway's FAILURE_POLICY=open) the route run without the ledger, and an
 * `idempotency.unprotected` warning logged.
 * @param {"closed" | "open"} failurePolicy
 * @param {string | undefined} base
 * @param {string} key
 * @param {string} reason
 * @param {() => Promise<{ response: Response }>} run
 * @returns {Promise<Response>}
 */
export async function unreached(failurePolicy, base, key, reason, run) {
  if (failurePolicy !== "open") return problemResponse("idempotency-store-unavailable", { base });
  console.warn(JSON.stringify({ event: "idempotency.unprotected", reason, key: await shortHash(key) }));
  return (await run()).response;
}

const CLAIM_OUTCOMES = new Set(["claimed", "completed", "in_flight", "mismatch", "ledger_full"]);

/**
 * What a claim comes to: an answer (nothing runs), a claim that never
 * reached the ledger (`unreached`, its reason), or the key claimed — its
 * generation and lease token (the grant its settlement names), and
 * `applied`, which adds `Preference-Applied` to the route's
 * response when the claim waited as `Prefer: wait` asked.
 * @typedef {{ answer: Response } | { unreached: string }
 *   | { generation: number; lease?: string; applied: (response: Response) => Response }} ClaimResult
 */

/**
 * Claims one request's key: the gateway's fingerprint of the request, the
 * claim (waiting for an in-flight first run when asked, or by default),
 * and the refusals answered as the gateway answers them, `onReplayed` /
 * `onConflict` told.
 * @template {unknown[]} A
 * @param {CheckedOptions<A>} o
 * @param {{ request: Request; args: A; ledger: TenantLedgerCalls; key: string; body: Uint8Array }} claiming
 * @returns {Promise<ClaimResult>}
 */
export async function claimKey(o, { request, args, ledger, key, body }) {
  const base = o.problemBase;
  const fp = await requestFingerprint(o, request, body, args);
  if ("answer" in fp) return fp;
  const asked = preferWait(request.headers.get("prefer"));
  const seconds = Math.min(asked ?? o.waitSeconds, o.maxWaitSeconds);
  /** @type {ClaimOutcome & WaitedAnswer} */
  let claim;
  try {
    claim = await ledger.claim({ key, fingerprint: fp.fingerprint, ...o.windows, ...(seconds > 0 ? { wait_ms: seconds * 1000 } : {}) });
  } catch (e) {
    if (certainlyNotReached(e)) return { unreached: /** @type {Error} */ (e).message };
    return { answer: claimFailure(e, base) }; // nothing ran
  }
  // An answer without a known outcome: as the gateway, nothing runs.
  if (!CLAIM_OUTCOMES.has(claim?.outcome)) return { answer: problemResponse("idempotency-store-unavailable", { base }) };
  /** @param {Response} response */
  const applied = (response) => {
    if (asked === null || claim.waited_ms === undefined) return response;
    const out = new Response(response.body, response);
    out.headers.set("preference-applied", `wait=${seconds}`);
    return out;
  };
  if (claim.outcome === "claimed") {
    return { generation: claim.generation, ...(typeof claim.lease === "string" ? { lease: claim.lease } : {}), applied };
  }
  const answer = applied(refusalResponse(claim, { problemBase: base }));
  if (claim.outcome === "completed") {
    await tell(o.onReplayed, { key, generation: claim.generation, status: answer.status }, ...args);
  } else {
    const { outcome } = claim;
    await tell(o.onConflict, { key, outcome, status: answer.status, ...(claim.outcome === "mismatch" ? { differs: claim.differs } : {}) }, ...args);
  }
  return { answer };
}

/**
 * The request's fingerprint as the `fingerprint` option says: the
 * gateway's (default), one constant component for `false` (keys alone), or
 * one `fingerprint` component holding the digest of a function's string
 * (so a reuse with another string says `differs: ["fingerprint"]`). A
 * function that throws or gives a non-string is `500 misconfigured`,
 * logged (`idempotency.fingerprint_failed`); nothing is claimed.
 * @template {unknown[]} A
 * @param {CheckedOptions<A>} o
 * @param {Request} request
 * @param {Uint8Array} body
 * @param {A} args
 * @returns {Promise<{ fingerprint: Fingerprint } | { answer: Response }>}
 */
async function requestFingerprint(o, request, body, args) {
  const target = targetOf(request.url);
  if (o.fingerprint === undefined) {
    return { fingerprint: await fingerprint({ method: request.method, target, headers: request.headers, fingerprintHeaders: o.fingerprintHeaders, body }) };
  }
  if (o.fingerprint === false) return { fingerprint: await oneComponent("keys-only", "") };
  const text = () => decoder.decode(body);
  let value;
  try {
    value = await o.fingerprint({ method: request.method.toUpperCase(), target, headers: request.headers, body, text, json: () => JSON.parse(text()) }, ...args);
  } catch (e) {
    console.error(JSON.stringify({ event: "idempotency.fingerprint_failed", error: e instanceof Error ? e.message : String(e) }));
    return { answer: problemResponse("misconfigured", { base: o.problemBase, detail: "options.fingerprint threw (the error is in the Worker's log, idempotency.fingerprint_failed)" }) };
  }
  if (typeof value !== "string") {
    console.error(JSON.stringify({ event: "idempotency.fingerprint_failed", error: `options.fingerprint gave a ${typeof value}, not a string` }));
    return { answer: problemResponse("misconfigured", { base: o.problemBase, detail: "options.fingerprint gave something that is not a string (see idempotency.fingerprint_failed in the Worker's log)" }) };
  }
  return { fingerprint: await oneComponent("fingerprint", value) };
}

/**
 * Did the claim certainly not reach the ledger? Only when the runtime
 * refused the call as `overloaded` before delivering it (Durable Object
 * error properties), as the gateway decides (Rust platform::client).
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
 * `read_failure` (Rust contract::answer), with the object's `Retry-After`
 * when it sent one (an upgrading object). An error that is not a
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
  // An upgrading object's `Retry-After` reaches the client (as the gateway's).
  const headers = error.retryAfter === null ? undefined : { "retry-after": String(error.retryAfter) };
  return problemResponse("idempotency-store-unavailable", { base, headers });
}
