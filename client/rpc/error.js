// @ts-check
// LedgerError, what a ledger call throws when it produced no outcome, and
// the Retry-After reading it carries (./client.js re-exports both: the
// package's one home for them is that module's surface).
/** @import { Problem } from "../rules/problems.js" */

/** A ledger call that did not produce an outcome. */
export class LedgerError extends Error {
  /**
   * HTTP status of the object's problem answer, or null when unreachable.
   * @readonly
   * @type {number | null}
   */
  status;
  /**
   * The RFC 9457 problem document the object answered with, if any.
   * @readonly
   * @type {Problem | null}
   */
  problem;
  /**
   * The `Retry-After` the object answered with, in seconds (an upgrading
   * object's `503`), or null when it sent none.
   * @readonly
   * @type {number | null}
   */
  retryAfter;

  /**
   * @param {string} message
   * @param {{ status?: number | null; problem?: Problem | null; retryAfter?: number | null; cause?: unknown }} [details]
   */
  constructor(message, { status = null, problem = null, retryAfter = null, cause } = {}) {
    super(message, { cause });
    this.name = "LedgerError";
    this.status = status;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }
}

/**
 * A `Retry-After` header's delta-seconds, or null (absent, a date, or not a
 * whole number of seconds).
 * @param {string | null} value
 * @returns {number | null}
 */
export function retryAfterSeconds(value) {
  return value !== null && /^\s*\d{1,9}\s*$/.test(value) ? Number(value) : null;
}
