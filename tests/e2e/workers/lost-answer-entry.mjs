// The deployed entry with its TenantLedger losing answers on the way back
// (tests/e2e/lost-answer.test.mjs): the real object applies every call,
// then, for a `claim` or `execute` of a key named so, its answer is
// dropped and the caller's fetch throws — the fault between the object's
// grant and the gateway's read (a reset object, a dropped connection).
//   key "lose-once-…"   the first such call's answer is lost, later ones arrive
//   key "lose-always-…" every such call's answer is lost
export { default, LedgerService, TenantLedger } from "../../../worker/entry.mjs";
import { TenantLedger } from "../../../worker/entry.mjs";

export class LosingLedger {
  #inner;
  #lost = new Set();

  constructor(ctx, env) {
    this.#inner = new TenantLedger(ctx, env);
  }

  async fetch(request) {
    const { pathname } = new URL(request.url);
    if (pathname !== "/rpc/v1/claim" && pathname !== "/rpc/v1/execute") return this.#inner.fetch(request);
    const body = await request.text();
    let key = "";
    try {
      key = String(JSON.parse(body).key ?? "");
    } catch {}
    const answer = await this.#inner.fetch(new Request(request.url, { method: "POST", headers: request.headers, body }));
    const lose = key.startsWith("lose-always-") || (key.startsWith("lose-once-") && !this.#lost.has(key));
    if (!lose || answer.status !== 200) return answer;
    this.#lost.add(key);
    await answer.arrayBuffer(); // applied: the object answered
    throw new Error(`injected: the answer to ${pathname} was lost after the object applied it`);
  }

  alarm(info) {
    return this.#inner.alarm(info);
  }
}
