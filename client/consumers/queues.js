// @ts-check
// idempotency-ledger/queues: a Cloudflare Queue consumer whose messages'
// effects run once per key (docs/consumers.md "Queues").
//
//   import { queueConsumer } from "idempotency-ledger/queues";
//   import { deriveIdempotencyKey } from "idempotency-ledger";
//   export default {
//     queue: queueConsumer({
//       ledger: (message, env) => env.LEDGER,            // a LedgerService binding
//       tenant: (message) => message.body.account,
//       key: (message) => deriveIdempotencyKey(message.body.orderId, "charge"),
//       async handler(message, { signal }) { return charge(message.body, signal); },
//     }),
//   };
//
// Two shapes, one wrapper:
// - external (`handler` + `ledger`): each message claims its key on the
//   tenant's ledger, runs `handler` under the lease, and stores its
//   JSON-able result (./consumer.js `runOnce`). Fenced: one stored result
//   per key, a rerun only after a throw (released) or a lease that ended
//   unsettled.
// - Durable Object (`object`): each message is POSTed to the object, whose
//   fetch answers with `Ledger.handle` (idempotency-ledger/ledger), so the
//   effect's rows and the ledger's record commit in one transaction
//   (./consumer.js `forwardOnce`). Exactly once.
//
// Per message: done (ran, or replayed) → ack(); anything else → retry(),
// with a delay where one is known (the lease left of a key in flight
// elsewhere, a full ledger's wait). A batch's messages are settled one by
// one, up to `concurrency` keys at a time; messages that share a key run
// one after the other, so a duplicate in the same batch is answered the
// first one's result.
//
// What must stay true here:
// - A handler never runs without a granted claim: a ledger that cannot be
//   reached, a key or tenant that cannot be made, retries the message.
// - Every message is acked or retried exactly once; one message's failure
//   never replays another.
// - Options are checked when the consumer is made (a TypeError naming the
//   option); nothing given is silently ignored.
import { MAX_WINDOW_SECONDS, knownOptions, wholeOption } from "../rules/defaults.js";
import { checkOptions } from "../rules/check-options.js";
/** @import { OptionSpec } from "../rules/check-options.js" */
import { asBytes } from "../rules/bytes.js";
import { fingerprint } from "../rules/fingerprint.js";
import { keyProblem } from "../rules/request.js";
import { TENANT_RULE, isTenantId } from "../rules/tenant.js";
import { ledgerSource } from "../rpc/sources.js";
import { forwardOnce, runOnce, MAX_RETRY_DELAY_SECONDS } from "./consumer.js";
/** @import { LedgerSource, TenantShardsValue } from "../rpc/sources.js" */
/** @import { LedgerStub } from "../rpc/client.js" */
/** @import { RunOutcome, RunContext } from "./consumer.js" */

/**
 * A Queue message as a consumer's batch gives it (workers-types' `Message<Body>`).
 * @template [Body=unknown]
 * @typedef {object} QueueMessage
 * @property {string} id
 * @property {Date} timestamp
 * @property {Body} body
 * @property {number} attempts
 * @property {() => void} ack
 * @property {(options?: { delaySeconds?: number }) => void} retry
 */

/**
 * A consumer's batch (workers-types' `MessageBatch<Body>`).
 * @template [Body=unknown]
 * @typedef {object} QueueBatch
 * @property {string} queue
 * @property {readonly QueueMessage<Body>[]} messages
 */

/**
 * The invocation's context, as much as the consumer uses.
 * @typedef {{ waitUntil(promise: Promise<unknown>): void }} QueueContext
 */

/**
 * What the handler is given beside the message.
 * @template [Env=unknown]
 * @typedef {RunContext & { tenant: string | null; env: Env; ctx: QueueContext | undefined }} QueueRunContext
 */

/**
 * How one message was settled: `outcome` is ./consumer.js's (`misconfigured`: the key, tenant, ledger
 * or object could not be had), `action` what was done with the message.
 * @typedef {object} QueueSettlement
 * @property {string | null} key
 * @property {string | null} tenant
 * @property {RunOutcome["outcome"] | "misconfigured"} outcome
 * @property {"ack" | "retry"} action
 * @property {number} [delaySeconds] The retry's delay, when one was set.
 * @property {string} [detail] Why, for a refusal or a misconfiguration.
 */

