// idempotency-ledger/worker/testing: the packaged ledger Worker as
// Miniflare WorkerOptions, for tests that run it beside an app (an
// auxiliary Worker of @cloudflare/vitest-pool-workers, or `new Miniflare`).
// Node only (reads the installed package's files); the Worker itself is
// the prebuilt ./entry.mjs with its modules listed explicitly, because
// Miniflare does not follow an entry module's imports on its own.
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/**
 * The default compatibility date: the Worker is tested on it, and it is
 * within what the workerd of @cloudflare/vitest-pool-workers 0.23.0
 * supports (up to 2026-08-22; the package's own config uses 2026-11-01).
 */
const DEFAULT_DATE = "2026-08-15";

/** The packaged defaults (./wrangler.jsonc's vars: the gateway's own). */
function packagedVars() {
  const text = readFileSync(`${ROOT}worker/wrangler.jsonc`, "utf8");
  return JSON.parse(text.replace(/^\s*\/\/.*$/gm, "")).vars;
}

/**
 * The ledger Worker as Miniflare WorkerOptions: its TenantLedger (SQLite)
 * bound as TENANT_LEDGER, LedgerService as an entrypoint, the gateway as
 * its fetch handler, and the packaged defaults under `vars`.
 * @param {{ name?: string; compatibilityDate?: string; vars?: Record<string, string> }} [options]
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
      ...consoleFiles.map((f) => ({ type: "ESModule", path: `${ROOT}worker/console/${f}` })),
      { type: "ESModule", path: `${ROOT}build/index.js` },
      { type: "CompiledWasm", path: `${ROOT}build/index_bg.wasm` },
      { type: "ESModule", path: `${ROOT}build/ledger/index.js` },
      { type: "CompiledWasm", path: `${ROOT}build/ledger/index_bg.wasm` },
      ...client.map((f) => ({ type: "ESModule", path: `${ROOT}client/${f}` })),
    ],
    bindings: { ...packagedVars(), ...vars },
    durableObjects: { TENANT_LEDGER: { className: "TenantLedger", useSQLite: true } },
  };
}
