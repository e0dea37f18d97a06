// The Durable Object of js-surfaces-model-ledger.test.mjs: a SQLite
// object with idempotency-ledger/ledger's `Ledger` embedded, made once per
// object, whose `run` does what each request's instruction (its JSON body,
// so part of the fingerprint) tells it: insert one row into the object's
// own `effects` table, then answer, throw, or answer something the ledger
// must refuse (a Promise, a Response, a status out of range, a json value
// JSON cannot encode, a body of the wrong type, an invalid header). `GET /state` shows the test the object's own tables: every
// effect row, `ledger.lookup(key)` of the keys it names, `ledger.stats()`.
//
// The answers are made from the instruction and the effect row's `n` by
// the rules of ./ledger-model-bodies.mjs, which the test uses too, to know
// the bytes each first answer must carry.
import { DurableObject } from "cloudflare:workers";
import { Ledger } from "../../../client/ledger/ledger.js";
import { bodyOf, bytesOf, jsonOf, headerPairsOf } from "./ledger-model-bodies.mjs";

/** The cap the test's model is built around: bodies past it are stored as tombstones. */
const MAX_STORED_BODY_BYTES = 64;

/** The answer's headers in the form the instruction asks (a record, pairs, or a Headers). */
function headersOf(i, n) {
  const pairs = headerPairsOf(i, n);
  if (i.hf === 1) return pairs;
  if (i.hf === 2) return new Headers(pairs);
  return Object.fromEntries(pairs);
}

export class ModelLedger extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS effects (n INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL)");
    // One Ledger per object; required: false so keyless requests run (unprotected).
    this.ledger = new Ledger(ctx, { maxStoredBodyBytes: MAX_STORED_BODY_BYTES, required: false });
  }

  /** The request's `run`: one effect row, then what the instruction says. */
  run(key, i) {
    const sql = this.ctx.storage.sql;
    const { n } = sql.exec("INSERT INTO effects (key) VALUES (?) RETURNING n", key ?? `~nokey:${i.req}`).one();
    const status = i.s === undefined ? {} : { status: i.s };
    switch (i.b) {
      case "json": return { ...status, headers: headersOf(i, n), json: jsonOf(n, i.z) };
      case "text": return { ...status, headers: headersOf(i, n), body: bodyOf(n, i.z) };
      case "bytes": return { ...status, headers: headersOf(i, n), body: bytesOf(n, i.z) };
      case "buffer": return { ...status, headers: headersOf(i, n), body: bytesOf(n, i.z).buffer };
      case "empty": return { ...status, headers: headersOf(i, n) };
      case "response": return new Response(i.s === 204 ? null : bytesOf(n, i.z), { status: i.s ?? 200, headers: headersOf(i, n) });
      case "throw": throw new Error(`model: the run threw after its insert (n=${n})`);
      case "sqlerror": sql.exec("INSERT INTO no_such_table VALUES (1)"); return { status: 201, body: "unreachable" };
      case "promise": return Promise.resolve({ status: 201, body: "too late" });
      case "badstatus": return { status: i.s, body: bodyOf(n, i.z) };
      case "nonobject": return 42;
      case "badjson": return { status: 201, json: [1n, () => 1, Symbol("s")][i.z % 3] };
      case "badbody": return { status: 201, body: [42, { a: 1 }, [1, 2]][i.z % 3] };
      case "badheader": return { status: 201, headers: { "bad header": "x" }, body: "x" };
      default: throw new Error(`model: unknown behaviour ${i.b}`);
    }
  }

  async fetch(request) {
    const url = new URL(request.url);
    if (request.method === "GET" && url.pathname === "/state") {
      const keys = JSON.parse(url.searchParams.get("keys") ?? "[]");
      return Response.json({
        effects: this.ctx.storage.sql.exec("SELECT n, key FROM effects ORDER BY n").toArray(),
        lookups: Object.fromEntries(keys.map((k) => [k, this.ledger.lookup(k)])),
        stats: this.ledger.stats(),
      });
    }
    try {
      return await this.ledger.handle(request, ({ key, json }) => this.run(key, json()));
    } catch (e) {
      // What handle rethrew (the run's own error, or the ledger's refusal of its answer).
      const name = e instanceof Error ? e.name : typeof e;
      return new Response(e instanceof Error ? e.message : String(e), { status: 500, headers: { "x-model-threw": name } });
    }
  }
}

export default {
  fetch(request, env) {
    const name = request.headers.get("x-object") ?? "model";
    return env.MODEL.get(env.MODEL.idFromName(name)).fetch(request);
  },
};
