// A Hono app whose routes are protected by `idempotency-ledger/hono` (and
// one by `withIdempotency`) with every option the gateway has a variable
// for, over every ledger source kind, bound to the real TenantLedger and
// LedgerService of the built Worker. Bundled by esbuild in
// middleware-parity.test.mjs (Hono included); type-checked by
// `tsc -p tests/types`.
import { Hono, type Context, type ExecutionContext } from "hono";
import { idempotency, type IdempotencyVariables } from "../../../client/middleware/hono.js";
import {
  LedgerClient, withIdempotency,
  type LedgerNamespace, type LedgerServiceRpc, type ReplayedEvent, type ConflictEvent, type StoredEvent,
} from "../../../client/index.js";

type Bindings = {
  LEDGER_NS: LedgerNamespace; // the TenantLedger namespace (script_name)
  LEDGER_SVC: LedgerServiceRpc; // the LedgerService entrypoint (service binding)
  BROKEN: LedgerServiceRpc; // a service binding to a Worker whose ledger methods throw
  TENANT_SHARDS: string;
  ABSENT?: LedgerServiceRpc; // never bound: a missing binding
};
// The middleware's variable (c.get("idempotencyKey")) declared with the app's own.
type AppEnv = { Bindings: Bindings; Variables: { tenant: string } & IdempotencyVariables };

const app = new Hono<AppEnv>();
const runs: Record<string, number> = {}; // the side effect the middleware protects, per route
/**
 * Requests a test holds open (by route and key) until it opens their gate.
 * The held request polls on its own timer: workerd does not wake a request
 * on a promise another request resolves. Bounded (30 s), so a failed test
 * cannot hang the run.
 */
const opened = new Set<string>();
const held = async (id: string) => {
  for (const deadline = Date.now() + 30_000; !opened.has(id) && Date.now() < deadline;) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};
/** What the hooks were told, with the path of the `c` they were given. */
const told: { hook: string; path: string; event: ReplayedEvent | ConflictEvent | StoredEvent }[] = [];

// The app's own auth: the tenant comes from a header into c.var, as a real app's auth middleware sets it.
app.use("*", async (c, next) => {
  const tenant = c.req.header("x-tenant");
  if (tenant !== undefined) c.set("tenant", tenant);
  await next();
});

