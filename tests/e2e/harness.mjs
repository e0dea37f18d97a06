// End-to-end harness: runs the *built* Worker (worker/entry.mjs over build/index.js + wasm) in
// workerd through Miniflare, with real SQLite-backed Durable Objects.
// Variables start from wrangler.toml's [vars], so tests run what `wrangler
// dev` and `wrangler deploy` run; each test overrides only what it studies.
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { buildSync } from "esbuild";

export const ROOT = new URL("../../", import.meta.url).pathname;

export const sha256hex = (s) => createHash("sha256").update(s).digest("hex");

/** The demo tenants of .dev.vars.example. */
export const DEMO_TOKENS = {
  [sha256hex("dev-token-acme")]: "acme",
  [sha256hex("dev-token-globex")]: "globex",
};
export const ACME = "Bearer dev-token-acme";
export const GLOBEX = "Bearer dev-token-globex";

/** [vars] of wrangler.toml as a plain object (string values only). */
export function wranglerVars() {
  const text = readFileSync(`${ROOT}wrangler.toml`, "utf8");
  const section = text.split(/^\[vars\]\s*$/m)[1] ?? "";
  const vars = {};
  for (const line of section.split("\n")) {
    if (/^\s*\[/.test(line)) break;
    const m = line.match(/^\s*([A-Z0-9_]+)\s*=\s*"(.*)"\s*$/);
    if (m) vars[m[1]] = m[2];
  }
  return vars;
}

/**
 * The npm package's modules as a Worker loads them: client/index.js and
 * every module it imports (one per seam; the problem catalog is a JS module,
 * client/problems.js, so no JSON module is needed).
 */
export const CLIENT_MODULES = [
  "index", "defaults", "bytes", "key", "fingerprint", "rpc", "problems", "stored", "answer", "waiting", "shards", "settle", "sources", "request", "options", "claim", "capture", "settlement", "contract",
].map((name) => ({ type: "ESModule", path: `${ROOT}client/${name}.js` }));

/**
 * The JavaScript Worker of tests/e2e/workers/js-client.mjs (the npm
 * package's client and withIdempotency), its LEDGER a Durable Object
 * namespace of another script: the real TenantLedger, or a link in front of it.
 */
export function jsClientWorker(name, ledger) {
  return {
    name,
    modulesRoot: ROOT,
    modules: [
      { type: "ESModule", path: `${ROOT}tests/e2e/workers/js-client.mjs` },
      ...CLIENT_MODULES,
    ],
    compatibilityDate: "2026-11-01",
    durableObjects: { LEDGER: ledger },
  };
}

/**
 * A TypeScript Worker of tests/e2e/workers (`name`.ts) bundled with esbuild
 * — its imports, Hono and the npm package's modules included — as the one
 * module Miniflare loads.
 */
export function bundledWorkerModules(name) {
  const contents = buildSync({
    entryPoints: [`${ROOT}tests/e2e/workers/${name}.ts`],
    bundle: true, format: "esm", target: "es2022", platform: "neutral", write: false,
  }).outputFiles[0].text;
  return [{ type: "ESModule", path: `${ROOT}tests/e2e/workers/${name}.mjs`, contents }];
}

/** The deployed script's modules: the entry (Rust build + JS RPC entrypoint), the wasm, the client. */
export const GATEWAY_MODULES = [
  { type: "ESModule", path: `${ROOT}worker/entry.mjs` },
  { type: "ESModule", path: `${ROOT}build/index.js` },
  { type: "CompiledWasm", path: `${ROOT}build/index_bg.wasm` },
  ...CLIENT_MODULES,
];

/**
 * Starts the gateway. `vars` override wrangler.toml; `apiTokens: null`
 * leaves the secret unset; `workers` adds more Workers (origins, clients).
 */
export async function startGateway({ vars = {}, apiTokens = JSON.stringify(DEMO_TOKENS), workers = [], gateway = {}, shared = {} } = {}) {
  const bindings = { ...wranglerVars(), ...vars };
  if (apiTokens !== null) bindings.API_TOKENS = apiTokens;
  // Worker console output, kept for assertions (printed with E2E_LOGS=1).
  const logs = [];
  const mf = new Miniflare(convertV4MiniflareOptions({
    handleStructuredLogs({ level, message }) {
      logs.push(message);
      if (process.env.E2E_LOGS) console.log(`[workerd ${level}] ${message}`);
    },
    ...shared,
    workers: [
      {
        name: "gateway",
        // The deployed entry: the Rust build plus the JS RPC entrypoint.
        modulesRoot: ROOT,
        modules: GATEWAY_MODULES,
        compatibilityDate: "2026-11-01",
        bindings,
        durableObjects: { TENANT_LEDGER: { className: "TenantLedger", useSQLite: true } },
        ...gateway,
      },
      ...workers,
    ],
  }));
  await mf.ready;
  const request = (path, init = {}) => mf.dispatchFetch(new URL(path, "http://gateway.test"), init);
  /** JSON log lines written by the Worker, parsed, optionally of one event. */
  const events = (event) =>
    logs
      .map((l) => l.slice(l.indexOf("{")))
      .filter((l) => l.startsWith("{"))
      .map((l) => { try { return JSON.parse(l); } catch { return null; } })
      .filter((e) => e && (!event || e.event === event));
  const ledger = async (tenant) => {
    const ns = await mf.getDurableObjectNamespace("TENANT_LEDGER");
    return ns.get(ns.idFromName(tenant));
  };
  return { mf, request, logs, events, ledger, dispose: () => mf.dispose() };
}

/** A POST to /v1/orders with the given key and body (string). */
export function orderInit({ key, body = '{"sku":"SKU-1","quantity":2}', auth = ACME, headers = {} } = {}) {
  const h = { authorization: auth, "content-type": "application/json", ...headers };
  if (key !== undefined) h["idempotency-key"] = key;
  return { method: "POST", headers: h, body };
}

/** Reads a response fully: status, headers as a plain object, body bytes. */
export async function read(res) {
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: Object.fromEntries(res.headers), body, text: body.toString("utf8") };
}

