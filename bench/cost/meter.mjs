// Metering for `npm run bench:cost`: counts what a SQLite-backed Durable
// Object is billed for, from the platform's own figures. Every cursor
// `storage.sql.exec` returns is kept; once the object call that made it has
// finished (so every cursor is consumed), its `rowsRead` / `rowsWritten`
// are summed. `storage.setAlarm` calls are counted too (each is billed as a
// row written). Totals are kept per object call, by the call's path
// (`/rpc/v1/claim`, `alarm`, ...), and read (and reset) through the
// object's own fetch at `/__meter`.

const calls = new Map(); // path -> { calls, statements, rowsRead, rowsWritten, setAlarm }
const bySql = new Map(); // statement text -> { count, rowsRead, rowsWritten } (for --statements)
let open = []; // cursors of calls still running

function entry(path) {
  let e = calls.get(path);
  if (!e) calls.set(path, (e = { calls: 0, statements: 0, rowsRead: 0, rowsWritten: 0, setAlarm: 0 }));
  return e;
}

/** A `sql` handle that keeps every cursor for the call `current()` names. */
export function meterSql(sql, current) {
  return new Proxy(sql, {
    get(target, prop) {
      if (prop === "exec") {
        return (...args) => {
          const cursor = target.exec(...args);
          const e = entry(current());
          e.statements++;
          const text = String(args[0]).replace(/\s+/g, " ").slice(0, 90);
          let q = bySql.get(text);
          if (!q) bySql.set(text, (q = { count: 0, rowsRead: 0, rowsWritten: 0 }));
          q.count++;
          open.push([e, cursor, q]);
          return cursor;
        };
      }
      const v = Reflect.get(target, prop);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

/** A `ctx` whose storage is metered (the Rust class reads `ctx.storage`). */
export function meterCtx(ctx, current) {
  const sql = meterSql(ctx.storage.sql, current);
  const storage = new Proxy(ctx.storage, {
    get(target, prop) {
      if (prop === "sql") return sql;
      if (prop === "setAlarm") return (...args) => { entry(current()).setAlarm++; return target.setAlarm(...args); };
      const v = Reflect.get(target, prop);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return new Proxy(ctx, {
    get(target, prop) {
      if (prop === "storage") return storage;
      const v = Reflect.get(target, prop);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

/** Adds the consumed cursors' figures to their calls. */
function settle() {
  for (const [e, cursor, q] of open) {
    e.rowsRead += cursor.rowsRead;
    e.rowsWritten += cursor.rowsWritten;
    q.rowsRead += cursor.rowsRead;
    q.rowsWritten += cursor.rowsWritten;
  }
  open = [];
}

/** Runs one object call under `path`, counting it. */
export async function metered(path, run) {
  entry(path).calls++;
  try {
    return await run();
  } finally {
    settle();
  }
}

/** The `/__meter` answer: the totals by call path, then reset. */
export function meterAnswer() {
  settle();
  const body = JSON.stringify({ calls: Object.fromEntries(calls), statements: Object.fromEntries(bySql) });
  calls.clear();
  bySql.clear();
  return new Response(body, { headers: { "content-type": "application/json" } });
}