app.use("/client/*", idempotency<AppEnv>({ ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-client") }));
app.use("/service/*", idempotency<AppEnv>({ ledger: (c) => c.env.LEDGER_SVC, tenant: (c) => c.get("tenant") }));
app.use("/namespace/*", idempotency<AppEnv>({
  ledger: (c) => c.env.LEDGER_NS, tenant: (c) => c.get("tenant"), tenantShards: (c) => c.env.TENANT_SHARDS,
}));
app.use("/nostore/*", idempotency<AppEnv>({
  ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-nostore"),
  shouldStore: (response) => response.status < 500,
}));
// A shouldStore that reads the body it is given (a clone): it stores what parses as the route's JSON.
app.use("/bodyreader/*", idempotency<AppEnv>({
  ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-bodyreader"),
  shouldStore: async (response) => "run" in (await response.json() as object),
}));
// The plain one-line use (from the Hono guide): a LedgerClient per tenant, every option at its default.
app.use("/payments/*", idempotency<AppEnv>({
  ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, c.req.header("x-tenant") ?? "parity-payments"),
}));
app.use("/brokenstream/*", idempotency<AppEnv>({ ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-brokenstream") }));
app.use("/tenant-throws/*", idempotency<AppEnv>({
  ledger: (c) => c.env.LEDGER_SVC, tenant: () => { throw new Error("no session"); },
}));
app.use("/open-missing/*", idempotency<AppEnv>({ ledger: (c) => c.env.ABSENT, tenant: "parity-open", failurePolicy: "open" }));
app.use("/closed-missing/*", idempotency<AppEnv>({ ledger: (c) => c.env.ABSENT, tenant: "parity-open" }));
app.use("/open-broken/*", idempotency<AppEnv>({ ledger: (c) => c.env.BROKEN, tenant: "parity-broken", failurePolicy: "open" }));
// A ledger function that throws: the server's configuration, whatever the policy (its message only logged).
app.use("/ledger-throws/*", idempotency<AppEnv>({
  ledger: () => { throw new Error("LEDGER binding lookup failed: secret-internal-detail"); }, failurePolicy: "open",
}));
// A ledger the runtime refuses as overloaded before delivering the call (the Durable Object error's
// `overloaded` property): certainly not reached, the one failure "open" runs a route unprotected after.
const overloadedStub = {
  fetch: async (): Promise<Response> => {
    throw Object.assign(new Error("Durable Object is overloaded. Requests queued for too long."), { overloaded: true });
  },
};
app.use("/open-overloaded/*", idempotency<AppEnv>({ ledger: new LedgerClient(overloadedStub), failurePolicy: "open" }));
app.use("/closed-overloaded/*", idempotency<AppEnv>({ ledger: new LedgerClient(overloadedStub) }));
// A retention below the object's lease (LEASE_SECONDS=60): the object refuses the middleware's own claim.
app.use("/short-retention/*", idempotency<AppEnv>({
  ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-short-retention"), retentionSeconds: 1,
}));
app.use("/closed-broken/*", idempotency<AppEnv>({ ledger: (c) => c.env.BROKEN, tenant: "parity-broken" }));
app.use("/limited/*", idempotency<AppEnv>({ ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-limited"), maxBodyBytes: 64 }));
app.use("/windows/*", idempotency<AppEnv>({
  ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-windows"), leaseSeconds: 45, retentionSeconds: 7200,
}));
app.use("/branded/*", idempotency<AppEnv>({
  ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-branded"), problemBase: "https://errors.example.com/idempotency/",
}));
// Scope-style tenants (the app's own: an API key's id, an org path, an email…), over the namespace.
// (The scope arrives percent-encoded: header values are bytes, not UTF-8.)
app.use("/scoped/*", idempotency<AppEnv>({
  ledger: (c) => c.env.LEDGER_NS, tenant: (c) => decodeURIComponent(c.req.header("x-scope") ?? ""),
}));
// The key from a legacy header; from a job id (a function); keys alone; a fingerprint that ignores a
// field the client changes on every retry.
app.use("/legacykey/*", idempotency<AppEnv>({ ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-legacykey"), key: "X-Idempotency-Key" }));
app.use("/jobkey/*", idempotency<AppEnv>({
  ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-jobkey"),
  key: (c) => { const job = c.req.header("x-job-id"); return job === undefined ? null : `job:${job}`; },
}));
app.use("/keythrows/*", idempotency<AppEnv>({
  ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-keythrows"), key: () => { throw new Error("no job"); },
}));
app.use("/keysalone/*", idempotency<AppEnv>({ ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-keysalone"), fingerprint: false }));
app.use("/nostamp/*", idempotency<AppEnv>({
  ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-nostamp"),
  fingerprint: ({ method, target, text }) => `${method} ${target} ${text().replace(/sent_at=[0-9]+;?/, "")}`,
}));
const record = (hook: string) => (event: ReplayedEvent | ConflictEvent | StoredEvent, c: Context<AppEnv>) => {
  told.push({ hook, path: c.req.path, event });
};
app.use("/hooked/*", idempotency<AppEnv>({
  ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-hooked"),
  onReplayed: record("onReplayed"), onConflict: record("onConflict"), onStored: record("onStored"),
}));
const broken = () => { throw new Error("the hook broke"); };
app.use("/hooks-throw/*", idempotency<AppEnv>({
  ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "parity-hooks-throw"),
  onReplayed: broken, onConflict: async () => { throw new Error("rejected"); }, onStored: broken, onSettlementFailed: broken,
}));

// withIdempotency over the same binding: the key is the handler's fourth argument.
const wrapped = withIdempotency<Bindings, ExecutionContext>(async (request, _env, _ctx, { idempotencyKey }) => {
  runs.fetch = (runs.fetch ?? 0) + 1;
  return Response.json({ run: runs.fetch, key: idempotencyKey, body: await request.text() }, { status: 201 });
}, { ledger: (_request, env) => env.LEDGER_SVC, tenant: (request) => request.headers.get("x-tenant") });
app.all("/fetch/*", (c) => wrapped(c.req.raw, c.env, c.executionCtx));
// withIdempotency with its key from a job id and a fingerprint of the body's amount alone.
const jobs = withIdempotency<Bindings, ExecutionContext>(async (request, _env, _ctx, { idempotencyKey }) => {
  runs["fetch-jobs"] = (runs["fetch-jobs"] ?? 0) + 1;
  return Response.json({ run: runs["fetch-jobs"], key: idempotencyKey, body: await request.text() }, { status: 201 });
}, {
  ledger: (_request, env) => LedgerClient.forTenant(env.LEDGER_NS, "parity-fetch-jobs"),
  key: (request) => request.headers.get("x-job-id"),
  fingerprint: ({ json }) => String((json() as { amount: unknown }).amount),
});
app.all("/fetch-jobs/*", (c) => jobs(c.req.raw, c.env, c.executionCtx));
// The same handler with a retention below the object's lease, over the LedgerService binding
// (whose refusals carry their status in the message only).
const shortRetention = withIdempotency<Bindings, ExecutionContext>(async () => {
  runs["fetch-short-retention"] = (runs["fetch-short-retention"] ?? 0) + 1;
  return Response.json({ ran: true }, { status: 201 });
}, { ledger: (_request, env) => env.LEDGER_SVC, tenant: "parity-short-retention", retentionSeconds: 1 });
app.all("/fetch-short-retention/*", (c) => shortRetention(c.req.raw, c.env, c.executionCtx));

// A route of the kind the guide writes: reads its JSON body after the middleware, may throw
// (explode) or take 3 s (slow), answers with a Location of its own.
app.post("/payments/charge", async (c) => {
  runs.payments = (runs.payments ?? 0) + 1;
  const run = runs.payments;
  const body = await c.req.json<{ amount: string; explode?: boolean; slow?: boolean }>();
  if (body.explode) throw new Error("the route failed");
  if (body.slow) await new Promise((r) => setTimeout(r, 3_000));
  return c.json({ run, amount: body.amount }, 201, { location: `/payments/${run}` });
});
// A GET under the protected prefix: passes through the middleware.
app.get("/payments/runs", (c) => c.json({ runs: runs.payments ?? 0 }));

// A route that runs, then its body breaks off after the first bytes.
app.post("/brokenstream/charge", (c) => {
  runs.brokenstream = (runs.brokenstream ?? 0) + 1;
  const body = new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode("partial"));
      controller.error(new Error("upstream reset"));
    },
  });
  return new Response(body, { status: 201, headers: { "content-type": "text/plain" } });
});

// Every protected route: counts its runs, answers its key as the route sees it.
app.post("/:route/charge", async (c) => {
  const route = c.req.param("route");
  runs[route] = (runs[route] ?? 0) + 1;
  const body = await c.req.text();
  const key: string = c.get("idempotencyKey");
  if (body.includes("hold")) await held(`${route}:${key}`);
  const status = /status=(\d{3})/.exec(body)?.[1];
  return c.json({ run: runs[route], route, key: key ?? null, tenant: c.get("tenant") ?? null, body }, status ? Number(status) as 201 : 201);
});

// A body without Content-Length, streamed to /limited/charge inside the isolate (an upload
// from outside would race the early 413 against its own last bytes): how much was pulled.
app.post("/self/stream-to-limited", async (c) => {
  const chunks = Number(c.req.query("chunks"));
  let pulled = 0;
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent === chunks) return controller.close();
      sent += 1;
      pulled += 16;
      controller.enqueue(new TextEncoder().encode("z".repeat(16)));
    },
  }, { highWaterMark: 0 });
  const request = new Request("https://parity/limited/charge", {
    method: "POST", headers: { "idempotency-key": c.req.query("key") ?? "", "content-type": "text/plain" }, body,
    // @ts-expect-error duplex is not in the DOM lib's RequestInit yet
    duplex: "half",
  });
  const response = await app.fetch(request, c.env, c.executionCtx);
  return c.json({ status: response.status, answer: await response.json(), pulled, total: chunks * 16 });
});

app.get("/runs/:route", (c) => c.json({ runs: runs[c.req.param("route")] ?? 0 }));
// What the LedgerService entrypoint (JS RPC) finds for a tenant's key: the same objects the middleware used.
app.get("/service-lookup", async (c) => c.json(await c.env.LEDGER_SVC.lookup(c.req.query("tenant") ?? "", c.req.query("key") ?? "")));
app.get("/told", (c) => c.json(told));
app.post("/gate/:id", (c) => { opened.add(c.req.param("id")); return c.json({ opened: true }); });

export default app;
