// End-to-end harness: the suites' helpers over scripts/workerd.mjs (the
// built Worker in workerd through Miniflare, with real SQLite-backed
// Durable Objects; shared with bench/), re-exported here so a suite
// imports one module: the other Workers of tests/e2e/workers, response
// readers, a deferred, a lossy link in front of the real TenantLedger.
// Variables start from wrangler.toml's [vars], so tests run what `wrangler
// dev` and `wrangler deploy` run; each test overrides only what it studies.
import { buildSync } from "esbuild";
import { ROOT, CLIENT_MODULES, ACME } from "../../scripts/workerd.mjs";

export {
  ROOT, sha256hex, DEMO_TOKENS, ACME, GLOBEX, wranglerVars, CLIENT_MODULES, GATEWAY_MODULES,
  startGateway, orderInit, startOrigin, eventually,
} from "../../scripts/workerd.mjs";

/**
 * The JavaScript Worker of tests/e2e/workers/js-client.mjs (the npm
 * package's client and withIdempotency), its LEDGER a Durable Object
 * namespace of another script: the real TenantLedger, or a link in front of it.
 */
export function jsClientWorker(name, ledger) {
  return {
    name,
    modulesRoot: ROOT,
    modules: [
      { type: "ESModule", path: `${ROOT}tests/e2e/workers/js-client.mjs` },
      ...CLIENT_MODULES,
    ],
    compatibilityDate: "2026-11-01",
    durableObjects: { LEDGER: ledger },
  };
}

/**
 * A TypeScript Worker of tests/e2e/workers (`name`.ts) bundled with esbuild
 * — its imports, Hono and the npm package's modules included — as the one
 * module Miniflare loads.
 */
export function bundledWorkerModules(name) {
  const contents = buildSync({
    entryPoints: [`${ROOT}tests/e2e/workers/${name}.ts`],
    bundle: true, format: "esm", target: "es2022", platform: "neutral", write: false,
  }).outputFiles[0].text;
  return [{ type: "ESModule", path: `${ROOT}tests/e2e/workers/${name}.mjs`, contents }];
}

/** Reads a response fully: status, headers as a plain object, body bytes. */
export async function read(res) {
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: Object.fromEntries(res.headers), body, text: body.toString("utf8") };
}

export async function json(res) {
  const r = await read(res);
  return { ...r, json: r.text ? JSON.parse(r.text) : null };
}

/** The problem slug of a problem document. */
export const slug = (doc) => doc.type.split("/").pop();

/** The orders a tenant holds. */
export async function orders(gw, auth = ACME) {
  const r = await json(await gw.request("/v1/orders", { headers: { authorization: auth } }));
  return r.json.orders;
}

/** A promise with its resolve function exposed. */
export function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}

/**
 * A lossy link in front of the real TenantLedger (not a fake ledger: every
 * call that gets through is served by the real object): the first
 * `complete` is dropped before it reaches the object, as a broken
 * connection would. Bind `TENANT_LEDGER` (or a client's `LEDGER`) to
 * `{ className: "LossyLink", scriptName: "lossy" }`.
 */
export function lossyLinkWorker() {
  return {
    name: "lossy", modules: true,
    durableObjects: {
      LINK: { className: "LossyLink", useSQLite: true },
      REAL: { className: "TenantLedger", scriptName: "gateway" },
    },
    script: `
      let dropped = 0;
      export class LossyLink {
        constructor(state, env) { this.state = state; this.env = env; }
        async fetch(request) {
          if (new URL(request.url).pathname === "/rpc/v1/complete" && dropped === 0) {
            dropped++;
            console.log("lossy-link: dropped a complete call");
            throw new Error("connection reset");
          }
          const real = this.env.REAL.get(this.env.REAL.idFromName(this.state.id.name));
          return real.fetch(request);
        }
      }
      export default { fetch() { return new Response("unused"); } }`,
  };
}
