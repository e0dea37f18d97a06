// The app of js-surfaces-model-middleware.test.mjs: one route behind
// `withIdempotency` (/fetch/op) and one behind the Hono middleware
// (/hono/op), over the built Worker's real TenantLedger objects, each
// through a *lossy link*: a ledger wrapper whose claim / complete / release
// calls, as the request's `x-link` header orders (chosen by the test's
// PRNG), go through ("ok"), throw before calling ("drop": the call never
// reached the object) or call through and then throw ("lost": the call
// landed, its answer never came back). A thrown call is a `LedgerError`
// with status null, as LedgerClient throws for an unreachable object.
//
// The route's side effect is an entry in the module-level `effects` list
// (one isolate: Miniflare runs one), recorded before it answers or throws
// as the request's JSON body (part of the fingerprint) orders. `GET
// /model/log?from=<n>` gives the test every effect, every link call (with
// the object's real answer when the call reached it) and every settlement
// the middleware reported as failed (`from` = [effects, link, failures]:
// the first of each to give).
// Bundled by esbuild in js-surfaces-model-middleware.test.mjs (Hono included).
import { Hono, type ExecutionContext } from "hono";
import { idempotency, type IdempotencyVariables } from "../../../client/middleware/hono.js";
import {
  LedgerClient, LedgerError, TenantLedgers, withIdempotency,
  type LedgerNamespace, type ClaimCall, type CompleteCall, type ReleaseCall, type SettlementFailure,
} from "../../../client/index.js";

type Bindings = { LEDGER_NS: LedgerNamespace };
type AppEnv = { Bindings: Bindings; Variables: IdempotencyVariables };

/** What the link does with one call. */
type Fate = "ok" | "drop" | "lost";
/** One request's orders for its link: the claim's fate, and each attempt's of a completion or release. */
type LinkOrders = { claim: Fate; complete: Fate[]; release: Fate[] };
type Op = "claim" | "complete" | "release";

/** What the route is told to do (the request's JSON body). */
type Instruction = {
  b: "answer" | "throw";
  s: number; // status
  z: number; // body size before the `run:<req>;` prefix is counted (see bodyOf)
  ct?: string;
  loc?: boolean;
  etag?: boolean;
  cookie?: boolean;
  stream?: boolean;
};

type Effect = { req: string; key: string; tenant: string; surface: string; at: number; generation: number | null };
type LinkEvent = {
  req: string; tenant: string; key: string; op: Op; attempt: number; fate: Fate; at: number;
  answer?: unknown; error?: string;
};
type Failure = { operation: string; key: string; generation: number };

const effects: Effect[] = [];
const link: LinkEvent[] = [];
const failures: Failure[] = [];
/** The generation the claim of each request delivered (the link saw it go by). */
const claimedGeneration = new Map<string, number>();

const encoder = new TextEncoder();

/** The route's body: `run:<req>;` then `z` bytes of filler (so its length is prefix + z). */
function bodyOf(req: string, z: number): Uint8Array<ArrayBuffer> {
  let s = `run:${req};`;
  const end = s.length + z;
  while (s.length < end) s += "0123456789abcdef";
  return encoder.encode(s.slice(0, end)) as Uint8Array<ArrayBuffer>;
}

/** One request's link state: its orders and how many attempts of each call it has made. */
class Link {
  attempts: Record<Op, number> = { claim: 0, complete: 0, release: 0 };
  constructor(readonly req: string, readonly tenant: string, readonly orders: LinkOrders) {}

  async call<T>(op: Op, key: string, through: () => Promise<T>): Promise<T> {
    const attempt = this.attempts[op]++;
    const fate: Fate = op === "claim" ? (attempt === 0 ? this.orders.claim : "ok") : (this.orders[op][attempt] ?? "ok");
    const event: LinkEvent = { req: this.req, tenant: this.tenant, key, op, attempt, fate, at: Date.now() };
    link.push(event);
    if (fate === "drop") throw new LedgerError(`ledger unreachable: the lossy link dropped the ${op}`);
    let answer: T;
    try {
      answer = await through();
    } catch (e) {
      event.error = e instanceof Error ? e.message : String(e);
      throw e;
    }
    event.answer = answer;
    const a = answer as { outcome?: string; generation?: number };
    if (op === "claim" && a?.outcome === "claimed" && fate === "ok") claimedGeneration.set(this.req, a.generation ?? -1);
    if (fate === "lost") throw new LedgerError(`ledger unreachable: the lossy link lost the answer to the ${op}`);
    return answer;
  }
}

function linkOf(request: Request): Link {
  const orders = JSON.parse(request.headers.get("x-link") ?? '{"claim":"ok","complete":[],"release":[]}') as LinkOrders;
  return new Link(request.headers.get("x-req") ?? "?", request.headers.get("x-tenant") ?? "?", orders);
}

