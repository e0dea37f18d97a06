// Compile-time check of client/index.d.ts (tsc -p tests/types): a JS Worker's
// typical use of the package must type-check under --strict, and the outcome
// unions must narrow on `outcome`.
import {
  LedgerClient,
  LedgerError,
  fingerprint,
  captureResponse,
  replayResponse,
  generateIdempotencyKey,
  deriveIdempotencyKey,
  withIdempotencyKey,
  parseIdempotencyKey,
  withIdempotency,
  IdempotencyKeyError,
  applyIdempotencyKey,
  type ClaimOutcome,
  type LedgerNamespace,
  type StoredResponse,
} from "idempotency-ledger";

export async function charge(namespace: LedgerNamespace, tenant: string, request: Request): Promise<Response> {
  const client = LedgerClient.forTenant(namespace, tenant);
  const key = request.headers.get("idempotency-key") ?? (await deriveIdempotencyKey("charge", tenant));
  const url = new URL(request.url);
  const body = await request.arrayBuffer();
  const fp = await fingerprint({ method: request.method, target: url.pathname + url.search, headers: request.headers, body });
  let claim: ClaimOutcome;
  try {
    claim = await client.claim({ key, fingerprint: fp, lease_seconds: 30 });
  } catch (e) {
    if (e instanceof LedgerError && e.status === null) return new Response("ledger down", { status: 503 });
    throw e;
  }
  switch (claim.outcome) {
    case "completed":
      return replayResponse(claim.response);
    case "in_flight":
      return new Response(null, { status: 409, headers: { "retry-after": String(Math.ceil(claim.retry_after_ms / 1000)) } });
    case "mismatch":
      return Response.json({ differs: claim.differs satisfies string[] }, { status: 422 });
    case "ledger_full":
      return new Response(null, { status: 429 });
    case "claimed": {
      const response = Response.json({ ok: true }, { status: 201 });
      const stored: StoredResponse = await captureResponse(response.clone(), { maxStoredBodyBytes: 65536 });
      const done = await client.complete({ key, generation: claim.generation, response: stored });
      if (done.outcome === "fenced_out" && done.current) console.error(done.current.generation);
      return response;
    }
  }
}

export function send(url: string): Promise<Response> {
  const init: RequestInit = withIdempotencyKey({ method: "POST", body: "{}" }, generateIdempotencyKey());
  return fetch(applyIdempotencyKey(new Request(url, init)));
}

export function keyOf(request: Request): string | null {
  const field = request.headers.get("Idempotency-Key");
  try {
    return field === null ? null : parseIdempotencyKey(field);
  } catch (e) {
    if (e instanceof IdempotencyKeyError && e.code === "multiple") return null;
    throw e;
  }
}

interface AppEnv {
  LEDGER: LedgerNamespace;
}

export const protectedFetch = withIdempotency<AppEnv, { waitUntil(p: Promise<unknown>): void }>(
  async (request) => Response.json({ ok: await request.text() }, { status: 201 }),
  { ledger: (_request, env) => LedgerClient.forTenant(env.LEDGER, "acme"), fingerprintHeaders: ["content-type", "x-api-version"] },
);

// The package's subpath export and JS RPC types, as a TypeScript user imports them.
import { idempotency } from "idempotency-ledger/hono";
import type { LedgerServiceRpc } from "idempotency-ledger";

export const honoMiddleware = idempotency<{ Bindings: AppEnv }>({
  ledger: (c) => LedgerClient.forTenant(c.env.LEDGER, "acme"),
  waitSeconds: 2,
});

export async function viaRpc(ledger: LedgerServiceRpc, fp: Awaited<ReturnType<typeof fingerprint>>): Promise<number | undefined> {
  const claim = await ledger.claim("acme", { key: "k", fingerprint: fp, wait_ms: 1_000 });
  if (claim.outcome === "claimed") return claim.generation;
  return claim.waited_ms;
}

// A settlement that fails after its retries goes to the hook; `settle` is the same retry rule for your own calls.
import { settle, landedEarlier, SETTLE_RETRY_DELAYS_MS, type SettlementFailure } from "idempotency-ledger";

export const reported = withIdempotency<AppEnv>(async () => new Response("ok", { status: 201 }), {
  ledger: (_request, env) => LedgerClient.forTenant(env.LEDGER, "acme"),
  onSettlementFailed: async (failure: SettlementFailure) => {
    const op: "complete" | "release" = failure.operation;
    console.error(op, failure.generation, failure.error instanceof LedgerError ? failure.error.status : String(failure.error));
  },
});

export async function completeDurably(client: LedgerClient, key: string, generation: number, response: StoredResponse): Promise<boolean> {
  const { answer, landed, attempts } = await settle(() => client.complete({ key, generation, response }), {
    landed: (a) => landedEarlier(a, generation, "completed"),
  });
  return landed || (answer.outcome === "stored" && attempts <= SETTLE_RETRY_DELAYS_MS.length + 1);
}

