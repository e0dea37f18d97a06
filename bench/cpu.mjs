// CPU per request — the figure to steer by (docs/development.md): the
// server's own CPU, not req/s from a load generator sharing the 2 cores.
//
//   npm run bench:cpu [-- --duration 8 --warmup 3 --connections 16 --rounds 2 --no-rust-floor]   (--help: bench/lib.mjs)
//
// Each round starts, one after another, each server under `wrangler dev`
// (bench/server.mjs): the floor (a bare JS Worker + SQLite Durable Object
// doing the same order INSERT), the product with LOG_LEVEL=warn, the
// product with the replay cache off, and the Rust floor (bench/floor-rs:
// the floor written with workers-rs 0.8.7, built by its build.sh; left out
// with --no-rust-floor). Against each it runs every scenario
// after a warm-up: it reads utime + stime of every process in the
// server's process group (/proc/PID/stat: wrangler's Node and workerd)
// before and after a fixed autocannon load, and divides by the requests
// completed; the last two columns count the workerd processes alone (the
// runtime; wrangler's Node proxy is a fixed cost a deployment does not
// have, and its noise). Rounds alternate the servers, so a noisy minute hits both.
// Ratios are floor CPU ÷ product CPU (1.0 = as cheap as the floor):
// fresh key, mismatch and replay without the cache against the floor's
// fresh POST; a cached replay and /health against the floor's /health.
// The Rust floor's rows split the product's cost in two: JS floor ÷ Rust
// floor is what the workers-rs binding costs (platform), Rust floor ÷
// product what the product adds on top of it (the contract). The
// hand-written store (bench/handwritten: the same contract in plain JS,
// left out with --no-handwritten) is the reference a user compares the
// product to: its rows are hand-written ÷ product.
import { readdirSync, readFileSync } from "node:fs";
import { benchOptions } from "./lib.mjs";
import { cannon, floorServer, handwrittenServer, rustFloorServer, scenariosAt, withServer } from "./server.mjs";

const opts = benchOptions({
  port: { default: 8798, help: "the servers' port", whole: true, max: 65535 },
  "no-rust-floor": { default: false, help: "leave the Rust floor (bench/floor-rs) out" },
  "no-handwritten": { default: false, help: "leave the hand-written store (bench/handwritten) out" },
}, { load: true, usage: "npm run bench:cpu -- [options]" });
const { duration: DURATION, warmup: WARMUP, connections: CONNECTIONS, rounds: ROUNDS, port: PORT } = opts;
const scenarios = scenariosAt(`http://127.0.0.1:${PORT}`);
const TICKS_PER_SECOND = 100; // Linux USER_HZ

const servers = [
  { ...floorServer(PORT), scenarios: ["fresh", "health"] },
  { name: "product, LOG_LEVEL=warn", vars: { LOG_LEVEL: "warn" }, scenarios: ["fresh", "replay", "mismatch", "health"] },
  { name: "product, LOG_LEVEL=warn, REPLAY_CACHE_BYTES=0", vars: { LOG_LEVEL: "warn", REPLAY_CACHE_BYTES: "0" }, scenarios: ["replay"] },
  ...(opts["no-rust-floor"] ? [] : [{ ...rustFloorServer(PORT), scenarios: ["fresh", "health"] }]),
  ...(opts["no-handwritten"] ? [] : [{ ...handwrittenServer(PORT), scenarios: ["fresh", "replay", "mismatch"] }]),
];
const byName = (results, server) => server && results[server.name];
const RUST_FLOOR = servers.find((s) => s.name === rustFloorServer(PORT).name);
const HANDWRITTEN = servers.find((s) => s.name === handwrittenServer(PORT).name);

/**
 * utime + stime, in milliseconds, of every live process in process group
 * `pgid`, and of its workerd processes alone (the runtime that runs the
 * Worker; the rest is wrangler's Node, its dev proxy, a fixed cost per
 * request that a deployment does not have).
 */
function groupCpuMs(pgid) {
  let ticks = 0;
  let workerd = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try { stat = readFileSync(`/proc/${entry}/stat`, "utf8"); } catch { continue; }
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // After the name: state(0) ppid(1) pgrp(2) … utime(11) stime(12).
    if (Number(fields[2]) !== pgid) continue;
    const used = Number(fields[11]) + Number(fields[12]);
    ticks += used;
    if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) === "workerd") workerd += used;
  }
  const ms = (t) => (t * 1000) / TICKS_PER_SECOND;
  return { all: ms(ticks), workerd: ms(workerd) };
}

