// Benchmark: exactly-once inside your own Durable Object
// (idempotency-ledger/ledger) against the same object without it.
//
//   npm run bench:embedded [-- --duration 8 --warmup 3 --connections 16 --rounds 2]
//
// One Worker (bench/embedded/worker.mjs) in workerd through Miniflare, two
// SQLite Durable Objects doing the same INSERT: `Bare` (no idempotency) and
// `Embedded` (`Ledger.handle` around it). The scenarios — bare fresh POST,
// embedded fresh key, embedded replay — run one after another, after a
// warm-up, `rounds` times, and the figure is each one's ratio to the bare
// POST measured in the same run (this machine is shared and noisy: req/s
// alone mean little). Every answer's status is checked.
//
// `--profile fresh|replay|bare` records a V8 CPU profile over the
// inspector while that scenario runs instead, and prints the isolate time
// per request by function (build with IDEMPOTENCY_LEDGER_KEEP_NAMES=1 for
// named Rust frames: `IDEMPOTENCY_LEDGER_KEEP_NAMES=1 npm run bench:embedded -- --profile fresh`).
import autocannon from "autocannon";
import WebSocket from "ws";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { ledgerWorker } from "../worker/testing.mjs";
import { parseArgs } from "node:util";

const ROOT = new URL("../", import.meta.url).pathname;
const { values: opts } = parseArgs({
  options: {
    duration: { type: "string", default: "8" },
    warmup: { type: "string", default: "3" },
    connections: { type: "string", default: "16" },
    rounds: { type: "string", default: "2" },
    profile: { type: "string" },
    inspector: { type: "string", default: "9341" },
  },
});
const [DURATION, WARMUP, CONNECTIONS, ROUNDS] = [opts.duration, opts.warmup, opts.connections, opts.rounds].map(Number);

// The package's modules as ledgerWorker() lists them, under this entry.
const { modulesRoot, modules } = ledgerWorker();
const mf = new Miniflare(convertV4MiniflareOptions({
  ...(opts.profile ? { inspectorPort: Number(opts.inspector) } : {}),
  workers: [{
    name: "bench-embedded",
    modulesRoot,
    modules: [{ type: "ESModule", path: `${ROOT}bench/embedded/worker.mjs` }, ...modules],
    compatibilityDate: "2026-11-01",
    durableObjects: { BARE: { className: "Bare", useSQLite: true }, EMBEDDED: { className: "Embedded", useSQLite: true } },
  }],
}));
const base = (await mf.ready).toString().replace(/\/$/, "");

const TEXT = { "content-type": "text/plain" }; // the same on every request: it is fingerprinted
let n = 0;
/** autocannon options for a scenario, and the status every answer must have. */
const scenarios = {
  "bare POST (no idempotency)": () => ({ url: `${base}/bare`, method: "POST", headers: TEXT, body: "500", status: 201 }),
  "embedded, fresh key": () => {
    const prefix = `fresh-${n++}`;
    let i = 0;
    return {
      url: `${base}/embedded`, method: "POST", headers: TEXT, body: "500", status: 201,
      requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, "idempotency-key": `${prefix}-${i++}` } }) }],
    };
  },
  "embedded, replay": () => ({ url: `${base}/embedded`, method: "POST", body: "500", headers: { ...TEXT, "idempotency-key": "replayed" }, status: 201 }),
};

function cannon({ status, ...options }, duration) {
  return new Promise((resolve, reject) => {
    const instance = autocannon({ ...options, connections: CONNECTIONS, duration, pipelining: 1 }, (err, result) => (err ? reject(err) : resolve(result)));
    instance.on("response", (_client, code) => {
      if (code !== status) { instance.stop(); reject(new Error(`${options.url}: answered ${code}, expected ${status}`)); }
    });
  });
}

/** A CPU profile of one scenario: isolate time per request, by function. */
async function profile(name) {
  const make = { fresh: scenarios["embedded, fresh key"], replay: scenarios["embedded, replay"], bare: scenarios["bare POST (no idempotency)"] }[name];
  if (!make) throw new Error("--profile fresh|replay|bare");
  await cannon(make(), WARMUP);
  const targets = await (await fetch(`http://127.0.0.1:${opts.inspector}/json`)).json();
  const target = targets.find((t) => String(t.webSocketDebuggerUrl).includes("bench-embedded"));
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((r, j) => { ws.onopen = r; ws.onerror = j; });
  let id = 0;
  const pending = new Map();
  ws.onmessage = (m) => { const msg = JSON.parse(m.data); pending.get(msg.id)?.(msg); pending.delete(msg.id); };
  const send = (method, params = {}) => new Promise((r) => { const i = ++id; pending.set(i, r); ws.send(JSON.stringify({ id: i, method, params })); });
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: 200 });
  await send("Profiler.start");
  const load = await cannon(make(), DURATION);
  const { result: { profile: p } } = await send("Profiler.stop");
  ws.close();
  const frames = new Map(p.nodes.map((x) => [x.id, x.callFrame]));
  const self = new Map();
  p.samples.forEach((node, i) => {
    const { functionName, url, lineNumber } = frames.get(node);
    if (functionName === "(idle)") return;
    const fn = `${functionName || "(anonymous)"} ${url.split("/").pop()}:${lineNumber + 1}`;
    self.set(fn, (self.get(fn) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  const busy = [...self.values()].reduce((a, b) => a + b, 0);
  const per = (us) => (us / load.requests.total).toFixed(1);
  console.log(`\n${name}: ${load.requests.average.toFixed(0)} req/s; ${per(busy)} µs of isolate time per request\n`);
  console.log("| µs per request | share | function (self time) |\n|---|---|---|");
  for (const [fn, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
    console.log(`| ${per(us)} | ${((100 * us) / busy).toFixed(1)}% | ${fn.slice(0, 120).replaceAll("|", "\\|")} |`);
  }
}

/** Every scenario, `rounds` times; the table of ratios to the bare POST. */
async function measure() {
  const results = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, make] of Object.entries(scenarios)) {
      await cannon(make(), WARMUP);
      const r = await cannon(make(), DURATION);
      (results[name] ??= []).push({ rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 });
    }
  }
  const bare = Math.max(...results["bare POST (no idempotency)"].map((r) => r.rps));
  console.log(`\n| scenario | req/s (best of ${ROUNDS}) | p50 ms | p99 ms | ratio to the bare POST |`);
  console.log("|---|---|---|---|---|");
  for (const [name, rounds] of Object.entries(results)) {
    const best = rounds.reduce((a, b) => (b.rps > a.rps ? b : a));
    console.log(`| ${name} | ${best.rps.toFixed(0)} | ${best.p50} | ${best.p99} | ${(best.rps / bare).toFixed(2)}x |`);
  }
}

try {
  // The replayed key exists before its scenario.
  const first = await fetch(`${base}/embedded`, { method: "POST", headers: { ...TEXT, "idempotency-key": "replayed" }, body: "500" });
  if (first.status !== 201) throw new Error(`the replayed key's first run answered ${first.status}`);
  if (opts.profile) await profile(opts.profile);
  else await measure();
} finally {
  await mf.dispose();
}
