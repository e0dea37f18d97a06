// @ts-check
// The one options check of the package's surfaces: the middleware
// (../middleware/options.js), `new Ledger` (../ledger/ledger.js), the
// store (../middleware/store.js), the Queue consumer and the Workflows
// helpers (../consumers/). Each surface writes what its options are as a
// spec — a name, its kind, its default — and `checkOptions` applies it when
// the surface is made: an unknown name (`knownOptions`, with "did you
// mean" and other libraries' names) or a value of the wrong kind is a
// TypeError naming the surface and the option, before anything runs.
// What a spec cannot say (a relation between two options, a header name,
// a URL) the surface checks after it, with the same message shape
// (`${where}: ${name} must be …`).
import { knownOptions, tokenListOption, wholeOption } from "./defaults.js";

/**
 * One option: its kind, and its default (used when it is absent or undefined).
 * - `whole: [min, max]` a whole number in that range;
 * - `tokens: "header" | "method"` a list of header names or methods;
 * - `boolean: true`; `oneOf: [...]` one of these values;
 * - `function: hint` a function (`hint`, if not empty, follows the message);
 * - `any: true` anything (checked by the surface itself).
 * @typedef {{ default?: unknown } & (
 *   { whole: readonly [number, number] } | { tokens: "header" | "method" } | { boolean: true } |
 *   { oneOf: readonly unknown[] } | { function: string } | { any: true })} OptionSpec
 */

/**
 * `options` checked against `spec`, with the defaults filled in: every
 * option of the spec, by name (undefined where absent and without a
 * default). A TypeError names `where` and the option when one is wrong.
 * @param {string} where What the options belong to ("idempotency middleware", "idempotency-ledger/queues").
 * @param {object | undefined | null} options
 * @param {Readonly<Record<string, OptionSpec>>} spec
 * @returns {Record<string, any>}
 */
export function checkOptions(where, options, spec) {
  const given = /** @type {Record<string, unknown>} */ (knownOptions(where, options, Object.keys(spec)));
  /** @type {Record<string, any>} */
  const checked = {};
  for (const [name, kind] of Object.entries(spec)) {
    const value = given[name] === undefined ? kind.default : given[name];
    checked[name] = value === undefined ? undefined : checkedValue(where, name, value, kind);
  }
  return checked;
}

/**
 * @param {string} where
 * @param {string} name
 * @param {unknown} value
 * @param {OptionSpec} kind
 */
function checkedValue(where, name, value, kind) {
  if ("whole" in kind) return wholeOption(where, name, value, kind.whole[0], kind.whole[1]);
  if ("tokens" in kind) return tokenListOption(where, name, value, kind.tokens);
  if ("boolean" in kind && typeof value !== "boolean") throw new TypeError(`${where}: ${name} must be a boolean`);
  if ("oneOf" in kind && !kind.oneOf.includes(value)) {
    throw new TypeError(`${where}: ${name} must be ${kind.oneOf.map((v) => JSON.stringify(v)).join(" or ")}`);
  }
  if ("function" in kind && typeof value !== "function") throw new TypeError(`${where}: ${name} must be a function${kind.function}`);
  return value;
}
