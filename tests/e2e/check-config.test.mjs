// `npm run check:config` (scripts/check-config/main.mjs): a deployment's
// wrangler.toml (and its secrets) judged offline by the built Worker's own
// rules (src/gateway/check.rs, run in workerd): a good configuration
// passes with a one-line summary; each kind of bad one fails naming the
// variable, every problem at once. And the Worker reads a variable wrangler
// hands over as a number or a table as the check does: by its JSON text,
// never as unset.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEMO_TOKENS, ROOT, orderInit, read, sha256hex, startGateway, wranglerVars } from "./harness.mjs";

/** How many [vars] wrangler.toml publishes (every default: src/config/defaults.json). */
const VARS = Object.keys(wranglerVars()).length;

const MAIN = `${ROOT}scripts/check-config/main.mjs`;
const dir = mkdtempSync(join(tmpdir(), "check-config-"));
test.after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the check with `args` (in the checkout): its exit code, stdout and stderr. */
function check(...args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { cwd: ROOT, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

let files = 0;
/** Writes `text` to a fresh file in the test's folder; its path. */
function file(text, ext = "toml") {
  const path = join(dir, `f${++files}.${ext}`);
  writeFileSync(path, text);
  return path;
}

/** The ledger's Durable Object binding (and its class's migration) as wrangler.toml declares it. */
const LEDGER = '[[durable_objects.bindings]]\nname = "TENANT_LEDGER"\nclass_name = "TenantLedger"\n[[migrations]]\ntag = "v1"\nnew_sqlite_classes = ["TenantLedger"]\n';

/** A wrangler.toml with `vars` (TOML lines), the ledger's binding (`ledger`) and any further sections. */
const toml = (vars, more = "", ledger = LEDGER) =>
  file(`name = "ledger"\nmain = "worker/entry.mjs"\ncompatibility_date = "2026-11-01"\n${ledger}${more}\n[vars]\n${vars}\n`);

const tokens = file(JSON.stringify({ API_TOKENS: JSON.stringify(DEMO_TOKENS) }), "json");

/** The `VARIABLE: detail` lines of a failed check, by variable. */
function problems(r) {
  assert.equal(r.code, 1, `exit ${r.code}\n${r.stdout}\n${r.stderr}`);
  const lines = r.stderr.split("\n").filter((l) => /^[A-Z_]+( and [A-Z_]+)?: /.test(l));
  return Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(": ")), l.slice(l.indexOf(": ") + 2)]));
}

test("the checkout's own wrangler.toml passes: one OK line; with the demo secrets (JSON or .dev.vars) they are checked too", async () => {
  const bare = await check("wrangler.toml");
  assert.equal(bare.code, 0, bare.stderr);
  assert.match(bare.stdout, new RegExp(`^check:config: wrangler\\.toml: OK — ${VARS} variable\\(s\\), secrets not checked \\(API_TOKENS unknown; pass --secrets FILE\\), metrics off, 0 warning\\(s\\)\\n$`));
  const json = await check("--secrets", tokens);
  assert.equal(json.code, 0, json.stderr);
  assert.match(json.stdout, new RegExp(`OK — ${VARS} variable\\(s\\), 1 secret\\(s\\) checked`));
  const dotenv = await check("wrangler.toml", "--secrets", `${ROOT}.dev.vars.example`);
  assert.equal(dotenv.code, 0, dotenv.stderr);
  assert.match(dotenv.stdout, /2 secret\(s\) checked/, "API_TOKENS and the demo OPERATOR_TOKENS");
});

