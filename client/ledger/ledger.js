// @ts-check
// idempotency-ledger/ledger: exactly-once inside your own Durable Object.
//
//   import { Ledger } from "idempotency-ledger/ledger";
//   export class Payments extends DurableObject {
//     ledger = new Ledger(this.ctx);
//     async fetch(request) {
//       return this.ledger.handle(request, () => {
//         const { id } = this.ctx.storage.sql.exec("INSERT INTO charges … RETURNING id").one();
//         return { status: 201, json: { id } };
//       });
//     }
//   }
//
// The same ledger core as TenantLedger and Rust library mode (src/ledger,
// compiled to wasm; src/embedded/ exports it), over the object's own
// `ctx.storage.sql`. `execute` claims the key, calls your synchronous
// function and stores its answer in one `transactionSync`: your rows and
// the ledger's record commit together or not at all. A function that
// throws rolls both back (the key stays free) and its error reaches you.
// Outcomes are RPC v1 `execute`'s: ran, or completed (replay it),
// in_flight, mismatch, ledger_full (docs/clients.md "Your own Durable Object").
//
// One ledger per object: the first `new Ledger(ctx)` of an object instance
// migrates the tables, recounts and keeps the counts; every later one over
// the same `ctx` (a Ledger made per request) shares them, under its own
// options. Every `run` runs inside a `transactionSync`, keyed or not.
//
// Workers only: it loads the package's slim wasm module through
// ./wasm.js (build/ledger/index_bg.wasm: the ledger core and
// EmbeddedLedger alone, not the gateway `idempotency-ledger/worker` runs).
//
// Beside it: ./app-answer.js (your function's answer, checked and
// normalised) and ./object-ledger.js (what an object's Ledgers share).
import { DEFAULTS, MAX_BODY_CEILING, MAX_WINDOW_SECONDS, STORED_BODY_CEILING, wholeOption } from "../rules/defaults.js";
import { checkOptions } from "../rules/check-options.js";
/** @import { OptionSpec } from "../rules/check-options.js" */
import { requestBody, requestKey } from "../rules/request.js";
import { refusalResponse } from "../rules/answer.js";
import { handled, normalized, ranResponse } from "./app-answer.js";
import { flushLater, objectLedger } from "./object-ledger.js";
/** @import { Fingerprint } from "../rules/fingerprint.js" */
/** @import { ClaimRefusal, RecordView, LedgerStats } from "../rpc/client.js" */

/**
 * @typedef {object} LedgerOptions
 * @property {number} [retentionSeconds] How long an answer is replayed. Default 86400 (as RETENTION_SECONDS).
 * @property {number} [maxKeys] Records this object keeps at most; a new key beyond it is
 *   `ledger_full`. Default 1000000 (as MAX_KEYS_PER_TENANT).
 * @property {number} [maxDbBytes] New keys are `ledger_full` once the object's database
 *   (your tables included) reaches this many bytes, so no write meets the platform's 10 GB
 *   limit. Default 9000000000 (as MAX_DB_BYTES_PER_OBJECT).
 * @property {number} [sweepIntervalSeconds] `armSweep` and `alarm` set the object's alarm on this grid,
 *   so one alarm sweeps every record expiring within one interval. Default 60 (as SWEEP_INTERVAL_SECONDS), 1..3600.
 * @property {number} [maxBodyBytes] `handle` only: a larger request body (by Content-Length,
 *   or by the bytes read) is `413 request-too-large`, nothing claimed or run.
 *   Default 1 MiB (as MAX_REQUEST_BODY_BYTES), at most 16 MiB.
 * @property {readonly string[]} [storedHeaders] Default `["content-type", "location", "etag"]`.
 * @property {number} [maxStoredBodyBytes] Default 1 MiB; a larger body is stored as a tombstone.
 * @property {readonly string[]} [fingerprintHeaders] `handle` only. Default `["content-type"]`.
 * @property {boolean} [required] `handle` only: a protected request without a key gets
 *   `400 idempotency-key-missing` (default true); false runs it unprotected (still in a transaction).
 * @property {readonly string[]} [protectedMethods] `handle` only: the methods that need a key,
 *   default `["POST", "PATCH"]` (as PROTECTED_METHODS). A request of any other method (a `GET`
 *   read route) goes to `run` unprotected — no key read, nothing recorded — still inside a transaction.
 */

