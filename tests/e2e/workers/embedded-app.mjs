// A user's own SQLite Durable Object with idempotency-ledger/ledger, for
// tests/e2e/embedded-ledger.test.mjs. The `x-op` header picks what the
// object does; every `run` inserts into its own `effects` table first, so
// the test can see what committed.
import { DurableObject } from "cloudflare:workers";
import { Ledger } from "../../../client/ledger/ledger.js";
import { fingerprint } from "../../../client/rules/fingerprint.js";

const SCHEMA = "CREATE TABLE IF NOT EXISTS effects (id INTEGER PRIMARY KEY, what TEXT NOT NULL)";

export class Shop extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec(SCHEMA);
    this.ledger = new Ledger(ctx, { required: false, maxKeys: 1000 });
  }

  effect(what) {
    this.ctx.storage.sql.exec("INSERT INTO effects (what) VALUES (?)", what);
  }

  read(url) {
    const sql = this.ctx.storage.sql;
    return Response.json({
      effects: sql.exec("SELECT what FROM effects ORDER BY id").toArray().map((r) => r.what),
      lookup: url.searchParams.has("key") ? this.ledger.lookup(url.searchParams.get("key")) : undefined,
      stats: this.ledger.stats(),
      row: sql.exec("SELECT completed, claims, replays FROM ledger_state WHERE id = 1").toArray()[0],
    });
  }

  async fetch(request) {
    const url = new URL(request.url);
    const op = request.headers.get("x-op") ?? "ok";
    try {
      return await this.serve(request, url, op);
    } catch (e) {
      return Response.json({ thrown: e instanceof Error ? e.constructor.name : typeof e, message: String(e?.message ?? e) }, { status: 599 });
    }
  }

  async serve(request, url, op) {
    switch (op) {
      case "read": return this.read(url);
      // A fresh Ledger per request, with a small quota: shares the object's counts.
      // A Ledger made with options from another library (or a typo): a TypeError before anything is touched.
      case "foreign-options": {
        const options = JSON.parse(await request.text());
        new Ledger(this.ctx, options);
        return new Response("accepted");
      }
      case "per-request": {
        const ledger = new Ledger(this.ctx, { maxKeys: 3 });
        return ledger.handle(request, ({ key }) => { this.effect(`per-request ${key}`); return { status: 201, json: { key } }; });
      }
      // Corrupts the stored counts, then ends this instance: the next one must recount.
      case "corrupt-and-restart":
        this.ctx.storage.sql.exec("UPDATE ledger_state SET completed = completed + 500 WHERE id = 1");
        this.ctx.abort("restart");
        return new Response("unreachable");
      case "response":
        return this.ledger.handle(request, ({ key }) => { this.effect(`response ${key}`); return Response.json({ key }, { status: 201 }); });
      case "bad-json":
        return this.ledger.handle(request, ({ key }) => { this.effect(`bad-json ${key}`); return { status: 201, json: () => 1 }; });
      case "throw":
        return this.ledger.handle(request, ({ key }) => { this.effect(`throw ${key}`); throw new Error("the card network refused"); });
      case "promise":
        return this.ledger.handle(request, async ({ key }) => { this.effect(`promise ${key}`); return { status: 201 }; });
      case "nested": {
        // An inner execute for another key that fails, caught: only the outer's writes stand.
        const inner = request.headers.get("x-inner");
        return this.ledger.handle(request, ({ key }) => {
          try {
            this.ledger.execute({ key: inner, fingerprint: FINGERPRINT }, () => { this.effect(`inner ${inner}`); throw new Error("inner failed"); });
          } catch { /* the caller carries on */ }
          this.effect(`outer ${key}`);
          return { status: 201, json: { key } };
        });
      }
      case "enclosed": {
        // The caller's own transaction around execute, failing afterwards.
        const key = request.headers.get("idempotency-key");
        try {
          this.ctx.storage.transactionSync(() => {
            this.ledger.execute({ key, fingerprint: FINGERPRINT }, () => { this.effect(`enclosed ${key}`); return { status: 201 }; });
            throw new Error("the caller's transaction failed afterwards");
          });
        } catch { /* rolled back */ }
        return this.read(url);
      }
      case "short-sweep": {
        // Records kept 1 s, swept one per batch: the core says where the alarm goes.
        const ledger = new Ledger(this.ctx, { retentionSeconds: 1 });
        const n = Number(url.searchParams.get("n") ?? "0");
        for (let i = 0; i < n; i++) ledger.execute({ key: `short-${i}-${url.searchParams.get("tag")}`, fingerprint: FINGERPRINT }, () => ({ status: 201 }));
        return Response.json({ now: Date.now(), swept: url.searchParams.has("sweep") ? ledger.sweep(1) : null });
      }
      default:
        return this.ledger.handle(request, ({ key, text }) => {
          this.effect(`${request.method} ${key} ${text()}`);
          return { status: request.method === "GET" ? 200 : 201, json: { key, method: request.method } };
        });
    }
  }
}

/** A well-formed fingerprint for execute calls (the gateway's, of an empty POST /x). */
const FINGERPRINT = await fingerprint({ method: "POST", target: "/x", headers: new Headers(), fingerprintHeaders: [], body: new Uint8Array() });

export default {
  async fetch(request, env) {
    const name = request.headers.get("x-object") ?? "shop";
    return env.SHOP.get(env.SHOP.idFromName(name)).fetch(request);
  },
};
