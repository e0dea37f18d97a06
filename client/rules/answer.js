// @ts-check
// The gateway's answer to a refused claim (Rust contract::answer): the
// replay of a completed key, or the problem document of the refusal, with
// the same statuses and Retry-After.
import { problemResponse } from "./problems.js";
import { replayResponse } from "./stored.js";
/** @import { ClaimRefusal } from "../rpc/client.js" */

/**
 * The gateway's answer to a refused claim: replay (a tombstone: 500
 * idempotency-response-not-retained), 409 (Retry-After: 1), 422 or 429
 * (Retry-After: the wait in whole seconds, at least 1). A TypeError for
 * anything that is not a refusal. `options.problemBase` replaces the
 * catalog's base of the problems' `type`.
 * @param {ClaimRefusal} claim
 * @param {{ problemBase?: string }} [options]
 * @returns {Response}
 */
export function refusalResponse(claim, { problemBase: base } = {}) {
  switch (claim?.outcome) {
    case "completed":
      return replayResponse(claim.response, { problemBase: base });
    case "in_flight":
      return problemResponse("idempotency-key-in-use", {
        base,
        extensions: { lease_remaining_ms: claim.retry_after_ms },
        headers: { "retry-after": "1" },
      });
    case "mismatch":
      return problemResponse("idempotency-key-reused", { base, args: { differs: claim.differs }, extensions: { differs: claim.differs } });
    case "ledger_full":
      return problemResponse("idempotency-ledger-full", {
        base,
        headers: { "retry-after": String(Math.max(1, Math.ceil(claim.retry_after_ms / 1000))) },
      });
    default:
      throw new TypeError(`not a refusal: ${/** @type {{ outcome?: unknown } | null | undefined} */ (claim)?.outcome}`);
  }
}
