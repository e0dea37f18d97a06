// The Worker of `npm run bench:embedded`: two SQLite Durable Objects doing
// the same INSERT for a POST — `Bare` with no idempotency, `Embedded` with
// idempotency-ledger/ledger's `Ledger.handle` around the same INSERT (its
// record and the row in one transaction). What `Embedded` costs beyond
// `Bare` is the price of exactly-once inside your own object.
import { DurableObject } from "cloudflare:workers";
import { Ledger } from "../../client/ledger/ledger.js";

const SCHEMA = "CREATE TABLE IF NOT EXISTS charges (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL)";

/** The INSERT both objects run, and its answer. */
function charge(sql, text) {
  const amount = Number(text);
  const { id } = sql.exec("INSERT INTO charges (amount) VALUES (?) RETURNING id", amount).one();
  return { status: 201, json: { id, amount } };
}

export class Bare extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec(SCHEMA);
  }

  async fetch(request) {
    const { status, json } = charge(this.ctx.storage.sql, await request.text());
    return Response.json(json, { status });
  }
}

export class Embedded extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec(SCHEMA);
    this.ledger = new Ledger(ctx);
  }

  async fetch(request) {
    return this.ledger.handle(request, ({ text }) => charge(this.ctx.storage.sql, text()));
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/health") return Response.json({ status: "ok" });
    const ns = url.pathname === "/bare" ? env.BARE : env.EMBEDDED;
    return ns.get(ns.idFromName("bench")).fetch(request);
  },
};