/**
 * A value per message: `(message, env) => T`, sync or async.
 * @template Body
 * @template Env
 * @template T
 * @typedef {(message: QueueMessage<Body>, env: Env) => T | Promise<T>} PerMessage
 */

/**
 * @template [Body=unknown]
 * @template [Env=unknown]
 * @typedef {object} QueueConsumerOptions
 * @property {(message: QueueMessage<Body>, context: QueueRunContext<Env>) => unknown} [handler] The effect
 *   (external shape): its JSON-able result is stored and given to `onReplayed` for later deliveries.
 *   Throwing releases the key and retries the message. Stop at `context.signal` (pass it to fetch).
 * @property {PerMessage<Body, Env, LedgerSource | null | undefined>} [ledger] With `handler`: the ledger,
 *   e.g. `(message, env) => env.LEDGER` (a `LedgerService` binding or a TenantLedger namespace, with
 *   `tenant`; or a `LedgerClient`).
 * @property {string | PerMessage<Body, Env, string | null | undefined>} [tenant] With a binding or a namespace.
 * @property {TenantShardsValue | PerMessage<Body, Env, TenantShardsValue | null | undefined>} [tenantShards] With a namespace.
 * @property {string | PerMessage<Body, Env, string | null | undefined>} [jurisdiction] With a namespace: the tenant's
 *   TENANT_JURISDICTIONS value (`"eu"`, `"fedramp"`, `"fedramp-high"`, `"us"`), so its objects are
 *   `namespace.jurisdiction(J)`'s, as the gateway's ([clients.md](../../docs/clients.md#tenants-kept-in-a-jurisdiction)).
 * @property {PerMessage<Body, Env, LedgerStub | null | undefined>} [object] The Durable Object shape, instead of
 *   `handler` and `ledger`: the object the message goes to, e.g.
 *   `(message, env) => env.PAYMENTS.get(env.PAYMENTS.idFromName(message.body.account))`; its fetch answers with
 *   `Ledger.handle`.
 * @property {PerMessage<Body, Env, string>} [key] The message's key (1–255 printable ASCII), default its id.
 * @property {number} [leaseSeconds] External shape: how long a claim holds, default 60; longer than a handler may run.
 * @property {number} [timeoutSeconds] The handler's deadline (external shape: at most the lease, default the lease)
 *   or the object's (default 60).
 * @property {number} [retentionSeconds] External shape: how long a result is replayed (default the ledger's
 *   RETENTION_SECONDS); longer than a duplicate may arrive after its first.
 * @property {number} [waitSeconds] External shape: park on a key in flight elsewhere up to this long before
 *   retrying the message (default 0).
 * @property {number} [concurrency] Keys of one batch settled at once, default 10 (1..100).
 * @property {(message: QueueMessage<Body>, result: unknown, env: Env) => void | Promise<void>} [onReplayed] A
 *   message whose key was done before: acked without running, with the stored result.
 * @property {(message: QueueMessage<Body>, settlement: QueueSettlement, env: Env) => void | Promise<void>} [onSettled]
 *   Every message, once acked or retried.
 */

/**
 * Every option of `queueConsumer`, checked by ../rules/check-options.js (timeoutSeconds's
 * bounds hang on the shape: checked by `checkedConsumer`).
 * @type {Readonly<Record<string, OptionSpec>>}
 */
const SPEC = Object.freeze({
  handler: { function: "" },
  ledger: { function: " of the message and env, e.g. (message, env) => env.LEDGER" },
  tenant: { any: true }, tenantShards: { any: true }, jurisdiction: { any: true },
  object: { function: "" }, key: { function: "" },
  leaseSeconds: { whole: [1, MAX_RETRY_DELAY_SECONDS], default: 60 },
  timeoutSeconds: { any: true },
  retentionSeconds: { whole: [1, MAX_WINDOW_SECONDS] },
  waitSeconds: { whole: [0, 3600], default: 0 },
  concurrency: { whole: [1, 100], default: 10 },
  onReplayed: { function: "" }, onSettled: { function: "" },
});
const WHO = "idempotency-ledger/queues";
/** External-shape options: refused with `object`. */
const EXTERNAL_ONLY = Object.freeze(["ledger", "tenant", "tenantShards", "jurisdiction", "leaseSeconds", "retentionSeconds", "waitSeconds"]);