test("every invalid variable is named at once, with what is wrong; the values of secrets never appear", async () => {
  const path = toml([
    'LEASE_SECONDS = "soon"',
    'STORED_RESPONSE_HEADERS = "content-type,set-cookie"',
    'FAILURE_POLICY = "maybe"',
    'ORIGIN_URL = "ftp://example.com"',
    'IN_FLIGHT_MAX_WAITERS = "-1"',
  ].join("\n"));
  const secret = "short-secret"; // 12 characters: LOG_HASH_KEY needs 16
  const secrets = file(JSON.stringify({ API_TOKENS: '{"nothex": "acme"}', LOG_HASH_KEY: secret }), "json");
  const r = await check(path, "--secrets", secrets);
  const got = problems(r);
  assert.deepEqual(Object.keys(got).sort(), [
    "API_TOKENS", "FAILURE_POLICY", "IN_FLIGHT_MAX_WAITERS", "LEASE_SECONDS", "LOG_HASH_KEY", "ORIGIN_URL", "STORED_RESPONSE_HEADERS",
  ]);
  assert.match(got.LEASE_SECONDS, /"soon" is not a whole number/);
  assert.match(got.STORED_RESPONSE_HEADERS, /set-cookie/);
  assert.match(got.FAILURE_POLICY, /"maybe" is not closed or open/);
  assert.match(got.API_TOKENS, /sha256/);
  assert.match(got.LOG_HASH_KEY, /too short/);
  assert.ok(!r.stderr.includes(secret) && !r.stdout.includes(secret), "a secret's value is never printed");
  assert.match(r.stderr, /7 problem\(s\)/);
});

test("the rules between variables: retention shorter than the lease; a sharded tenant needs proxy mode; TENANT_SHARDS' own shape", async () => {
  const windows = problems(await check(toml('RETENTION_SECONDS = "30"\nLEASE_SECONDS = "60"')));
  assert.match(windows["RETENTION_SECONDS and LEASE_SECONDS"], /must outlive its lease/);

  const embedded = problems(await check(toml(`TENANT_SHARDS = '{"acme": 4}'`)));
  assert.match(embedded.TENANT_SHARDS, /sharded but the gateway runs the embedded application.*"acme"/);
  const byUrl = await check(toml(`TENANT_SHARDS = '{"acme": {"shards": 4, "previous": 1}}'\nORIGIN_URL = "https://app.example"`));
  assert.equal(byUrl.code, 0, byUrl.stderr);
  const byService = await check(toml(`TENANT_SHARDS = '{"acme": 4}'`, '[[services]]\nbinding = "ORIGIN"\nservice = "app"'));
  assert.equal(byService.code, 0, byService.stderr);

  const same = problems(await check(toml(`TENANT_SHARDS = '{"acme": {"shards": 4, "previous": 4}}'\nORIGIN_URL = "https://app.example"`)));
  assert.match(same.TENANT_SHARDS, /previous equals shards/);
  const tooMany = problems(await check(toml(`TENANT_SHARDS = '{"acme": 500}'\nORIGIN_URL = "https://app.example"`)));
  assert.match(tooMany.TENANT_SHARDS, /1..=128/);
});

test("secrets: given without API_TOKENS, the check fails as the Worker would refuse everyone", async () => {
  const got = problems(await check("wrangler.toml", "--secrets", file("LOG_HASH_KEY=0123456789abcdef0123\n", "env")));
  assert.match(got.API_TOKENS, /not set/);
});

test("OPERATOR_TOKENS is judged as API_TOKENS is, a token in both is refused; CONSOLE and CONSOLE_HOST are checked", async () => {
  const operator = JSON.stringify({ [sha256hex("operator-token-acme")]: "acme" });
  const good = await check(toml('CONSOLE = "on"\nCONSOLE_HOST = "console.example.com"'), "--secrets",
    file(JSON.stringify({ API_TOKENS: JSON.stringify(DEMO_TOKENS), OPERATOR_TOKENS: operator }), "json"));
  assert.equal(good.code, 0, good.stderr);
  assert.match(good.stdout, /2 secret\(s\) checked/);

  const bad = problems(await check(toml('CONSOLE = "yes"\nCONSOLE_HOST = "https://console.example.com"'), "--secrets",
    file(JSON.stringify({ API_TOKENS: JSON.stringify(DEMO_TOKENS), OPERATOR_TOKENS: '{"nothex": "acme"}' }), "json")));
  assert.deepEqual(Object.keys(bad).sort(), ["CONSOLE", "CONSOLE_HOST", "OPERATOR_TOKENS"]);
  assert.match(bad.OPERATOR_TOKENS, /not a sha256 hex digest/);
  assert.match(bad.CONSOLE, /"yes" is not on or off/);
  assert.match(bad.CONSOLE_HOST, /is not a host name/);

  // A tenant's token listed as an operator's too: refused, and no hash is printed.
  const [hash] = Object.keys(DEMO_TOKENS);
  const both = await check("wrangler.toml", "--secrets",
    file(JSON.stringify({ API_TOKENS: JSON.stringify(DEMO_TOKENS), OPERATOR_TOKENS: JSON.stringify({ [hash]: "acme" }) }), "json"));
  assert.match(problems(both).OPERATOR_TOKENS, /also in API_TOKENS/);
  assert.ok(!both.stderr.includes(hash) && !both.stdout.includes(hash));

  const contradiction = problems(await check(toml('CONSOLE = "off"\nCONSOLE_HOST = "console.example.com"')));
  assert.match(contradiction["CONSOLE and CONSOLE_HOST"], /contradict/);
});

