// The console's script (GET /console/app.js), served by ../console.mjs:
// the browser code as one string, so the console needs no build step and no
// extra wrangler rule, from the checkout or from the npm package.
//
// What must stay true in the string (tests/node/console.test.mjs checks it
// parses and uses no HTML sink; tests/e2e/console.test.mjs runs it):
// - Data is rendered with textContent / createElement / setAttribute only:
//   keys and everything else the API returns are hostile input. No
//   innerHTML, outerHTML, insertAdjacentHTML, document.write or eval (and
//   the page's Trusted Types policy would refuse them anyway).
// - Without a token the page asks the API nothing (no request, so no 401
//   in the browser's console) and says so.
// - The token lives in this page's memory only (a closure's state, gone on
//   reload or close; never in sessionStorage, localStorage, a cookie or a
//   URL) and in the Authorization header; a 401 or 403 (or any refused
//   stats read) empties every panel
//   before its detail is shown, and answers that arrive after the token
//   changed are dropped.
// - Fields the gateway may not have yet (trend, limits, the key list) show
//   "not available" instead of failing.
// - The in-flight panel shows stats' in_flight count and says "no key is in
//   flight" only when that count is 0: a listing page may hold no key while
//   its walk goes on, so the page follows next_cursor (a bounded number of
//   pages) until one holds a key.
// It is String.raw: no backquote in it, and one dollar-brace, TREND_SERIES
// (the trended counts, client/generated/trended.js).
import { TRENDED } from "../../client/generated/trended.js";