/**
 * What your function returns: the answer to store and replay, a plain
 * object (not a `Response`: a Response's body can only be read
 * asynchronously, and the transaction that records the answer cannot
 * span an await — returning one is a TypeError, nothing written). `json`
 * sets the body to its JSON text and `content-type: application/json`
 * (unless given); a value JSON cannot encode is a TypeError.
 * @typedef {object} AppAnswer
 * @property {number} [status] 200..599, default 200.
 * @property {Headers | Record<string, string> | [string, string][]} [headers]
 * @property {string | Uint8Array | ArrayBuffer | null} [body]
 * @property {unknown} [json]
 * @property {never} [arrayBuffer] (A `Response` has one: the types refuse it.)
 */

/**
 * What `handle` gives your function: the request's key and body.
 * @typedef {object} HandledRequest
 * @property {string | null} key The parsed Idempotency-Key (null: unprotected, `required: false`).
 * @property {Uint8Array} body The raw body bytes (what the fingerprint hashed).
 * @property {() => string} text The body as UTF-8 text.
 * @property {() => any} json The body parsed as JSON (throws on invalid JSON: nothing is written).
 */

/**
 * The answer as it was given (status, every header, the body bytes).
 * @typedef {object} RanResponse
 * @property {number} status
 * @property {[string, string][]} headers
 * @property {Uint8Array} body
 */

/**
 * Your function ran, and its answer is stored.
 * @typedef {object} Ran
 * @property {"ran"} outcome
 * @property {number} generation
 * @property {boolean} takeover
 * @property {boolean} retained False when the body was too large to keep (a replay answers 500).
 * @property {RanResponse} response
 */

/** @typedef {Ran | ClaimRefusal} ExecuteResult */

/**
 * The object's `ctx`, as much of it as the ledger uses.
 * @typedef {{ storage: { sql: object; transactionSync: Function;
 *   getAlarm(): Promise<number | null>; setAlarm(scheduledTime: number): Promise<void> } }} LedgerState
 */

/** Every option of `new Ledger(ctx, options)` (../rules/check-options.js): any other name is a TypeError. */
/** @type {Readonly<Record<string, OptionSpec>>} */
const LEDGER_OPTIONS = Object.freeze({
  retentionSeconds: { whole: [1, MAX_WINDOW_SECONDS], default: DEFAULTS.retentionSeconds },
  maxKeys: { whole: [1, Number.MAX_SAFE_INTEGER], default: DEFAULTS.maxKeys },
  maxDbBytes: { whole: [1, Number.MAX_SAFE_INTEGER], default: DEFAULTS.maxDbBytes },
  maxBodyBytes: { whole: [0, MAX_BODY_CEILING], default: DEFAULTS.maxBodyBytes },
  // Its bounds are the core's (SWEEP_INTERVAL_SECONDS's): checked there.
  sweepIntervalSeconds: { whole: [1, Number.MAX_SAFE_INTEGER], default: DEFAULTS.sweepIntervalSeconds },
  storedHeaders: { tokens: "header", default: DEFAULTS.storedHeaders },
  maxStoredBodyBytes: { whole: [0, STORED_BODY_CEILING], default: DEFAULTS.maxStoredBodyBytes },
  fingerprintHeaders: { tokens: "header", default: DEFAULTS.fingerprintHeaders },
  required: { boolean: true, default: DEFAULTS.required },
  protectedMethods: { tokens: "method", default: DEFAULTS.protectedMethods },
});

/** @param {unknown} v @param {string} name @param {number} min @param {number} max */
const whole = (v, name, min, max) => wholeOption("idempotency-ledger", name, v, min, max);

/** The ledger inside your own SQLite-backed Durable Object. */
export class Ledger {
  #core;
  #shared;
  #ctx;
  /** @type {readonly string[]} */
  #fingerprintHeaders;
  /** @type {boolean} */
  #required;
  /** @type {Set<string>} */
  #methods;
  /** @type {number} */
  #maxBodyBytes;