export async function json(res) {
  const r = await read(res);
  return { ...r, json: r.text ? JSON.parse(r.text) : null };
}

/** The problem slug of a problem document. */
export const slug = (doc) => doc.type.split("/").pop();

/** The orders a tenant holds. */
export async function orders(gw, auth = ACME) {
  const r = await json(await gw.request("/v1/orders", { headers: { authorization: auth } }));
  return r.json.orders;
}

/**
 * A real HTTP origin on 127.0.0.1, driven by the test. Every request is
 * recorded; `respond(req)` decides the answer and may return a promise, so
 * a test can hold a request open and release it when it chooses.
 */
export async function startOrigin(respond) {
  const { createServer } = await import("node:http");
  const { EventEmitter } = await import("node:events");
  const events = new EventEmitter();
  const requests = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      const record = { method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks) };
      requests.push(record);
      events.emit("request", record);
      try {
        const { status = 200, headers = {}, body = "", partial } = (await respond(record, requests.length)) ?? {};
        res.writeHead(status, headers);
        if (partial !== undefined) {
          // Headers and the first bytes go out, then the connection dies.
          res.write(partial, () => res.destroy());
          return;
        }
        res.end(body);
      } catch {
        res.destroy();
      }
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  server.unref(); // a failed test must not hang the run on an open origin
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    requests,
    /** Resolves once `n` requests have arrived (event-driven, generous deadline). */
    waitForRequests(n, ms = 30_000) {
      if (requests.length >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`origin saw ${requests.length} of ${n} requests`)), ms);
        const check = () => {
          if (requests.length >= n) { clearTimeout(timer); events.off("request", check); resolve(); }
        };
        events.on("request", check);
      });
    },
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); }),
  };
}

/** A promise with its resolve function exposed. */
export function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}

/** Polls `fn` until it returns a truthy value or the deadline passes. */
export async function eventually(fn, { ms = 30_000, every = 200 } = {}) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("condition not met before the deadline");
    await new Promise((r) => setTimeout(r, every));
  }
}

/**
 * A lossy link in front of the real TenantLedger (not a fake ledger: every
 * call that gets through is served by the real object): the first
 * `complete` is dropped before it reaches the object, as a broken
 * connection would. Bind `TENANT_LEDGER` (or a client's `LEDGER`) to
 * `{ className: "LossyLink", scriptName: "lossy" }`.
 */
export function lossyLinkWorker() {
  return {
    name: "lossy", modules: true,
    durableObjects: {
      LINK: { className: "LossyLink", useSQLite: true },
      REAL: { className: "TenantLedger", scriptName: "gateway" },
    },
    script: `
      let dropped = 0;
      export class LossyLink {
        constructor(state, env) { this.state = state; this.env = env; }
        async fetch(request) {
          if (new URL(request.url).pathname === "/rpc/v1/complete" && dropped === 0) {
            dropped++;
            console.log("lossy-link: dropped a complete call");
            throw new Error("connection reset");
          }
          const real = this.env.REAL.get(this.env.REAL.idFromName(this.state.id.name));
          return real.fetch(request);
        }
      }
      export default { fetch() { return new Response("unused"); } }`,
  };
}
