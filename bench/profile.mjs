// CPU profile of the product under load: where a request's time goes.
//
//   npm run bench:profile [-- --scenario fresh|replay --duration 6]
//
// Builds the Worker keeping the wasm name section (so Rust functions are
// named), starts it as `npm run dev` does with LOG_LEVEL=warn and an
// inspector port, records a V8 CPU profile over the DevTools protocol while
// autocannon drives one scenario, and prints self time grouped by where it
// is spent (Rust/wasm, the wasm-bindgen JS glue, workerd/V8 natives, GC,
// idle) and the top functions. Gateway and TenantLedger run in the same
// isolate under `wrangler dev`, so the profile covers both.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LOAD, benchOptions, profileIsolate } from "./lib.mjs";
import { ROOT, cannon as cannonFor } from "./server.mjs";

const opts = benchOptions({
  scenario: { default: "fresh", help: "fresh|replay" },
  duration: { ...LOAD.duration, default: 6 },
  warmup: { ...LOAD.warmup, default: 2 },
  connections: LOAD.connections,
  port: { default: 8798, help: "the server's port", whole: true, max: 65535 },
  inspector: { default: 9331, help: "the inspector's port", whole: true, max: 65535 },
  top: { default: 30, help: "functions listed", whole: true },
}, { usage: "npm run bench:profile -- [options]" });
if (!["fresh", "replay"].includes(opts.scenario)) throw new Error("--scenario fresh|replay");
const PORT = opts.port;
const BASE = `http://127.0.0.1:${PORT}`;
const headers = { authorization: "Bearer dev-token-acme", "content-type": "application/json" };
const ORDER = JSON.stringify({ sku: "PROF-1", quantity: 1 });

const build = spawnSync("bash", ["scripts/build.sh"], {
  cwd: ROOT, stdio: ["ignore", "ignore", "inherit"],
  env: { ...process.env, IDEMPOTENCY_LEDGER_KEEP_NAMES: "1" },
});
if (build.status !== 0) throw new Error("build failed");

const state = mkdtempSync(join(tmpdir(), "profile-state-"));
const child = spawn("bash", ["scripts/dev.sh", "--persist-to", state, "--log-level", "warn",
  "--var", "LOG_LEVEL:warn", "--inspector-port", String(opts.inspector)], {
  cwd: ROOT, detached: true, stdio: ["ignore", "ignore", "inherit"],
  env: { ...process.env, PORT: String(PORT), IDEMPOTENCY_LEDGER_KEEP_NAMES: "1", WRANGLER_SEND_METRICS: "false" },
});
const stop = async () => {
  try { process.kill(-child.pid, "SIGTERM"); } catch {}
  await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
  rmSync(state, { recursive: true, force: true });
};

async function until(fn, ms = 180_000) {
  const end = Date.now() + ms;
  for (;;) {
    try { const v = await fn(); if (v) return v; } catch {}
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 500));
  }
}

const cannon = (options, duration) => cannonFor(options, { connections: opts.connections, duration });

function scenario() {
  const prefix = `prof-${Date.now()}`;
  let n = 0;
  if (opts.scenario === "replay") {
    return { url: `${BASE}/v1/orders`, method: "POST", headers: { ...headers, "idempotency-key": `${prefix}-r` }, body: ORDER };
  }
  return {
    url: `${BASE}/v1/orders`, method: "POST", headers, body: ORDER,
    requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, "idempotency-key": `${prefix}-${n++}` } }) }],
  };
}

try {
  await until(async () => (await fetch(`${BASE}/health`)).status === 200);
  if (opts.scenario === "replay") await fetch(scenario().url, { method: "POST", headers: scenario().headers, body: ORDER });
  await cannon(scenario(), opts.warmup);
  const { frames, result: load } = await profileIsolate({
    port: opts.inspector,
    origin: "http://127.0.0.1",
    waitMs: 180_000,
    during: () => cannon(scenario(), opts.duration),
  });
  summarise(frames, load);
} finally {
  await stop();
}

function summarise(frames, load) {
  const total = frames.reduce((a, f) => a + f.us, 0);
  const groups = new Map();
  const fns = new Map();
  for (const { callFrame: { functionName, url, lineNumber, columnNumber }, us } of frames) {
    const name = functionName || `(anonymous ${url.split("/").pop()}:${lineNumber + 1}:${columnNumber + 1})`;
    const group = name === "(idle)" ? "idle"
      : name === "(garbage collector)" ? "garbage collector"
      : name === "(program)" ? "workerd / V8 (program)"
      : url.startsWith("wasm:") || /^\$?[a-z_]+::|::h[0-9a-f]{16}$/.test(name) ? "Rust (wasm)"
      : url.includes("index.js") ? "wasm-bindgen JS glue"
      : url ? `JS: ${url.split("/").pop()}` : "natives (SQLite, fetch, crypto, ...)";
    groups.set(group, (groups.get(group) ?? 0) + us);
    const key = `${name.slice(0, 110)}  [${group}]`;
    fns.set(key, (fns.get(key) ?? 0) + us);
  }
  const busy = total - (groups.get("idle") ?? 0);
  console.log(`\nscenario ${opts.scenario}: ${load.requests.average.toFixed(0)} req/s, ${load.requests.total} requests; ` +
    `${(busy / 1000).toFixed(0)} ms busy of ${(total / 1000).toFixed(0)} ms sampled ` +
    `(${(busy / load.requests.total).toFixed(0)} µs of isolate CPU per request)\n`);
  console.log("| where | share of busy time | µs per request |\n|---|---|---|");
  for (const [g, us] of [...groups].sort((a, b) => b[1] - a[1])) {
    if (g === "idle") continue;
    console.log(`| ${g} | ${((100 * us) / busy).toFixed(1)}% | ${(us / load.requests.total).toFixed(1)} |`);
  }
  console.log(`\n| top functions (self time) | share |\n|---|---|`);
  for (const [k, us] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, opts.top)) {
    if (k.startsWith("(idle)")) continue;
    console.log(`| ${k.replaceAll("|", "\\|")} | ${((100 * us) / busy).toFixed(1)}% |`);
  }
}
