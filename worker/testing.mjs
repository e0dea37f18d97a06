// @ts-check
// idempotency-ledger/worker/testing: the packaged ledger Worker as
// Miniflare WorkerOptions, for tests that run it beside an app (an
// auxiliary Worker of @cloudflare/vitest-pool-workers, or `new Miniflare`).
// Node only (reads the installed package's files); the Worker itself is
// the prebuilt ./entry.mjs with its modules listed explicitly, because
// Miniflare does not follow an entry module's imports on its own.
// Types: ./testing.d.mts, checked against this module by
// `tsc -p worker/tsconfig.testing.json` (npm run check:types; the
// assertions at the end of this file).
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/**
 * The default compatibility date: the Worker is tested on it, and it is
 * within what the workerd of @cloudflare/vitest-pool-workers 0.23.0
 * supports (up to 2026-08-22; the package's own config uses 2026-11-01).
 */
const DEFAULT_DATE = "2026-08-15";

/**
 * The packaged defaults (./wrangler.jsonc's vars: the gateway's own).
 * @returns {Record<string, string>}
 */
function packagedVars() {
  const text = readFileSync(`${ROOT}worker/wrangler.jsonc`, "utf8");
  return JSON.parse(text.replace(/^\s*\/\/.*$/gm, "")).vars;
}

/** @typedef {ReturnType<typeof import("./testing.d.mts").ledgerWorker>["modules"][number]} Module */
/** An ES module of the package (its absolute path), as Miniflare lists it. @type {(path: string) => Module} */
const esModule = (path) => ({ type: "ESModule", path });

/**
 * The ledger Worker as Miniflare WorkerOptions: its TenantLedger (SQLite)
 * bound as TENANT_LEDGER, LedgerService as an entrypoint, the gateway as
 * its fetch handler, and the packaged defaults under `vars`.
 * @param {import("./testing.d.mts").LedgerWorkerOptions} [options]
 * @returns {ReturnType<typeof import("./testing.d.mts").ledgerWorker>}
 */
export function ledgerWorker({ name = "idempotency-ledger", compatibilityDate = DEFAULT_DATE, vars = {} } = {}) {
  const client = readdirSync(`${ROOT}client`, { recursive: true }).filter((f) => f.endsWith(".js")).sort();
  const consoleFiles = readdirSync(`${ROOT}worker/console`).filter((f) => f.endsWith(".mjs")).sort();
  return {
    name,
    compatibilityDate,
    modulesRoot: ROOT,
    modules: [
      { type: "ESModule", path: `${ROOT}worker/entry.mjs` },
      { type: "ESModule", path: `${ROOT}worker/console.mjs` },
      ...consoleFiles.map((f) => esModule(`${ROOT}worker/console/${f}`)),
      { type: "ESModule", path: `${ROOT}build/index.js` },
      { type: "CompiledWasm", path: `${ROOT}build/index_bg.wasm` },
      { type: "ESModule", path: `${ROOT}build/ledger/index.js` },
      { type: "CompiledWasm", path: `${ROOT}build/ledger/index_bg.wasm` },
      ...client.map((f) => esModule(`${ROOT}client/${f}`)),
    ],
    bindings: { ...packagedVars(), ...vars },
    durableObjects: { TENANT_LEDGER: { className: "TenantLedger", useSQLite: true } },
  };
}

// The declarations of this module (./testing.d.mts, hand-written: the types
// a test's config sees) checked against the code by
// `tsc -p worker/tsconfig.testing.json` (in `npm run check:types`).
// What it proves: ledgerWorker takes the declared options and its body
// builds exactly the declared answer (typed from them above: a field
// missing, extra or of another type fails); the declarations export
// nothing this module lacks, and declare ledgerWorker as it is here (its
// options optional). Not proved: that Miniflare accepts the answer (its
// WorkerOptions need Node's types: the e2e suites that run ledgerWorker()
// prove it), nor an export here that the declarations leave out.
/**
 * @template {true} T
 * @typedef {T} Holds
 */
/**
 * @template A, B
 * @typedef {[A] extends [B] ? ([B] extends [A] ? true : false) : false} Same
 */
/** @typedef {Holds<Same<keyof typeof import("./testing.d.mts"), "ledgerWorker">>} EveryDeclaredExportIsHere */
/** @typedef {Holds<Same<typeof ledgerWorker, typeof import("./testing.d.mts").ledgerWorker>>} LedgerWorkerIsAsDeclared */