  /**
   * Creates (or upgrades in place) the ledger's tables in the object's
   * database, once per object instance: a Ledger made per request shares
   * the first one's tables and counts. Invalid options throw a TypeError.
   * @param {LedgerState} ctx The Durable Object's `ctx` (`this.ctx`); its class must be a SQLite one.
   * @param {LedgerOptions} [options]
   */
  constructor(ctx, options = {}) {
    const o = checkOptions("idempotency-ledger", options, LEDGER_OPTIONS);
    const { shared, core } = objectLedger(ctx, JSON.stringify({
      retention_seconds: o.retentionSeconds,
      max_keys: o.maxKeys,
      max_db_bytes: o.maxDbBytes,
      stored_headers: o.storedHeaders,
      max_stored_body_bytes: o.maxStoredBodyBytes,
      sweep_interval_seconds: o.sweepIntervalSeconds,
    }));
    this.#core = core;
    this.#shared = shared;
    this.#ctx = ctx;
    this.#fingerprintHeaders = o.fingerprintHeaders;
    this.#required = o.required;
    this.#methods = new Set(o.protectedMethods.map((/** @type {string} */ m) => m.toUpperCase()));
    this.#maxBodyBytes = o.maxBodyBytes;
  }

  /**
   * After a call: the counts kept in memory written within the core's
   * flush delay, even if the object goes idle (./object-ledger.js).
   */
  #flushLater() {
    flushLater(this.#shared, this.#core);
  }