test("ANALYTICS: a dataset binding passes (metrics on); a variable of that name fails the check, as the Worker logs it", async () => {
  const dataset = await check(toml('LOG_LEVEL = "warn"', '[[analytics_engine_datasets]]\nbinding = "ANALYTICS"\ndataset = "idempotency"'));
  assert.equal(dataset.code, 0, dataset.stderr);
  assert.match(dataset.stdout, /metrics on/);
  const variable = problems(await check(toml('ANALYTICS = "off"')));
  assert.match(variable.ANALYTICS, /Analytics Engine dataset binding/);
});

test("--env NAME checks that environment's own [env.NAME.vars] and bindings; warnings are printed but pass", async () => {
  // Durable Object bindings are not inherited by an environment (wrangler): each declares its own.
  const envLedger = (env) => `[[env.${env}.durable_objects.bindings]]\nname = "TENANT_LEDGER"\nclass_name = "TenantLedger"\n`;
  const path = toml('LEASE_SECONDS = "60"', `[env.staging.vars]\nLEASE_SECONDS = "0"\n${envLedger("staging")}[env.slow.vars]\nORIGIN_TIMEOUT_SECONDS = "120"\n${envLedger("slow")}[env.bare.vars]\nLEASE_SECONDS = "60"`);
  assert.equal((await check(path)).code, 0);
  assert.match(problems(await check(path, "--env", "staging")).LEASE_SECONDS, /outside 1..=86400/);
  assert.match(problems(await check(path, "--env", "bare")).TENANT_LEDGER, /no binding has this name/, "an environment without its own ledger binding");
  const slow = await check(path, "--env", "slow");
  assert.equal(slow.code, 0, slow.stderr);
  assert.match(slow.stderr, /^warning: ORIGIN_TIMEOUT_SECONDS \(120\) is not below LEASE_SECONDS \(60\)/m);
  assert.match(slow.stdout, /\(env slow\): OK .* 1 warning\(s\)/);
  const missing = await check(path, "--env", "nope");
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /No environment found/);
});

test("the bindings the Worker uses: the ledger bound under another name or to another class, and an ORIGIN that is not a service binding, each fail naming the binding", async () => {
  // The reproduction: the ledger bound as TENANT_LEDGERS, FAILURE_POLICY=open, proxy mode.
  const misnamed = toml('FAILURE_POLICY = "open"\nORIGIN_URL = "https://app.example"', "",
    '[[durable_objects.bindings]]\nname = "TENANT_LEDGERS"\nclass_name = "TenantLedger"\n');
  const r = await check(misnamed, "--secrets", tokens);
  assert.deepEqual(Object.keys(problems(r)), ["TENANT_LEDGER"]);
  assert.match(problems(r).TENANT_LEDGER, /must be bound as TENANT_LEDGER, a Durable Object binding of the TenantLedger class: no binding has this name \(Durable Object bindings present: TENANT_LEDGERS\)/);
  assert.doesNotMatch(r.stdout, /OK/);

  const none = problems(await check(toml("", "", "")));
  assert.match(none.TENANT_LEDGER, /no binding has this name/);

  const otherClass = problems(await check(toml("", "", '[[durable_objects.bindings]]\nname = "TENANT_LEDGER"\nclass_name = "Ledger"\n')));
  assert.match(otherClass.TENANT_LEDGER, /bound to the class "Ledger"; the ledger is the TenantLedger class/);

  const asVariable = problems(await check(toml('TENANT_LEDGER = "ledger"', "", "")));
  assert.match(asVariable.TENANT_LEDGER, /it is a variable, not a Durable Object namespace/);

  const origin = problems(await check(toml('ORIGIN = "https://app.example"')));
  assert.deepEqual(Object.keys(origin), ["ORIGIN"]);
  assert.match(origin.ORIGIN, /must be a service binding .* but it is a variable; an origin reached by URL is ORIGIN_URL/);

  // Another class's binding beside the ledger's is no concern of the check.
  const more = await check(toml("", '[[durable_objects.bindings]]\nname = "ORDERS"\nclass_name = "Orders"\n'));
  assert.equal(more.code, 0, more.stderr);
});

