// @ts-check
// One unit of work run once per key, for consumers that are not HTTP
// requests: a Queue message (./queues.js), a Workflow step, a scheduled
// job. Internal to the package (not an entry point): the shared rules of
// docs/consumers.md, so every consumer maps ledger outcomes the same way.
//
// API (stable for the package's own modules):
//
//   runOnce({ ledger, key, fingerprint?, leaseSeconds, retentionSeconds?,
//             timeoutSeconds?, waitSeconds?, waitUntil? }, fn) → Promise<RunOutcome>
//     The external shape: claim `key` on one tenant's ledger (a
//     LedgerClient, or what ../rpc/sources.js resolves), run `fn({ key,
//     generation, takeover, signal })` under the lease, store its JSON-able
//     result (`complete`, retried as ../rpc/settle.js retries), or release the
//     key when it throws. Never runs `fn` without a granted claim.
//
//   forwardOnce({ stub, key, body, headers?, timeoutSeconds?, waitUntil? }) → Promise<RunOutcome>
//     The Durable Object shape: POSTs `body` with the key to an object
//     whose fetch answers with `Ledger.handle` (idempotency-ledger/ledger),
//     so the effect's rows and the ledger's record commit in one
//     transaction; its answer read back as a RunOutcome.
//
//   RunOutcome — a closed set; what a consumer does with each:
//     { outcome: "ran", result, generation, stored }   done: ack. `stored` false: the
//          result was not recorded (completion failed or fenced out); logged.
//     { outcome: "replayed", result, generation }       done before: ack, do not run.
//     { outcome: "busy", retryAfterSeconds, reason }    in flight elsewhere ("in_flight",
//          retryAfterSeconds = the lease left) or the ledger full ("ledger_full"): retry later.
//     { outcome: "threw", error, retryAfterSeconds }    fn threw; the key was released
//          (retryAfterSeconds null: retry when you like) or is held until its lease ends.
//     { outcome: "timed_out", retryAfterSeconds }       fn did not settle by its deadline:
//          the key is held (fn may still be acting) until the lease ends; retry after it.
//     { outcome: "refused", reason, detail }            no retry can change it ("mismatch":
//          the key was used for another body; "invalid": a key or body the ledger refuses).
//     { outcome: "unavailable", error, retryAfterSeconds } the ledger (or the object) did
//          not answer: nothing ran under this call that it knows of; retry later.
//
//   encodeResult(value) → StoredResponse; decodeResult(stored) → value
//     A result as the ledger stores it: `application/json` with status 200,
//     `undefined` as 204 with no body; a value JSON cannot encode, or whose
//     JSON is over STORED_BODY_CEILING bytes, is stored as a tombstone (body
//     null) and decodes to undefined.
//
//   delaySeconds(ms) → whole seconds for `message.retry({ delaySeconds })`,
//     rounded up and clamped to 0..MAX_RETRY_DELAY_SECONDS.
//
// What must stay true here:
// - `fn` runs only after a `claimed` answer, once per call; a ledger that
//   cannot be reached never lets it run unprotected.
// - A key whose `fn` may have acted is never released: only a throw
//   releases (the effect is the caller's to make atomic or idempotent).
// - A timed-out `fn` keeps its lease: a rerun waits for the lease to end,
//   and the late `fn`'s completion is fenced on its generation.
import { encoder, decoder, toBase64, fromBase64 } from "../rules/bytes.js";
import { STORED_BODY_CEILING } from "../rules/defaults.js";
import { oneComponent } from "../rules/fingerprint.js";
import { formatIdempotencyKey } from "../rules/key.js";
import { PROBLEM_CATALOG } from "../rules/problems.js";
import { LedgerError } from "../rpc/client.js";
import { settle, landedEarlier } from "../rpc/settle.js";
/** @import { Fingerprint } from "../rules/fingerprint.js" */
/** @import { StoredResponse } from "../rules/stored.js" */
/** @import { TenantLedgerCalls } from "../rpc/sources.js" */
/** @import { LedgerStub } from "../rpc/client.js" */

/** The longest delay Cloudflare Queues take in `retry({ delaySeconds })`: 12 hours. */
export const MAX_RETRY_DELAY_SECONDS = 43200;

/**
 * @typedef {{ outcome: "ran"; result: unknown; generation: number; stored: boolean }
 *   | { outcome: "replayed"; result: unknown; generation: number }
 *   | { outcome: "busy"; retryAfterSeconds: number; reason: "in_flight" | "ledger_full" }
 *   | { outcome: "threw"; error: unknown; retryAfterSeconds: number | null }
 *   | { outcome: "timed_out"; retryAfterSeconds: number }
 *   | { outcome: "refused"; reason: "mismatch" | "invalid"; detail: string }
 *   | { outcome: "unavailable"; error: unknown; retryAfterSeconds: number | null }} RunOutcome
 */

