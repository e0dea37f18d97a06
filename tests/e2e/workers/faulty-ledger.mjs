// The deployed entry with its TenantLedger built over a `ctx` whose
// `storage.setAlarm` can be made to fail, and whose alarm can be read
// (tests/e2e/alarms.test.mjs): the real Rust class, the real storage, one
// fault injected. Paths under /__faults are answered here:
//   POST /__faults/set-alarm?fail=1|0   setAlarm throws (or not)
//   GET  /__faults/alarm               the alarm as storage has it
//   POST /__faults/delete-alarm        the alarm gone (as after the platform gave up its retries)
//   POST /__faults/run-alarm           the object's alarm() now (its error answered as 500)
export { default, LedgerService } from "../../../worker/entry.mjs";
import { TenantLedger } from "../../../build/index.js";

export class FaultyLedger {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.failing = false;
    const storage = new Proxy(ctx.storage, {
      get: (target, prop) => {
        if (prop === "setAlarm") {
          return (...args) => {
            if (this.failing) return Promise.reject(new Error("injected: setAlarm refused"));
            return target.setAlarm(...args);
          };
        }
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const faultyCtx = new Proxy(ctx, {
      get: (target, prop) => {
        if (prop === "storage") return storage;
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    this.inner = new TenantLedger(faultyCtx, env);
  }

  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname.startsWith("/__faults/")) {
      switch (url.pathname) {
        case "/__faults/set-alarm":
          this.failing = url.searchParams.get("fail") === "1";
          return Response.json({ failing: this.failing });
        case "/__faults/alarm":
          return Response.json({ alarm: await this.ctx.storage.getAlarm(), now: Date.now() });
        case "/__faults/delete-alarm":
          await this.ctx.storage.deleteAlarm();
          return Response.json({ deleted: true });
        case "/__faults/run-alarm":
          try {
            await this.inner.alarm({ retryCount: 0, isRetry: false });
            return Response.json({ ran: true });
          } catch (e) {
            return Response.json({ ran: false, error: String(e?.message ?? e) }, { status: 500 });
          }
        default:
          return new Response("no such fault", { status: 404 });
      }
    }
    return this.inner.fetch(request);
  }

  async alarm(info) {
    return this.inner.alarm(info);
  }
}