// ---- middleware parity: every ledger source kind, c in every callback, the key typed, typos refused ----
import { Hono, type Context } from "hono";
import { TenantLedgers, type IdempotencyOptions, type ReplayedEvent, type ConflictEvent, type StoredEvent, type IdempotencyInfo } from "idempotency-ledger";
import type { IdempotencyVariables } from "idempotency-ledger/hono";

type Bindings = { NS: LedgerNamespace; SVC: LedgerServiceRpc; TENANT_SHARDS: string };
type HonoEnv = { Bindings: Bindings; Variables: { tenant: string } };

// Each source kind, from Hono's c: a LedgerClient, a LedgerService binding, a namespace (with TENANT_SHARDS), a TenantLedgers.
export const fromClient = idempotency<HonoEnv>({ ledger: (c) => LedgerClient.forTenant(c.env.NS, c.get("tenant")) });
export const fromBinding = idempotency<HonoEnv>({ ledger: (c) => c.env.SVC, tenant: (c) => c.get("tenant") });
export const fromNamespace = idempotency<HonoEnv>({
  ledger: (c) => c.env.NS, tenant: (c) => c.var.tenant, tenantShards: (c) => c.env.TENANT_SHARDS,
});
export const fromStaticShards = (ns: LedgerNamespace) => idempotency({ ledger: ns, tenant: "acme", tenantShards: '{"acme": 4}' });
export const fromTenantLedgers = (ns: LedgerNamespace) => idempotency({ ledger: new TenantLedgers(ns), tenant: "acme" });
export const fromStaticClient = (ns: LedgerNamespace) => idempotency({ ledger: LedgerClient.forTenant(ns, "acme") });
// A tenant kept in a jurisdiction (TENANT_JURISDICTIONS): the same value, on every path to its objects.
export const fromJurisdiction = (ns: LedgerNamespace) => idempotency({ ledger: ns, tenant: "acme-eu", jurisdiction: "eu" });
export const fromJurisdictionPerRequest = idempotency<HonoEnv>({ ledger: (c) => c.env.NS, tenant: (c) => c.var.tenant, jurisdiction: (c) => (c.var.tenant.endsWith("-eu") ? "eu" : null) });
export const clientInJurisdiction = (ns: LedgerNamespace) => LedgerClient.forTenant(ns, "acme-eu", { jurisdiction: "eu" });
export const ledgersInJurisdictions = (ns: LedgerNamespace) => new TenantLedgers(ns, null, '{"acme-eu": "eu"}');

// Every option, each callback and hook given c.
export const everything = idempotency<HonoEnv>({
  ledger: async (c) => c.env.SVC,
  tenant: (c) => c.get("tenant"),
  shouldStore: (response: Response, c: Context<HonoEnv>) => response.status < 500 && c.req.method === "POST",
  failurePolicy: "open",
  maxBodyBytes: 65_536,
  leaseSeconds: 30,
  retentionSeconds: 3_600,
  problemBase: "https://errors.example.com/",
  onReplayed: (event: ReplayedEvent, c) => { console.log(event.key, event.generation, event.status, c.req.path); },
  onConflict: (event: ConflictEvent) => {
    const outcome: "in_flight" | "mismatch" | "ledger_full" = event.outcome;
    console.log(outcome, event.status, event.differs?.join(","));
  },
  onStored: async (event: StoredEvent, c) => { console.log(event.retained, c.get("tenant")); },
});

// The route reads the key as a string, chained after the middleware or declared in the app's Variables.
export const chained = new Hono<HonoEnv>()
  .use("/payments/*", fromBinding)
  .post("/payments/charge", (c) => {
    const key: string = c.get("idempotencyKey");
    return c.json({ key, tenant: c.get("tenant") }, 201);
  });
export const declared = new Hono<{ Bindings: Bindings; Variables: IdempotencyVariables }>();
declared.post("/x", (c) => c.text(c.get("idempotencyKey") satisfies string));

// An untyped copy of the docs' example is not `any`: without the app's Env, c.env has no bindings.
// @ts-expect-error c.env is unknown until the app's Env is given
export const untyped = idempotency({ ledger: (c) => c.env.LEDGER });
// The middleware is typed, not `any`: its c is a Context.
export const untypedButReal = idempotency({ ledger: (c) => { const path: string = c.req.path; return LedgerClient.forTenant(null as unknown as LedgerNamespace, path); } });

