// The deployed entry, counting what wasm-bindgen's promise plumbing costs:
// every `queueMicrotask` (its futures' task queue) and every
// `FinalizationRegistry.register` (one per closure handed to JavaScript,
// two per awaited promise) in the isolate. `/__plumbing` answers the
// counts since the last time it was asked, and resets them.
import gateway from "../../../worker/entry.mjs";

export { TenantLedger } from "../../../worker/entry.mjs";

const counts = { microtasks: 0, finalizers: 0 };
const queueMicrotask = globalThis.queueMicrotask;
globalThis.queueMicrotask = (task) => {
  counts.microtasks++;
  return queueMicrotask(task);
};
const register = FinalizationRegistry.prototype.register;
FinalizationRegistry.prototype.register = function (...args) {
  counts.finalizers++;
  return register.apply(this, args);
};

export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === "/__plumbing") {
      const seen = { ...counts };
      counts.microtasks = 0;
      counts.finalizers = 0;
      return Response.json(seen);
    }
    return gateway.fetch(request, env, ctx);
  },
};
