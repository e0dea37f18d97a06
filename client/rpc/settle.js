// @ts-check
// Completion and release retried as the gateway retries them
// (Rust contract::proxy: SETTLE_RETRY_DELAYS_MS, is_retryable,
// landed_earlier): three attempts in all, and only when trying again is
// safe.
import { LedgerError } from "./client.js";
import { SETTLE_RETRY_DELAYS_MS } from "../generated/limits.js";
/** @import { RecordState } from "./client.js" */

// Pauses (ms) before the second and third attempt of a completion or
// release (src/protocol/limits.json).
export { SETTLE_RETRY_DELAYS_MS };

/**
 * May a failed completion or release be tried again? When nothing came back
 * (a `LedgerError` with `status` null: the object may or may not have
 * applied it, and a retry is safe, see `landedEarlier`) or the object
 * answered 5xx (nothing was committed). Never after a refusal of the call
 * itself (4xx) or anything else.
 * @param {unknown} error
 * @returns {boolean}
 */
function isRetryable(error) {
  return error instanceof LedgerError && (error.status === null || error.status >= 500);
}

/**
 * A retried completion or release answered `fenced_out`: did an earlier
 * attempt of this owner already land? Only the owner of `generation` can
 * move its record to `state` at that generation, so finding it there means
 * the lost answer was a success.
 * @param {unknown} answer
 * @param {number} generation
 * @param {RecordState["state"]} state `"completed"` for complete, `"released"` for release
 * @returns {boolean}
 */
export function landedEarlier(answer, generation, state) {
  const a = /** @type {{ outcome?: unknown; current?: Partial<RecordState> | null } | null | undefined} */ (answer);
  return a?.outcome === "fenced_out" && a.current?.generation === generation && a.current?.state === state;
}

/**
 * The result of `settle`: the last attempt's answer, how many attempts were
 * made, and whether that answer shows an earlier attempt's success.
 * @template T
 * @typedef {object} Settled
 * @property {T} answer
 * @property {number} attempts
 * @property {boolean} landed A retry found this owner's own earlier success (`landed(answer)`).
 */

/**
 * Runs `call` up to three times, pausing `SETTLE_RETRY_DELAYS_MS` between
 * attempts, retrying only an error `isRetryable` allows; rejects with the
 * last error otherwise. A retry's answer for which `landed(answer)` holds
 * is reported `landed: true` (count it as the success it shows).
 * @template T
 * @param {() => Promise<T>} call
 * @param {{ landed?: (answer: T) => boolean }} [options]
 * @returns {Promise<Settled<T>>}
 */
export async function settle(call, { landed = () => false } = {}) {
  for (let attempts = 1; ; attempts++) {
    try {
      const answer = await call();
      return { answer, attempts, landed: attempts > 1 && landed(answer) };
    } catch (error) {
      if (attempts > SETTLE_RETRY_DELAYS_MS.length || !isRetryable(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, SETTLE_RETRY_DELAYS_MS[attempts - 1]));
    }
  }
}
