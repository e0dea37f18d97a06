// Cold start: the first answer of a new isolate, product against the floor.
//
//   npm run bench:cold [-- --runs 5]
//
// What a cold isolate pays is the script's own work before it can answer:
// parse the JS, compile and instantiate the wasm, construct the Durable
// Object (its schema, the ledger's start), then serve one request. Each
// Worker is bundled as `wrangler deploy --dry-run` bundles it (the bytes a
// deploy uploads), then, `runs` times, a new workerd is started on that
// bundle (Miniflare, fresh state) and timed:
// - `start`: `new Miniflare` → ready (workerd's process, the script's
//   top-level evaluation and the wasm compile);
// - `first`: the first fresh POST (the Durable Object's construction, the
//   wasm instantiated where it is lazy, the schema created, one key);
// - `warm`: the next fresh POST on the same isolate, for comparison.
// Medians are printed, and each product's ratio to the floor's (floor ÷
// product: 1.0 = as cheap). `compile` is V8's own `WebAssembly.compile` of
// the bundle's wasm in this Node (the same engine), median of `runs`.
//
// The Workers: the floor (bench/floor: a bare JS Worker + SQLite Durable
// Object doing the order INSERT), the Rust floor (bench/floor-rs: the same
// Worker written with workers-rs, built by its build.sh), the gateway (the
// deployed entry, wrangler.toml), and a TypeScript-style Worker that only embeds
// `idempotency-ledger/ledger` in its own object (bench/embedded/worker.mjs,
// whose `Bare` object is its own floor), and the hand-written store
// (bench/handwritten: the same contract in plain JS, the reference a user
// compares the product to).
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { benchOptions } from "./lib.mjs";
import { DEMO_TOKENS, ROOT, wranglerVars } from "../scripts/workerd.mjs";

const opts = benchOptions({
  runs: { default: 5, help: "new workerd processes per Worker (the medians are printed)", whole: true, max: 100 },
}, { usage: "npm run bench:cold -- [options]" });
const RUNS = opts.runs;

const work = mkdtempSync(join(tmpdir(), "bench-cold-"));
const EMBEDDED_CONFIG = join(work, "embedded.toml");
writeFileSync(EMBEDDED_CONFIG, `name = "bench-cold-embedded"
main = "${ROOT}bench/embedded/worker.mjs"
compatibility_date = "2026-11-01"
[[durable_objects.bindings]]
name = "BARE"
class_name = "Bare"
[[durable_objects.bindings]]
name = "EMBEDDED"
class_name = "Embedded"
[[migrations]]
tag = "v1"
new_sqlite_classes = ["Bare", "Embedded"]
`);

const ORDER = { method: "POST", headers: { authorization: "Bearer dev-token-acme", "content-type": "application/json" }, body: '{"sku":"COLD-1","quantity":1}' };
const CHARGE = { method: "POST", headers: { "content-type": "text/plain" }, body: "500" };
let n = 0;
const keyed = (init) => ({ ...init, headers: { ...init.headers, "idempotency-key": `cold-${process.pid}-${n++}` } });

/** A floor (JS or Rust: the same Orders object, the same answers), measured against the JS floor. */
const floor = (name, config) => ({
  name,
  config: join(ROOT, config),
  durableObjects: { ORDERS: { className: "Orders", useSQLite: true } },
  bindings: { API_TOKENS: JSON.stringify(DEMO_TOKENS) },
  path: "/v1/orders", init: () => ORDER, status: 201,
  reference: 0,
});

const workers = [
  floor("floor (JS Worker + SQLite DO, no idempotency)", "bench/floor/wrangler.toml"),
  floor("Rust floor (workers-rs Worker + SQLite DO, no idempotency)", "bench/floor-rs/wrangler.toml"),
  {
    name: "gateway (wrangler.toml)",
    config: join(ROOT, "wrangler.toml"),
    durableObjects: { TENANT_LEDGER: { className: "TenantLedger", useSQLite: true } },
    bindings: { ...wranglerVars(), LOG_LEVEL: "warn", API_TOKENS: JSON.stringify(DEMO_TOKENS) },
    path: "/v1/orders", init: () => keyed(ORDER), status: 201,
    reference: 0,
  },
  {
    name: "own DO, bare INSERT (bench/embedded Bare)",
    config: EMBEDDED_CONFIG,
    durableObjects: { BARE: { className: "Bare", useSQLite: true }, EMBEDDED: { className: "Embedded", useSQLite: true } },
    bindings: {},
    path: "/bare", init: () => CHARGE, status: 201,
    reference: 3,
  },
  {
    name: "own DO + idempotency-ledger/ledger (Embedded)",
    config: EMBEDDED_CONFIG,
    durableObjects: { BARE: { className: "Bare", useSQLite: true }, EMBEDDED: { className: "Embedded", useSQLite: true } },
    bindings: {},
    path: "/embedded", init: () => keyed(CHARGE), status: 201,
    reference: 3,
  },
  {
    // The reference a user compares the product to (issue 45).
    name: "hand-written JS store (bench/handwritten)",
    config: join(ROOT, "bench/handwritten/wrangler.toml"),
    durableObjects: { STORE: { className: "Store", useSQLite: true } },
    bindings: { API_TOKENS: JSON.stringify(DEMO_TOKENS) },
    path: "/v1/orders", init: () => keyed(ORDER), status: 201,
    reference: 0,
  },
];

