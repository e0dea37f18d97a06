// The deployed entry with its TenantLedger started over a schema-1
// database (tests/e2e/upgrade.test.mjs): before the Rust class is made,
// an empty object's SQLite gets the v1 tables (as tests/fixtures/ledger-v1.sqlite
// has them) and RECORDS completed records written by that schema, so the
// real TenantLedger finds a large v1 ledger on its first start. The
// V1_IN_FLIGHT variable (JSON: [{ key, generation, fingerprint }]) adds
// claims the v1 code granted and never settled, behind every other record
// (the upgrade's last step would move them).
export { default, LedgerService } from "../../../worker/entry.mjs";
import { TenantLedger } from "../../../build/index.js";

const RECORDS = 100_000;

const V1 = [
  `CREATE TABLE idempotency_records (
        key              TEXT PRIMARY KEY NOT NULL,
        state            TEXT NOT NULL CHECK (state IN ('in_flight', 'completed', 'released')),
        generation       INTEGER NOT NULL CHECK (generation >= 1),
        fingerprint      TEXT NOT NULL,
        components       TEXT NOT NULL,
        created_at       INTEGER NOT NULL,
        claimed_at       INTEGER NOT NULL,
        lease_expires_at INTEGER,
        completed_at     INTEGER,
        expires_at       INTEGER NOT NULL,
        response_status  INTEGER,
        response_headers TEXT,
        response_body    BLOB,
        retained         INTEGER,
        replays          INTEGER NOT NULL DEFAULT 0
    )`,
  "CREATE INDEX idempotency_records_expires_at ON idempotency_records (expires_at)",
  "CREATE TABLE ledger_counters (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL)",
  "INSERT INTO ledger_counters (name, value) VALUES ('claims', 100000), ('replays', 7)",
];

export class V1Ledger {
  constructor(ctx, env) {
    const sql = ctx.storage.sql;
    const empty = sql.exec("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'idempotency_records' OR name = 'ledger_state'").one().n === 0;
    if (empty) {
      ctx.storage.transactionSync(() => {
        for (const ddl of V1) sql.exec(ddl);
        const now = Date.now();
        sql.exec(
          `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
           INSERT INTO idempotency_records (key, state, generation, fingerprint, components, created_at,
               claimed_at, completed_at, expires_at, response_status, response_headers, response_body, retained)
           SELECT 'v1-' || printf('%06d', i), 'completed', 1, ?, '[]', ?, ?, ?, ?, 201,
                  '[["content-type","text/plain"]]', X'6F6B', 1
           FROM n`,
          RECORDS - 1, "a".repeat(64), now, now, now, now + 3_600_000,
        );
        for (const { key, generation, fingerprint } of JSON.parse(env.V1_IN_FLIGHT ?? "[]")) {
          sql.exec(
            `INSERT INTO idempotency_records (key, state, generation, fingerprint, components, created_at,
                 claimed_at, lease_expires_at, expires_at)
             VALUES (?, 'in_flight', ?, ?, ?, ?, ?, ?, ?)`,
            key, generation, fingerprint.digest, JSON.stringify(fingerprint.components), now, now,
            now + 600_000, now + 3_600_000,
          );
        }
      });
    }
    this.inner = new TenantLedger(ctx, env);
  }

  fetch(request) {
    return this.inner.fetch(request);
  }

  alarm(info) {
    return this.inner.alarm(info);
  }
}