/** @param {unknown} e */
const messageOf = (e) => (e instanceof Error ? e.message : String(e));

/**
 * A message's body as the bytes a Durable Object is given (and the fingerprint hashes).
 * @param {unknown} body
 * @returns {{ bytes: string | Uint8Array; contentType: string } | null} null: not encodable
 */
function encodedBody(body) {
  if (typeof body === "string") return { bytes: body, contentType: "text/plain; charset=utf-8" };
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return { bytes: asBytes(/** @type {ArrayBuffer} */ (body)), contentType: "application/octet-stream" };
  let text;
  try { text = JSON.stringify(body); } catch { return null; }
  return typeof text === "string" ? { bytes: text, contentType: "application/json" } : null;
}

/**
 * Calls a hook; one that throws is logged and never changes what was done.
 * @param {string} name
 * @param {(() => unknown) | undefined} call
 */
async function hook(name, call) {
  if (call === undefined) return;
  try { await call(); } catch (e) {
    console.error(JSON.stringify({ event: "idempotency.queue_hook_failed", hook: name, error: messageOf(e) }));
  }
}

/**
 * Runs `work` over `items` with at most `limit` at once.
 * @template T
 * @param {T[]} items
 * @param {number} limit
 * @param {(item: T) => Promise<void>} work
 */
async function pooled(items, limit, work) {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]);
  });
  await Promise.all(lanes);
}

/**
 * A consumer's options, checked once when it is made.
 * @template Body
 * @template Env
 * @typedef {object} Consumer
 * @property {QueueConsumerOptions<Body, Env>} o The options as given.
 * @property {boolean} external The external shape (handler + ledger), not the Durable Object's.
 * @property {number} leaseSeconds
 * @property {number} timeoutSeconds
 * @property {number | undefined} retentionSeconds
 * @property {number} waitSeconds
 * @property {number} concurrency
 * @property {ReturnType<typeof ledgerSource> | null} source The ledger, external shape only.
 */

/**
 * The options checked: a TypeError names what is wrong.
 * @template Body
 * @template Env
 * @param {QueueConsumerOptions<Body, Env>} options
 * @returns {Consumer<Body, Env>}
 */
function checkedConsumer(options) {
  const given = /** @type {Record<string, unknown>} */ (knownOptions(WHO, options, Object.keys(SPEC)));
  if ((given.handler === undefined) === (given.object === undefined)) {
    throw new TypeError(`${WHO}: give either options.handler (with options.ledger: the external shape) or options.object (the Durable Object shape)`);
  }
  const o = /** @type {QueueConsumerOptions<Body, Env> & { leaseSeconds: number; waitSeconds: number; concurrency: number }} */ (checkOptions(WHO, options, SPEC));
  if (o.object !== undefined) {
    const extra = EXTERNAL_ONLY.find((name) => given[name] !== undefined);
    if (extra !== undefined) throw new TypeError(`${WHO}: ${extra} is for the external shape (handler + ledger); the Durable Object's own Ledger keeps its records`);
  }
  const external = o.handler !== undefined;
  const { leaseSeconds, retentionSeconds, waitSeconds, concurrency } = o;
  const timeoutSeconds = o.timeoutSeconds === undefined ? (external ? leaseSeconds : 60) : wholeOption(WHO, "timeoutSeconds", o.timeoutSeconds, 1, external ? leaseSeconds : MAX_RETRY_DELAY_SECONDS);
  if (external && o.ledger === undefined) throw new TypeError(`${WHO}: options.handler needs options.ledger, e.g. (message, env) => env.LEDGER`);
  if (o.tenant !== undefined && typeof o.tenant !== "function" && !isTenantId(o.tenant)) {
    throw new TypeError(`${WHO}: options.tenant must be ${TENANT_RULE}, or a function of the message returning one`);
  }
  const source = external ? ledgerSource({ ledger: o.ledger, tenant: o.tenant, tenantShards: o.tenantShards, jurisdiction: o.jurisdiction }) : null;
  return { o, external, leaseSeconds, timeoutSeconds, retentionSeconds, waitSeconds, concurrency, source };
}

