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
  const exec = (...args) => {
    const cursor = sql.exec(...args);
    const e = entry(current());
    e.statements++;
    const text = String(args[0]).replace(/\s+/g, " ").slice(0, 90);
    let q = bySql.get(text);
    if (!q) bySql.set(text, (q = { count: 0, rowsRead: 0, rowsWritten: 0 }));
    q.count++;
    open.push([e, cursor, q]);
    return cursor;
  };
  return overlay(sql, { exec });
}

/** `target` with the members of `own` in place of its own (the rest bound to it). */
function overlay(target, own) {
  return new Proxy(target, {
    get(t, prop) {
      if (Object.hasOwn(own, prop)) return own[prop];
      const v = Reflect.get(t, prop);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
}

/** A `ctx` whose storage is metered (the Rust class reads `ctx.storage`). */
export function meterCtx(ctx, current) {
  const storage = overlay(ctx.storage, {
    sql: meterSql(ctx.storage.sql, current),
    setAlarm: (...args) => { entry(current()).setAlarm++; return ctx.storage.setAlarm(...args); },
  });
  return overlay(ctx, { storage });
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
