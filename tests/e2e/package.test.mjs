// The npm package as a TypeScript team uses it, with no Rust toolchain:
// `npm pack` here, then in a temporary project (a copy of
// tests/e2e/package-app) whose PATH has Node and npm but no cargo: install
// the tarball, check the types (`wrangler types` → tsc, and against
// @cloudflare/workers-types), bundle the TypeScript Worker with wrangler,
// and run that bundle in workerd. It runs the packaged TenantLedger,
// LedgerService and gateway (idempotency-ledger/worker) and a TypeScript
// Durable Object of its own with the ledger embedded
// (idempotency-ledger/ledger): exactly-once over its own table.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { ROOT, DEMO_TOKENS, ACME, read, json, slug, eventually } from "./harness.mjs";

const NODE_BIN = dirname(process.execPath);
/**
 * A PATH of one directory holding Node, npm and a shell's basic tools, and
 * nothing else: no cargo, no rustc, wherever the machine keeps them (the
 * set-up's Debian route puts them in /usr/bin).
 */
const NO_RUST_PATH = (() => {
  const bin = mkdtempSync(join(tmpdir(), "no-rust-bin-"));
  symlinkSync(process.execPath, join(bin, "node"));
  // npm and npx as this machine has them (the `node` package ships node alone).
  for (const tool of ["npm", "npx"]) {
    const found = [NODE_BIN, ...(process.env.PATH ?? "").split(":")].map((d) => join(d, tool)).find((p) => existsSync(p));
    assert.ok(found, `${tool} is not on PATH`);
    symlinkSync(found, join(bin, tool));
  }
  for (const tool of ["sh", "bash", "env", "cat", "ls", "mkdir", "rm", "cp", "mv", "sed", "grep", "dirname", "basename", "uname", "tr", "head", "tail", "chmod", "find", "sort"]) {
    const found = ["/usr/bin", "/bin"].map((d) => join(d, tool)).find((p) => existsSync(p));
    if (found) symlinkSync(found, join(bin, tool));
  }
  return bin;
})();
const WRANGLER = `${ROOT}node_modules/wrangler/bin/wrangler.js`;
const TSC = `${ROOT}node_modules/typescript/bin/tsc`;

let project;
let mf;

