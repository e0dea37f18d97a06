// npm run check:config -- [wrangler.toml] [--env NAME] [--secrets FILE]
//
// Checks a deployment's configuration offline, before it reaches traffic
// (docs/operations.md, "Before you deploy"), with the Worker's own rules:
// the configuration is read by wrangler (its parser, its environments),
// its bindings are handed to the built Worker in workerd (Miniflare, no
// network), and the Rust `checkConfiguration(env)` judges them as the
// gateway and its objects do at start (src/gateway/check.rs).
//
// --secrets FILE: the secrets the deployment will have, as the JSON object
// `wrangler secret bulk` takes, or a dotenv file (.dev.vars). Without it
// secrets are not checked (the summary says so).
//
// Exit 0 with a one-line summary; 1 with one `VARIABLE: detail` line per
// problem; 2 when the command itself is misused.
import { readFileSync } from "node:fs";
import { parseEnv } from "node:util";
import { fileURLToPath } from "node:url";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { unstable_readConfig } from "wrangler";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const USAGE = "usage: npm run check:config -- [wrangler.toml] [--env NAME] [--secrets FILE]";

/** Exits with `code` after printing `lines` to stderr. */
function fail(code, lines) {
  for (const line of lines) console.error(line);
  process.exit(code);
}

function parseArgs(argv) {
  const args = { config: "wrangler.toml", env: undefined, secrets: undefined };
  let positional = 0;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined || v.startsWith("--")) fail(2, [`${arg} needs a value`, USAGE]);
      return v;
    };
    if (arg === "--env" || arg === "-e") args.env = value();
    else if (arg.startsWith("--env=")) args.env = arg.slice(6);
    else if (arg === "--secrets") args.secrets = value();
    else if (arg.startsWith("--secrets=")) args.secrets = arg.slice(10);
    else if (arg === "--config" || arg === "-c") args.config = value();
    else if (arg === "--help" || arg === "-h") fail(0, [USAGE]);
    else if (!arg.startsWith("-") && positional++ === 0) args.config = arg;
    else fail(2, [`unknown argument ${JSON.stringify(arg)}`, USAGE]);
  }
  return args;
}

/** The secrets of `path`: a JSON object of strings, or a dotenv file. */
function readSecrets(path) {
  let text;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    fail(2, [`--secrets: cannot read ${path}: ${e.message}`]);
  }
  if (text.trimStart().startsWith("{")) {
    let value;
    try {
      value = JSON.parse(text);
    } catch (e) {
      fail(1, [`${path}: not valid JSON: ${e.message}`]);
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) fail(1, [`${path}: must be a JSON object of secret names to values`]);
    for (const [name, v] of Object.entries(value)) {
      if (typeof v !== "string") fail(1, [`${name}: a secret's value must be a string (in ${path})`]);
    }
    return value;
  }
  return parseEnv(text);
}

/** The configuration's Durable Object bindings as it declares them (the check judges the ledger's class from these). */
function declaredObjects(config) {
  return (config.durable_objects?.bindings ?? []).map((b) => ({ name: b.name, class_name: b.class_name }));
}

/** The Miniflare options that give the check Worker the bindings wrangler would give the deployed script. */
function bindingsOf(config, secrets) {
  const bindings = { ...(config.vars ?? {}), ...(secrets ?? {}) };
  // Only whether they exist matters to the check: stand-ins.
  const serviceBindings = {};
  for (const service of config.services ?? []) serviceBindings[service.binding] = () => new Response(null, { status: 204 });
  const analyticsEngineDatasets = {};
  for (const dataset of config.analytics_engine_datasets ?? []) {
    analyticsEngineDatasets[dataset.binding] = { dataset: dataset.dataset ?? dataset.binding };
  }
  // Each a real namespace (of the check's stand-in class), as the Worker's own rule reads it.
  const durableObjects = {};
  for (const { name } of declaredObjects(config)) durableObjects[name] = { className: "DeclaredObject" };
  return { bindings, serviceBindings, analyticsEngineDatasets, durableObjects };
}

async function check(config, secrets) {
  const mf = new Miniflare(convertV4MiniflareOptions({
    workers: [{
      name: "check-config",
      modulesRoot: ROOT,
      modules: [
        { type: "ESModule", path: `${ROOT}scripts/check-config/entry.mjs` },
        { type: "ESModule", path: `${ROOT}build/index.js` },
        { type: "CompiledWasm", path: `${ROOT}build/index_bg.wasm` },
      ],
      compatibilityDate: config.compatibility_date ?? "2026-11-01",
      ...bindingsOf(config, secrets),
    }],
  }));
  try {
    const response = await mf.dispatchFetch("http://check-config/", { method: "POST", body: JSON.stringify(declaredObjects(config)) });
    return await response.json();
  } finally {
    await mf.dispose();
  }
}

const args = parseArgs(process.argv.slice(2));
let config;
try {
  config = unstable_readConfig({ config: args.config, env: args.env }, {});
} catch (e) {
  fail(1, [`${args.config}: ${e.message}`]);
}
const secrets = args.secrets === undefined ? undefined : readSecrets(args.secrets);
const report = await check(config, secrets);
const where = `${args.config}${args.env ? ` (env ${args.env})` : ""}`;
for (const warning of report.warnings) console.error(`warning: ${warning}`);
// Required but absent: a problem when the secrets were given, else unknown.
const errors = secrets === undefined ? report.errors : [...report.errors, ...report.missing];
if (errors.length > 0) {
  fail(1, [...errors.map((e) => `${e.variable}: ${e.message}`), `check:config: ${where}: ${errors.length} problem(s); the Worker would not run as meant`]);
}
const vars = Object.keys(config.vars ?? {}).length;
const metrics = (config.analytics_engine_datasets ?? []).some((d) => d.binding === "ANALYTICS") ? "metrics on" : "metrics off";
const secretNote = secrets === undefined
  ? `secrets not checked (${report.missing.map((e) => e.variable).join(", ") || "none"} unknown; pass --secrets FILE)`
  : `${Object.keys(secrets).length} secret(s) checked`;
console.log(`check:config: ${where}: OK — ${vars} variable(s), ${secretNote}, ${metrics}, ${report.warnings.length} warning(s)`);
