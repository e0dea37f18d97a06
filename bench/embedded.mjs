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
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { ledgerWorker } from "../worker/testing.mjs";
import { benchOptions, profileIsolate } from "./lib.mjs";

const ROOT = new URL("../", import.meta.url).pathname;
const opts = benchOptions({
  profile: { help: "fresh|replay|bare: a CPU profile of that scenario instead of the table" },
  inspector: { default: 9341, help: "the inspector's port (with --profile)", whole: true, max: 65535 },
}, { load: true, usage: "npm run bench:embedded -- [options]" });
const { duration: DURATION, warmup: WARMUP, connections: CONNECTIONS, rounds: ROUNDS } = opts;

// The package's modules as ledgerWorker() lists them, under this entry.
const { modulesRoot, modules } = ledgerWorker();
const mf = new Miniflare(convertV4MiniflareOptions({
  ...(opts.profile ? { inspectorPort: opts.inspector } : {}),
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
  const { frames, result: load } = await profileIsolate({
    port: opts.inspector,
    target: (t) => String(t.webSocketDebuggerUrl).includes("bench-embedded"),
    during: () => cannon(make(), DURATION),
  });
  const self = new Map();
  for (const { callFrame: { functionName, url, lineNumber }, us } of frames) {
    if (functionName === "(idle)") continue;
    const fn = `${functionName || "(anonymous)"} ${url.split("/").pop()}:${lineNumber + 1}`;
    self.set(fn, (self.get(fn) ?? 0) + us);
  }
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
