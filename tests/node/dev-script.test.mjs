// `npm run dev` (scripts/dev.sh) with TENANT_JURISDICTIONS set: local
// workerd cannot keep a jurisdiction, so it refuses loudly unless
// LOCAL_IGNORE_JURISDICTIONS=1, which starts wrangler with the variable
// emptied (every tenant unrestricted, locally). Run on a copy of the script
// whose `wrangler` and setup are stand-ins that record what they were given.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = new URL("../../", import.meta.url).pathname;

/** Runs scripts/dev.sh in a scratch root with `files` and `env`: its status, stderr and wrangler's arguments. */
function dev({ files = {}, args = [], env = {} } = {}) {
  const root = mkdtempSync(join(tmpdir(), "dev-sh-"));
  try {
    mkdirSync(join(root, "scripts"));
    mkdirSync(join(root, "node_modules/.bin"), { recursive: true });
    copyFileSync(join(ROOT, "scripts/dev.sh"), join(root, "scripts/dev.sh"));
    copyFileSync(join(ROOT, "scripts/env.sh"), join(root, "scripts/env.sh"));
    writeFileSync(join(root, "scripts/setup.sh"), "true\n");
    writeFileSync(join(root, ".dev.vars.example"), "API_TOKENS='{}'\n");
    const wrangler = join(root, "node_modules/.bin/wrangler");
    writeFileSync(wrangler, `#!/usr/bin/env bash\nprintf '%s\\n' "$@" > "${root}/wrangler-args"\n`);
    chmodSync(wrangler, 0o755);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text);
    const r = spawnSync("bash", [join(root, "scripts/dev.sh"), ...args], { env: { ...process.env, LOCAL_IGNORE_JURISDICTIONS: "", ...env }, encoding: "utf8" });
    let started = null;
    try { started = readFileSync(join(root, "wrangler-args"), "utf8").trim().split("\n"); } catch {}
    return { status: r.status, stderr: r.stderr, started };
  } finally { rmSync(root, { recursive: true, force: true }); }
}

test("npm run dev refuses TENANT_JURISDICTIONS loudly (wrangler.toml, .dev.vars or --var), and never starts wrangler", () => {
  for (const setting of [
    { files: { "wrangler.toml": '[vars]\nTENANT_JURISDICTIONS = \'{"acme": "eu"}\'\n' } },
    { files: { "wrangler.toml": '[vars]\nTENANT_JURISDICTIONS = { acme = "eu" }\n' } },
    { files: { ".dev.vars": 'TENANT_JURISDICTIONS=\'{"acme":"eu"}\'\n' } },
    { args: ["--var", 'TENANT_JURISDICTIONS:{"acme":"eu"}'] },
  ]) {
    const r = dev(setting);
    assert.equal(r.status, 1, JSON.stringify(setting));
    assert.match(r.stderr, /TENANT_JURISDICTIONS is set, and local workerd cannot keep a\s+Durable Object in a jurisdiction/);
    assert.match(r.stderr, /LOCAL_IGNORE_JURISDICTIONS=1 npm run dev/);
    assert.equal(r.started, null, "wrangler never started");
  }
});

test("LOCAL_IGNORE_JURISDICTIONS=1 starts it with TENANT_JURISDICTIONS emptied, saying so; unset or empty it changes nothing", () => {
  const r = dev({ files: { "wrangler.toml": '[vars]\nTENANT_JURISDICTIONS = \'{"acme": "eu"}\'\n' }, env: { LOCAL_IGNORE_JURISDICTIONS: "1" } });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /TENANT_JURISDICTIONS is IGNORED; every tenant's objects are created UNRESTRICTED/);
  assert.deepEqual(r.started.slice(0, 2), ["dev", "--port"]);
  assert.deepEqual(r.started.slice(-2), ["--var", "TENANT_JURISDICTIONS:"]);
  for (const toml of ["[vars]\n", '[vars]\nTENANT_JURISDICTIONS = ""\n', '[vars]\n# TENANT_JURISDICTIONS = \'{"acme": "eu"}\'\n']) {
    const plain = dev({ files: { "wrangler.toml": toml } });
    assert.equal(plain.status, 0, plain.stderr);
    assert.ok(!plain.started.includes("TENANT_JURISDICTIONS:"), toml);
    assert.doesNotMatch(plain.stderr, /TENANT_JURISDICTIONS/);
  }
});