/** The Worker bundled as a deploy uploads it: its modules and their sizes. */
function bundle(worker, i) {
  const outdir = join(work, `bundle-${i}`);
  execFileSync(join(ROOT, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "-c", worker.config, "--outdir", outdir], {
    cwd: ROOT, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  });
  const modules = [];
  let raw = 0;
  let gzip = 0;
  for (const f of readdirSync(outdir).sort()) {
    if (f.endsWith(".map") || f === "README.md") continue;
    const path = join(outdir, f);
    if (!statSync(path).isFile()) continue;
    const bytes = readFileSync(path);
    raw += bytes.length;
    gzip += gzipSync(bytes, { level: 9 }).length;
    if (f.endsWith(".wasm")) modules.push({ type: "CompiledWasm", path });
    else if (f.endsWith(".js") || f.endsWith(".mjs")) modules.push({ type: "ESModule", path });
  }
  // The entry first: Miniflare takes the first module as the main one.
  const entry = (m) => Number(["entry.js", "worker.js", "index.js"].some((name) => m.path.endsWith(`/${name}`)));
  modules.sort((a, b) => entry(b) - entry(a));
  return { modules, modulesRoot: outdir, raw, gzip };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (t) => Number(t) / 1e6;

async function once(worker, built) {
  const t0 = process.hrtime.bigint();
  const mf = new Miniflare(convertV4MiniflareOptions({
    workers: [{
      name: "cold",
      modules: built.modules,
      modulesRoot: built.modulesRoot,
      compatibilityDate: "2026-11-01",
      durableObjects: worker.durableObjects,
      bindings: worker.bindings,
    }],
  }));
  try {
    const base = await mf.ready;
    const t1 = process.hrtime.bigint();
    const first = await mf.dispatchFetch(new URL(worker.path, base), worker.init());
    await first.arrayBuffer();
    const t2 = process.hrtime.bigint();
    const warm = await mf.dispatchFetch(new URL(worker.path, base), worker.init());
    await warm.arrayBuffer();
    const t3 = process.hrtime.bigint();
    if (first.status !== worker.status || warm.status !== worker.status) {
      throw new Error(`${worker.name}: answered ${first.status}, ${warm.status}; expected ${worker.status}`);
    }
    return { start: ms(t1 - t0), first: ms(t2 - t1), warm: ms(t3 - t2) };
  } finally {
    await mf.dispose();
  }
}

async function compileMs(built) {
  const wasm = built.modules.find((m) => m.type === "CompiledWasm");
  if (!wasm) return null;
  const bytes = readFileSync(wasm.path);
  const times = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    await WebAssembly.compile(bytes);
    times.push(ms(process.hrtime.bigint() - t0));
  }
  return median(times);
}

try {
  const built = workers.map(bundle);
  const results = workers.map(() => ({ start: [], first: [], warm: [] }));
  // Runs alternate the Workers, so a noisy minute hits all of them.
  for (let r = 0; r < RUNS; r++) {
    for (const [i, worker] of workers.entries()) {
      const t = await once(worker, built[i]);
      for (const k of ["start", "first", "warm"]) results[i][k].push(t[k]);
    }
  }
  const rows = [];
  for (const [i, worker] of workers.entries()) {
    rows.push({
      worker: worker.name,
      kib: `${(built[i].raw / 1024).toFixed(1)} / ${(built[i].gzip / 1024).toFixed(1)}`,
      compile: await compileMs(built[i]),
      start: median(results[i].start),
      first: median(results[i].first),
      warm: median(results[i].warm),
    });
  }
  const fmt = (x) => (x === null ? "—" : x.toFixed(1));
  console.log(`\ncold start, median of ${RUNS} new workerd processes per Worker (ms)\n`);
  console.log("| Worker | bundle KiB (raw / gzip) | wasm compile (V8, Node) | start → ready | first answer | next answer | first answer, floor ÷ this |");
  console.log("|---|---|---|---|---|---|---|");
  for (const [i, row] of rows.entries()) {
    // The floors and the gateway against the JS floor; the embedded object
    // against its bare twin.
    const reference = rows[workers[i].reference];
    console.log(`| ${row.worker} | ${row.kib} | ${fmt(row.compile)} | ${fmt(row.start)} | ${fmt(row.first)} | ${fmt(row.warm)} | ${(reference.first / row.first).toFixed(2)} |`);
  }
  // The gateway's first answer split: the workers-rs binding's share is the
  // Rust floor's row; what the product adds is this.
  console.log(`\ngateway first answer, Rust floor ÷ gateway: ${(rows[1].first / rows[2].first).toFixed(2)}`);
  // Against the hand-written store (target: at most 1.5× its first answer).
  const handwritten = rows[5];
  console.log(`gateway first answer ÷ the hand-written store's: ${(rows[2].first / handwritten.first).toFixed(2)}`);
  console.log(`own DO + Ledger.handle first answer ÷ the hand-written store's: ${(rows[4].first / handwritten.first).toFixed(2)}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
