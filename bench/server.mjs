// What the HTTP benchmarks share (bench/http.mjs, bench/cpu.mjs): a server
// under `wrangler dev` on 127.0.0.1 with a fresh state directory (a floor,
// JS or Rust, or the product through scripts/dev.sh with `--var`s), waited for
// on /health and stopped with its whole process group; and one autocannon
// run. One server at a time: these do not run two.
import autocannon from "autocannon";
import { spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const ROOT = new URL("../", import.meta.url).pathname;

/** The floor: a bare JS Worker + SQLite Durable Object doing the same order INSERT, no idempotency. */
export const floorServer = (port) => ({
  name: "floor (JS DO, no idempotency)",
  floor: true,
  command: ["node_modules/.bin/wrangler", ["dev", "-c", "bench/floor/wrangler.toml", "--ip", "127.0.0.1", "--port", String(port), "--log-level", "warn"]],
  setup: () => copyFileSync(join(ROOT, ".dev.vars.example"), join(ROOT, "bench/floor/.dev.vars")),
});

/**
 * The Rust floor: the same Worker written with workers-rs 0.8.7
 * (bench/floor-rs, built by its build.sh), no idempotency: the cost of the
 * workers-rs binding itself.
 */
export const rustFloorServer = (port) => ({
  name: "Rust floor (workers-rs DO, no idempotency)",
  floor: true,
  command: ["node_modules/.bin/wrangler", ["dev", "-c", "bench/floor-rs/wrangler.toml", "--ip", "127.0.0.1", "--port", String(port), "--log-level", "warn"]],
  setup: () => copyFileSync(join(ROOT, ".dev.vars.example"), join(ROOT, "bench/floor-rs/.dev.vars")),
});

/**
 * The hand-written store (bench/handwritten): the same contract for the
 * same orders app, as a careful engineer writes it in JavaScript — the
 * reference a user compares the product to.
 */
export const handwrittenServer = (port) => ({
  name: "hand-written JS store",
  floor: true,
  command: ["node_modules/.bin/wrangler", ["dev", "-c", "bench/handwritten/wrangler.toml", "--ip", "127.0.0.1", "--port", String(port), "--log-level", "warn"]],
  setup: () => copyFileSync(join(ROOT, ".dev.vars.example"), join(ROOT, "bench/handwritten/.dev.vars")),
});

/** One autocannon run of `options` for `duration` seconds. */
export function cannon(options, { connections, duration }) {
  return new Promise((resolve, reject) => {
    autocannon({ ...options, connections, duration, pipelining: 1 }, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

async function waitForHealth(base, child, deadlineMs = 180_000) {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      const r = await fetch(`${base}/health`);
      if (r.status === 200) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error("server did not answer /health in time");
}

/**
 * Starts `server` on `port`, runs `body(child)` once it answers /health,
 * then stops it (its process group) and removes its state.
 */
export async function withServer(server, port, body) {
  const state = mkdtempSync(join(tmpdir(), "bench-state-"));
  server.setup?.();
  const [cmd, args] = server.command ?? ["bash", ["scripts/dev.sh", "--persist-to", state, "--log-level", "warn",
    ...Object.entries(server.vars ?? {}).flatMap(([k, v]) => ["--var", `${k}:${v}`])]];
  const child = spawn(cmd, server.command ? [...args, "--persist-to", state] : args, {
    cwd: ROOT, env: { ...process.env, PORT: String(port), WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "ignore", "inherit"], detached: true,
  });
  try {
    await waitForHealth(`http://127.0.0.1:${port}`, child);
    return await body(child);
  } finally {
    try { process.kill(-child.pid, "SIGTERM"); } catch {}
    await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
    rmSync(state, { recursive: true, force: true });
  }
}

export const AUTH = "Bearer dev-token-acme";
export const ORDER = JSON.stringify({ sku: "BENCH-1", quantity: 2 });
const OTHER = JSON.stringify({ sku: "BENCH-2", quantity: 3 });
export const JSON_HEADERS = { authorization: AUTH, "content-type": "application/json" };
let run = 0;
/** A key no earlier run used. */
export const unique = () => `bench-${process.pid}-${Date.now()}-${run++}`;


/**
 * The scenarios against the server at `base`: each returns autocannon
 * options and its expected status (the replay and mismatch keys seeded).
 */
export function scenariosAt(base) {
  const BASE = base;
  return {
  fresh: async () => {
    const prefix = unique();
    let n = 0;
    return {
      expect: 201,
      options: {
        url: `${BASE}/v1/orders`,
        method: "POST",
        headers: JSON_HEADERS,
        body: ORDER,
        requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, "idempotency-key": `${prefix}-${n++}` } }) }],
      },
    };
  },
  replay: async () => {
    const key = unique();
    const headers = { ...JSON_HEADERS, "idempotency-key": key };
    const first = await fetch(`${BASE}/v1/orders`, { method: "POST", headers, body: ORDER });
    if (first.status !== 201) throw new Error(`seeding the replay key answered ${first.status}`);
    return { expect: 201, options: { url: `${BASE}/v1/orders`, method: "POST", headers, body: ORDER } };
  },
  mismatch: async () => {
    const key = unique();
    const headers = { ...JSON_HEADERS, "idempotency-key": key };
    const first = await fetch(`${BASE}/v1/orders`, { method: "POST", headers, body: ORDER });
    if (first.status !== 201) throw new Error(`seeding the mismatch key answered ${first.status}`);
    return { expect: 422, options: { url: `${BASE}/v1/orders`, method: "POST", headers, body: OTHER } };
  },
  health: async () => ({ expect: 200, options: { url: `${BASE}/health` } }),
  proxyFresh: async () => {
    const prefix = unique();
    let n = 0;
    return {
      expect: 201,
      options: {
        url: `${BASE}/charges`, method: "POST", headers: JSON_HEADERS, body: ORDER,
        requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, "idempotency-key": `${prefix}-${n++}` } }) }],
      },
    };
  },
};
}
