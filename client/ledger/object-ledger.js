// @ts-check
// What one Durable Object instance's Ledgers share (./ledger.js): the wasm
// core made by the first `new Ledger(ctx)` (which migrates the tables and
// recounts), the cores derived from it for other options, the alarm last
// seen set, and the timer that writes the counts an idle object keeps in
// memory. Keyed by `ctx.storage`, the same object on every access.
import { EmbeddedLedger } from "./wasm.js";
/** @import { LedgerState } from "./ledger.js" */

/**
 * What one object instance's ledgers share (keyed by `ctx.storage`, the
 * same object on every access): the core made by the first `new Ledger`,
 * the cores derived for other options, the alarm last seen set, and the
 * timer that writes the counts an idle object would keep in memory.
 * @typedef {object} ObjectLedger
 * @property {EmbeddedLedger} first
 * @property {Map<string, EmbeddedLedger>} byOptions
 * @property {number | null} armedAt When this instance last saw the object's alarm set (armSweep or alarm), or null.
 * @property {boolean} flushArmed
 */

/** @type {WeakMap<object, ObjectLedger>} */
const OBJECTS = new WeakMap();

/** Distinct options kept per object; past it a Ledger derives its own core (still the object's counts). */
const OPTIONS_KEPT = 16;

/**
 * The object's shared ledger state and a core for `options` (JSON).
 * @param {LedgerState} ctx
 * @param {string} options
 * @returns {{ shared: ObjectLedger; core: EmbeddedLedger }}
 */
export function objectLedger(ctx, options) {
  const storage = ctx?.storage;
  const known = storage !== null && typeof storage === "object" ? OBJECTS.get(storage) : undefined;
  if (known === undefined) {
    const first = new EmbeddedLedger(ctx, options);
    /** @type {ObjectLedger} */
    const shared = { first, byOptions: new Map([[options, first]]), armedAt: null, flushArmed: false };
    OBJECTS.set(/** @type {object} */ (storage), shared);
    return { shared, core: first };
  }
  const kept = known.byOptions.get(options);
  if (kept !== undefined) return { shared: known, core: kept };
  const core = known.first.withOptions(options);
  if (known.byOptions.size < OPTIONS_KEPT) known.byOptions.set(options, core);
  return { shared: known, core };
}

/**
 * After a call: counts of outcomes that wrote nothing (replays, 409s,
 * 422s) wait in memory; write them within the core's flush delay even
 * if the object goes idle (TenantLedger's flush timer), one timer per object.
 * @param {ObjectLedger} shared
 * @param {EmbeddedLedger} core
 */
export function flushLater(shared, core) {
  if (shared.flushArmed || !core.hasPending()) return;
  shared.flushArmed = true;
  setTimeout(() => {
    shared.flushArmed = false;
    try {
      core.flush();
    } catch (e) {
      console.warn(JSON.stringify({ event: "idempotency.flush_failed", error: e instanceof Error ? e.message : String(e) }));
    }
  }, core.flushAfterMs);
}