/**
 * The message's key, or why there is none.
 * @template Body
 * @template Env
 * @param {Consumer<Body, Env>} c
 * @param {QueueMessage<Body>} message
 * @param {Env} env
 * @returns {Promise<{ key: string } | { misconfigured: string }>}
 */
async function keyOf(c, message, env) {
  let key;
  try { key = c.o.key === undefined ? message.id : await c.o.key(message, env); } catch (e) {
    return { misconfigured: `options.key threw: ${messageOf(e)}` };
  }
  if (typeof key !== "string" || keyProblem(key) !== null) return { misconfigured: "options.key must give 1-255 printable ASCII characters" };
  return { key };
}

/**
 * One message, its key already made: run (or forward) once.
 * @template Body
 * @template Env
 * @param {Consumer<Body, Env>} c
 * @param {QueueMessage<Body>} message
 * @param {string} key
 * @param {Env} env
 * @param {QueueContext | undefined} ctx
 * @param {string} queue
 * @returns {Promise<{ outcome: RunOutcome | null; tenant: string | null; misconfigured?: string }>}
 */
async function settleOne(c, message, key, env, ctx, queue) {
  const encoded = encodedBody(message.body);
  const headers = { "queue-name": queue, "queue-message-id": message.id, "queue-message-attempts": String(message.attempts) };
  if (!c.external) {
    let stub;
    try { stub = await /** @type {PerMessage<Body, Env, LedgerStub | null | undefined>} */ (c.o.object)(message, env); } catch (e) {
      return { outcome: null, tenant: null, misconfigured: `options.object threw: ${messageOf(e)}` };
    }
    if (stub === null || stub === undefined || typeof stub.fetch !== "function") return { outcome: null, tenant: null, misconfigured: "options.object gave no Durable Object stub" };
    if (encoded === null) return { outcome: { outcome: "refused", reason: "invalid", detail: "the message's body has no JSON encoding to forward (send JSON, text or bytes)" }, tenant: null };
    return { outcome: await forwardOnce({ stub, key, body: encoded.bytes, contentType: encoded.contentType, headers, timeoutSeconds: c.timeoutSeconds }), tenant: null };
  }
  const resolved = await /** @type {NonNullable<Consumer<Body, Env>["source"]>} */ (c.source).resolve([message, env]);
  if ("misconfigured" in resolved) return { outcome: null, tenant: null, misconfigured: resolved.misconfigured };
  const { ledger, tenant } = resolved;
  // The same fingerprint a Ledger.handle object gives the message: a key reused for another body is a mismatch.
  const fp = encoded === null ? undefined : await fingerprint({ method: "POST", target: "/consume", headers: { "content-type": encoded.contentType }, body: encoded.bytes });
  const handler = /** @type {NonNullable<QueueConsumerOptions<Body, Env>["handler"]>} */ (c.o.handler);
  const outcome = await runOnce({
    ledger, key, fingerprint: fp, leaseSeconds: c.leaseSeconds, timeoutSeconds: c.timeoutSeconds, retentionSeconds: c.retentionSeconds, waitSeconds: c.waitSeconds,
    waitUntil: ctx === undefined ? undefined : (p) => ctx.waitUntil(p),
  }, (run) => handler(message, { ...run, tenant, env, ctx }));
  return { outcome, tenant };
}

/**
 * What to do with a message its run answered: ack a done key, retry the rest (with a delay where one
 * is known), logging why.
 * @template Body
 * @template Env
 * @param {Consumer<Body, Env>} c
 * @param {QueueMessage<Body>} message
 * @param {{ key: string; tenant: string | null; outcome: RunOutcome; queue: string; env: Env }} run
 * @returns {Promise<QueueSettlement>}
 */
