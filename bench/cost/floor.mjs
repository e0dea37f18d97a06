// The floor (bench/floor/worker.js) with its Orders object metered: the
// class extends DurableObject, which refuses a proxied ctx, so its `sql`
// handle is swapped after construction.
import floor, { Orders } from "../floor/worker.js";
import { meterAnswer, meterSql, metered } from "./meter.mjs";

export default floor;

export class MeteredOrders extends Orders {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = meterSql(ctx.storage.sql, () => "/v1/orders");
  }

  async fetch(request) {
    const path = new URL(request.url).pathname;
    if (path === "/__meter") return meterAnswer();
    return metered(path, () => super.fetch(request));
  }
}