/**
 * What `fn` is given.
 * @typedef {object} RunContext
 * @property {string} key
 * @property {number} generation The lease's generation (fences its completion).
 * @property {boolean} takeover True when an earlier owner's lease ended unsettled (it may have acted).
 * @property {AbortSignal} signal Aborted at the deadline: stop, and pass it to fetch.
 */

/**
 * @typedef {object} RunOnceCall
 * @property {TenantLedgerCalls} ledger One tenant's claim / complete / release (a `LedgerClient`).
 * @property {string} key
 * @property {Fingerprint} [fingerprint] Default: the key alone.
 * @property {number} leaseSeconds How long the claim holds: longer than `fn` may run.
 * @property {number} [retentionSeconds] How long the result is replayed (default: the ledger's).
 * @property {number} [timeoutSeconds] `fn`'s deadline, at most the lease (default: the lease).
 * @property {number} [waitSeconds] Park on a key in flight elsewhere up to this long (default 0).
 * @property {(promise: Promise<unknown>) => void} [waitUntil] Keeps a late `fn`'s completion going.
 */

/**
 * @typedef {object} ForwardCall
 * @property {LedgerStub} stub The object (its fetch answers with `Ledger.handle`).
 * @property {string} key
 * @property {string | Uint8Array} body What the object's run is given (`json()` / `text()`).
 * @property {string} [contentType] Default `application/json`.
 * @property {Record<string, string>} [headers] More headers (not fingerprinted by default).
 * @property {number} [timeoutSeconds] How long to wait for the object's answer (default 60).
 * @property {string} [target] Default `/consume`: part of the fingerprint, so keep it fixed.
 */

/** @param {unknown} e */
const messageOf = (e) => (e instanceof Error ? e.message : String(e));

/**
 * Whole seconds for a retry delay: rounded up, within 0..MAX_RETRY_DELAY_SECONDS.
 * @param {number} ms
 * @returns {number}
 */
export function delaySeconds(ms) {
  if (!Number.isFinite(ms) || ms <= 0) return 0;
  return Math.min(MAX_RETRY_DELAY_SECONDS, Math.ceil(ms / 1000));
}

/**
 * A result as the ledger stores it.
 * @param {unknown} value
 * @returns {StoredResponse}
 */
export function encodeResult(value) {
  if (value === undefined) return { status: 204, headers: [], body: "" };
  let text;
  try { text = JSON.stringify(value); } catch { text = undefined; }
  const bytes = typeof text === "string" ? encoder.encode(text) : null;
  // Guard: the ledger refuses a stored body over STORED_BODY_CEILING (RPC v1 `complete`), which would
  // leave a key whose effect ran in flight until its lease ends; a tombstone is stored instead.
  if (bytes === null || bytes.length > STORED_BODY_CEILING) return { status: 200, headers: [["content-type", "application/json"]], body: null };
  return { status: 200, headers: [["content-type", "application/json"]], body: toBase64(bytes) };
}

/**
 * A stored result's value (undefined for none, or a tombstone).
 * @param {StoredResponse} stored
 * @returns {unknown}
 */
export function decodeResult(stored) {
  if (stored.status === 204 || stored.body === null || stored.body === "") return undefined;
  const text = decoder.decode(fromBase64(stored.body));
  const json = stored.headers.some(([n, v]) => n === "content-type" && /json/i.test(v));
  if (!json) return text;
  try { return JSON.parse(text); } catch { return text; }
}

/** The fingerprint of "the key alone": every call with the key is the same call (made on first use, not at load). */
let keyAlone = /** @type {Promise<Fingerprint> | undefined} */ (undefined);
const keyAloneFingerprint = () => (keyAlone ??= oneComponent("keys-only", ""));

/**
 * A timer that rejects nothing: resolves `late` after `ms` (and aborts `controller`), unless cleared.
 * @param {number} ms
 * @param {AbortController} controller
 */
function deadline(ms, controller) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => { controller.abort(new Error(`deadline of ${ms} ms passed`)); resolve(LATE); }, ms);
  });
  return { late, clear: () => clearTimeout(timer) };
}
const LATE = Symbol("late");

/**
 * The grant a settlement names: its generation and, from an object with lease tokens, its token.
 * @param {string} key
 * @param {{ generation: number; lease?: string }} claimed
 */
const grantOf = (key, { generation, lease }) => ({ key, generation, ...(typeof lease === "string" ? { lease } : {}) });

/**
 * Stores `result` for `key` as the grant at `generation` named by its lease token (retried as the
 * gateway retries completions).
 * @param {TenantLedgerCalls} ledger
 * @param {{ key: string; generation: number; lease?: string; retentionSeconds?: number }} call
 * @param {unknown} result
 * @returns {Promise<boolean>} whether this grant's result is the one stored
 */
