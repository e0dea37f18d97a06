// End-to-end harness: the suites' helpers over scripts/workerd.mjs (the
// built Worker in workerd through Miniflare, with real SQLite-backed
// Durable Objects; shared with bench/), re-exported here so a suite
// imports one module: the other Workers of tests/e2e/workers, response
// readers, a deferred, a lossy link in front of the real TenantLedger, and
// the seeds and seeded random source of the model suites.
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
 * A Worker ("rpc-caller") bound to the gateway script's LedgerService as
 * LEDGER: each POST of `{ op, args }` answers `LEDGER[op](...args)` as JSON,
 * or `{ error }` with status 599 when the call throws.
 */
export function rpcCaller() {
  return {
    name: "rpc-caller", modules: true, compatibilityDate: "2026-11-01",
    serviceBindings: { LEDGER: { name: "gateway", entrypoint: "LedgerService" } },
    script: `export default { async fetch(request, env) {
      const { op, args } = await request.json();
      try { return Response.json(await env.LEDGER[op](...args)); }
      catch (e) { return Response.json({ error: e.message }, { status: 599 }); }
    } }`,
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

/**
 * The seeds a seeded model suite runs: `SEED` (default `defaultSeed`) and
 * the `SEEDS` - 1 after it (`SEED=100 SEEDS=5`: 100..104). A variable that
 * is not a whole number stops the suite, named. Each suite prints its
 * seeds, and a failure names the seed that reproduces it.
 * @param {number} defaultSeed
 * @returns {number[]}
 */
export function seeds(defaultSeed) {
  const whole = (name, fallback) => {
    const raw = process.env[name];
    if (raw === undefined || raw === "") return fallback;
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a whole number, not ${JSON.stringify(raw)}`);
    return value;
  };
  const first = whole("SEED", defaultSeed);
  const count = Math.max(1, whole("SEEDS", 1));
  return Array.from({ length: count }, (_, i) => first + i);
}

/** mulberry32: a small seeded PRNG, floats in [0, 1). */
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A seeded random source: the same seed, the same sequence of choices. */
export class Rng {
  constructor(seed) { this.next = mulberry32(seed); }
  /** A whole number in lo..hi (both included). */
  int(lo, hi) { return lo + Math.floor(this.next() * (hi - lo + 1)); }
  chance(p) { return this.next() < p; }
  pick(items) { return items[Math.floor(this.next() * items.length)]; }
  /** One of `[weight, value]` pairs, by weight. */
  weighted(pairs) {
    let r = this.next() * pairs.reduce((s, [w]) => s + w, 0);
    for (const [w, value] of pairs) { if ((r -= w) < 0) return value; }
    return pairs[pairs.length - 1][1];
  }
  shuffle(items) {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }
}

/**
 * A claim's answer with its lease token checked — 32 lowercase hex
 * characters on every grant — and set aside, so the rest compares exactly
 * (the token is random: no test can name it in advance).
 * @param {any} answer
 */
export function unleased(answer) {
  if (answer?.outcome !== "claimed") return answer;
  const { lease, ...rest } = answer;
  if (typeof lease !== "string" || !/^[0-9a-f]{32}$/.test(lease)) {
    throw new Error(`a grant without a lease token: ${JSON.stringify(answer)}`);
  }
  return rest;
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
