// HTTP benchmark: the product against a floor, one server at a time.
//
//   npm run bench:http [-- --duration 8 --warmup 3 --connections 16 --rounds 2]
//
// Starts, one after another, each under `wrangler dev` on 127.0.0.1 with a
// fresh state directory:
//   - the floor (bench/floor): a bare JS Worker + SQLite Durable Object doing
//     the same order INSERT with no idempotency;
//   - the product (`scripts/dev.sh`, i.e. `npm run dev`) with LOG_LEVEL=info
//     (the default) and with LOG_LEVEL=warn, and with the replay cache off;
//   - the product in proxy mode with one shard and with TENANT_SHARDS
//     {"acme": 4} (fresh keys: what the routing costs);
//   - the product in proxy mode (an origin in this process) measuring fresh
//     keys with no waiter parked and with 100 waiters parked on one slow key
//     (`Prefer: wait`), alternating, to show that parked waiters cost other
//     keys nothing.
// Against each it runs the same autocannon scenarios — fresh key, replay,
// mismatch, /health — after a warm-up, `rounds` times, and prints req/s,
// p50 and p99 and the ratio to the floor measured in the same run. This
// machine is shared and noisy: the ratios are the figure, not the req/s.
// Every request's status is checked; a scenario that answers anything else
// than its expected status fails the benchmark.
import { createServer } from "node:http";
import { benchOptions } from "./lib.mjs";
import { AUTH, JSON_HEADERS, ORDER, cannon as cannonFor, floorServer, scenariosAt, unique, withServer as withServerOn } from "./server.mjs";

const opts = benchOptions({
  port: { default: 8799, help: "the servers' port", whole: true, max: 65535 },
  only: { help: "only the servers whose name includes this (the floor always runs): warn, shard, waiters, …" },
}, { load: true, usage: "npm run bench:http -- [options]" });
const { duration: DURATION, warmup: WARMUP, connections: CONNECTIONS, rounds: ROUNDS, port: PORT } = opts;
const BASE = `http://127.0.0.1:${PORT}`;

const servers = [
  floorServer(PORT),
  { name: "product, LOG_LEVEL=info (default)", vars: { LOG_LEVEL: "info" } },
  { name: "product, LOG_LEVEL=warn", vars: { LOG_LEVEL: "warn" } },
  { name: "product, LOG_LEVEL=warn, REPLAY_CACHE_BYTES=0", vars: { LOG_LEVEL: "warn", REPLAY_CACHE_BYTES: "0" } },
  {
    name: "product, proxy mode, LOG_LEVEL=warn, 1 shard",
    only: ["proxyFresh"],
    vars: () => ({ LOG_LEVEL: "warn", ORIGIN_URL: origin.url, REPLAY_CACHE_BYTES: "0" }),
  },
  {
    name: "product, proxy mode, LOG_LEVEL=warn, 4 shards",
    only: ["proxyFresh"],
    vars: () => ({ LOG_LEVEL: "warn", ORIGIN_URL: origin.url, REPLAY_CACHE_BYTES: "0", TENANT_SHARDS: '{"acme": 4}' }),
  },
  {
    name: "product, proxy mode, LOG_LEVEL=warn, waiters",
    waiters: true,
    vars: () => ({
      LOG_LEVEL: "warn", ORIGIN_URL: origin.url, LEASE_SECONDS: "600", ORIGIN_TIMEOUT_SECONDS: "300",
      IN_FLIGHT_WAIT_MAX_SECONDS: "300", REPLAY_CACHE_BYTES: "0",
    }),
  },
].filter((s) => !opts.only || s.floor || s.name.includes(opts.only));

/** The origin for proxy mode: answers at once, except the slow key's first run, held until released. */
const origin = await (async () => {
  let hold = null;
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", async () => {
      if (req.headers["idempotency-key"]?.startsWith("slow-")) {
        await (hold ??= (() => { let r; const p = new Promise((x) => { r = x; }); p.release = r; return p; })());
      }
      res.writeHead(201, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    release() { hold?.release(); hold = null; },
    close: () => { server.closeAllConnections?.(); server.close(); },
  };
})();

const scenarios = scenariosAt(BASE);
const FLOOR_SCENARIOS = ["fresh", "health"];

const cannon = (options, duration) => cannonFor(options, { connections: CONNECTIONS, duration });

async function measure(name) {
  const warm = await scenarios[name]();
  await cannon(warm.options, WARMUP);
  const rounds = [];
  for (let i = 0; i < ROUNDS; i++) {
    const { expect, options } = await scenarios[name]();
    const r = await cannon(options, DURATION);
    const codes = r.statusCodeStats ?? {};
    const wrong = Object.entries(codes).filter(([code]) => Number(code) !== expect);
    if (wrong.length || r.errors || r.timeouts) {
      throw new Error(`${name}: expected only ${expect}, got ${JSON.stringify(codes)} errors=${r.errors} timeouts=${r.timeouts}`);
    }
    rounds.push({ rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 });
  }
  const mean = (k) => rounds.reduce((a, r) => a + r[k], 0) / rounds.length;
  return { rps: mean("rps"), p50: mean("p50"), p99: mean("p99"), rounds };
}

const withServer = (server, body) => withServerOn(server, PORT, body);

