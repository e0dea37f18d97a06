// The metered Workers `npm run bench:cost` runs (../cost.mjs): the built
// Worker with its TenantLedger wrapped by ./product.mjs, or the floor
// (../floor) wrapped by ./floor.mjs, in workerd (Miniflare); and the
// recorder that turns a meter reading into figures per operation.
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { fingerprint } from "../../client/rules/fingerprint.js";
import { LedgerClient } from "../../client/rpc/client.js";
import { DEMO_TOKENS, ROOT, orderInit, wranglerVars } from "../../scripts/workerd.mjs";

export const encode = (s) => Buffer.from(s).toString("base64");

function modules(floor) {
  return [
    { type: "ESModule", path: `${ROOT}${floor ? "bench/cost/floor.mjs" : "bench/cost/product.mjs"}` },
    { type: "ESModule", path: `${ROOT}bench/cost/meter.mjs` },
    ...(!floor
      ? [
          { type: "ESModule", path: `${ROOT}build/index.js` },
          { type: "CompiledWasm", path: `${ROOT}build/index_bg.wasm` },
        ]
      : [{ type: "ESModule", path: `${ROOT}bench/floor/worker.js` }]),
  ];
}

/**
 * One metered Worker: the product (its variables `vars` over wrangler.toml's)
 * or the floor. Its `ledger` speaks RPC v1 to tenant acme's object; `meter()`
 * reads (and resets) the object's meter; `request` is a fetch at the Worker.
 */
export async function start({ floor = false, vars = {} } = {}) {
  const binding = floor ? "ORDERS" : "TENANT_LEDGER";
  const mf = new Miniflare(convertV4MiniflareOptions({
    workers: [{
      name: "metered",
      modulesRoot: ROOT,
      modules: modules(floor),
      compatibilityDate: "2026-11-01",
      bindings: { ...(floor ? {} : wranglerVars()), LOG_LEVEL: "warn", REPLAY_CACHE_BYTES: "0", ...vars, API_TOKENS: JSON.stringify(DEMO_TOKENS) },
      durableObjects: { [binding]: { className: floor ? "MeteredOrders" : "MeteredLedger", useSQLite: true } },
    }],
  }));
  await mf.ready;
  const ns = await mf.getDurableObjectNamespace(binding);
  // The package's own client speaks RPC v1 to the object (the floor's
  // object has no RPC: only its meter is read).
  const ledger = LedgerClient.forTenant(ns, "acme");
  const meter = async () => (await ledger.stub.fetch("https://tenant-ledger/__meter")).json();
  const request = (path, init) => mf.dispatchFetch(new URL(path, "http://gateway.test"), init);
  return { mf, ledger, meter, request };
}

/** An order POST to the embedded orders app under `key`. */
export const order = (key) => orderInit({ key });

export async function expectStatus(res, status) {
  await res.arrayBuffer();
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}`);
}

/** The fingerprint of a form POST to /charges with `body`. */
export const fp = (body) => fingerprint({ method: "POST", target: "/charges", headers: {}, fingerprintHeaders: [], body });

/** Sums a meter reading over every call path. */
function total(reading) {
  const t = { calls: 0, statements: 0, rowsRead: 0, rowsWritten: 0, setAlarm: 0, alarms: 0 };
  for (const [path, e] of Object.entries(reading.calls)) {
    if (path === "construct") continue;
    t.calls += e.calls;
    t.statements += e.statements;
    t.rowsRead += e.rowsRead;
    t.rowsWritten += e.rowsWritten;
    t.setAlarm += e.setAlarm;
    if (path === "alarm") t.alarms += e.calls;
  }
  return t;
}

/**
 * The figures per operation, in the order recorded: `record(name, reading,
 * per)` divides a meter reading by the operations it covers (and prints its
 * statements when `statements`).
 */
export function recorder(statements) {
  const results = [];
  const record = (name, reading, per) => {
    const t = total(reading);
    if (statements) {
      console.log(`\n${name}: per statement (count, rows read, rows written per operation)`);
      for (const [sql, q] of Object.entries(reading.statements)) {
        console.log(`  ${(q.count / per).toFixed(2)}  r ${(q.rowsRead / per).toFixed(2)}  w ${(q.rowsWritten / per).toFixed(2)}  ${sql}`);
      }
    }
    results.push({
      name,
      written: (t.rowsWritten + t.setAlarm) / per,
      read: t.rowsRead / per,
      statements: t.statements / per,
      calls: t.calls / per,
      setAlarm: t.setAlarm / per,
      alarmsPerRecord: t.alarms / per,
    });
  };
  return { results, record };
}

/** Lets the object's flush timer (FLUSH_AFTER_MS, 2 s) write what is pending,
 * so a scenario pays for its own counts. */
export const settle = () => new Promise((r) => setTimeout(r, 2_500));