/** One tenant's calls (a LedgerClient) through the link: the `withIdempotency` route's ledger. */
function lossyClient(client: LedgerClient, l: Link) {
  return {
    claim: (call: ClaimCall) => l.call("claim", call.key, () => client.claim(call)),
    complete: (call: CompleteCall) => l.call("complete", call.key, () => client.complete(call)),
    release: (call: ReleaseCall) => l.call("release", call.key, () => client.release(call)),
  };
}

/** Tenant-first calls (TenantLedgers over the namespace) through the link: the Hono route's ledger, with `tenant`. */
function lossyLedgers(ledgers: TenantLedgers, l: Link) {
  return {
    claim: (tenant: string, call: ClaimCall) => l.call("claim", call.key, () => ledgers.claim(tenant, call)),
    complete: (tenant: string, call: CompleteCall) => l.call("complete", call.key, () => ledgers.complete(tenant, call)),
    release: (tenant: string, call: ReleaseCall) => l.call("release", call.key, () => ledgers.release(tenant, call)),
  };
}

/** onSettlementFailed: the key and generation name the request (its claim's, in the link log). */
const reported = (failure: SettlementFailure) => {
  failures.push({ operation: failure.operation, key: failure.key, generation: failure.generation });
};

/** The route: its effect, then its answer (or its error). */
function route(surface: string, request: Request, key: string | null, i: Instruction): Response {
  const req = request.headers.get("x-req") ?? "?";
  effects.push({
    req, key: key ?? "", tenant: request.headers.get("x-tenant") ?? "?", surface, at: Date.now(),
    generation: claimedGeneration.get(req) ?? null,
  });
  if (i.b === "throw") throw new Error(`model: the route failed after its effect (${req})`);
  const headers = new Headers({ "x-run": req, "x-extra": "not-stored" });
  if (i.ct) headers.set("content-type", i.ct);
  if (i.loc) headers.set("location", `/runs/${req}`);
  if (i.etag) headers.set("etag", `"${req}"`);
  if (i.cookie) headers.set("set-cookie", `run=${req}`);
  if (i.s === 204) return new Response(null, { status: 204, headers });
  const bytes = bodyOf(req, i.z);
  if (!i.stream) return new Response(bytes, { status: i.s, headers });
  // A body of a few chunks and no Content-Length.
  const cut = [0, Math.floor(bytes.length / 3), Math.floor((2 * bytes.length) / 3), bytes.length];
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next === 3) return controller.close();
      controller.enqueue(bytes.slice(cut[next], cut[next + 1]));
      next += 1;
    },
  });
  return new Response(body, { status: i.s, headers });
}

const MAX_STORED_BODY_BYTES = 64;

// withIdempotency over a LedgerClient (one tenant's object) through the link.
const viaFetch = withIdempotency<Bindings, ExecutionContext>(
  async (request, _env, _ctx, { idempotencyKey }) => route("fetch", request, idempotencyKey, await request.json() as Instruction),
  {
    ledger: (request, env) => lossyClient(LedgerClient.forTenant(env.LEDGER_NS, request.headers.get("x-tenant") ?? "?"), linkOf(request)),
    maxStoredBodyBytes: MAX_STORED_BODY_BYTES,
    onSettlementFailed: reported,
  },
);

const app = new Hono<AppEnv>();
app.onError((error, c) => c.text(`route threw: ${error.message}`, 500, { "x-route-threw": "1" }));
// The Hono middleware over TenantLedgers (the namespace, tenant first) through the link.
app.use("/hono/*", idempotency<AppEnv>({
  ledger: (c) => lossyLedgers(new TenantLedgers(c.env.LEDGER_NS, null), linkOf(c.req.raw)),
  tenant: (c) => c.req.header("x-tenant"),
  maxStoredBodyBytes: MAX_STORED_BODY_BYTES,
  onSettlementFailed: reported,
}));
app.post("/hono/op", async (c) => route("hono", c.req.raw, c.get("idempotencyKey") ?? null, await c.req.json() as Instruction));

app.get("/model/log", (c) => {
  const [e = 0, l = 0, f = 0] = JSON.parse(c.req.query("from") ?? "[0,0,0]") as number[];
  return c.json({ effects: effects.slice(e), link: link.slice(l), failures: failures.slice(f) });
});

app.all("/fetch/*", async (c) => {
  try {
    return await viaFetch(c.req.raw, c.env, c.executionCtx);
  } catch (e) {
    return new Response(`handler threw: ${e instanceof Error ? e.message : String(e)}`, { status: 500, headers: { "x-route-threw": "1" } });
  }
});

export default app;
