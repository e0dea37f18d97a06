// Routes that stream their response, protected by `idempotency-ledger/hono`
// (/hono/*) and by `withIdempotency` (/fetch/*, /memory/*) with a small
// maxStoredBodyBytes, bound to the built Worker's real TenantLedger. Bundled
// by esbuild in middleware-streaming.test.mjs (Hono included); type-checked
// by `tsc -p tests/types`.
//
// A streamed body is chosen by the query: `chunks` of `size` bytes, `every`
// ms apart, the stream erroring instead of its chunk number `fail`, held
// after its first chunk until the gate `gate` is opened; or (/memory/)
// `total` bytes made from one repeated 64 KiB chunk as fast as the caller
// reads. Chunk i's byte j is (i * 31 + j) & 0xff, so a caller can check
// every byte.
import { Hono, type ExecutionContext } from "hono";
import { idempotency } from "../../../client/middleware/hono.js";
import { LedgerClient, withIdempotency, type LedgerNamespace } from "../../../client/index.js";

type Bindings = { LEDGER_NS: LedgerNamespace };
type AppEnv = { Bindings: Bindings };

/** The cap every route here stores up to. */
const CAP = 4096;
const runs: Record<string, number> = {};
const ran = (route: string) => { runs[route] = (runs[route] ?? 0) + 1; };

/**
 * Gates a test opens (POST /gate/:id). A held stream polls on its own
 * timer: workerd does not wake a request on a promise another request
 * resolves. Bounded (30 s), so a failed test cannot hang the run.
 */
const opened = new Set<string>();
const waiting = new Set<string>(); // the gates a stream is held at right now
const held = async (id: string) => {
  waiting.add(id);
  for (const deadline = Date.now() + 30_000; !opened.has(id) && Date.now() < deadline;) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  waiting.delete(id);
};

const chunkAt = (i: number, size: number) => {
  const bytes = new Uint8Array(size);
  for (let j = 0; j < size; j++) bytes[j] = (i * 31 + j) & 0xff;
  return bytes;
};

/** The streamed body the query asks for (see above). */
function streamed(query: URLSearchParams): Response {
  const chunks = Number(query.get("chunks") ?? 1);
  const size = Number(query.get("size") ?? 8192);
  const every = Number(query.get("every") ?? 0);
  const fail = query.get("fail") === null ? null : Number(query.get("fail"));
  const gate = query.get("gate");
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent > 0 && every > 0) await new Promise((resolve) => setTimeout(resolve, every));
      if (sent === 1 && gate !== null) await held(gate);
      if (sent === fail) return controller.error(new Error("upstream reset"));
      if (sent === chunks) return controller.close();
      controller.enqueue(chunkAt(sent, size));
      sent += 1;
    },
  }, { highWaterMark: 0 });
  return new Response(body, { status: 200, headers: { "content-type": "application/octet-stream", etag: '"stream-v1"', "x-route": "streamed" } });
}

/** `total` bytes from one repeated 64 KiB chunk, made as the caller reads them. */
function generated(query: URLSearchParams): Response {
  let left = Number(query.get("total"));
  const template = chunkAt(0, 64 * 1024);
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (left <= 0) return controller.close();
      const n = Math.min(left, template.byteLength);
      controller.enqueue(template.slice(0, n));
      left -= n;
    },
  }, { highWaterMark: 0 });
  return new Response(body, { status: 200, headers: { "content-type": "application/octet-stream" } });
}

const app = new Hono<AppEnv>();
app.use("/hono/*", idempotency<AppEnv>({ ledger: (c) => LedgerClient.forTenant(c.env.LEDGER_NS, "stream-hono"), maxStoredBodyBytes: CAP }));
app.post("/hono/stream", (c) => { ran("hono"); return streamed(new URL(c.req.url).searchParams); });
app.get("/runs/:route", (c) => c.json({ runs: runs[c.req.param("route")] ?? 0 }));
// Opens a gate, saying whether a stream was still held at it.
app.post("/gate/:id", (c) => {
  const id = c.req.param("id");
  opened.add(id);
  return c.json({ opened: true, held: waiting.has(id) });
});

const fetchRoute = withIdempotency<Bindings, ExecutionContext>((request) => {
  ran("fetch");
  return streamed(new URL(request.url).searchParams);
}, { ledger: (_request, env) => LedgerClient.forTenant(env.LEDGER_NS, "stream-fetch"), maxStoredBodyBytes: CAP });

// A shouldStore that reads nothing: its clone must not buffer the stream either.
const memoryRoute = withIdempotency<Bindings, ExecutionContext>((request) => {
  ran("memory");
  return generated(new URL(request.url).searchParams);
}, { ledger: (_request, env) => LedgerClient.forTenant(env.LEDGER_NS, "stream-memory"), maxStoredBodyBytes: CAP, shouldStore: (r) => r.status < 500 });

export default {
  fetch(request: Request, env: Bindings, ctx: ExecutionContext): Response | Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname.startsWith("/fetch/")) return fetchRoute(request, env, ctx);
    if (pathname.startsWith("/memory/")) return memoryRoute(request, env, ctx);
    return app.fetch(request, env, ctx);
  },
};