// Option typos and wrong values are compile errors.
// @ts-expect-error a typo of shouldStore
export const typo1 = idempotency<HonoEnv>({ ledger: (c) => c.env.SVC, tenant: "acme", shouldstore: () => true });
// @ts-expect-error failurePolicy is "closed" | "open"
export const typo2 = idempotency<HonoEnv>({ ledger: (c) => c.env.SVC, tenant: "acme", failurePolicy: "lenient" });
// @ts-expect-error maxBodyBytes is a number
export const typo3 = withIdempotency<AppEnv>(async () => new Response(), { ledger: (_r, env) => LedgerClient.forTenant(env.LEDGER, "a"), maxBodyBytes: "1mb" });
// @ts-expect-error the ledger must be a ledger source
export const typo4 = idempotency<HonoEnv>({ ledger: (c) => c.env.TENANT_SHARDS });
// @ts-expect-error a tenant is a string (or a function of c returning one)
export const typo5 = idempotency<HonoEnv>({ ledger: (c) => c.env.SVC, tenant: 7 });

// withIdempotency: callbacks get (request, env, ctx); the handler gets the key as its fourth argument.
export const fetchHandler = withIdempotency<Bindings, { waitUntil(p: Promise<unknown>): void }>(
  async (request, env, ctx, { idempotencyKey }: IdempotencyInfo) => {
    const key: string | null = idempotencyKey;
    ctx.waitUntil(Promise.resolve(env.TENANT_SHARDS));
    return Response.json({ key, body: await request.text() }, { status: 201 });
  },
  {
    ledger: (_request, env) => env.NS,
    tenant: (request) => request.headers.get("x-tenant"),
    tenantShards: (_request, env) => env.TENANT_SHARDS,
    shouldStore: (response, request) => response.ok && request.method === "POST",
    onConflict: (event, request, env, ctx) => { ctx.waitUntil(Promise.resolve(`${event.outcome} ${request.url} ${Object.keys(env)}`)); },
  },
);
export const fetchOptions: IdempotencyOptions<[Request, Bindings, unknown]> = { ledger: (_r, env) => env.SVC, tenant: "acme" };

// The embedded Ledger: `run` answers a plain AppAnswer, synchronously; the types refuse a Response and a Promise.
import { Ledger, type AppAnswer, type HandledRequest, type LedgerOptions } from "idempotency-ledger/ledger";
declare const ledgerCtx: ConstructorParameters<typeof Ledger>[0];
const ledgerOptions: LedgerOptions = { protectedMethods: ["POST", "PUT"], required: false, maxStoredBodyBytes: 4096 };
const embedded = new Ledger(ledgerCtx, ledgerOptions);
export const plainAnswer = (request: Request) =>
  embedded.handle(request, ({ key, json }: HandledRequest): AppAnswer => ({ status: 201, json: { key, got: json() } }));
// @ts-expect-error a Response is refused: its body can only be read asynchronously
export const responseAnswer = (request: Request) => embedded.handle(request, () => Response.json({ id: 1 }, { status: 201 }));
// @ts-expect-error an async run is refused: a transaction cannot span an await
export const asyncAnswer = (request: Request) => embedded.handle(request, async () => ({ status: 201 }));
// @ts-expect-error protectedMethods are method names
export const badMethods: LedgerOptions = { protectedMethods: "POST" };

// The seed's store contract over the ledger: Result values, the three outcomes.
import { ledgerStore, IdempotencyStoreError, type IdempotencyStore, type ClaimOutcome as StoreClaimOutcome } from "idempotency-ledger/store";
declare const storeNs: LedgerNamespace;
const store: IdempotencyStore = ledgerStore({ ledger: storeNs, tenant: "acme" });
export const storeInJurisdiction: IdempotencyStore = ledgerStore({ ledger: storeNs, tenant: "acme-eu", jurisdiction: "eu" });
export async function storeUse(): Promise<string> {
  const claimed = await store.claim({ id: "k", fingerprint: null, now: 0, leaseMs: 60_000, expiresAt: 86_400_000 });
  if (!claimed.ok) return claimed.error instanceof IdempotencyStoreError ? claimed.error.message : "never";
  const outcome: StoreClaimOutcome = claimed.value;
  if (outcome.status === "claimed") {
    const done = await store.complete("k", outcome.lease, { status: 201, headers: [["content-type", "text/plain"]], body: "b2s=" }, Date.now() + 1000);
    return done.ok ? "stored" : done.error.message;
  }
  return outcome.status === "completed" ? outcome.response.body : String(outcome.fingerprint);
}
// @ts-expect-error the options are checked: an unknown name
export const badStore = ledgerStore({ ledger: storeNs, tenant: "acme", ttl: 60 });

