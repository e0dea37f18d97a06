// The deployed entry with its TenantLedger metered (see meter.mjs): the
// built Rust class, constructed over a ctx whose storage counts rows. One
// bench-only route besides the meter: `/__seed` copies a completed record
// into many, in one SQL statement outside the meter (see seedCompleted).
import gateway, { TenantLedger } from "../../build/index.js";
import { meterAnswer, meterCtx, metered } from "./meter.mjs";

export default gateway;

/**
 * `count` completed records older than every record the object holds, each a
 * copy of the completed record `template` (its columns as a completion wrote
 * them) under the key `seeded-NNNNNNN`: a large tenant in one statement, where
 * claiming and completing each would take minutes. The ledger's counters do
 * not see them (stats.records does not count them); listings and the sweep
 * read them as any record.
 */
function seedCompleted(sql, { template, count }) {
  if (typeof template !== "string" || !Number.isSafeInteger(count) || count < 1 || count > 1_000_000) {
    return Response.json({ error: "template (string) and count (1..1,000,000) are required" }, { status: 400 });
  }
  sql.exec(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
     INSERT INTO idempotency_records
         (key, state, generation, fingerprint, components, created_at, claimed_at,
          lease_expires_at, completed_at, expires_at, sweep_at, response_status,
          response_headers, response_body, retained, replays)
     SELECT printf('seeded-%07d', i), state, generation, fingerprint, components,
            created_at - i, claimed_at - i, lease_expires_at, completed_at - i,
            expires_at - i, sweep_at - i, response_status, response_headers,
            response_body, retained, replays
     FROM n, idempotency_records WHERE key = ?1 AND state = 'completed'`,
    template, count,
  );
  const [{ seeded }] = sql.exec("SELECT COUNT(*) AS seeded FROM idempotency_records WHERE key LIKE 'seeded-%'").toArray();
  return Response.json({ seeded });
}

export class MeteredLedger {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.path = "construct";
    this.inner = new TenantLedger(meterCtx(ctx, () => this.path), env);
  }

  async fetch(request) {
    const path = new URL(request.url).pathname;
    if (path === "/__meter") return meterAnswer();
    if (path === "/__seed") return seedCompleted(this.ctx.storage.sql, await request.json());
    // Requests run one at a time in the benchmark: the path names the call.
    this.path = path;
    return metered(path, () => this.inner.fetch(request));
  }

  async alarm(info) {
    this.path = "alarm";
    return metered("alarm", () => this.inner.alarm(info));
  }
}