/** Runs a command in the temporary project with the Rust-free PATH; fails the test on a non-zero exit. */
function run(cmd, args, { cwd = project } = {}) {
  const env = { ...process.env, PATH: NO_RUST_PATH, CARGO_HOME: "/nonexistent", RUSTUP_HOME: "/nonexistent", WRANGLER_SEND_METRICS: "false", CI: "true" };
  const r = spawnSync(cmd, args, { cwd, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  assert.equal(r.status, 0, `${cmd} ${args.join(" ")} failed (${r.status ?? r.error}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout + r.stderr;
}

/**
 * A Worker of the project bundled by wrangler as a deploy would upload it
 * (`wrangler deploy --dry-run`: TypeScript in, one Worker out): its upload
 * size, its wasm files, and exactly the modules it bundled (the Worker and
 * its wasm: the gateway's, the slim one of idempotency-ledger/ledger, or
 * both), for Miniflare.
 * @param {string[]} args More `wrangler deploy` arguments (`-c <config>`).
 * @param {string} outdir An absolute path (wrangler resolves a relative one against the config).
 */
function wranglerBundle(args, outdir) {
  const out = run("node", [WRANGLER, "deploy", "--dry-run", ...args, "--outdir", outdir]);
  const size = out.match(/Total Upload:\s*([\d.]+) KiB \/ gzip:\s*([\d.]+) KiB/);
  assert.ok(size, `wrangler printed no upload size:\n${out}`);
  const wasm = readdirSync(outdir).filter((f) => f.endsWith(".wasm"));
  assert.ok(wasm.length > 0, `no wasm in ${readdirSync(outdir)}:\n${out}`);
  return {
    total: `${size[1]} KiB`, gzip: `${size[2]} KiB`, gzipKiB: Number(size[2]), modulesRoot: outdir,
    wasm: wasm.map((f) => join(outdir, f)),
    modules: [{ type: "ESModule", path: join(outdir, "index.js") }, ...wasm.map((f) => ({ type: "CompiledWasm", path: join(outdir, f) }))],
  };
}

before(async () => {
  // The tarball, as `npm pack` makes it here (prepack builds the Worker and the declarations).
  const packDir = mkdtempSync(join(tmpdir(), "idempotency-ledger-pack-"));
  const packed = spawnSync("npm", ["pack", "--silent", "--pack-destination", packDir], {
    cwd: ROOT, encoding: "utf8", env: { ...process.env, PATH: `${NODE_BIN}:${process.env.PATH}` },
  });
  assert.equal(packed.status, 0, `npm pack failed:\n${packed.stdout}\n${packed.stderr}`);
  const tarball = join(packDir, readdirSync(packDir).find((f) => f.endsWith(".tgz")));

  project = mkdtempSync(join(tmpdir(), "ts-app-"));
  cpSync(`${ROOT}tests/e2e/package-app`, project, { recursive: true });
  // Nothing here can build Rust.
  const rust = spawnSync("sh", ["-c", "command -v cargo || command -v rustc || command -v worker-build"], { env: { PATH: NO_RUST_PATH } });
  assert.notEqual(rust.status, 0, `the test's PATH must hold no Rust toolchain: ${rust.stdout}`);
  run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", tarball]);
  assert.ok(existsSync(join(project, "node_modules/idempotency-ledger/build/index_bg.wasm")), "the package ships the built wasm");
  // @cloudflare/workers-types as the project's own dev dependency would be.
  mkdirSync(join(project, "node_modules/@cloudflare"), { recursive: true });
  symlinkSync(`${ROOT}node_modules/@cloudflare/workers-types`, join(project, "node_modules/@cloudflare/workers-types"));
  // Hono, for the guide's app (docs/hono-guide.md), as the project's own dependency would be.
  symlinkSync(`${ROOT}node_modules/hono`, join(project, "node_modules/hono"));

  const bundled = wranglerBundle([], join(project, "dist"));
  // It imports ./worker and ./ledger: the gateway's wasm and the slim one.
  assert.equal(bundled.wasm.length, 2, `${bundled.wasm}`);
  console.log(`# the TypeScript Worker's bundle, ./worker and ./ledger (wrangler deploy --dry-run): ${bundled.total} / gzip ${bundled.gzip}`);
  mf = new Miniflare(convertV4MiniflareOptions({
    workers: [{
      name: "ts-app",
      modulesRoot: bundled.modulesRoot,
      modules: bundled.modules,
      compatibilityDate: "2026-11-01",
      bindings: { API_TOKENS: JSON.stringify(DEMO_TOKENS), LOG_LEVEL: "warn" },
      durableObjects: {
        TENANT_LEDGER: { className: "TenantLedger", useSQLite: true },
        PAYMENTS: { className: "Payments", useSQLite: true },
        SHORT_LIVED: { className: "ShortLived", useSQLite: true },
        TINY: { className: "Tiny", useSQLite: true },
      },
      serviceBindings: { LEDGER_RPC: { name: "ts-app", entrypoint: "LedgerService" } },
    }],
  }));
  await mf.ready;
});

after(async () => {
  await mf?.dispose();
  if (project) rmSync(project, { recursive: true, force: true });
  rmSync(NO_RUST_PATH, { recursive: true, force: true });
});

const request = (path, init = {}) => mf.dispatchFetch(new URL(path, "http://app.test"), init);
const payments = (path, { key, body = "", headers = {}, tenant = "acme", method = "POST" } = {}) =>
  request(path, {
    method,
    headers: { "x-app": "payments", "x-tenant": tenant, ...(key === undefined ? {} : { "idempotency-key": key }), ...headers },
    ...(method === "GET" ? {} : { body }),
  });
const charges = async (tenant = "acme") => (await json(await request("/", { headers: { "x-app": "payments", "x-tenant": tenant, "x-op": "count" } }))).json.charges;
const lookup = async (key, tenant = "acme") =>
  (await json(await request(`/?key=${encodeURIComponent(key)}`, { headers: { "x-app": "payments", "x-tenant": tenant, "x-op": "lookup" } }))).json;

test("npm pack ships exactly the client, its types, the built Worker, the docs, the README, the changelog and the licence", async () => {
  const { execFileSync } = await import("node:child_process");
  const root = new URL("../../", import.meta.url).pathname;
  const [pack] = JSON.parse(execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: root, encoding: "utf8" }));
  const files = pack.files.map((f) => f.path).sort();
  // The modules (one per seam), their declarations (emitted by `npm run check:types`), the docs.
  assert.deepEqual(files, [
    "CHANGELOG.md",
    "LICENSE",
    "README.md",
    "build/index.js",
    "build/index_bg.wasm",
    "build/ledger/index.js",
    "build/ledger/index_bg.wasm",
    "client/README.md",
    "client/consumers/README.md",
    "client/consumers/consumer.d.ts",
    "client/consumers/consumer.js",
    "client/consumers/queues.d.ts",
    "client/consumers/queues.js",
    "client/consumers/workflows.d.ts",
    "client/consumers/workflows.js",
    "client/generated/defaults.d.ts",
    "client/generated/defaults.js",
    "client/generated/limits.d.ts",
    "client/generated/limits.js",
    "client/generated/problems.d.ts",
    "client/generated/problems.js",
    "client/generated/trended.d.ts",
    "client/generated/trended.js",
    "client/index.d.ts",
    "client/index.js",
    "client/ledger/README.md",
    "client/ledger/app-answer.d.ts",
    "client/ledger/app-answer.js",
    "client/ledger/ledger.d.ts",
    "client/ledger/ledger.js",
    "client/ledger/object-ledger.d.ts",
    "client/ledger/object-ledger.js",
    "client/ledger/wasm.d.ts",
    "client/ledger/wasm.js",
    "client/middleware/README.md",
    "client/middleware/capture.d.ts",
    "client/middleware/capture.js",
    "client/middleware/claim.d.ts",
    "client/middleware/claim.js",
    "client/middleware/contract.d.ts",
    "client/middleware/contract.js",
    "client/middleware/hono.d.ts",
    "client/middleware/hono.js",
    "client/middleware/options.d.ts",
    "client/middleware/options.js",
    "client/middleware/settlement.d.ts",
    "client/middleware/settlement.js",
    "client/middleware/store.d.ts",
    "client/middleware/store.js",
    "client/rpc/README.md",
    "client/rpc/client.d.ts",
    "client/rpc/client.js",
    "client/rpc/error.d.ts",
    "client/rpc/error.js",
    "client/rpc/merge.d.ts",
    "client/rpc/merge.js",
    "client/rpc/settle.d.ts",
    "client/rpc/settle.js",
    "client/rpc/shards.d.ts",
    "client/rpc/shards.js",
    "client/rpc/sources.d.ts",
    "client/rpc/sources.js",
    "client/rules/README.md",
    "client/rules/answer.d.ts",
    "client/rules/answer.js",
    "client/rules/bytes.d.ts",
    "client/rules/bytes.js",
    "client/rules/check-options.d.ts",
    "client/rules/check-options.js",
    "client/rules/defaults.d.ts",
    "client/rules/defaults.js",
    "client/rules/fingerprint.d.ts",
    "client/rules/fingerprint.js",
    "client/rules/key.d.ts",
    "client/rules/key.js",
    "client/rules/problems.d.ts",
    "client/rules/problems.js",
    "client/rules/request.d.ts",
    "client/rules/request.js",
    "client/rules/stored.d.ts",
    "client/rules/stored.js",
    "client/rules/tenant.d.ts",
    "client/rules/tenant.js",
    "client/rules/waiting.d.ts",
    "client/rules/waiting.js",
    "docs/benchmarks-history.md",
    "docs/clients.md",
    "docs/configuration.md",
    "docs/consumers.md",
    "docs/contract.md",
    "docs/development.md",
    "docs/hono-guide.md",
    "docs/migrating.md",
    "docs/openapi.json",
    "docs/operations.md",
    "docs/problems.json",
    "docs/proxy-mode.md",
    "docs/rpc-v1.md",
    "docs/sharding.md",
    "docs/typescript.md",
    "package.json",
    "worker/console.mjs",
    "worker/console/files.mjs",
    "worker/console/page.mjs",
    "worker/console/style.mjs",
    "worker/entry.d.mts",
    "worker/entry.mjs",
    "worker/testing.d.mts",
    "worker/testing.mjs",
    "worker/wrangler.jsonc",
  ]);
});