// The Queue consumer: fits workers-types' queue handler (copied here: the types are global there), its
// callbacks typed by the app's Body and Env; the handler's context narrows; the options are checked.
import { queueConsumer, type QueueSettlement, type QueueRunContext } from "idempotency-ledger/queues";
interface WtMessage<Body> { readonly id: string; readonly timestamp: Date; readonly body: Body; readonly attempts: number; retry(options?: { delaySeconds?: number }): void; ack(): void }
interface WtBatch<Body> { readonly messages: readonly WtMessage<Body>[]; readonly queue: string; readonly metadata: { metrics: { backlogCount: number; backlogBytes: number } }; retryAll(options?: { delaySeconds?: number }): void; ackAll(): void }
type WtQueueHandler<Env, Body> = (batch: WtBatch<Body>, env: Env, ctx: { waitUntil(promise: Promise<any>): void; passThroughOnException(): void }) => void | Promise<void>;
interface Order { account: string; orderId: string; amount: number }
interface QueueEnv { LEDGER: LedgerNamespace; PAYMENTS: { get(id: unknown): { fetch(input: string, init?: RequestInit): Promise<Response> }; idFromName(name: string): unknown } }
export const charges: WtQueueHandler<QueueEnv, Order> = queueConsumer<Order, QueueEnv>({
  ledger: (_message, env) => env.LEDGER,
  tenant: (message) => message.body.account,
  key: (message) => deriveIdempotencyKey(message.body.orderId, "charge"),
  leaseSeconds: 120,
  async handler(message, { key, signal, tenant, env }: QueueRunContext<QueueEnv>) {
    await fetch("https://psp.example/charge", { method: "POST", signal, body: JSON.stringify({ key, tenant, amount: message.body.amount, ns: Object.keys(env) }) });
    return { charged: message.body.amount };
  },
  onReplayed: (message, result) => console.log(message.body.orderId, JSON.stringify(result)),
  onSettled: (_message, settlement: QueueSettlement) => { const action: "ack" | "retry" = settlement.action; console.log(action, settlement.delaySeconds ?? 0); },
});
export const inObject: WtQueueHandler<QueueEnv, Order> = queueConsumer<Order, QueueEnv>({
  object: (message, env) => env.PAYMENTS.get(env.PAYMENTS.idFromName(message.body.account)),
  key: (message) => message.body.orderId,
  concurrency: 4,
});
// @ts-expect-error the options are checked: an unknown name
export const badQueue = queueConsumer<Order, QueueEnv>({ object: (m, env) => env.PAYMENTS.get(m.id), maxRetries: 3 });
// @ts-expect-error leaseSeconds is a number
export const badLease = queueConsumer<Order, QueueEnv>({ ledger: (_m, env) => env.LEDGER, handler: () => 1, leaseSeconds: "60" });

// A Workflow step and a scheduled job whose effect runs once per key: the result's type is the effect's.
import { once, onceScheduled } from "idempotency-ledger/workflows";
declare const wfNs: LedgerNamespace;
declare const step: { do<T>(name: string, config: object, body: () => Promise<T>): Promise<T>; do<T>(name: string, body: () => Promise<T>): Promise<T> };
export async function workflowUse(instanceId: string): Promise<string> {
  const charge: { id: string } = await once(step, "charge", { ledger: wfNs, tenant: "acme", key: `${instanceId}:charge`, leaseSeconds: 60, config: { retries: { limit: 10, delay: "10 seconds", backoff: "exponential" } } }, async () => ({ id: "ch_1" }));
  const total: number = await onceScheduled({ scheduledTime: 0 }, "nightly", { ledger: wfNs, tenant: "acme", retentionSeconds: 86_400 }, () => 42);
  return `${charge.id}:${total}`;
}
// @ts-expect-error the options are checked: an unknown name
export const badOnce = once(step, "charge", { ledger: wfNs, tenant: "acme", key: "k", ttl: 60 }, () => 1);
// @ts-expect-error a step's once needs its key
export const keyless = once(step, "charge", { ledger: wfNs, tenant: "acme" }, () => 1);
// @ts-expect-error a scheduled run is keyed by its time: no key option
export const keyedSchedule = onceScheduled(0, "nightly", { ledger: wfNs, tenant: "acme", key: "k" }, () => 1);
// A tenant kept in a jurisdiction: its value, a string or null (unrestricted).
export const euOnce = once(step, "charge", { ledger: wfNs, tenant: "acme-eu", jurisdiction: "eu", key: "k" }, () => 1);
export const euSchedule = onceScheduled(0, "nightly", { ledger: wfNs, tenant: "acme", jurisdiction: null }, () => 1);
// @ts-expect-error jurisdiction is a value here, not a function
export const perCallJurisdiction = once(step, "charge", { ledger: wfNs, tenant: "acme", jurisdiction: () => "eu", key: "k" }, () => 1);
// One object by its name (a shard's): forObject, never forTenant.
import { shardObjectName } from "idempotency-ledger";
export const shardClient: LedgerClient = LedgerClient.forObject(wfNs, shardObjectName("acme", 1, 2), { jurisdiction: "eu" });