async function settlementOf(c, message, { key, tenant, outcome, queue, env }) {
  /** @type {QueueSettlement} */
  const settlement = { key, tenant, outcome: outcome.outcome, action: "retry" };
  const log = (/** @type {string} */ event, /** @type {Record<string, unknown>} */ fields) =>
    console.error(JSON.stringify({ event, queue, message: message.id, key, ...fields }));
  switch (outcome.outcome) {
    case "ran":
      settlement.action = "ack";
      break;
    case "replayed": {
      settlement.action = "ack";
      const { onReplayed } = c.o;
      await hook("onReplayed", onReplayed && (() => onReplayed(message, outcome.result, env)));
      break;
    }
    case "busy":
    case "timed_out":
      settlement.delaySeconds = outcome.retryAfterSeconds;
      break;
    case "threw":
      if (outcome.retryAfterSeconds !== null) settlement.delaySeconds = outcome.retryAfterSeconds;
      log("idempotency.queue_handler_threw", { error: messageOf(outcome.error) });
      break;
    case "unavailable":
      if (outcome.retryAfterSeconds !== null) settlement.delaySeconds = Math.min(outcome.retryAfterSeconds, MAX_RETRY_DELAY_SECONDS);
      log("idempotency.queue_ledger_unavailable", { error: messageOf(outcome.error) });
      break;
    case "refused":
      settlement.detail = outcome.detail;
      log("idempotency.queue_refused", { reason: outcome.reason, detail: outcome.detail });
      break;
  }
  return settlement;
}

/**
 * A Queue consumer (`export default { queue: queueConsumer({...}) }`) whose
 * messages' effects run once per key. Invalid options throw a TypeError.
 * @template [Body=unknown]
 * @template [Env=unknown]
 * @param {QueueConsumerOptions<Body, Env>} options
 * @returns {(batch: QueueBatch<Body>, env: Env, ctx?: QueueContext) => Promise<void>}
 */
export function queueConsumer(options) {
  const c = checkedConsumer(options);
  const { onSettled } = c.o;
  return async function queue(batch, env, ctx) {
    /** @type {Map<string, { message: QueueMessage<Body>; key: string }[]>} */
    const groups = new Map();
    /**
     * @param {QueueMessage<Body>} message
     * @param {QueueSettlement} settlement
     */
    const done = async (message, settlement) => {
      if (settlement.action === "ack") message.ack();
      else message.retry(settlement.delaySeconds === undefined ? undefined : { delaySeconds: settlement.delaySeconds });
      await hook("onSettled", onSettled && (() => onSettled(message, settlement, env)));
    };
    for (const message of [...batch.messages]) {
      const made = await keyOf(c, message, env);
      if ("misconfigured" in made) {
        console.error(JSON.stringify({ event: "idempotency.queue_misconfigured", queue: batch.queue, message: message.id, detail: made.misconfigured }));
        await done(message, { key: null, tenant: null, outcome: "misconfigured", action: "retry", detail: made.misconfigured });
        continue;
      }
      const group = groups.get(made.key) ?? [];
      group.push({ message, key: made.key });
      groups.set(made.key, group);
    }
    await pooled([...groups.values()], c.concurrency, async (group) => {
      for (const { message, key } of group) {
        let settled;
        try {
          settled = await settleOne(c, message, key, env, ctx, batch.queue);
        } catch (e) {
          settled = { outcome: null, tenant: null, misconfigured: messageOf(e) };
        }
        const { outcome, tenant } = settled;
        if (outcome === null) {
          console.error(JSON.stringify({ event: "idempotency.queue_misconfigured", queue: batch.queue, message: message.id, key, detail: settled.misconfigured }));
          await done(message, { key, tenant, outcome: "misconfigured", action: "retry", detail: settled.misconfigured });
          continue;
        }
        await done(message, await settlementOf(c, message, { key, tenant, outcome, queue: batch.queue, env }));
      }
    });
  };
}