async function measure(child, name) {
  const warm = await scenarios[name]();
  await cannon(warm.options, { connections: CONNECTIONS, duration: WARMUP });
  const { expect, options } = await scenarios[name]();
  const before = groupCpuMs(child.pid);
  const r = await cannon(options, { connections: CONNECTIONS, duration: DURATION });
  const after = groupCpuMs(child.pid);
  const codes = r.statusCodeStats ?? {};
  const wrong = Object.entries(codes).filter(([code]) => Number(code) !== expect);
  if (wrong.length || r.errors || r.timeouts) {
    throw new Error(`${name}: expected only ${expect}, got ${JSON.stringify(codes)} errors=${r.errors} timeouts=${r.timeouts}`);
  }
  const per = (k) => (after[k] - before[k]) / r.requests.total;
  return { msPerRequest: per("all"), workerdMs: per("workerd"), requests: r.requests.total };
}

/** results[server][scenario] = [ms per request, one per round]; workerd[…] the same, workerd alone */
const results = Object.fromEntries(servers.map((s) => [s.name, {}]));
const workerd = Object.fromEntries(servers.map((s) => [s.name, {}]));
for (let round = 1; round <= ROUNDS; round++) {
  for (const server of round % 2 ? servers : [...servers].reverse()) {
    process.stderr.write(`== round ${round}: ${server.name}\n`);
    await withServer(server, PORT, async (child) => {
      for (const name of server.scenarios) {
        const m = await measure(child, name);
        (results[server.name][name] ??= []).push(m.msPerRequest);
        (workerd[server.name][name] ??= []).push(m.workerdMs);
        process.stderr.write(`   ${name}: ${m.msPerRequest.toFixed(3)} ms CPU per request, ${m.workerdMs.toFixed(3)} in workerd (${m.requests} requests)\n`);
      }
    });
  }
}

const mean = (xs) => xs.reduce((a, x) => a + x, 0) / xs.length;
const rowsOf = (results) => {
const floor = results[servers[0].name];
const product = results[servers[1].name];
const uncached = results[servers[2].name];
const rustFloor = byName(results, RUST_FLOOR);
const handwritten = byName(results, HANDWRITTEN);
return [
  ["fresh key", product.fresh, floor.fresh, "floor fresh"],
  ["replay, cache on", product.replay, floor.health, "floor /health"],
  ["replay, cache off", uncached.replay, floor.fresh, "floor fresh"],
  ["mismatch 422", product.mismatch, floor.fresh, "floor fresh"],
  ["/health", product.health, floor.health, "floor /health"],
  // The split: the workers-rs binding (the Rust floor against the JS floor),
  // then the product against the Rust floor. Here "product" is the column's
  // subject, the Rust floor in the first two rows.
  ...(rustFloor ? [
    ["Rust floor fresh ÷ JS floor fresh", rustFloor.fresh, floor.fresh, "JS floor fresh"],
    ["Rust floor /health ÷ JS floor /health", rustFloor.health, floor.health, "JS floor /health"],
    ["fresh key, against the Rust floor", product.fresh, rustFloor.fresh, "Rust floor fresh"],
  ] : []),
  // The reference a user compares the product to: hand-written ÷ product
  // (1.0 = as cheap as the hand-written store; above 1, cheaper).
  ...(handwritten ? [
    ["hand-written store fresh ÷ JS floor fresh", handwritten.fresh, floor.fresh, "JS floor fresh"],
    ["fresh key, against the hand-written store", product.fresh, handwritten.fresh, "hand-written fresh"],
    ["replay (cache on), against the hand-written store", product.replay, handwritten.replay, "hand-written replay"],
    ["mismatch 422, against the hand-written store", product.mismatch, handwritten.mismatch, "hand-written mismatch"],
  ] : []),
];
};
const rows = rowsOf(results);
const workerdRows = rowsOf(workerd);
console.log(`\nServer CPU per request (utime + stime of the dev server's processes), ${CONNECTIONS} connections, ${DURATION} s after a ${WARMUP} s warm-up, ${ROUNDS} rounds alternating servers`);
console.log("| scenario | product ms/request (rounds) | reference | reference ms/request (rounds) | floor ÷ product | workerd alone: product, reference ms/request | floor ÷ product, workerd alone |");
console.log("|---|---|---|---|---|---|---|");
rows.forEach(([name, p, ref, refName], i) => {
  const f = (xs) => `${mean(xs).toFixed(3)} (${xs.map((x) => x.toFixed(3)).join(", ")})`;
  const [, wp, wref] = workerdRows[i];
  console.log(`| ${name} | ${f(p)} | ${refName} | ${f(ref)} | ${(mean(ref) / mean(p)).toFixed(2)} | ${mean(wp).toFixed(3)}, ${mean(wref).toFixed(3)} | ${(mean(wref) / mean(wp)).toFixed(2)} |`);
});
if (RUST_FLOOR) {
  console.log("\nIn the two \"Rust floor … ÷ JS floor …\" rows the product column is the Rust floor (bench/floor-rs) and the ratio JS floor ÷ Rust floor: what the workers-rs binding costs. The last row is Rust floor ÷ product: what the product adds over the binding.");
}
