// The generated copies of the shared rules (client/generated/, written by
// scripts/generate.mjs from docs/problems.json, src/config/defaults.json and
// src/ledger/outcome/trended.json): a hand edit, or a home changed without
// regenerating, fails here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { spawnSync } from "node:child_process";

const ROOT = new URL("../../", import.meta.url).pathname;
const readJson = (path) => JSON.parse(readFileSync(`${ROOT}${path}`, "utf8"));

test("client/generated/ holds byte for byte what scripts/generate.mjs writes from the rules' homes", async () => {
  const out = mkdtempSync(`${tmpdir()}/generated-`);
  try {
    const r = spawnSync(process.execPath, [`${ROOT}scripts/generate.mjs`, out], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const { generated } = await import("../../scripts/generate.mjs");
    const paths = Object.keys(generated());
    const committed = readdirSync(`${ROOT}client/generated`).filter((f) => f.endsWith(".js")).map((f) => `client/generated/${f}`);
    assert.deepEqual(committed.sort(), paths.filter((p) => p.startsWith("client/generated/")).sort(), "every generated file, and no other .js, is in client/generated/");
    for (const path of paths) {
      assert.equal(
        readFileSync(`${ROOT}${path}`, "utf8"),
        readFileSync(`${out}/${path}`, "utf8"),
        `${path} differs from what its home generates: edit the home, then run node scripts/generate.mjs`,
      );
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test("the generated modules carry their homes: the catalog verbatim, DEFAULTS from the variables, TRENDED in order", async () => {
  const { PROBLEM_CATALOG } = await import("../../client/generated/problems.js");
  assert.deepEqual(PROBLEM_CATALOG, readJson("docs/problems.json"));
  const { DEFAULTS } = await import("../../client/generated/defaults.js");
  const { variables, package: options } = readJson("src/config/defaults.json");
  assert.deepEqual(Object.keys(DEFAULTS), Object.keys(options));
  for (const [name, { variable, list }] of Object.entries(options)) {
    const shown = Array.isArray(DEFAULTS[name]) ? DEFAULTS[name].join(",") : String(DEFAULTS[name]);
    assert.equal(shown, list ? variables[variable].split(",").map((s) => s.trim()).join(",") : variables[variable], name);
  }
  const { TRENDED } = await import("../../client/generated/trended.js");
  assert.deepEqual([...TRENDED], readJson("src/ledger/outcome/trended.json").trended);
  assert.ok(Object.isFrozen(TRENDED) && Object.isFrozen(PROBLEM_CATALOG.problems));
});

test("the JS surfaces take the generated rules, not copies: problems, defaults, the shards' trend sum and the console's series", async () => {
  const problems = await import("../../client/rules/problems.js");
  const generated = await import("../../client/generated/problems.js");
  assert.equal(problems.PROBLEM_CATALOG, generated.PROBLEM_CATALOG);
  assert.equal((await import("../../client/rules/defaults.js")).DEFAULTS, (await import("../../client/generated/defaults.js")).DEFAULTS);
  const { TRENDED } = await import("../../client/generated/trended.js");
  const { CONSOLE_SCRIPTS } = await import("../../worker/console/files.mjs");
  assert.match(CONSOLE_SCRIPTS["panels.js"], /import \{ TRENDED \} from "\.\/trended\.js";/);
  assert.ok(CONSOLE_SCRIPTS["trended.js"].includes(`(${JSON.stringify(TRENDED).replaceAll(",", ", ")})`));
  // No other module writes the list out: a copy would miss the next count added to the home.
  const names = TRENDED.map((n) => JSON.stringify(n)).join(",\\s*");
  const sources = [
    ...readdirSync(`${ROOT}client`, { recursive: true }).filter((f) => f.endsWith(".js") && !f.startsWith("generated/")).map((f) => `client/${f}`),
    ...readdirSync(`${ROOT}worker`).filter((f) => f.endsWith(".mjs")).map((f) => `worker/${f}`),
    ...readdirSync(`${ROOT}worker/console/browser`).filter((f) => f.endsWith(".js") && f !== "trended.js").map((f) => `worker/console/browser/${f}`),
  ];
  for (const path of sources) assert.doesNotMatch(readFileSync(`${ROOT}${path}`, "utf8"), new RegExp(names), path);
});
