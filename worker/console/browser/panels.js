// @ts-check
// The console's panels (./app.js renders them after each read): stats,
// billed rows, the quota gauges, the last hour's trend, the keys in flight
// and the recent keys. Each one draws what it is given with ./dom.js only,
// and says "not available" for a field the gateway does not have yet.
import { TRENDED } from "./trended.js";
import { el, isObject, listed, num, pair, shown, svg, unavailable, NONE } from "./dom.js";
/** @import { Answer } from "./dom.js" */

const BILLED = ["sql_rows_written", "sql_rows_read"];
/** The trended counts (src/ledger/outcome/trended.json, generated into ./trended.js). */
const TREND_SERIES = TRENDED;

/**
 * The counts, and the billed rows beside them.
 * @param {{ stats: HTMLElement; billed: HTMLElement }} ui
 * @param {Record<string, unknown>} stats
 */
export function renderStats(ui, stats) {
  /** @type {HTMLElement[]} */
  const counts = [];
  /** @type {HTMLElement[]} */
  const billed = [];
  for (const name of Object.keys(stats)) {
    const value = stats[name];
    if (value !== null && typeof value === "object") continue; // trend, limits: their own panels
    (BILLED.includes(name) ? billed : counts).push(pair("stat-" + name, name, value));
  }
  ui.stats.replaceChildren(...counts);
  ui.billed.replaceChildren(...(billed.length ? billed : [unavailable("billed-unavailable")]));
}

/**
 * @param {string} testid
 * @param {string} label
 * @param {number} used
 * @param {number} max
 */
function gauge(testid, label, used, max) {
  const share = max > 0 ? " (" + ((100 * used) / max).toFixed(2) + " %)" : "";
  return el("div", { class: "gauge" }, [
    el("span", { text: label }),
    el("meter", { min: 0, max, value: Math.min(used, max), low: max * 0.7, high: max * 0.9, optimum: 0 }),
    el("span", { testid, text: used + " of " + max + share }),
  ]);
}

/**
 * Records and database bytes against the tenant's limits.
 * @param {{ quota: HTMLElement }} ui
 * @param {Record<string, any>} stats
 */
export function renderQuota(ui, stats) {
  const limits = stats.limits;
  if (!isObject(limits) || typeof limits.max_keys !== "number" || typeof limits.max_db_bytes !== "number") {
    ui.quota.replaceChildren(unavailable("quota-unavailable"));
    return;
  }
  ui.quota.replaceChildren(
    gauge("quota-records", "records", num(stats.records), limits.max_keys),
    gauge("quota-db-bytes", "database bytes", num(stats.db_bytes), limits.max_db_bytes),
  );
}

/** @param {unknown} minute */
const minuteLabel = (minute) => {
  const t = Date.parse(String(minute));
  return Number.isNaN(t) ? shown(minute) : new Date(t).toISOString().slice(11, 16) + " UTC";
};

/**
 * The last hour, one polyline per counter, drawn with SVG DOM calls.
 * @param {{ trend: HTMLElement }} ui
 * @param {unknown} trend
 */
export function renderTrend(ui, trend) {
  if (!Array.isArray(trend) || trend.length === 0 || !trend.every(isObject)) {
    ui.trend.replaceChildren(unavailable("trend-unavailable"));
    return;
  }
  const W = 900, H = 180, LEFT = 40, RIGHT = 8, TOP = 10, BOTTOM = 22;
  let top = 1;
  for (const minute of trend) for (const name of TREND_SERIES) top = Math.max(top, num(minute[name]));
  const x = (/** @type {number} */ i) => LEFT + (trend.length === 1 ? 0 : (i * (W - LEFT - RIGHT)) / (trend.length - 1));
  const y = (/** @type {number} */ v) => TOP + (H - TOP - BOTTOM) * (1 - v / top);
  const chart = svg("svg", { class: "trend", viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "counts per minute over the last hour", testid: "trend-chart" }, [
    svg("title", { text: "counts per minute, " + minuteLabel(trend[0].minute) + " to " + minuteLabel(trend[trend.length - 1].minute) }),
    svg("line", { class: "axis", x1: LEFT, y1: y(0), x2: W - RIGHT, y2: y(0) }),
    svg("line", { class: "axis", x1: LEFT, y1: y(top), x2: W - RIGHT, y2: y(top) }),
    svg("text", { x: LEFT - 4, y: y(top) + 3, "text-anchor": "end", testid: "trend-max", text: top }),
    svg("text", { x: LEFT - 4, y: y(0) + 3, "text-anchor": "end", text: 0 }),
    svg("text", { x: LEFT, y: H - 6, text: minuteLabel(trend[0].minute) }),
    svg("text", { x: W - RIGHT, y: H - 6, "text-anchor": "end", text: minuteLabel(trend[trend.length - 1].minute) }),
  ]);
  const legend = el("ul", { class: "legend" });
  for (const name of TREND_SERIES) {
    const points = trend.map((minute, i) => x(i).toFixed(1) + "," + y(num(minute[name])).toFixed(1)).join(" ");
    chart.append(svg("polyline", { class: "series-" + name, points, testid: "trend-line-" + name }));
    const total = trend.reduce((sum, minute) => sum + num(minute[name]), 0);
    legend.append(el("li", {}, [el("span", { class: "swatch series-" + name }), name + " ", el("strong", { testid: "trend-total-" + name, text: total })]));
  }
  ui.trend.replaceChildren(chart, legend);
}

