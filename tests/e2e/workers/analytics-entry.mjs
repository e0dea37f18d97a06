// The deployed entry with a recording ANALYTICS dataset: Miniflare's own
// dataset binding writes nowhere locally, so this entry hands the gateway
// and TenantLedger the same env with `ANALYTICS` set to a sink that keeps
// each data point in memory (gateway and object share this isolate), and
// answers `GET /__points` with them. Everything else is worker/entry.mjs.
import { TenantLedger as Deployed, fetchGateway } from "../../../worker/entry.mjs";

const points = [];
const sink = { writeDataPoint(point) { points.push(structuredClone(point)); } };
const withSink = (env) => new Proxy(env, { get: (target, name) => (name === "ANALYTICS" ? sink : Reflect.get(target, name)) });

export class TenantLedger extends Deployed {
  constructor(ctx, env) { super(ctx, withSink(env)); }
}

export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === "/__points") return Response.json(points);
    return fetchGateway(request, withSink(env), ctx);
  },
};
