// @ts-check
// The route's response, captured for its key (./contract.js): whether it is
// stored at all (`shouldStore`), and its bounded capture — read with its own
// reader (no clone), no further than maxStoredBodyBytes + 1 bytes before the
// key is completed (../rules/stored.js captureBounded).
import { captureBounded } from "../rules/stored.js";
/**
 * @import { StoredResponse } from "../rules/stored.js"
 * @import { IdempotencyOptions } from "./options.js"
 */

/**
 * Is the route's response to be stored? `shouldStore` absent: always (as
 * RELEASE_ON_5XX=false); one that throws: no (the key is released).
 * @template {unknown[]} A
 * @param {IdempotencyOptions<A>["shouldStore"]} shouldStore
 * @param {Response} response
 * @param {A} args
 * @returns {Promise<boolean>}
 */
export async function storing(shouldStore, response, args) {
  if (shouldStore === undefined) return true;
  // It is given a clone: a body it reads is never taken from the caller or
  // the stored answer. Once it answers, whatever it left unread of the
  // clone is cancelled, so that branch of the body does not buffer the
  // whole stream while the caller's branch is read.
  const clone = response.clone();
  try {
    return (await shouldStore(clone, ...args)) !== false;
  } catch {
    return false;
  } finally {
    try {
      clone.body?.cancel().catch(() => { /* read to its end, or locked by a reader it kept */ });
    } catch { /* as above */ }
  }
}

/**
 * The route's response captured for its completion, and the response its
 * caller is to get in its place. A body within the cap is stored and
 * answered from those bytes; a larger one completes the key as a tombstone
 * at once and then streams to its caller as it comes, so a body that later
 * breaks off, or a caller that goes away, can never lead to a second run,
 * and memory stays bounded. A body that breaks off within the cap is a
 * tombstone too (the route ran in this isolate: never released for a
 * second run); retries get 500 idempotency-response-not-retained — loud,
 * and never a second run. A body that cannot be read at all (already
 * used): what is known, as a tombstone.
 * @param {Response} response
 * @param {{ storedHeaders: readonly string[]; maxStoredBodyBytes: number }} limits
 * @returns {Promise<{ stored: StoredResponse; response: Response }>}
 */
export async function captureRoute(response, { storedHeaders, maxStoredBodyBytes }) {
  try {
    return await captureBounded(response, { storedHeaders, maxStoredBodyBytes });
  } catch {
    return { stored: { status: response.status, headers: [], body: null }, response };
  }
}
