// The deployed entry with a jurisdiction stand-in. Local workerd refuses
// `namespace.jurisdiction(J)` outright ("Jurisdiction restrictions are not
// implemented in workerd"), so this entry hands the gateway, LedgerService
// and TenantLedger an env whose TENANT_LEDGER records every name asked of
// it (and of what its `jurisdiction(J)` returns) and answers
// `jurisdiction(J)` with a namespace of its own: the class TenantLedgerEu
// (bound as TENANT_LEDGER_EU) or TenantLedgerUs (TENANT_LEDGER_US), so an
// object of a jurisdiction is a different object from the unrestricted one
// with the same name, as on the platform. Any other jurisdiction throws as
// workerd does. `GET /__names` answers the record, `[{ jurisdiction, name }]`
// (`jurisdiction: null`: unrestricted). Everything else is worker/entry.mjs.
import { TenantLedger as Deployed, LedgerService as DeployedService, fetchGateway } from "../../../worker/entry.mjs";

const asked = [];

/** `namespace` recording the names asked of it, in `jurisdiction` (null: unrestricted). */
function recording(namespace, jurisdiction, env) {
  return new Proxy(namespace, {
    get(target, name) {
      if (name === "idFromName") {
        return (object) => {
          asked.push({ jurisdiction, name: object });
          return target.idFromName(object);
        };
      }
      if (name === "getByName") {
        return (object, options) => {
          asked.push({ jurisdiction, name: object });
          return target.getByName(object, options);
        };
      }
      if (name === "jurisdiction") {
        return (j) => {
          const bound = jurisdiction === null ? env[`TENANT_LEDGER_${String(j).toUpperCase()}`] : undefined;
          if (!bound) throw new Error("Jurisdiction restrictions are not implemented in workerd");
          return recording(bound, j, env);
        };
      }
      // Methods are called on the real namespace (they are native); its
      // constructor is handed over as it is (workers-rs checks its name).
      const value = Reflect.get(target, name);
      return typeof value === "function" && name !== "constructor" ? value.bind(target) : value;
    },
  });
}

const withStandIn = (env) =>
  new Proxy(env, {
    get: (target, name) => (name === "TENANT_LEDGER" ? recording(target.TENANT_LEDGER, null, target) : Reflect.get(target, name)),
  });

export class TenantLedger extends Deployed {
  constructor(ctx, env) { super(ctx, withStandIn(env)); }
}
/** The objects of jurisdiction "eu" (a namespace of their own). */
export class TenantLedgerEu extends TenantLedger {}
/** The objects of jurisdiction "us". */
export class TenantLedgerUs extends TenantLedger {}

export class LedgerService extends DeployedService {
  constructor(ctx, env) { super(ctx, withStandIn(env)); }
}

export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === "/__names") return Response.json(asked);
    return fetchGateway(request, withStandIn(env), ctx);
  },
};