test("unquoted values: a TOML number or table is read as its JSON text, so a bad one is refused, never a silent default", async () => {
  const got = problems(await check(toml("LEASE_SECONDS = 100000\nTENANT_SHARDS = { acme = 0 }")));
  assert.match(got.LEASE_SECONDS, /100000 is outside 1..=86400/);
  assert.match(got.TENANT_SHARDS, /acme must be a whole number/);
  const good = await check(toml('LEASE_SECONDS = 30\nIDEMPOTENCY_REQUIRED = false\nTENANT_SHARDS = { acme = 2 }\nORIGIN_URL = "https://app.example"'));
  assert.equal(good.code, 0, good.stderr);
});

test("an unreadable configuration fails naming the file; a misused command exits 2", async () => {
  const broken = await check(file('name = "x"\n[vars\n'));
  assert.equal(broken.code, 1);
  assert.match(broken.stderr, /f\d+\.toml: Invalid TOML/);
  assert.equal((await check("--env")).code, 2);
  assert.equal((await check("wrangler.toml", "--bogus")).code, 2);
});

test("the Worker reads a number or a table variable as the check does: a bad unquoted LEASE_SECONDS is 500 misconfigured, not the default", async () => {
  const gw = await startGateway({ vars: { LEASE_SECONDS: 100000 } });
  try {
    const r = await read(await gw.request("/v1/orders", orderInit({ key: "unquoted" })));
    assert.equal(r.status, 500, r.text);
    assert.match(r.text, /LEASE_SECONDS/);
  } finally { await gw.dispose(); }
  const shards = await startGateway({ vars: { TENANT_SHARDS: { acme: 2 } } });
  try {
    const r = await read(await shards.request("/v1/orders", orderInit({ key: "table" })));
    assert.equal(r.status, 500, r.text);
    assert.match(r.text, /TENANT_SHARDS/, "a sharded tenant in embedded mode, read from a table");
  } finally { await shards.dispose(); }
});

test("TENANT_JURISDICTIONS: an unknown jurisdiction or a bad tenant is refused naming both; a valid map passes with the reminder that a tenant's jurisdiction cannot change once it has keys", async () => {
  const bad = problems(await check(toml(`TENANT_JURISDICTIONS = '{"acme-eu": "europe"}'`)));
  assert.match(bad.TENANT_JURISDICTIONS, /"acme-eu": "europe" is not a jurisdiction \(one of eu, fedramp, fedramp-high, us\)/);
  const table = problems(await check(toml('TENANT_JURISDICTIONS = { acme = "EU" }')));
  assert.match(table.TENANT_JURISDICTIONS, /"acme": "EU" is not a jurisdiction/);
  assert.match(problems(await check(toml(`TENANT_JURISDICTIONS = '{"": "eu"}'`))).TENANT_JURISDICTIONS, /not a valid tenant id/);
  const good = await check(toml(`TENANT_JURISDICTIONS = '{"acme-eu": "eu", "gov": "fedramp-high"}'`), "--secrets", tokens);
  assert.equal(good.code, 0, good.stderr);
  assert.match(good.stderr, /^warning: TENANT_JURISDICTIONS: a tenant's jurisdiction cannot change once it has keys .* docs\/migrating\.md/m);
});
