// End-to-end harness: runs the *built* Worker (build/index.js + wasm) in
// workerd through Miniflare, with real SQLite-backed Durable Objects.
// Variables start from wrangler.toml's [vars], so tests run what `wrangler
// dev` and `wrangler deploy` run; each test overrides only what it studies.
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

export const ROOT = new URL("../../", import.meta.url).pathname;

export const sha256hex = (s) => createHash("sha256").update(s).digest("hex");

/** The demo tenants of .dev.vars.example. */
export const DEMO_TOKENS = {
  [sha256hex("dev-token-acme")]: "acme",
  [sha256hex("dev-token-globex")]: "globex",
};
export const ACME = "Bearer dev-token-acme";
export const GLOBEX = "Bearer dev-token-globex";

/** [vars] of wrangler.toml as a plain object (string values only). */
export function wranglerVars() {
  const text = readFileSync(`${ROOT}wrangler.toml`, "utf8");
  const section = text.split(/^\[vars\]\s*$/m)[1] ?? "";
  const vars = {};
  for (const line of section.split("\n")) {
    if (/^\s*\[/.test(line)) break;
    const m = line.match(/^\s*([A-Z0-9_]+)\s*=\s*"(.*)"\s*$/);
    if (m) vars[m[1]] = m[2];
  }
  return vars;
}

/**
 * Starts the gateway. `vars` override wrangler.toml; `apiTokens: null`
 * leaves the secret unset; `workers` adds more Workers (origins, clients).
 */
export async function startGateway({ vars = {}, apiTokens = JSON.stringify(DEMO_TOKENS), workers = [], gateway = {} } = {}) {
  const bindings = { ...wranglerVars(), ...vars };
  if (apiTokens !== null) bindings.API_TOKENS = apiTokens;
  const mf = new Miniflare(convertV4MiniflareOptions({
    workers: [
      {
        name: "gateway",
        modulesRoot: `${ROOT}build`,
        modules: [
          { type: "ESModule", path: `${ROOT}build/index.js` },
          { type: "CompiledWasm", path: `${ROOT}build/index_bg.wasm` },
        ],
        compatibilityDate: "2026-11-01",
        bindings,
        durableObjects: { TENANT_LEDGER: { className: "TenantLedger", useSQLite: true } },
        ...gateway,
      },
      ...workers,
    ],
  }));
  await mf.ready;
  const request = (path, init = {}) => mf.dispatchFetch(new URL(path, "http://gateway.test"), init);
  return { mf, request, dispose: () => mf.dispose() };
}

/** A POST to /v1/orders with the given key and body (string). */
export function orderInit({ key, body = '{"sku":"SKU-1","quantity":2}', auth = ACME, headers = {} } = {}) {
  const h = { authorization: auth, "content-type": "application/json", ...headers };
  if (key !== undefined) h["idempotency-key"] = key;
  return { method: "POST", headers: h, body };
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