test("types: the installed package checks against wrangler types' Env and runtime, and against @cloudflare/workers-types", () => {
  // wrangler types: the project's Env and the runtime types of its compatibility date.
  run("node", [WRANGLER, "types"]);
  run("node", [TSC, "-p", "tsconfig.json"]);
  // @cloudflare/workers-types, with only the Env written by wrangler types.
  run("node", [WRANGLER, "types", "--include-runtime=false", "env.d.ts"]);
  writeFileSync(join(project, "tsconfig.workers-types.json"), JSON.stringify({
    extends: "./tsconfig.json",
    compilerOptions: { types: ["@cloudflare/workers-types", "./env.d.ts"] },
  }));
  run("node", [TSC, "-p", "tsconfig.workers-types.json"]);
  // A type error in the same project is caught (the check can fail).
  writeFileSync(join(project, "src/wrong.ts"), `import { Ledger } from "idempotency-ledger/ledger";\nexport const bad = (ctx: DurableObjectState) => new Ledger(ctx, { maxKeyz: 1 });\n`);
  const r = spawnSync("node", [TSC, "-p", "tsconfig.json"], { cwd: project, encoding: "utf8" });
  rmSync(join(project, "src/wrong.ts"));
  assert.notEqual(r.status, 0);
  assert.match(r.stdout, /maxKeyz/);
});

