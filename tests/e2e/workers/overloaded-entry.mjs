// The deployed entry with a ledger the runtime refuses to reach: the
// gateway's TENANT_LEDGER is the real namespace, but every stub it hands
// out rejects each call as the platform does for an overloaded Durable
// Object (an error marked `overloaded: true`, before the call is
// delivered) — the one failure after which the ledger was certainly not
// reached (Rust rpc::LedgerError::NotReached), so FAILURE_POLICY=open may
// run the request unprotected. Everything else is worker/entry.mjs.
import { fetchGateway } from "../../../worker/entry.mjs";

export { TenantLedger } from "../../../worker/entry.mjs";

/** A stub whose every call is refused before delivery, as an overloaded object's is. */
const refusingStub = {
  fetch() {
    const error = new Error("Durable Object is overloaded. Too many requests queued.");
    error.overloaded = true;
    return Promise.reject(error);
  },
};

/** `namespace` with stubs that refuse every call; its constructor handed over as it is (workers-rs checks its name). */
const overloaded = (namespace) =>
  new Proxy(namespace, {
    get(target, name) {
      if (name === "get" || name === "getByName") return () => refusingStub;
      const value = Reflect.get(target, name);
      return typeof value === "function" && name !== "constructor" ? value.bind(target) : value;
    },
  });

export default {
  fetch(request, env, ctx) {
    const standIn = new Proxy(env, {
      get: (target, name) => (name === "TENANT_LEDGER" ? overloaded(target.TENANT_LEDGER) : Reflect.get(target, name)),
    });
    return fetchGateway(request, standIn, ctx);
  },
};