async function store(ledger, { key, generation, lease, retentionSeconds }, result) {
  try {
    const done = await settle(
      () => ledger.complete({ ...grantOf(key, { generation, lease }), response: encodeResult(result), ...(retentionSeconds === undefined ? {} : { retention_seconds: retentionSeconds }) }),
      { landed: (a) => landedEarlier(a, generation, "completed") },
    );
    if (done.answer.outcome === "stored" || done.landed) return true;
    console.error(JSON.stringify({ event: "idempotency.consumer_fenced_out", key, generation, current: done.answer.current }));
    return false;
  } catch (e) {
    console.error(JSON.stringify({ event: "idempotency.consumer_complete_failed", key, generation, error: messageOf(e) }));
    return false;
  }
}

/**
 * Runs `fn` once per key on one tenant's ledger (the external shape; see the
 * module comment for the outcomes). Throws only a TypeError for a bad call.
 * @param {RunOnceCall} call
 * @param {(context: RunContext) => unknown} fn
 * @returns {Promise<RunOutcome>}
 */
export async function runOnce(call, fn) {
  const { ledger, key, leaseSeconds, retentionSeconds, waitSeconds = 0, waitUntil } = call;
  const timeoutSeconds = call.timeoutSeconds ?? leaseSeconds;
  if (typeof fn !== "function") throw new TypeError("runOnce(call, fn) needs a function");
  if (!(timeoutSeconds > 0 && timeoutSeconds <= leaseSeconds)) throw new TypeError("runOnce: timeoutSeconds must be more than 0 and at most leaseSeconds");
  const started = Date.now();
  let answer;
  try {
    answer = await ledger.claim({
      key,
      fingerprint: call.fingerprint ?? await keyAloneFingerprint(),
      lease_seconds: leaseSeconds,
      ...(retentionSeconds === undefined ? {} : { retention_seconds: Math.max(retentionSeconds, leaseSeconds) }),
      ...(waitSeconds > 0 ? { wait_ms: waitSeconds * 1000 } : { attempt: crypto.randomUUID() }),
    });
  } catch (error) {
    const retryAfter = error instanceof LedgerError ? error.retryAfter : null;
    // A refusal of the call itself (4xx) is no outage: no retry changes it.
    if (error instanceof LedgerError && error.status !== null && error.status >= 400 && error.status < 500) {
      return { outcome: "refused", reason: "invalid", detail: messageOf(error) };
    }
    return { outcome: "unavailable", error, retryAfterSeconds: retryAfter };
  }
  switch (answer?.outcome) {
    case "completed": return { outcome: "replayed", result: decodeResult(answer.response), generation: answer.generation };
    case "in_flight": return { outcome: "busy", reason: "in_flight", retryAfterSeconds: delaySeconds(answer.retry_after_ms) };
    case "ledger_full": return { outcome: "busy", reason: "ledger_full", retryAfterSeconds: delaySeconds(answer.retry_after_ms) };
    case "mismatch": return { outcome: "refused", reason: "mismatch", detail: `the key was used for another body (differs: ${answer.differs.join(", ")})` };
    case "claimed": break;
    default: return { outcome: "unavailable", error: new LedgerError(`unexpected claim answer ${JSON.stringify(answer)}`), retryAfterSeconds: null };
  }
  const { generation, takeover, lease } = answer;
  // The lease began when it was granted: after the claim's own wait, if it parked on the key.
  const granted = started + (typeof answer.waited_ms === "number" ? answer.waited_ms : 0);
  const controller = new AbortController();
  const timer = deadline(timeoutSeconds * 1000 - (Date.now() - granted), controller);
  /** @type {Promise<{ ok: true; value: unknown } | { ok: false; error: unknown }>} */
  const running = (async () => fn({ key, generation, takeover, signal: controller.signal }))()
    .then((value) => ({ ok: true, value }), (error) => ({ ok: false, error }));
  const first = await Promise.race([running, timer.late]);
  timer.clear();
  const leaseLeftMs = () => leaseSeconds * 1000 - (Date.now() - granted);
  if (first === LATE) {
    console.error(JSON.stringify({ event: "idempotency.consumer_timed_out", key, generation, timeout_seconds: timeoutSeconds }));
    // It may still finish: store what it gives then, fenced on its grant (its generation and lease
    // token), so a late result never settles a later owner's claim, here or on another object.
    const late = running.then((r) => (r.ok ? store(ledger, { key, generation, lease, retentionSeconds }, r.value) : false));
    waitUntil?.(late);
    return { outcome: "timed_out", retryAfterSeconds: delaySeconds(leaseLeftMs()) + 1 };
  }
  const settled = /** @type {{ ok: true; value: unknown } | { ok: false; error: unknown }} */ (first);
  if (settled.ok) {
    const stored = await store(ledger, { key, generation, lease, retentionSeconds }, settled.value);
    return { outcome: "ran", result: settled.value, generation, stored };
  }
  try {
    // Guard: the release is fenced on this grant (a superseded lease changes nothing).
    await settle(() => ledger.release(grantOf(key, { generation, lease })), { landed: (a) => landedEarlier(a, generation, "released") });
    return { outcome: "threw", error: settled.error, retryAfterSeconds: null };
  } catch (e) {
    console.error(JSON.stringify({ event: "idempotency.consumer_release_failed", key, generation, error: messageOf(e) }));
    return { outcome: "threw", error: settled.error, retryAfterSeconds: delaySeconds(leaseLeftMs()) + 1 };
  }
}

