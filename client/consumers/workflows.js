// @ts-check
// idempotency-ledger/workflows: an external effect that runs once per key
// where the platform runs code at least once — a Workflow step (retried,
// and re-run when its instance is restarted), a cron trigger and a
// Durable Object alarm (docs/consumers-workflows.md).
//   - `once(step, name, options, effect)`: `step.do(name, …)` whose effect
//     runs once per `options.key` across step retries, instance restarts
//     and concurrent instances; what `step.do` returns is the effect's
//     result, stored with the key and answered again to every later run.
//   - `onceScheduled(when, name, options, effect)`: the same for a
//     `scheduled()` handler or an alarm, keyed by the scheduled time.
//
// What must stay true here:
// - Options are checked when called (a TypeError naming an unknown or bad
//   option), before anything is claimed.
// - A key the ledger cannot run now (in flight under another attempt,
//   the ledger full or unreachable) throws, so the platform's own retry
//   (the step's retries, the alarm's, the next delivery) comes back later;
//   a key that stands for another effect throws a TypeError.
import { MAX_WINDOW_SECONDS } from "../rules/defaults.js";
import { checkOptions } from "../rules/check-options.js";
/** @import { OptionSpec } from "../rules/check-options.js" */
import { oneComponent } from "../rules/fingerprint.js";
import { MAX_RETRY_DELAY_SECONDS, runOnce } from "./consumer.js";
import { keyProblem } from "../rules/request.js";
import { ledgerSource } from "../rpc/sources.js";
/** @import { LedgerSource, TenantShardsValue } from "../rpc/sources.js" */
/** @import { RunContext } from "./consumer.js" */

/**
 * @typedef {object} OnceOptions
 * @property {LedgerSource} ledger A `LedgerClient` (one tenant's object), or a `LedgerService` binding or a
 *   TenantLedger Durable Object namespace with `tenant`.
 * @property {string} [tenant] The tenant, with a binding or a namespace.
 * @property {TenantShardsValue} [tenantShards] TENANT_SHARDS, with a namespace.
 * @property {string | null} [jurisdiction] With a namespace: the tenant's TENANT_JURISDICTIONS value (`"eu"`,
 *   `"fedramp"`, `"fedramp-high"`, `"us"`; null: unrestricted), so its objects are `namespace.jurisdiction(J)`'s,
 *   as the gateway's ([clients.md](../../docs/clients.md#tenants-kept-in-a-jurisdiction)).
 * @property {string} key The effect's key, 1–255 printable ASCII characters. It must name the
 *   effect, not the attempt: `${event.instanceId}:charge` survives step retries and restarts of
 *   the instance; a business id (the order's) also survives a new instance made for the same order.
 * @property {number} [leaseSeconds] How long a run holds the key before another attempt may take it
 *   over, and the effect's deadline (1..43200; default 60): longer than the effect ever takes.
 * @property {number} [retentionSeconds] How long the result is kept and answered again (1..31536000;
 *   default the object's RETENTION_SECONDS): as long as an instance may be restarted.
 * @property {WorkflowStepConfig} [config] The step's own config (`retries`, `timeout`), passed to `step.do`.
 */

/**
 * `step.do`'s config, as Cloudflare Workflows takes it (passed on unread; a
 * `WorkflowStepConfig` of @cloudflare/workers-types is one).
 * @typedef {{ retries?: { limit: number; delay: string | number | ((...args: any[]) => unknown); backoff?: "constant" | "linear" | "exponential" };
 *   timeout?: string | number; [option: string]: unknown }} WorkflowStepConfig
 */

/**
 * What `once` needs of a Workflow's `step`: its `do`.
 * @typedef {object} WorkflowStepLike
 * @property {(name: string, ...rest: any[]) => Promise<any>} do
 */

/** @typedef {Omit<OnceOptions, "key" | "config">} ScheduledOptions */

/**
 * When a scheduled run was due: a `ScheduledController` (its `scheduledTime`), or epoch milliseconds, or a Date.
 * @typedef {{ scheduledTime: number } | number | Date} ScheduledWhen
 */

