// Capacity: how many bytes one idempotency record takes in a TenantLedger's
// SQLite database, measured (not estimated), and what that means for
// sustained new keys per second per object and per sharded tenant.
//
//   npm run bench:capacity [-- --records 1000]
//
// Runs the built Worker in workerd (Miniflare, scripts/workerd.mjs) in proxy
// mode against a local origin that answers with a body of a given size,
// writes `records` fresh keys per size, and reads the object's database
// size (`stats.db_bytes`) before and after. Then prints, for a 9 GB byte
// quota (MAX_DB_BYTES_PER_OBJECT's default) and several retentions, the
// sustained new keys/s one object holds — and N shards N times that.
import { benchOptions } from "./lib.mjs";
import { startGateway, startOrigin, ACME } from "../scripts/workerd.mjs";

const opts = benchOptions({
  records: { default: 1000, help: "fresh keys written per body size (at most 200 for 256 KiB bodies)", whole: true },
}, { usage: "npm run bench:capacity -- [options]" });
const RECORDS = opts.records;
const SIZES = [0, 200, 1024, 16 * 1024, 256 * 1024];
const QUOTA = 9_000_000_000; // MAX_DB_BYTES_PER_OBJECT default
const RETENTIONS = [["1 h", 3_600], ["24 h", 86_400], ["7 d", 604_800]];
const OBJECT_RPS = 500; // Cloudflare's guidance for a write-heavy object: 200–500 requests/s

let size = 0;
const origin = await startOrigin(() => ({ status: 201, headers: { "content-type": "application/octet-stream" }, body: Buffer.alloc(size, 97) }));
const measured = [];
for (const s of SIZES) {
  size = s;
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, LOG_LEVEL: "warn", REPLAY_CACHE_BYTES: "0" } });
  try {
    const stats = async () => (await (await gw.request("/v1/idempotency/stats", { headers: { authorization: ACME } })).json());
    const count = s >= 256 * 1024 ? Math.min(RECORDS, 200) : RECORDS;
    // One record first: the tables and indexes exist before measuring.
    await gw.request("/charges", { method: "POST", headers: { authorization: ACME, "idempotency-key": `warm-${s}` }, body: "x" }).then((r) => r.arrayBuffer());
    const before = (await stats()).db_bytes;
    for (let i = 0; i < count; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, count - i) }, (_, j) =>
        gw.request("/charges", { method: "POST", headers: { authorization: ACME, "content-type": "text/plain", "idempotency-key": `cap-${s}-${i + j}-${"k".repeat(20)}` }, body: `amount=${i + j}` })
          .then(async (r) => { await r.arrayBuffer(); if (r.status !== 201) throw new Error(`answered ${r.status}`); })));
    }
    const after = await stats();
    if (after.completed !== count + 1) throw new Error(`expected ${count + 1} records, stats say ${after.completed}`);
    measured.push({ body: s, perRecord: (after.db_bytes - before) / count, count });
    process.stderr.write(`body ${s} B: ${((after.db_bytes - before) / count).toFixed(0)} B/record over ${count} records\n`);
  } finally { await gw.dispose(); }
}
await origin.close();

const fmt = (n) => (n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(1));
console.log(`\nMeasured bytes per record (SQLite database growth / records, ${RECORDS} records per size, 32-character keys):`);
console.log("| stored body | bytes per record | records in 9 GB |");
console.log("|---|---|---|");
for (const m of measured) console.log(`| ${m.body.toLocaleString("en-US")} B | ${fmt(m.perRecord)} | ${fmt(QUOTA / m.perRecord)} |`);
console.log(`\nSustained new keys/s one object holds within a 9 GB byte quota (MAX_DB_BYTES_PER_OBJECT), by retention; N shards hold N times this. A Durable Object also serves ~${OBJECT_RPS.toLocaleString("en-US")} requests/s.`);
console.log(`| stored body | ${RETENTIONS.map(([r]) => `retention ${r}`).join(" | ")} |`);
console.log(`|---|${RETENTIONS.map(() => "---").join("|")}|`);
for (const m of measured) {
  console.log(`| ${m.body.toLocaleString("en-US")} B | ${RETENTIONS.map(([, s]) => fmt(QUOTA / m.perRecord / s)).join(" | ")} |`);
}