/** Problem types of a `Ledger.handle` refusal, by their slug. */
const problemType = (/** @type {string} */ slug) => `${PROBLEM_CATALOG.base}${slug}`;

/**
 * A `Ledger.handle` answer as a RunOutcome: a replay (`Idempotent-Replayed`),
 * one of its refusals (a problem document of the catalog), or the run's answer.
 * @param {Response} res
 * @returns {Promise<RunOutcome>}
 */
async function handled(res) {
  const text = await res.text();
  const type = res.headers.get("content-type") ?? "";
  const json = /json/i.test(type);
  let value = /** @type {unknown} */ (text === "" ? undefined : text);
  if (json && text !== "") { try { value = JSON.parse(text); } catch { /* kept as text */ } }
  const generation = 0;
  if (res.headers.get("idempotent-replayed") === "true") {
    const tombstone = /problem\+json/i.test(type) && /** @type {{ type?: unknown }} */ (value)?.type === problemType("idempotency-response-not-retained");
    return { outcome: "replayed", result: tombstone ? undefined : value, generation };
  }
  if (/problem\+json/i.test(type) && value !== null && typeof value === "object") {
    const doc = /** @type {{ type?: unknown; detail?: unknown; lease_remaining_ms?: unknown }} */ (value);
    const retryAfter = Number(res.headers.get("retry-after") ?? "1");
    switch (doc.type) {
      case problemType("idempotency-key-in-use"):
        return { outcome: "busy", reason: "in_flight", retryAfterSeconds: delaySeconds(typeof doc.lease_remaining_ms === "number" ? doc.lease_remaining_ms : 1000) };
      case problemType("idempotency-ledger-full"):
        return { outcome: "busy", reason: "ledger_full", retryAfterSeconds: delaySeconds(retryAfter * 1000) };
      case problemType("idempotency-key-reused"):
        return { outcome: "refused", reason: "mismatch", detail: String(doc.detail ?? "the key was used for another body") };
      case problemType("idempotency-key-missing"):
      case problemType("idempotency-key-invalid"):
      case problemType("request-too-large"):
      case problemType("request-body-unreadable"):
        return { outcome: "refused", reason: "invalid", detail: String(doc.detail ?? doc.type) };
      default: break; // the run's own problem answer: it ran
    }
  }
  return { outcome: "ran", result: value, generation, stored: true };
}

/**
 * Forwards one unit of work to an object whose fetch answers with
 * `Ledger.handle` (the Durable Object shape: its rows and the ledger's
 * record commit in one transaction). A fetch that rejects (the object
 * threw, was reset, or is unreachable; its transaction rolled back) is
 * `unavailable`; an answer later than `timeoutSeconds` is `timed_out`
 * (retry: a redelivery is answered the replay if it committed).
 * @param {ForwardCall} call
 * @returns {Promise<RunOutcome>}
 */
export async function forwardOnce({ stub, key, body, contentType = "application/json", headers = {}, timeoutSeconds = 60, target = "/consume" }) {
  const controller = new AbortController();
  const timer = deadline(timeoutSeconds * 1000, controller);
  const answered = (async () => {
    const res = await stub.fetch(`https://idempotency-ledger.consumer${target}`, {
      method: "POST",
      headers: { ...headers, "content-type": contentType, "idempotency-key": formatIdempotencyKey(key) },
      body: /** @type {BodyInit} */ (body),
    });
    return handled(res);
  })().then((outcome) => outcome, (error) => /** @type {RunOutcome} */ ({ outcome: "unavailable", error, retryAfterSeconds: null }));
  const first = await Promise.race([answered, timer.late]);
  timer.clear();
  if (first === LATE) {
    console.error(JSON.stringify({ event: "idempotency.consumer_timed_out", key, timeout_seconds: timeoutSeconds }));
    return { outcome: "timed_out", retryAfterSeconds: 0 };
  }
  return /** @type {RunOutcome} */ (first);
}
