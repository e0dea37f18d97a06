// @ts-check
// The console's DOM helpers (./app.js, ./panels.js): every element is made
// with createElement / createElementNS and filled with textContent and
// setAttribute only, so nothing the API returns is ever read as HTML.

export const NOT_AVAILABLE = "not available";
export const NONE = "\u2014";
const SVG = "http://www.w3.org/2000/svg";

/** @typedef {Record<string, unknown>} Props Attributes by name; `text` is textContent, `testid` data-testid. */

/**
 * An element with text, attributes and children; text is always textContent.
 * @param {string} tag
 * @param {Props} [props]
 * @param {(Node | string)[]} [children]
 * @returns {HTMLElement}
 */
export function el(tag, props, children) {
  const node = document.createElement(tag);
  setProps(node, props);
  for (const child of children || []) node.append(child);
  return node;
}

/**
 * An SVG element, made as `el` makes HTML ones.
 * @param {string} tag
 * @param {Props} [props]
 * @param {(Node | string)[]} [children]
 * @returns {SVGElement}
 */
export function svg(tag, props, children) {
  const node = document.createElementNS(SVG, tag);
  setProps(node, props);
  for (const child of children || []) node.append(child);
  return node;
}

/**
 * @param {Element} node
 * @param {Props} [props]
 */
function setProps(node, props) {
  for (const name of Object.keys(props || {})) {
    const value = /** @type {Props} */ (props)[name];
    if (value === undefined || value === null) continue;
    if (name === "text") node.textContent = String(value);
    else if (name === "testid") node.setAttribute("data-testid", String(value));
    else node.setAttribute(name, String(value));
  }
}

/** @param {unknown} v @returns {v is Record<string, any>} */
export const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
/** @param {unknown} v */
export const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
/** @param {unknown} v */
export const shown = (v) => (v === null || v === undefined ? NONE : String(v));
/** @param {string} testid */
export const unavailable = (testid) => el("p", { class: "unavailable", testid, text: NOT_AVAILABLE });

/**
 * One name and value of a description list.
 * @param {string} testid
 * @param {string} name
 * @param {unknown} value
 */
export function pair(testid, name, value) {
  return el("div", {}, [el("dt", { text: name }), el("dd", { testid, text: shown(value) })]);
}

/** @typedef {{ status: number; body: any; pages?: number }} Answer An API answer: its status and JSON (null if none). */

/** @param {Answer} answer Is it a page of the key listing? */
export const listed = (answer) => answer.status === 200 && isObject(answer.body) && Array.isArray(answer.body.keys);

/** @param {Answer} answer The problem's detail, or the status. */
export const detailOf = (answer) =>
  isObject(answer.body) && typeof answer.body.detail === "string" ? answer.body.detail : "the gateway answered " + answer.status;
