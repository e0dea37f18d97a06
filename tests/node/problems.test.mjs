// One problem catalog for both languages: the JS package renders every
// problem document from docs/problems.json (as client/rules/problems.js), and
// its answers are exactly the ones tests/fixtures/problem-documents.json
// pins for the Rust gateway too.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { refusalResponse, replayResponse, withIdempotency } from "../../client/index.js";
import { PROBLEM_CATALOG, problemResponse, problemDocument } from "../../client/rules/problems.js";

const ROOT = new URL("../../", import.meta.url).pathname;
const readJson = (path) => JSON.parse(readFileSync(`${ROOT}${path}`, "utf8"));
const fixture = readJson("tests/fixtures/problem-documents.json");

/** Status, headers (lowercase name → value) and body text of a Response. */
async function answer(res) {
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
}

/** The exact answer a fixture case pins: its status, exactly its headers, its body bytes. */
function expected(c) {
  return { status: c.status, headers: Object.fromEntries(c.headers), body: c.body };
}

test("client/rules/problems.js carries docs/problems.json exactly (one catalog, proven copy)", () => {
  assert.deepStrictEqual(PROBLEM_CATALOG, readJson("docs/problems.json"));
  assert.ok(Object.isFrozen(PROBLEM_CATALOG.problems["idempotency-key-in-use"]), "the catalog cannot be changed at run time");
});

test("refusalResponse renders every pinned refusal exactly (status, headers, body bytes)", async () => {
  assert.ok(fixture.refusals.length >= 6);
  for (const c of fixture.refusals) {
    assert.deepEqual(await answer(refusalResponse(c.refusal)), expected(c), c.name);
  }
});

test("problemResponse renders every pinned problem exactly (status, headers, body bytes)", async () => {
  assert.ok(fixture.problems.length >= 4);
  for (const c of fixture.problems) {
    assert.deepEqual(await answer(problemResponse(c.slug, { args: c.args, detail: c.detail })), expected(c), c.name);
  }
});

test("every catalog problem renders: type from the base, title and status from the catalog, members in order", () => {
  for (const [slug, entry] of Object.entries(PROBLEM_CATALOG.problems)) {
    const args = Object.fromEntries([...(entry.detail ?? "").matchAll(/\{(\w+)\}/g)].map(([, name]) => [name, `<${name}>`]));
    const doc = problemDocument(slug, { args, ...(entry.detail ? {} : { detail: "from the call site" }), extensions: { z_last: 1, a_first: 2 } });
    assert.deepEqual(Object.keys(doc), ["type", "title", "status", "detail", "a_first", "z_last"], slug);
    assert.equal(doc.type, PROBLEM_CATALOG.base + slug);
    assert.equal(doc.title, entry.title);
    assert.equal(doc.status, entry.status);
    assert.doesNotMatch(doc.detail, /[{}]/, `${slug}: every placeholder filled`);
  }
  const reused = problemDocument("idempotency-key-reused", { args: { differs: ["body", "header:x"] } });
  assert.equal(reused.detail, "this Idempotency-Key was used for a different request (body, header:x differs)");
});

test("problemResponse refuses bad input with a TypeError naming it", () => {
  assert.throws(() => problemResponse("no-such-problem"), { name: "TypeError", message: /unknown problem "no-such-problem"/ });
  assert.throws(() => problemResponse("toString"), { name: "TypeError", message: /unknown problem/ });
  assert.throws(() => problemResponse("request-too-large"), { name: "TypeError", message: /needs argument limit/ });
  assert.throws(() => problemResponse("origin-timeout"), { name: "TypeError", message: /no catalog detail/ });
  assert.throws(() => problemResponse("origin-timeout", { detail: "x", extensions: { status: 200 } }), { name: "TypeError", message: /extension status/ });
  for (const bad of [null, undefined, { outcome: "claimed", generation: 1, takeover: false }, { outcome: "what" }]) {
    assert.throws(() => refusalResponse(bad), { name: "TypeError", message: /not a refusal/ }, JSON.stringify(bad));
  }
});

test("the middleware answers a missing and an invalid key with the pinned documents", async () => {
  const byName = Object.fromEntries(fixture.problems.map((c) => [c.name, c]));
  const ledger = () => { throw new Error("the ledger is not asked"); };
  const handler = withIdempotency(() => new Response("ran"), { ledger });
  const missing = await handler(new Request("https://x/pay", { method: "POST", body: "{}" }), {}, undefined);
  assert.deepEqual(await answer(missing), expected(byName["key missing"]));
  const empty = await handler(new Request("https://x/pay", { method: "POST", body: "{}", headers: { "idempotency-key": '""' } }), {}, undefined);
  assert.deepEqual(await answer(empty), expected(byName["key invalid"]));
});

test("a tombstone replays as 500 idempotency-response-not-retained, from the catalog", async () => {
  const r = await answer(replayResponse({ status: 202, headers: [], body: null }));
  assert.equal(r.status, 500);
  assert.equal(r.headers["idempotent-replayed"], "true");
  const doc = JSON.parse(r.body);
  assert.equal(doc.type, `${PROBLEM_CATALOG.base}idempotency-response-not-retained`);
  assert.equal(doc.detail, PROBLEM_CATALOG.problems["idempotency-response-not-retained"].detail);
  assert.equal(doc.original_status, 202);
});

test("no JS module writes a problem type or base of its own: they come from the catalog", () => {
  const sources = [
    ...readdirSync(`${ROOT}client`, { recursive: true }).filter((f) => f.endsWith(".js") && f !== "rules/problems.js" && f !== "generated/problems.js").map((f) => `client/${f}`),
    "worker/entry.mjs",
    "worker/console.mjs",
  ];
  for (const path of sources) {
    const text = readFileSync(`${ROOT}${path}`, "utf8");
    assert.doesNotMatch(text, /idempotency-ledger\.dev\/problems|PROBLEM_BASE/, path);
  }
});