export const CONSOLE_SCRIPT = String.raw`"use strict";
(() => {
  // Where versions before the operator token kept it: emptied on load.
  const OLD_TOKEN_KEY = "idempotency-ledger.console.token";
  const REFRESH_MS = 5000;
  const RECENT_LIMIT = 20;
  const IN_FLIGHT_LIMIT = 100;
  // Pages of the in-flight listing followed at most per refresh until one holds a key: a page may
  // hold none while its walk goes on (records in flight past their window, not swept yet).
  const IN_FLIGHT_PAGES = 8;
  const BILLED = ["sql_rows_written", "sql_rows_read"];
  const TREND_SERIES = ${JSON.stringify(TRENDED)};
  const NOT_AVAILABLE = "not available";
  const NONE = "\u2014";
  const SVG = "http://www.w3.org/2000/svg";

  const find = (testid) => document.querySelector("[data-testid=\"" + testid + "\"]");
  const ui = {
    tokenForm: find("token-form"), tokenInput: find("token-input"), forget: find("token-forget"),
    status: find("status"), problem: find("problem"), dashboard: find("dashboard"),
    stats: find("stats"), billed: find("billed"), quota: find("quota"), trend: find("trend"),
    inFlight: find("in-flight"), recent: find("recent"), pager: find("recent-pager"),
    newer: find("recent-newer"), older: find("recent-older"), page: find("recent-page"),
    lookupForm: find("lookup-form"), lookupInput: find("lookup-input"), lookupResult: find("lookup-result"),
  };

  /** What the console shows now. epoch changes with the token: answers of an older epoch are dropped. */
  const state = {
    token: "", epoch: 0, seq: 0, lookupSeq: 0, timer: 0, stopped: false,
    cursor: null, earlier: [], nextCursor: null,
  };

  try { sessionStorage.removeItem(OLD_TOKEN_KEY); } catch (e) { /* no storage: nothing was kept there */ }

  /** An element with text, attributes and children; text is always textContent. */
  function el(tag, props, children) {
    const node = document.createElement(tag);
    setProps(node, props);
    for (const child of children || []) node.append(child);
    return node;
  }
  function svg(tag, props, children) {
    const node = document.createElementNS(SVG, tag);
    setProps(node, props);
    for (const child of children || []) node.append(child);
    return node;
  }
  function setProps(node, props) {
    for (const name of Object.keys(props || {})) {
      const value = props[name];
      if (value === undefined || value === null) continue;
      if (name === "text") node.textContent = String(value);
      else if (name === "testid") node.setAttribute("data-testid", String(value));
      else node.setAttribute(name, String(value));
    }
  }

  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  const shown = (v) => (v === null || v === undefined ? NONE : String(v));
  const unavailable = (testid) => el("p", { class: "unavailable", testid, text: NOT_AVAILABLE });

  /** One API call with the console's token (a read unless method says otherwise): its status and its JSON (null if none). */
  async function api(path, method) {
    const headers = new Headers({ accept: "application/json" });
    if (state.token) headers.set("authorization", "Bearer " + state.token);
    const res = await fetch(path, { method: method || "GET", headers, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" });
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    return { status: res.status, body };
  }
  const detailOf = (answer) =>
    isObject(answer.body) && typeof answer.body.detail === "string" ? answer.body.detail : "the gateway answered " + answer.status;
  const listed = (answer) => answer.status === 200 && isObject(answer.body) && Array.isArray(answer.body.keys);

  function clearData() {
    for (const pane of [ui.stats, ui.billed, ui.quota, ui.trend, ui.inFlight, ui.recent, ui.lookupResult, ui.page]) pane.replaceChildren();
    ui.newer.disabled = true;
    ui.older.disabled = true;
    ui.status.textContent = "";
  }

  /** A refusal: nothing but its detail stays on the page. */
  function showProblem(text) {
    clearData();
    ui.dashboard.hidden = true;
    ui.problem.textContent = text;
    ui.problem.hidden = false;
  }

  function schedule() {
    clearTimeout(state.timer);
    state.timer = 0;
    if (!state.stopped && !document.hidden) state.timer = setTimeout(load, REFRESH_MS);
  }

  /** Reads stats and both key lists at once, then renders them together, or the refusal. */
  async function load() {
    clearTimeout(state.timer);
    if (!state.token) {
      // No token, no request: nothing is asked of the API (and nothing refused) until one is given.
      state.seq += 1;
      clearData();
      ui.dashboard.hidden = true;
      ui.problem.hidden = true;
      ui.problem.textContent = "";
      ui.status.textContent = "paste a token to begin";
      return;
    }
    const seq = ++state.seq;
    const epoch = state.epoch;
    const page = "/v1/idempotency-keys?limit=" + RECENT_LIMIT + (state.cursor === null ? "" : "&cursor=" + encodeURIComponent(state.cursor));
    let answers;
    try {
      answers = await Promise.all([
        api("/v1/idempotency/stats"),
        inFlightKeys(),
        api(page),
      ]);
    } catch (error) {
      if (seq !== state.seq || epoch !== state.epoch) return;
      showProblem("the gateway could not be asked: " + (error && error.message ? error.message : String(error)));
      schedule();
      return;
    }
    if (seq !== state.seq || epoch !== state.epoch) return;
    const [stats, inFlight, recent] = answers;
    const refused = answers.find((a) => a.status === 401 || a.status === 403);
    if (refused) {
      state.stopped = true; // a refused token stays refused: wait for another one
      showProblem(detailOf(refused));
      return;
    }
    if (stats.status !== 200 || !isObject(stats.body)) {
      showProblem(detailOf(stats));
      schedule();
      return;
    }
    ui.problem.hidden = true;
    ui.problem.textContent = "";
    ui.dashboard.hidden = false;
    renderStats(stats.body);
    renderQuota(stats.body);
    renderTrend(stats.body.trend);
    renderInFlight(inFlight, stats.body);
    renderRecent(recent);
    ui.status.replaceChildren("updated ", el("time", { testid: "updated", text: new Date().toISOString().slice(11, 19) + " UTC" }), ", every " + REFRESH_MS / 1000 + " s while this tab is visible");
    schedule();
  }

  function pair(testid, name, value) {
    return el("div", {}, [el("dt", { text: name }), el("dd", { testid, text: shown(value) })]);
  }

  function renderStats(stats) {
    const counts = [];
    const billed = [];
    for (const name of Object.keys(stats)) {
      const value = stats[name];
      if (value !== null && typeof value === "object") continue; // trend, limits: their own panels
      (BILLED.includes(name) ? billed : counts).push(pair("stat-" + name, name, value));
    }
    ui.stats.replaceChildren(...counts);
    ui.billed.replaceChildren(...(billed.length ? billed : [unavailable("billed-unavailable")]));
  }

  function gauge(testid, label, used, max) {
    const share = max > 0 ? " (" + ((100 * used) / max).toFixed(2) + " %)" : "";
    return el("div", { class: "gauge" }, [
      el("span", { text: label }),
      el("meter", { min: 0, max, value: Math.min(used, max), low: max * 0.7, high: max * 0.9, optimum: 0 }),
      el("span", { testid, text: used + " of " + max + share }),
    ]);
  }

  function renderQuota(stats) {
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

  const minuteLabel = (minute) => {
    const t = Date.parse(minute);
    return Number.isNaN(t) ? shown(minute) : new Date(t).toISOString().slice(11, 16) + " UTC";
  };

  /** The last hour, one polyline per counter, drawn with SVG DOM calls. */
  function renderTrend(trend) {
    if (!Array.isArray(trend) || trend.length === 0 || !trend.every(isObject)) {
      ui.trend.replaceChildren(unavailable("trend-unavailable"));
      return;
    }
    const W = 900, H = 180, LEFT = 40, RIGHT = 8, TOP = 10, BOTTOM = 22;
    let top = 1;
    for (const minute of trend) for (const name of TREND_SERIES) top = Math.max(top, num(minute[name]));
    const x = (i) => LEFT + (trend.length === 1 ? 0 : (i * (W - LEFT - RIGHT)) / (trend.length - 1));
    const y = (v) => TOP + (H - TOP - BOTTOM) * (1 - v / top);
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

  function keyButton(key) {
    const button = el("button", { type: "button", class: "key", testid: "key-lookup", title: "look this key up", text: key });
    button.addEventListener("click", () => lookup(key));
    return button;
  }

  /** A table of keys: one row per key, each cell filled by textContent. */
  function keyTable(rowTestid, keys, columns) {
    const head = el("tr", {}, columns.map((c) => el("th", { scope: "col", class: c.num ? "num" : undefined, text: c.title })));
    const rows = keys.filter(isObject).map((record) =>
      el("tr", { testid: rowTestid }, columns.map((c) => {
        const content = c.cell(record);
        return el("td", { class: c.num ? "num" : undefined, testid: "cell-" + c.id }, [content]);
      })));
    return el("table", {}, [el("thead", {}, [head]), el("tbody", {}, rows)]);
  }

  function leaseLeft(record) {
    const end = Date.parse(record.lease_expires_at);
    if (Number.isNaN(end)) return NONE;
    const seconds = Math.ceil((end - Date.now()) / 1000);
    return seconds > 0 ? seconds + " s" : "ended";
  }

  function statusOf(record) {
    const status = shown(record.response_status);
    return record.retained === false ? status + " (not retained)" : status;
  }

  /**
   * The in-flight listing: its pages followed by next_cursor until one holds a key, the walk ends,
   * or IN_FLIGHT_PAGES were read. The last answer read, with the number of pages read.
   */
  async function inFlightKeys() {
    let cursor = null;
    for (let pages = 1; ; pages++) {
      const answer = await api("/v1/idempotency-keys?state=in_flight&limit=" + IN_FLIGHT_LIMIT + (cursor === null ? "" : "&cursor=" + encodeURIComponent(cursor)));
      if (!listed(answer)) return answer;
      cursor = typeof answer.body.next_cursor === "string" ? answer.body.next_cursor : null;
      if (answer.body.keys.length > 0 || cursor === null || pages >= IN_FLIGHT_PAGES) return { ...answer, pages };
    }
  }

  /** The keys in flight, under the count stats gives; "no key is in flight" only when that count is 0. */
  function renderInFlight(answer, stats) {
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
      { id: "key", title: "key", cell: (r) => keyButton(shown(r.key)) },
      { id: "generation", title: "generation", num: true, cell: (r) => shown(r.generation) },
      { id: "created_at", title: "claimed", cell: (r) => shown(r.created_at) },
      { id: "lease_left", title: "lease left", num: true, cell: leaseLeft },
    ])];
    if (answer.body.next_cursor !== null && answer.body.next_cursor !== undefined) {
      parts.push(el("p", { class: "empty", testid: "in-flight-more", text: "more keys are in flight: the oldest are shown" }));
    }
    ui.inFlight.replaceChildren(...parts);
  }

  function renderRecent(answer) {
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
          { id: "key", title: "key", cell: (r) => keyButton(shown(r.key)) },
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

  const LOOKUP_FIELDS = ["key", "state", "generation", "created_at", "expires_at", "lease_expires_at", "response_status", "retained", "replays"];

  async function lookup(key) {
    ui.lookupInput.value = key;
    const seq = ++state.lookupSeq;
    const epoch = state.epoch;
    if (key === "") {
      ui.lookupResult.replaceChildren(el("p", { class: "empty", text: "enter a key" }));
      return;
    }
    if (!state.token) {
      ui.lookupResult.replaceChildren(el("p", { class: "empty", text: "paste a token first" }));
      return;
    }
    ui.lookupResult.replaceChildren(el("p", { class: "empty", text: "looking up\u2026" }));
    let answer;
    try {
      answer = await api("/v1/idempotency-keys/" + encodeURIComponent(key));
    } catch (error) {
      if (seq === state.lookupSeq && epoch === state.epoch) ui.lookupResult.replaceChildren(el("p", { class: "problem", testid: "lookup-problem", text: String(error && error.message) }));
      return;
    }
    if (seq !== state.lookupSeq || epoch !== state.epoch) return;
    if (answer.status === 401) {
      state.stopped = true;
      showProblem(detailOf(answer));
      return;
    }
    if (answer.status === 404) {
      ui.lookupResult.replaceChildren(el("p", { class: "empty", testid: "lookup-not-found", text: "not found: " + detailOf(answer) }));
      return;
    }
    if (answer.status !== 200 || !isObject(answer.body)) {
      ui.lookupResult.replaceChildren(el("p", { class: "problem", testid: "lookup-problem", text: detailOf(answer) }));
      return;
    }
    const record = answer.body;
    const names = LOOKUP_FIELDS.filter((n) => Object.hasOwn(record, n))
      .concat(Object.keys(record).filter((n) => !LOOKUP_FIELDS.includes(n) && (record[n] === null || typeof record[n] !== "object")));
    const evict = el("button", { type: "button", class: "danger", testid: "lookup-evict", text: "Evict" });
    evict.addEventListener("click", () => confirmEviction(key, evict));
    ui.lookupResult.replaceChildren(
      el("dl", { testid: "lookup-record" }, names.map((n) => pair("lookup-" + n, n, record[n]))),
      evict,
    );
  }

  /** The Evict action's confirmation step: nothing is sent until the operator confirms. */
  function confirmEviction(key, button) {
    button.hidden = true;
    const yes = el("button", { type: "button", class: "danger", testid: "evict-confirm", text: "Evict this key" });
    const no = el("button", { type: "button", testid: "evict-cancel", text: "Cancel" });
    const box = el("div", { class: "confirm", testid: "evict-confirmation", role: "alertdialog" }, [
      el("p", { text: "Evict " + key + "? Its stored answer is removed and the next request with this key runs again." }),
      yes, no,
    ]);
    no.addEventListener("click", () => { box.remove(); button.hidden = false; });
    yes.addEventListener("click", () => { yes.disabled = true; no.disabled = true; evictKey(key, box); });
    ui.lookupResult.append(box);
  }

  /** DELETE /v1/idempotency-keys/{key}: the outcome replaces the lookup, then the panels refresh. */
  async function evictKey(key, box) {
    const seq = ++state.lookupSeq;
    const epoch = state.epoch;
    let answer;
    try {
      answer = await api("/v1/idempotency-keys/" + encodeURIComponent(key), "DELETE");
    } catch (error) {
      if (seq === state.lookupSeq && epoch === state.epoch) box.replaceChildren(el("p", { class: "problem", testid: "evict-problem", text: String(error && error.message) }));
      return;
    }
    if (seq !== state.lookupSeq || epoch !== state.epoch) return;
    if (answer.status === 401) {
      state.stopped = true;
      showProblem(detailOf(answer));
      return;
    }
    if (answer.status === 200 && isObject(answer.body)) {
      const r = answer.body;
      ui.lookupResult.replaceChildren(el("p", { class: "done", testid: "evict-done",
        text: "evicted " + shown(r.key) + " (was " + shown(r.state) + ", status " + shown(r.response_status) + ", generation " + shown(r.generation) + "): the next request with it runs again" }));
      load();
      return;
    }
    box.replaceChildren(el("p", { class: "problem", testid: "evict-problem", text: detailOf(answer) }));
  }

  /** A new token (or none): everything the previous one showed goes first. */
  function useToken(token) {
    state.token = token;
    state.epoch += 1;
    state.stopped = false;
    state.cursor = null;
    state.earlier = [];
    state.nextCursor = null;
    ui.lookupInput.value = "";
    ui.problem.hidden = true;
    ui.dashboard.hidden = true;
    clearData();
    load();
  }

  ui.tokenForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const token = ui.tokenInput.value.trim().replace(/^bearer\s+/i, "");
    ui.tokenInput.value = "";
    useToken(token);
  });
  ui.forget.addEventListener("click", () => useToken(""));
  ui.lookupForm.addEventListener("submit", (event) => {
    event.preventDefault();
    lookup(ui.lookupInput.value);
  });
  ui.older.addEventListener("click", () => {
    if (state.nextCursor === null) return;
    state.earlier.push(state.cursor);
    state.cursor = state.nextCursor;
    load();
  });
  ui.newer.addEventListener("click", () => {
    if (state.earlier.length === 0) return;
    state.cursor = state.earlier.pop();
    load();
  });
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) {
      clearTimeout(state.timer);
      state.timer = 0;
      if (!state.stopped && !ui.dashboard.hidden) ui.status.textContent = "paused while this tab is hidden";
    } else if (!state.stopped) {
      load();
    }
  });
  load();
})();
`;
