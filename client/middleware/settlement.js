// @ts-check
// The route's one run under a claimed key and its settlement
// (./contract.js): the key completed with the route's response, or
// released when the route failed or `shouldStore` said no, retried as the
// gateway retries (../rpc/settle.js) under `ctx.waitUntil`. The route's response
// reaches its caller, and its error is rethrown, whatever the settlement
// comes to (a final failure goes to `onSettlementFailed`).
import { landedEarlier, settle } from "../rpc/settle.js";
import { captureRoute, storing } from "./capture.js";
import { tell } from "./options.js";
/**
 * @import { StoredResponse } from "../rules/stored.js"
 * @import { TenantLedgerCalls } from "../rpc/sources.js"
 * @import { CheckedOptions, SettlementFailure, StoredEvent } from "./options.js"
 */

/**
 * One request's claimed key, and what its settlement needs.
 * @typedef {object} Claimed
 * @property {TenantLedgerCalls} ledger
 * @property {string} key
 * @property {number} generation
 * @property {string} [lease] The claim's lease token (absent from an object older than tokens).
 * @property {{ waitUntil(promise: Promise<unknown>): void }} [ctx]
 * @property {number} [retentionSeconds]
 * @property {(failure: SettlementFailure) => void | Promise<void>} report
 * @property {(event: StoredEvent) => Promise<void>} stored Tells `onStored`.
 */

/**
 * Completes (`response` given) or releases the claimed key, retried as the
 * gateway retries (../rpc/settle.js), under `ctx.waitUntil` when there is a
 * context, so a client hang-up cannot cancel it; the request awaits the
 * same promise. Never rejects: a settlement that finally fails (an error
 * after the retries, or an answer without a known outcome) is reported
 * through the hook. `fenced_out` is an answer, not a failure (the object
 * logs it). A completion that lands tells `onStored`. The settlement
 * presents the claim's lease token, so it settles this grant or nothing.
 * @param {Claimed} claimed
 * @param {StoredResponse} [response]
 * @returns {Promise<void>}
 */
export function settlement({ ledger, key, generation, lease, ctx, retentionSeconds, report, stored }, response) {
  const operation = response === undefined ? "release" : "complete";
  const grant = { key, generation, ...(lease === undefined ? {} : { lease }) };
  const call = response === undefined ? () => ledger.release(grant)
    : () => ledger.complete({ ...grant, response, ...(retentionSeconds === undefined ? {} : { retention_seconds: retentionSeconds }) });
  const [success, landedState] = response === undefined ? ["released", "released"] : ["stored", "completed"];
  const done = (async () => {
    let error;
    try {
      const { answer, landed } = await settle(/** @type {() => Promise<{ outcome?: unknown }>} */ (call), {
        landed: (a) => landedEarlier(a, generation, /** @type {"completed" | "released"} */ (landedState)),
      });
      if (landed || answer?.outcome === success) {
        if (response !== undefined) await stored({ key, generation, status: response.status, retained: response.body !== null });
        return;
      }
      if (answer?.outcome === "fenced_out") return; // superseded by a later owner: an answer, logged by the object
      error = new Error(`the ledger answered ${operation} without a known outcome`);
    } catch (e) {
      error = e;
    }
    await tell(report, { operation, key, generation, error });
  })();
  ctx?.waitUntil?.(done);
  return done;
}

/**
 * Runs the route once under its claimed key — `next(body, key)`, which
 * resolves to `{ response, failed }` — and settles the key: released when
 * the route threw (its error rethrown), failed, or `shouldStore` said no;
 * otherwise completed with its captured response (./capture.js), which its
 * caller then gets (`applied`: `Preference-Applied` when the claim waited).
 * @template {unknown[]} A
 * @param {CheckedOptions<A>} o
 * @param {Claimed} claimed
 * @param {{ args: A; body: Uint8Array; next: (body: Uint8Array, key: string) => Promise<{ response: Response; failed: boolean }>;
 *   applied: (response: Response) => Response }} route
 * @returns {Promise<Response>}
 */
export async function runClaimed(o, claimed, { args, body, next, applied }) {
  let result;
  try {
    result = await next(body, claimed.key);
  } catch (e) {
    await settlement(claimed); // released (or reported); the handler's own error is what the caller sees
    throw e;
  }
  if (result.failed || !(await storing(o.shouldStore, result.response, args))) {
    await settlement(claimed);
    return result.response;
  }
  const captured = await captureRoute(result.response, o);
  // The caller whose run produced this response always gets it, whatever the completion comes to.
  await settlement(claimed, captured.stored);
  return applied(captured.response);
}