/** Fresh keys in proxy mode, alternating: none parked / 100 parked on one slow key. */
async function measureWaiters() {
  const proxyFresh = async () => {
    const prefix = unique();
    let n = 0;
    return {
      url: `${BASE}/charges`, method: "POST", headers: JSON_HEADERS, body: ORDER,
      requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, "idempotency-key": `${prefix}-${n++}` } }) }],
    };
  };
  const once = async () => {
    const r = await cannon(await proxyFresh(), DURATION);
    const codes = r.statusCodeStats ?? {};
    if (Object.keys(codes).some((c) => c !== "201") || r.errors || r.timeouts) {
      throw new Error(`proxy fresh: expected only 201, got ${JSON.stringify(codes)} errors=${r.errors} timeouts=${r.timeouts}`);
    }
    return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
  };
  const stats = async () => (await (await fetch(`${BASE}/v1/idempotency/stats`, { headers: { authorization: AUTH } })).json());
  await cannon(await proxyFresh(), WARMUP);
  const none = [], parked = [];
  for (let i = 0; i < ROUNDS; i++) {
    none.push(await once());
    // Park 100 waiters on one slow key, measure, then let them all replay.
    const key = `slow-${unique()}`;
    const headers = { ...JSON_HEADERS, "idempotency-key": key };
    const first = fetch(`${BASE}/charges`, { method: "POST", headers, body: ORDER });
    for (let t = 0; (await stats()).in_flight < 1; t++) {
      if (t > 200) throw new Error("the slow key never went in flight");
      await new Promise((r) => setTimeout(r, 50));
    }
    const waiters = Array.from({ length: 100 }, () =>
      fetch(`${BASE}/charges`, { method: "POST", headers: { ...headers, prefer: "wait=300" }, body: ORDER }));
    for (let t = 0; (await stats()).waiting < 100; t++) {
      if (t > 400) throw new Error("100 waiters were not parked");
      await new Promise((r) => setTimeout(r, 50));
    }
    const during = await once();
    if ((await stats()).waiting !== 100) throw new Error("the waiters did not stay parked during the measurement");
    parked.push(during);
    origin.release();
    if ((await first).status !== 201) throw new Error("the slow first run failed");
    for (const w of await Promise.all(waiters)) {
      if (w.status !== 201 || w.headers.get("idempotent-replayed") !== "true") throw new Error(`a waiter got ${w.status}`);
    }
  }
  const mean = (rs) => ({ rps: rs.reduce((a, r) => a + r.rps, 0) / rs.length, p50: rs.reduce((a, r) => a + r.p50, 0) / rs.length, p99: rs.reduce((a, r) => a + r.p99, 0) / rs.length, rounds: rs });
  const out = { "proxy fresh, none parked": mean(none), "proxy fresh, 100 parked": mean(parked) };
  for (const [name, m] of Object.entries(out)) process.stderr.write(`   ${name}: ${m.rounds.map((r) => r.rps.toFixed(0)).join(" / ")} req/s\n`);
  return out;
}

const results = [];
for (const server of servers) {
  process.stderr.write(`== ${server.name}\n`);
  const names = server.floor ? FLOOR_SCENARIOS : server.only ?? Object.keys(scenarios).filter((s) => s !== "proxyFresh");
  if (typeof server.vars === "function") server.vars = server.vars();
  const measured = await withServer(server, async () => {
    if (server.waiters) return measureWaiters();
    const out = {};
    for (const name of names) {
      out[name] = await measure(name);
      process.stderr.write(`   ${name}: ${out[name].rounds.map((r) => r.rps.toFixed(0)).join(" / ")} req/s\n`);
    }
    return out;
  });
  results.push({ server, measured });
}

const floor = results.find((r) => r.server.floor)?.measured;
const fmt = (n, d = 0) => (n === undefined ? "—" : n.toFixed(d));
console.log(`\nautocannon, ${CONNECTIONS} connections, ${DURATION} s x ${ROUNDS} rounds after a ${WARMUP} s warm-up, one server at a time`);
console.log("| server | scenario | req/s | p50 ms | p99 ms | vs floor |");
console.log("|---|---|---|---|---|---|");
for (const { server, measured } of results) {
  for (const [name, m] of Object.entries(measured)) {
    const oneShard = results.find((r) => r.server.name.endsWith("1 shard"))?.measured?.proxyFresh;
    const ref = name === "health" ? floor?.health
      : name.endsWith("100 parked") ? measured["proxy fresh, none parked"]
      : server.name.endsWith("4 shards") ? oneShard
      : floor?.fresh;
    const ratio = ref ? `${(m.rps / ref.rps).toFixed(2)}x` : "—";
    const p99 = ref && name !== "health" ? ` (${(m.p99 / ref.p99).toFixed(2)}x)` : "";
    console.log(`| ${server.name} | ${name} | ${fmt(m.rps)} | ${fmt(m.p50, 1)} | ${fmt(m.p99, 1)}${p99} | ${ratio} |`);
  }
}
console.log("\n`vs floor`: POST scenarios against the floor's fresh POST, /health against the floor's /health; p99 ratio in brackets.");
console.log("`proxy fresh, 100 parked` is against `proxy fresh, none parked` of the same server (alternating rounds), not the floor.");
console.log("`4 shards` is against `1 shard` (both proxy mode). One local workerd process runs every object on one thread, so sharding cannot add throughput here: the ratio shows what the routing costs; on Cloudflare each shard is its own object with its own ~1,000 requests/s.");
origin.close();