const ONCE = "idempotency-ledger/workflows once";
const SCHEDULED = "idempotency-ledger/workflows onceScheduled";

/**
 * The options of `once`, checked by ../rules/check-options.js (the key and config by `once`).
 * @type {Readonly<Record<string, OptionSpec>>}
 */
const ONCE_SPEC = Object.freeze({
  ledger: { any: true }, tenant: { any: true }, tenantShards: { any: true }, jurisdiction: { any: true }, key: { any: true },
  // The lease is also the effect's deadline (a timer): at most 12 hours, as the Queue consumer's.
  leaseSeconds: { whole: [1, MAX_RETRY_DELAY_SECONDS], default: 60 },
  retentionSeconds: { whole: [1, MAX_WINDOW_SECONDS] },
  config: { any: true },
});
/** The options of `onceScheduled`: `once`'s but the key (made from the name and time) and config. */
const SCHEDULED_SPEC = Object.freeze(Object.fromEntries(Object.entries(ONCE_SPEC).filter(([name]) => name !== "key" && name !== "config")));

/**
 * The ledger, tenant and windows of `options`, checked (a TypeError naming what is wrong).
 * @param {string} who
 * @param {Partial<OnceOptions> | undefined} options
 * @param {Readonly<Record<string, OptionSpec>>} spec
 */
function checked(who, options, spec) {
  if (options === undefined || options === null) throw new TypeError(`${who} needs options: { ledger, tenant, key }`);
  const o = checkOptions(who, options, spec);
  if ([o.ledger, o.tenant, o.tenantShards, o.jurisdiction].some((v) => typeof v === "function")) {
    throw new TypeError(`${who}: ledger, tenant, tenantShards and jurisdiction are values here`);
  }
  const jurisdiction = o.jurisdiction ?? undefined; // null: unrestricted, as absent
  const source = ledgerSource({ ledger: o.ledger, tenant: o.tenant, tenantShards: o.tenantShards, jurisdiction });
  return { source, leaseSeconds: /** @type {number} */ (o.leaseSeconds), retentionSeconds: /** @type {number | undefined} */ (o.retentionSeconds) };
}

/**
 * `key`, or a TypeError naming what is wrong with it.
 * @param {string} who
 * @param {string} what
 * @param {unknown} key
 * @returns {string}
 */
function checkedKey(who, what, key) {
  if (typeof key !== "string") throw new TypeError(`${who}: ${what} must be a string`);
  const problem = keyProblem(key);
  if (problem !== null) throw new TypeError(`${who}: ${what}: ${problem.replace("the idempotency key", "the key")}`);
  return key;
}

/**
 * Runs `effect` once per key on the ledger the options name (./consumer.js
 * `runOnce`): its result, this run's or the stored one; throws when it
 * cannot run now, so the platform's retry comes back.
 * @template T
 * @param {string} who
 * @param {ReturnType<typeof checked>} o
 * @param {string} key
 * @param {string} name What the key stands for (its fingerprint).
 * @param {(context: RunContext) => T | Promise<T>} effect
 * @returns {Promise<T>}
 */
async function run(who, o, key, name, effect) {
  const resolved = await o.source.resolve([]);
  if ("misconfigured" in resolved) throw new TypeError(`${who}: ${resolved.misconfigured}`);
  const result = await runOnce({
    ledger: resolved.ledger,
    key,
    fingerprint: await oneComponent("effect", name),
    leaseSeconds: o.leaseSeconds,
    retentionSeconds: o.retentionSeconds,
  }, effect);
  switch (result.outcome) {
    case "ran":
    case "replayed":
      return /** @type {T} */ (result.result);
    case "threw":
      throw result.error; // the key was released (or is held to its lease): the retry runs it again
    case "busy":
      throw new Error(result.reason === "in_flight"
        ? `${who}: ${JSON.stringify(key)} is running in another attempt; retry in ${result.retryAfterSeconds} s`
        : `${who}: the tenant's ledger is full; retry in ${result.retryAfterSeconds} s`);
    case "timed_out":
      throw new Error(`${who}: the effect of ${JSON.stringify(key)} passed its deadline (leaseSeconds); it holds the key until its lease ends, in ${result.retryAfterSeconds} s`);
    case "unavailable":
      throw new Error(`${who}: the ledger did not answer; nothing ran`, { cause: result.error });
    case "refused":
      throw new TypeError(result.reason === "mismatch"
        ? `${who}: the key ${JSON.stringify(key)} already stands for another effect than ${JSON.stringify(name)}: give each effect its own key`
        : `${who}: ${result.detail}`);
  }
}

