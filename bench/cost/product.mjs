// The deployed entry with its TenantLedger metered (see meter.mjs): the
// built Rust class, constructed over a ctx whose storage counts rows.
import gateway, { TenantLedger } from "../../build/index.js";
import { meterAnswer, meterCtx, metered } from "./meter.mjs";

export default gateway;

export class MeteredLedger {
  constructor(ctx, env) {
    this.path = "construct";
    this.inner = new TenantLedger(meterCtx(ctx, () => this.path), env);
  }

  async fetch(request) {
    const path = new URL(request.url).pathname;
    if (path === "/__meter") return meterAnswer();
    // Requests run one at a time in the benchmark: the path names the call.
    this.path = path;
    return metered(path, () => this.inner.fetch(request));
  }

  async alarm(info) {
    this.path = "alarm";
    return metered("alarm", () => this.inner.alarm(info));
  }
}
