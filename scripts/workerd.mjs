// The built Worker in workerd, as the e2e suites and the benches start it:
// the deployed entry (worker/entry.mjs over build/index.js + wasm) through
// Miniflare with real SQLite-backed Durable Objects, variables from
// wrangler.toml's [vars], the demo tenants, a real HTTP origin on
// 127.0.0.1, and the request and polling helpers both use. It lives beside
// the build, not in tests/, so that no bench imports a test: the suites
// reach it through tests/e2e/harness.mjs (re-exported with their own
// helpers), the benches (bench/cost.mjs, capacity.mjs, cold.mjs) directly.
// Needs `bash scripts/build.sh` first.
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";

export const ROOT = new URL("../", import.meta.url).pathname;

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
 * every module of client/ but ledger/ (idempotency-ledger/ledger loads the
 * slim wasm: its suites list it with worker/testing.mjs), so a module
 * added to a room needs no list here.
 */
export const CLIENT_MODULES = readdirSync(`${ROOT}client`, { recursive: true })
  .filter((f) => f.endsWith(".js") && !f.startsWith("ledger/"))
  .sort()
  .map((f) => ({ type: "ESModule", path: `${ROOT}client/${f}` }));

/** The console's modules (worker/console.mjs and the files it serves), imported by the entry. */
export const CONSOLE_MODULES = ["console.mjs", "console/files.mjs", "console/page.mjs", "console/style.mjs"]
  .map((name) => ({ type: "ESModule", path: `${ROOT}worker/${name}` }));

/** The deployed script's modules: the entry (Rust build + JS RPC entrypoint + console), the wasm, the client. */
export const GATEWAY_MODULES = [
  { type: "ESModule", path: `${ROOT}worker/entry.mjs` },
  ...CONSOLE_MODULES,
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