/**
 * A Workflow step whose effect runs once per `options.key`: `step.do(name, config, …)` around
 * claim → effect → complete. Its answer is the effect's result (a JSON value), this run's or the
 * one stored by the run that took effect. An effect that throws frees the key for the step's
 * retry (so it must throw only when it did not take effect); a key another attempt is running
 * throws, and the step's retries come back for it.
 * @template T
 * @param {WorkflowStepLike} step The `step` of your `WorkflowEntrypoint.run(event, step)`.
 * @param {string} name The step's name (also what the key stands for: the same key under another name is refused).
 * @param {OnceOptions} options
 * @param {(context: RunContext) => T | Promise<T>} effect Given `{ key, generation, takeover, signal }`
 *   (`signal` aborts at the lease's end: pass it to fetch).
 * @returns {Promise<T>}
 */
export function once(step, name, options, effect) {
  // The engine's step is an RPC stub (a callable proxy): only its `do` is checked.
  if (step === null || step === undefined || typeof step.do !== "function") throw new TypeError(`${ONCE} needs a Workflow step (the second argument of run(event, step))`);
  if (typeof name !== "string" || name.length === 0) throw new TypeError(`${ONCE}: name must be the step's name`);
  if (typeof effect !== "function") throw new TypeError(`${ONCE}: effect must be a function`);
  const o = checked(ONCE, options, ONCE_SPEC);
  const key = checkedKey(ONCE, "options.key", options.key);
  const { config } = options;
  if (config !== undefined && (config === null || typeof config !== "object")) throw new TypeError(`${ONCE}: options.config must be step.do's config object`);
  const body = () => run(ONCE, o, key, name, effect);
  return config === undefined ? step.do(name, body) : step.do(name, config, body);
}

/**
 * The key of a scheduled run: `scheduled:<name>@<ISO time it was due>`, the same for every
 * delivery and retry of that run.
 * @param {ScheduledWhen} when
 * @param {string} name
 */
function scheduledKey(when, name) {
  const ms = typeof when === "number" ? when
    : when instanceof Date ? when.getTime()
    : when !== null && typeof when === "object" && typeof when.scheduledTime === "number" ? when.scheduledTime
    : NaN;
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) throw new TypeError(`${SCHEDULED}: when must be the ScheduledController (its scheduledTime), epoch milliseconds or a Date`);
  if (typeof name !== "string") throw new TypeError(`${SCHEDULED}: name must be a string`);
  return checkedKey(SCHEDULED, "the key (from name)", `scheduled:${name}@${new Date(ms).toISOString()}`);
}

/**
 * A cron trigger's or an alarm's effect, once per `name` and scheduled time: the key is
 * `scheduled:<name>@<ISO time>` (`when`: the `ScheduledController` of `scheduled(controller, env,
 * ctx)`, or, for an alarm, the time you set it for). Its answer is the effect's result, this
 * run's or the stored one. Throws when the run is in flight elsewhere (an alarm's throw is retried).
 * @template T
 * @param {ScheduledWhen} when
 * @param {string} name
 * @param {ScheduledOptions} options
 * @param {(context: RunContext) => T | Promise<T>} effect As `once`'s.
 * @returns {Promise<T>}
 */
export function onceScheduled(when, name, options, effect) {
  if (typeof effect !== "function") throw new TypeError(`${SCHEDULED}: effect must be a function`);
  const key = scheduledKey(when, name);
  const o = checked(SCHEDULED, options, SCHEDULED_SPEC);
  return run(SCHEDULED, o, key, key, effect);
}