/** The fenced blocks of one language in a document of the repository. */
function blocks(doc, lang) {
  const text = readFileSync(`${ROOT}${doc}`, "utf8");
  return [...text.matchAll(new RegExp("^```" + lang + "\\n([\\s\\S]*?)^```$", "gm"))].map((m) => m[1]);
}
const MODULE_IMPORTS = /from "(idempotency-ledger(\/[a-z/]+)?|cloudflare:workers|hono)"/;

test("the docs' TypeScript modules compile against the installed package (README, typescript.md, hono-guide.md)", () => {
  if (!existsSync(join(project, "worker-configuration.d.ts"))) run("node", [WRANGLER, "types"]);
  mkdirSync(join(project, "src/docs"), { recursive: true });
  const counts = {};
  for (const doc of ["README.md", "docs/typescript.md", "docs/hono-guide.md"]) {
    // Whole modules only: they export something and import only the package, the runtime and Hono.
    const modules = blocks(doc, "ts").filter((b) => /^export /m.test(b)
      && [...b.matchAll(/from "([^"]+)"/g)].every((m) => MODULE_IMPORTS.test(m[0])));
    counts[doc] = modules.length;
    modules.forEach((code, i) => writeFileSync(join(project, `src/docs/${doc.replace(/\W/g, "_")}_${i}.ts`), code));
  }
  assert.deepEqual(counts, { "README.md": 1, "docs/typescript.md": 2, "docs/hono-guide.md": 1 });
  run("node", [TSC, "-p", "tsconfig.json"]);
  rmSync(join(project, "src/docs"), { recursive: true });
});

test("the Hono guide's app, as the guide writes it, bundled by wrangler and run: 201, replayed, 422, 401", async () => {
  const guide = join(project, "guide");
  mkdirSync(join(guide, "src"), { recursive: true });
  writeFileSync(join(guide, "wrangler.jsonc"), blocks("docs/hono-guide.md", "jsonc")[0]);
  writeFileSync(join(guide, "src/index.ts"), blocks("docs/hono-guide.md", "ts")[0]);
  const bundled = wranglerBundle(["-c", "guide/wrangler.jsonc"], join(guide, "dist"));
  const app = new Miniflare(convertV4MiniflareOptions({
    workers: [{
      name: "my-api",
      modulesRoot: bundled.modulesRoot,
      modules: bundled.modules,
      compatibilityDate: "2026-11-01",
      bindings: { LOG_LEVEL: "warn" },
      durableObjects: { TENANT_LEDGER: { className: "TenantLedger", useSQLite: true } },
    }],
  }));
  try {
    await app.ready;
    const charge = (body, auth = "Bearer demo-token") => app.dispatchFetch("http://localhost:8787/v1/charges", {
      method: "POST", headers: { authorization: auth, "content-type": "application/json", "idempotency-key": "charge-001" }, body,
    }).then(read);
    const first = await charge('{"amount":500}');
    assert.equal(first.status, 201, first.text);
    assert.equal(JSON.parse(first.text).key, "charge-001");
    const again = await charge('{"amount":500}');
    assert.equal(again.headers["idempotent-replayed"], "true");
    assert.deepEqual(again.body, first.body);
    const reused = await charge('{"amount":900}');
    assert.equal(reused.status, 422);
    assert.deepEqual(JSON.parse(reused.text).differs, ["body"]);
    assert.equal((await charge('{"amount":500}', "Bearer wrong")).status, 401);
  } finally {
    await app.dispose();
  }
});

/** The most a Worker importing only idempotency-ledger/ledger may bundle (gzip, as wrangler counts it). */
const LEDGER_ONLY_GZIP_KIB = 120;

test(`a Worker importing only idempotency-ledger/ledger bundles the slim wasm alone, at most ${LEDGER_ONLY_GZIP_KIB} KiB gzip, and runs exactly once`, async () => {
  const bundled = wranglerBundle(["-c", "ledger-only/wrangler.jsonc"], join(project, "ledger-only/dist"));
  console.log(`# a Worker importing only idempotency-ledger/ledger (wrangler deploy --dry-run): ${bundled.total} / gzip ${bundled.gzip}`);
  assert.ok(bundled.gzipKiB <= LEDGER_ONLY_GZIP_KIB, `${bundled.gzip} gzip is over ${LEDGER_ONLY_GZIP_KIB} KiB`);
  // One wasm, and it is the slim one the package ships (never the gateway's).
  assert.equal(bundled.wasm.length, 1, `${bundled.wasm}`);
  assert.deepEqual(readFileSync(bundled.wasm[0]), readFileSync(join(project, "node_modules/idempotency-ledger/build/ledger/index_bg.wasm")));
  const app = new Miniflare(convertV4MiniflareOptions({
    workers: [{
      name: "ledger-only",
      modulesRoot: bundled.modulesRoot,
      modules: bundled.modules,
      compatibilityDate: "2026-11-01",
      durableObjects: { PAYMENTS: { className: "Payments", useSQLite: true } },
    }],
  }));
  try {
    await app.ready;
    const charge = (body, key = "charge-1") => app.dispatchFetch("http://app.test/charges", {
      method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body,
    }).then(read);
    const first = await charge('{"amount":500}');
    assert.equal(first.status, 201, first.text);
    assert.deepEqual(JSON.parse(first.text), { id: 1, amount: 500 });
    const again = await charge('{"amount":500}');
    assert.equal(again.headers["idempotent-replayed"], "true");
    assert.deepEqual(again.body, first.body);
    assert.equal((await charge('{"amount":900}')).status, 422);
    const second = await charge('{"amount":7}', "charge-2");
    assert.deepEqual(JSON.parse(second.text), { id: 2, amount: 7 });
  } finally {
    await app.dispose();
  }
});

test("local development: the app and the packaged ledger in one wrangler dev, from the app's directory (docs/clients.md)", async () => {
  const { spawn } = await import("node:child_process");
  const registry = mkdtempSync(join(tmpdir(), "dev-registry-"));
  const dev = spawn("node", [WRANGLER, "dev", "-c", "dev/wrangler.jsonc", "-c", "node_modules/idempotency-ledger/worker/wrangler.jsonc", "--port", "0", "--inspector-port", "0", "--ip", "127.0.0.1"], {
    cwd: project,
    env: { ...process.env, PATH: NO_RUST_PATH, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_DEV_REGISTRY_PATH: registry, CI: "true" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  dev.stdout.on("data", (d) => { output += d; });
  dev.stderr.on("data", (d) => { output += d; });
  try {
    const deadline = Date.now() + 90_000;
    let url;
    while (!(url = output.match(/Ready on (http:\/\/[\d.:]+)/)?.[1])) {
      assert.ok(Date.now() < deadline && dev.exitCode === null, `wrangler dev did not start:\n${output}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const post = () => fetch(`${url}/charges`, { method: "POST", headers: { "idempotency-key": "dev-1" }, body: "500" }).then(read);
    const first = await post();
    assert.equal(first.status, 201, first.text);
    const again = await post();
    assert.equal(again.headers["idempotent-replayed"], "true");
    assert.deepEqual(again.body, first.body);
  } finally {
    try { process.kill(-dev.pid, "SIGTERM"); } catch { /* already gone */ }
    await new Promise((r) => (dev.exitCode === null ? dev.once("exit", r) : r()));
    rmSync(registry, { recursive: true, force: true });
  }
});

test("the packaged TenantLedger behind withIdempotency: runs once, replays byte-identical", async () => {
  const init = { method: "POST", headers: { "idempotency-key": "pkg-order-1", "content-type": "application/json" }, body: '{"sku":"A"}' };
  const first = await read(await request("/orders", init));
  assert.equal(first.status, 201);
  const again = await read(await request("/orders", init));
  assert.equal(again.status, 201);
  assert.equal(again.headers["idempotent-replayed"], "true");
  assert.deepEqual(again.body, first.body);
});

test("withIdempotency over the packaged LedgerService binding, typed as wrangler types writes it", async () => {
  const init = { method: "POST", headers: { "x-app": "rpc", "idempotency-key": "pkg-rpc-1" }, body: "hello" };
  const first = await read(await request("/anything", init));
  assert.equal(first.status, 201, first.text);
  const again = await read(await request("/anything", init));
  assert.equal(again.headers["idempotent-replayed"], "true");
  assert.deepEqual(again.body, first.body);
});

test("own Durable Object: the sweep, run from the object's alarm, deletes records past their retention", async () => {
  const short = (key) => request("/r", { method: "POST", headers: { "x-app": "short", "idempotency-key": key }, body: key }).then(read);
  assert.equal((await short("short-1")).status, 201);
  // Retention 6 s: seconds of margin for the replay and the count.
  assert.equal((await short("short-1")).headers["idempotent-replayed"], "true");
  const stats = async () => (await json(await request("/", { headers: { "x-app": "short", "x-op": "stats" } }))).json;
  const armed = await stats();
  assert.equal(armed.records, 1);
  // Armed: armSweep reads nothing more (a fresh key's own rows only: 2 reads each — its
  // record's lookup and the counts' row its transaction updates — the counts' row read
  // once again after a stats call, and 3 for the stats call: its row and the next expiry).
  for (let i = 0; i < 5; i++) assert.equal((await short(`short-more-${i}`)).status, 201);
  const readSince = (await stats()).sql_rows_read - armed.sql_rows_read;
  assert.ok(readSince <= 5 * 2 + 1 + 3, `armSweep adds no reads once armed (${readSince} rows read)`);
  // armSweep set the alarm at the expiry; alarm() sweeps: a generous deadline.
  await eventually(async () => (await stats()).records === 0, { ms: 60_000, every: 500 });
  // Swept: the key runs again.
  const rerun = await short("short-1");
  assert.equal(rerun.status, 201);
  assert.equal(rerun.headers["idempotent-replayed"], undefined);
});

test("the packaged gateway answers with the ledger bound in this Worker", async () => {
  const init = { method: "POST", headers: { "x-app": "gateway", authorization: ACME, "idempotency-key": "pkg-gw-1", "content-type": "application/json" }, body: '{"sku":"SKU-1","quantity":2}' };
  const first = await read(await request("/v1/orders", init));
  assert.equal(first.status, 201, first.text);
  const again = await read(await request("/v1/orders", init));
  assert.equal(again.headers["idempotent-replayed"], "true");
  assert.deepEqual(again.body, first.body);
  const other = await json(await request("/v1/orders", { ...init, body: '{"sku":"SKU-2","quantity":2}' }));
  assert.equal(other.status, 422);
  assert.equal(slug(other.json), "idempotency-key-reused");
});

test("the packaged gateway serves the console, bundled by wrangler with no rule of the app's", async () => {
  for (const path of ["/console", "/console/app.js", "/console/style.css"]) {
    const r = await read(await request(path, { headers: { "x-app": "gateway" } }));
    assert.equal(r.status, 200, path);
    assert.match(r.headers["content-security-policy"], /^default-src 'none'; script-src 'self'/, path);
    assert.equal(r.headers["x-content-type-options"], "nosniff", path);
  }
});

test("own Durable Object: a 32-way burst on one key writes one row, every answer byte-identical", async () => {
  const before = await charges("burst");
  const answers = await Promise.all(Array.from({ length: 32 }, () => payments("/charges", { key: "burst-1", body: "500", tenant: "burst" }).then(read)));
  assert.equal(await charges("burst"), before + 1);
  const ran = answers.filter((a) => a.headers["idempotent-replayed"] === undefined);
  assert.equal(ran.length, 1, "exactly one request ran");
  for (const a of answers) {
    assert.equal(a.status, 201);
    assert.deepEqual(a.body, ran[0].body);
    assert.equal(a.headers.location, ran[0].headers.location);
  }
  const record = await lookup("burst-1", "burst");
  assert.equal(record.state, "completed");
  assert.equal(record.response_status, 201);
});

test("own Durable Object: a write that throws commits nothing and leaves the key free", async () => {
  const before = await charges();
  const failed = await payments("/charges", { key: "fails-1", body: "13" });
  assert.equal(failed.status, 500);
  await failed.arrayBuffer();
  assert.equal(await charges(), before, "the INSERT before the throw was rolled back");
  assert.equal(await lookup("fails-1"), null, "no record: the key was never claimed");
  // The key is free: a retry runs (again, it fails again: it is not replayed).
  const retry = await payments("/charges", { key: "fails-1", body: "13" });
  assert.equal(retry.status, 500);
  await retry.arrayBuffer();
  // The same key with a request that succeeds runs and is recorded.
  const ok = await read(await payments("/charges", { key: "fails-1", body: "14" }));
  assert.equal(ok.status, 201);
  assert.equal(await charges(), before + 1);
});

test("own Durable Object: the closed outcomes — replayed, mismatch, ledger full — answered as the gateway answers them", async () => {
  const first = await read(await payments("/charges", { key: "closed-1", body: "7" }));
  const replay = await read(await payments("/charges", { key: "closed-1", body: "7" }));
  assert.equal(replay.headers["idempotent-replayed"], "true");
  assert.deepEqual(replay.body, first.body);
  assert.equal(replay.headers["content-type"], "application/json");
  const reused = await json(await payments("/charges", { key: "closed-1", body: "8" }));
  assert.equal(reused.status, 422);
  assert.equal(slug(reused.json), "idempotency-key-reused");
  assert.deepEqual(reused.json.differs, ["body"]);
  const missing = await json(await payments("/charges", { body: "7" }));
  assert.equal(missing.status, 400);
  assert.equal(slug(missing.json), "idempotency-key-missing");
  // maxKeys: 1000 in this object; a tenant of its own fills it.
  for (let i = 0; i < 1000; i++) {
    const r = await payments("/echo", { key: `fill-${i}`, body: "x", tenant: "full" });
    assert.equal(r.status, 201);
    await r.arrayBuffer();
  }
  const full = await json(await payments("/echo", { key: "fill-1000", body: "x", tenant: "full" }));
  assert.equal(full.status, 429);
  assert.equal(slug(full.json), "idempotency-ledger-full");
  assert.ok(Number(full.headers["retry-after"]) >= 1);
});

test("own Durable Object: maxBodyBytes (413, nothing recorded) and maxDbBytes (429 ledger full before the platform's limit)", async () => {
  const big = await read(await payments("/charges", { key: "big-1", body: "1".repeat(5000) }));
  assert.equal(big.status, 413);
  assert.equal(slug(JSON.parse(big.text)), "request-too-large");
  assert.equal(await lookup("big-1"), null, "nothing claimed");
  const ok = await read(await payments("/charges", { key: "big-1", body: "12" }));
  assert.equal(ok.status, 201, "the key is still free");
  const full = await read(await request("/", { method: "POST", headers: { "x-app": "tiny", "idempotency-key": "tiny-1" }, body: "x" }));
  assert.equal(full.status, 429);
  assert.equal(slug(JSON.parse(full.text)), "idempotency-ledger-full");
});

test("own Durable Object: armSweep in a class without alarm() answers false and logs, never fails the request", async () => {
  assert.equal((await read(await payments("/echo", { key: "arm-1", body: "x", tenant: "arm" }))).status, 201);
  const r = await json(await request("/", { headers: { "x-app": "payments", "x-tenant": "arm", "x-op": "arm" } }));
  assert.equal(r.status, 200);
  assert.deepEqual(r.json, { armed: false });
});

test("own Durable Object: billed rows the ledger writes and reads per operation stay within their bounds", async () => {
  const N = 40;
  const stats = async () => (await json(await request("/", { headers: { "x-app": "payments", "x-tenant": "rows", "x-op": "stats" } }))).json;
  const echo = (key) => payments("/echo", { key, body: "x", tenant: "rows" }).then(read);
  await echo("rows-warm"); // the object started: its tables made, its state row read
  const start = await stats();
  for (let i = 0; i < N; i++) assert.equal((await echo(`rows-${i}`)).status, 201);
  const fresh = await stats();
  for (let i = 0; i < N; i++) assert.equal((await echo(`rows-${i}`)).headers["idempotent-replayed"], "true");
  const replayed = await stats();
  const per = (a, b, field) => (b[field] - a[field]) / N;
  const figures = {
    fresh: { written: per(start, fresh, "sql_rows_written"), read: per(start, fresh, "sql_rows_read") },
    replay: { written: per(fresh, replayed, "sql_rows_written"), read: per(fresh, replayed, "sql_rows_read") },
  };
  console.log(`# embedded Ledger, billed rows per operation (the ledger's own statements, n = ${N}): ${JSON.stringify(figures)}`);
  // A fresh key: its record (and its sweep index entry), written once,
  // completed, and the counts' row in the same transaction (so the counts
  // hold only what committed, whatever encloses the call). A replay: read
  // only, its count batched.
  assert.ok(figures.fresh.written <= 3.05, JSON.stringify(figures));
  assert.ok(figures.fresh.written >= 2.95, JSON.stringify(figures));
  // Reads: the record's lookup, and the counts' row the UPDATE reads.
  assert.ok(figures.fresh.read <= 2.1, JSON.stringify(figures));
  assert.ok(figures.replay.written <= 0.05, JSON.stringify(figures));
  assert.ok(figures.replay.read <= 1.1, JSON.stringify(figures));
});

test("own Durable Object: the gateway's key and fingerprint fixtures", async () => {
  const keys = JSON.parse(readFileSync(`${ROOT}tests/fixtures/idempotency-keys.json`, "utf8")).vectors;
  for (const [i, v] of keys.entries()) {
    const r = await read(await payments("/echo", { key: v.field, body: `k${i}`, tenant: `keys-${i}` }));
    if (v.key !== undefined) {
      assert.equal(r.status, 201, `${JSON.stringify(v.field)}: ${r.text}`);
      assert.equal(r.text, `k${i}`);
      assert.equal((await lookup(v.key, `keys-${i}`))?.key, v.key, JSON.stringify(v.field));
    } else {
      assert.equal(r.status, 400, JSON.stringify(v.field));
      // An empty field does not survive the test's HTTP client (it arrives
      // absent): the answer is then the missing key's.
      assert.equal(slug(JSON.parse(r.text)), v.field === "" ? "idempotency-key-missing" : "idempotency-key-invalid", JSON.stringify(v.field));
    }
  }
  // Fingerprints: requests the fixtures call the same replay; those they tell apart are 422, naming the component.
  const vectors = JSON.parse(readFileSync(`${ROOT}tests/fixtures/fingerprints.json`, "utf8")).vectors;
  const send = (v, key) => {
    const headers = { "x-app": "payments", "x-tenant": "fingerprints", "idempotency-key": key };
    for (const [name, value] of v.headers) if (value !== null) headers[name] = value;
    return request(v.target, { method: v.method.toUpperCase(), headers, body: Buffer.from(v.body_base64, "base64") })
      .then(read).then((r) => ({ ...r, json: r.status === 422 ? JSON.parse(r.text) : null }));
  };
  // (A vector with an empty header value is left out: the test's HTTP
  // client drops empty fields; the client-helpers suite checks those digests.)
  const sendable = vectors.filter((v) => v.headers.every(([, value]) => value !== ""));
  let pairs = 0;
  for (let a = 0; a < sendable.length; a++) {
    for (let b = a + 1; b < sendable.length; b++) {
      const [va, vb] = [sendable[a], sendable[b]];
      const sameNames = JSON.stringify(va.components.map((c) => c.name)) === JSON.stringify(vb.components.map((c) => c.name));
      if (!sameNames) continue;
      const key = `fp-${a}-${b}`;
      assert.equal((await send(va, key)).status, 201);
      const second = await send(vb, key);
      const differs = va.components.filter((c, i) => c.digest !== vb.components[i].digest).map((c) => c.name);
      if (va.digest === vb.digest) {
        assert.equal(second.status, 201, `${va.about} / ${vb.about}`);
        assert.equal(second.headers["idempotent-replayed"], "true");
      } else {
        assert.equal(second.status, 422, `${va.about} / ${vb.about}`);
        assert.deepEqual(second.json.differs, differs);
      }
      pairs++;
    }
  }
  assert.ok(pairs >= 20, `compared ${pairs} pairs`);
});