/** @typedef {(key: string) => void} OnKey What a click on a listed key does (./app.js looks it up). */

/**
 * @param {string} key
 * @param {OnKey} onKey
 */
function keyButton(key, onKey) {
  const button = el("button", { type: "button", class: "key", testid: "key-lookup", title: "look this key up", text: key });
  button.addEventListener("click", () => onKey(key));
  return button;
}

/** @typedef {{ id: string; title: string; num?: boolean; cell: (record: Record<string, any>) => Node | string }} Column */

/**
 * A table of keys: one row per key, each cell filled by textContent.
 * @param {string} rowTestid
 * @param {unknown[]} keys
 * @param {Column[]} columns
 */
function keyTable(rowTestid, keys, columns) {
  const head = el("tr", {}, columns.map((c) => el("th", { scope: "col", class: c.num ? "num" : undefined, text: c.title })));
  const rows = keys.filter(isObject).map((record) =>
    el("tr", { testid: rowTestid }, columns.map((c) => {
      const content = c.cell(record);
      return el("td", { class: c.num ? "num" : undefined, testid: "cell-" + c.id }, [content]);
    })));
  return el("table", {}, [el("thead", {}, [head]), el("tbody", {}, rows)]);
}

/** @param {Record<string, any>} record */
function leaseLeft(record) {
  const end = Date.parse(record.lease_expires_at);
  if (Number.isNaN(end)) return NONE;
  const seconds = Math.ceil((end - Date.now()) / 1000);
  return seconds > 0 ? seconds + " s" : "ended";
}

/** @param {Record<string, any>} record */
function statusOf(record) {
  const status = shown(record.response_status);
  return record.retained === false ? status + " (not retained)" : status;
}

/**
 * The keys in flight, under the count stats gives; "no key is in flight" only when that count is 0.
 * @param {{ inFlight: HTMLElement }} ui
 * @param {Answer} answer
 * @param {Record<string, any>} stats
 * @param {OnKey} onKey
 */
export function renderInFlight(ui, answer, stats, onKey) {
  const count = typeof stats.in_flight === "number" ? stats.in_flight : null;
  const counted = el("p", { class: "count" }, ["in flight: ", el("strong", { testid: "in-flight-count", text: shown(count) })]);
  if (!listed(answer)) {
    ui.inFlight.replaceChildren(counted, unavailable("in-flight-unavailable"));
    return;
  }
  const keys = answer.body.keys;
  if (keys.length === 0) {
    const more = answer.body.next_cursor !== null && answer.body.next_cursor !== undefined;
    if (count === 0 || (count === null && !more)) {
      ui.inFlight.replaceChildren(counted, el("p", { class: "empty", testid: "in-flight-empty", text: "no key is in flight" }));
    } else {
      ui.inFlight.replaceChildren(counted, el("p", { class: "empty", testid: "in-flight-unlisted", text: "none listed in the " + answer.pages + " oldest pages read" + (more ? "; the listing goes on" : "") }));
    }
    return;
  }
  const parts = [counted, keyTable("in-flight-row", keys, [
    { id: "key", title: "key", cell: (r) => keyButton(shown(r.key), onKey) },
    { id: "generation", title: "generation", num: true, cell: (r) => shown(r.generation) },
    { id: "created_at", title: "claimed", cell: (r) => shown(r.created_at) },
    { id: "lease_left", title: "lease left", num: true, cell: leaseLeft },
  ])];
  if (answer.body.next_cursor !== null && answer.body.next_cursor !== undefined) {
    parts.push(el("p", { class: "empty", testid: "in-flight-more", text: "more keys are in flight: the oldest are shown" }));
  }
  ui.inFlight.replaceChildren(...parts);
}

/**
 * A page of the recent keys; its pager follows the listing's cursor.
 * @param {{ recent: HTMLElement; pager: HTMLElement; newer: HTMLButtonElement; older: HTMLButtonElement; page: HTMLElement }} ui
 * @param {{ earlier: unknown[]; nextCursor: string | null }} state
 * @param {Answer} answer
 * @param {OnKey} onKey
 */
export function renderRecent(ui, state, answer, onKey) {
  if (!listed(answer)) {
    ui.recent.replaceChildren(unavailable("recent-unavailable"));
    ui.pager.hidden = true;
    return;
  }
  const keys = answer.body.keys;
  const next = typeof answer.body.next_cursor === "string" ? answer.body.next_cursor : null;
  state.nextCursor = next;
  ui.recent.replaceChildren(keys.length === 0
    ? el("p", { class: "empty", testid: "recent-empty", text: next === null ? "no keys" : "no keys on this page" })
    : keyTable("recent-row", keys, [
        { id: "key", title: "key", cell: (r) => keyButton(shown(r.key), onKey) },
        { id: "state", title: "state", cell: (r) => shown(r.state) },
        { id: "status", title: "status", num: true, cell: statusOf },
        { id: "replays", title: "replays", num: true, cell: (r) => shown(r.replays) },
        { id: "created_at", title: "created", cell: (r) => shown(r.created_at) },
      ]));
  ui.pager.hidden = false;
  ui.newer.disabled = state.earlier.length === 0;
  ui.older.disabled = next === null;
  ui.page.textContent = "page " + (state.earlier.length + 1);
}