  /**
   * Runs `run` inside a `transactionSync` of its own, unprotected: its
   * answer normalised (a throw, a Promise or a Response rolls its writes back).
   * @param {() => AppAnswer} run
   */
  #unprotected(run) {
    return this.#ctx.storage.transactionSync(() => normalized(run()));
  }

  /**
   * Claims `key`, runs `run()` (synchronously, inside the transaction)
   * unless the key is already answered, and stores its answer: one
   * transaction. Whatever `run` throws is rethrown with nothing written.
   * @param {{ key: string; fingerprint: Fingerprint }} call The key (parsed: `parseIdempotencyKey`) and the request's fingerprint.
   * @param {() => AppAnswer} run Your writes (`ctx.storage.sql.exec`), then the answer.
   * @returns {ExecuteResult}
   */
  execute({ key, fingerprint }, run) {
    if (typeof run !== "function") throw new TypeError("idempotency-ledger: execute(call, run) needs a function");
    try {
      return this.#outcome((wrapped) => this.#core.execute(JSON.stringify({ key, fingerprint }), wrapped), run).outcome;
    } finally {
      this.#flushLater();
    }
  }

  /**
   * Runs one core call with `run` wrapped: its answer normalised for the
   * core, and kept as given for the `ran` outcome.
   * @param {(wrapped: () => [number, string[], Uint8Array]) => string} call
   * @param {() => AppAnswer} run
   * @returns {{ outcome: ExecuteResult; headers?: Headers }}
   */
  #outcome(call, run) {
    /** @type {ReturnType<typeof normalized> | undefined} */
    let ran;
    const outcome = JSON.parse(call(() => {
      ran = normalized(run());
      return ran.wire;
    }));
    if (outcome.outcome === "ran" && ran !== undefined) return { outcome: { ...outcome, response: ran.given }, headers: ran.headers };
    return { outcome };
  }

  /**
   * The HTTP contract over `execute`: for a protected method
   * (`protectedMethods`), the Idempotency-Key header parsed by the
   * gateway's rules, the gateway's fingerprint of the request, then the
   * answer — your function's response (first run), the stored one with
   * `Idempotent-Replayed: true`, or the gateway's problem documents
   * (400, 409, 413, 422, 429) for the rest. Any other method, and a
   * request without a key under `required: false`, runs `run`
   * unprotected (key null), still in a transaction of its own. Whatever
   * `run` throws is rethrown with nothing written (so is the TypeError
   * for an answer that is a Promise or a Response).
   * @param {Request} request
   * @param {(request: HandledRequest) => AppAnswer} run Called with the key and body (synchronously, inside the transaction).
   * @returns {Promise<Response>}
   */
  async handle(request, run) {
    if (typeof run !== "function") throw new TypeError("idempotency-ledger: handle(request, run) needs a function");
    // A method not protected is run as a request without a key is: its key never read.
    const keyed = this.#methods.has(request.method.toUpperCase()) ? requestKey(request, this.#required) : null;
    if (keyed !== null && "answer" in keyed) return keyed.answer;
    const read = await requestBody(request, this.#maxBodyBytes);
    if ("answer" in read) return read.answer;
    const { body } = read;
    if (keyed === null) {
      const { given, headers } = this.#unprotected(() => run(handled(null, body)));
      return ranResponse(given, headers);
    }
    const { key } = keyed;
    // The fingerprint is the core's own (Rust protocol::fingerprint, the gateway's), over the URL's target verbatim.
    const fingerprinted = this.#fingerprintHeaders.flatMap((name) => [name, request.headers.get(name)]);
    let done;
    try {
      done = this.#outcome(
        (wrapped) => this.#core.executeRequest(key, request.method, request.url, fingerprinted, body, wrapped),
        () => run(handled(key, body)),
      );
    } finally {
      this.#flushLater();
    }
    return done.outcome.outcome === "ran" ? ranResponse(done.outcome.response, done.headers) : refusalResponse(done.outcome);
  }

  /**
   * The record of `key`, or null when there is none (or it expired).
   * @param {string} key
   * @returns {RecordView | null}
   */
  lookup(key) {
    return JSON.parse(this.#core.lookup(key));
  }

  /**
   * Deletes at most `batch` expired records. Call it from the object's
   * `alarm()`, and set the next alarm at `next_expires_at` (when not null).
   * @param {number} [batch] 1..10000, default 500 (as SWEEP_BATCH; the core checks the bounds).
   * @returns {{ deleted: number; batch_full: boolean; next_expires_at: number | null; next_alarm_at: number | null }}
   */
  sweep(batch = DEFAULTS.sweepBatch) {
    return JSON.parse(this.#core.sweep(whole(batch, "batch", 0, 2 ** 32 - 1)));
  }

  /**
   * Makes sure the object's alarm will sweep: sets it at the next expiry
   * (on the `sweepIntervalSeconds` grid) unless an alarm is already set
   * at or before that — one index read and one `getAlarm` per instance,
   * then nothing at all while the alarm it saw is still ahead. Call it after requests that may have
   * written a record, and answer the alarm with `alarm()`. Never rejects:
   * a failure (a class without an `alarm()` handler) is logged as
   * `idempotency.sweep_unarmed` and answered false, so a request whose
   * writes committed is never failed by it.
   * @returns {Promise<boolean>} Whether an alarm is set for the next expiry.
   */
  async armSweep() {
    const shared = this.#shared;
    try {
      // An alarm this instance saw set and still ahead (or only just due):
      // every record written since expires no earlier than the one it was
      // set for (the retention is this instance's), so nothing to read.
      if (shared.armedAt !== null && shared.armedAt > Date.now() - this.#core.sweepIntervalMs) return true;
      const at = /** @type {number | null} */ (JSON.parse(this.#core.alarmAt()));
      if (at === null) return true;
      const set = await this.#ctx.storage.getAlarm();
      if (set === null || set > at) {
        shared.armedAt = null; // not known until set
        await this.#ctx.storage.setAlarm(at);
        shared.armedAt = at;
      } else {
        shared.armedAt = set;
      }
      return true;
    } catch (e) {
      console.error(JSON.stringify({ event: "idempotency.sweep_unarmed", error: e instanceof Error ? e.message : String(e) }));
      return false;
    }
  }

  /**
   * The object's `alarm()`: sweeps at most `batch` expired records and
   * sets the next alarm where the core puts it (TenantLedger's rule: on
   * the grid at the next expiry; again within a second when the batch
   * was full).
   * @param {number} [batch] 1..10000, default 500 (as SWEEP_BATCH).
   * @returns {Promise<{ deleted: number; batch_full: boolean; next_expires_at: number | null; next_alarm_at: number | null }>}
   */
  async alarm(batch = DEFAULTS.sweepBatch) {
    this.#shared.armedAt = null;
    const swept = this.sweep(batch);
    if (swept.next_alarm_at !== null) {
      await this.#ctx.storage.setAlarm(swept.next_alarm_at);
      this.#shared.armedAt = swept.next_alarm_at;
    }
    return swept;
  }

  /**
   * Counts of this object's ledger (RPC v1 `stats`), read-only.
   * @returns {LedgerStats}
   */
  stats() {
    return JSON.parse(this.#core.stats());
  }
}
