// @ts-check
// The operator console's script (GET /console/app.js, a module; with
// ./dom.js and ./panels.js), served by ../../console.mjs from the copy
// scripts/console-files.mjs embeds in ../files.mjs.
//
// What must stay true here (tests/node/console.test.mjs checks the files
// parse and use no HTML sink; tests/e2e/console.test.mjs runs them):
// - Data is rendered with textContent / createElement / setAttribute only:
//   keys and everything else the API returns are hostile input. No
//   innerHTML, outerHTML, insertAdjacentHTML, document.write or eval (and
//   the page's Trusted Types policy would refuse them anyway).
// - Without a token the page asks the API nothing (no request, so no 401
//   in the browser's console) and says so.
// - The token lives in this page's memory only (this module's state, gone
//   on reload or close; never in sessionStorage, localStorage, a cookie or
//   a URL) and in the Authorization header; a 401 or 403 (or any refused
//   stats read) empties every panel before its detail is shown, and
//   answers that arrive after the token changed are dropped.
// - Fields the gateway may not have yet (trend, limits, the key list) show
//   "not available" instead of failing.
// - The in-flight panel shows stats' in_flight count and says "no key is in
//   flight" only when that count is 0: a listing page may hold no key while
//   its walk goes on, so the page follows next_cursor (a bounded number of
//   pages) until one holds a key.
import { detailOf, el, isObject, listed, pair, shown } from "./dom.js";
import { renderInFlight, renderQuota, renderRecent, renderStats, renderTrend } from "./panels.js";
/** @import { Answer } from "./dom.js" */

// Where versions before the operator token kept it: emptied on load.
const OLD_TOKEN_KEY = "idempotency-ledger.console.token";
const REFRESH_MS = 5000;
const RECENT_LIMIT = 20;
const IN_FLIGHT_LIMIT = 100;
// Pages of the in-flight listing followed at most per refresh until one holds a key: a page may
// hold none while its walk goes on (records in flight past their window, not swept yet).
const IN_FLIGHT_PAGES = 8;
const LOOKUP_FIELDS = ["key", "state", "generation", "created_at", "expires_at", "lease_expires_at", "response_status", "retained", "replays"];

/**
 * The page's element with this data-testid (the page has each one).
 * @param {string} testid
 * @returns {HTMLElement}
 */
const find = (testid) => /** @type {HTMLElement} */ (document.querySelector("[data-testid=\"" + testid + "\"]"));
const ui = {
  tokenForm: find("token-form"), tokenInput: /** @type {HTMLInputElement} */ (find("token-input")), forget: find("token-forget"),
  status: find("status"), problem: find("problem"), dashboard: find("dashboard"),
  stats: find("stats"), billed: find("billed"), quota: find("quota"), trend: find("trend"),
  inFlight: find("in-flight"), recent: find("recent"), pager: find("recent-pager"),
  newer: /** @type {HTMLButtonElement} */ (find("recent-newer")), older: /** @type {HTMLButtonElement} */ (find("recent-older")), page: find("recent-page"),
  lookupForm: find("lookup-form"), lookupInput: /** @type {HTMLInputElement} */ (find("lookup-input")), lookupResult: find("lookup-result"),
};

/** What the console shows now. epoch changes with the token: answers of an older epoch are dropped. */
const state = {
  token: "", epoch: 0, seq: 0, lookupSeq: 0, timer: /** @type {ReturnType<typeof setTimeout> | 0} */ (0), stopped: false,
  cursor: /** @type {string | null} */ (null), earlier: /** @type {(string | null)[]} */ ([]), nextCursor: /** @type {string | null} */ (null),
};

try { sessionStorage.removeItem(OLD_TOKEN_KEY); } catch (e) { /* no storage: nothing was kept there */ }

/**
 * One API call with the console's token (a read unless method says otherwise): its status and its JSON (null if none).
 * @param {string} path
 * @param {string} [method]
 * @returns {Promise<Answer>}
 */
async function api(path, method) {
  const headers = new Headers({ accept: "application/json" });
  if (state.token) headers.set("authorization", "Bearer " + state.token);
  const res = await fetch(path, { method: method || "GET", headers, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" });
  let body = null;
  try { body = await res.json(); } catch (e) { body = null; }
  return { status: res.status, body };
}

function clearData() {
  for (const pane of [ui.stats, ui.billed, ui.quota, ui.trend, ui.inFlight, ui.recent, ui.lookupResult, ui.page]) pane.replaceChildren();
  ui.newer.disabled = true;
  ui.older.disabled = true;
  ui.status.textContent = "";
}

/**
 * A refusal: nothing but its detail stays on the page.
 * @param {string} text
 */
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

/** No token, no request: nothing is asked of the API (and nothing refused) until one is given. */
function waitForToken() {
  state.seq += 1;
  clearData();
  ui.dashboard.hidden = true;
  ui.problem.hidden = true;
  ui.problem.textContent = "";
  ui.status.textContent = "paste a token to begin";
}

/** Reads stats and both key lists at once, then renders them together, or the refusal. */
async function load() {
  clearTimeout(state.timer);
  if (!state.token) return waitForToken();
  const seq = ++state.seq;
  const epoch = state.epoch;
  const page = "/v1/idempotency-keys?limit=" + RECENT_LIMIT + (state.cursor === null ? "" : "&cursor=" + encodeURIComponent(state.cursor));
  let answers;
  try {
    answers = await Promise.all([api("/v1/idempotency/stats"), inFlightKeys(), api(page)]);
  } catch (error) {
    if (seq !== state.seq || epoch !== state.epoch) return;
    showProblem("the gateway could not be asked: " + (error instanceof Error && error.message ? error.message : String(error)));
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
  renderStats(ui, stats.body);
  renderQuota(ui, stats.body);
  renderTrend(ui, stats.body.trend);
  renderInFlight(ui, inFlight, stats.body, lookup);
  renderRecent(ui, state, recent, lookup);
  ui.status.replaceChildren("updated ", el("time", { testid: "updated", text: new Date().toISOString().slice(11, 19) + " UTC" }), ", every " + REFRESH_MS / 1000 + " s while this tab is visible");
  schedule();
}

/**
 * The in-flight listing: its pages followed by next_cursor until one holds a key, the walk ends,
 * or IN_FLIGHT_PAGES were read. The last answer read, with the number of pages read.
 * @returns {Promise<Answer>}
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

/**
 * One call about a key (its lookup, or its eviction) made as lookup number `seq` under token
 * `epoch`: its answer, or null when nothing more is to be shown — the call failed (`onError`
 * shows why, unless a newer lookup or another token came since), it is stale, or it was refused
 * 401 (the page stops and says so).
 * @param {string} key
 * @param {string} method
 * @param {number} seq
 * @param {number} epoch
 * @param {(text: string) => void} onError
 * @returns {Promise<Answer | null>}
 */
async function keyCall(key, method, seq, epoch, onError) {
  const current = () => seq === state.lookupSeq && epoch === state.epoch;
  let answer;
  try {
    answer = await api("/v1/idempotency-keys/" + encodeURIComponent(key), method);
  } catch (error) {
    if (current()) onError(String(error && /** @type {{ message?: unknown }} */ (error).message));
    return null;
  }
  if (!current()) return null;
  if (answer.status === 401) {
    state.stopped = true;
    showProblem(detailOf(answer));
    return null;
  }
  return answer;
}

/**
 * One key's record, looked up (from the form or a listed key).
 * @param {string} key
 */
async function lookup(key) {
  ui.lookupInput.value = key;
  const seq = ++state.lookupSeq;
  const epoch = state.epoch;
  /** @param {string} text @param {string} [testid] @param {string} [kind] */
  const say = (text, testid, kind = "empty") => ui.lookupResult.replaceChildren(el("p", { class: kind, testid, text }));
  if (key === "") return say("enter a key");
  if (!state.token) return say("paste a token first");
  say("looking up\u2026");
  const answer = await keyCall(key, "GET", seq, epoch, (text) => say(text, "lookup-problem", "problem"));
  if (answer === null) return;
  if (answer.status === 404) return say("not found: " + detailOf(answer), "lookup-not-found");
  if (answer.status !== 200 || !isObject(answer.body)) return say(detailOf(answer), "lookup-problem", "problem");
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

/**
 * The Evict action's confirmation step: nothing is sent until the operator confirms.
 * @param {string} key
 * @param {HTMLElement} button
 */
function confirmEviction(key, button) {
  button.hidden = true;
  const yes = /** @type {HTMLButtonElement} */ (el("button", { type: "button", class: "danger", testid: "evict-confirm", text: "Evict this key" }));
  const no = /** @type {HTMLButtonElement} */ (el("button", { type: "button", testid: "evict-cancel", text: "Cancel" }));
  const box = el("div", { class: "confirm", testid: "evict-confirmation", role: "alertdialog" }, [
    el("p", { text: "Evict " + key + "? Its stored answer is removed and the next request with this key runs again." }),
    yes, no,
  ]);
  no.addEventListener("click", () => { box.remove(); button.hidden = false; });
  yes.addEventListener("click", () => { yes.disabled = true; no.disabled = true; evictKey(key, box); });
  ui.lookupResult.append(box);
}

/**
 * DELETE /v1/idempotency-keys/{key}: the outcome replaces the lookup, then the panels refresh.
 * @param {string} key
 * @param {HTMLElement} box
 */
async function evictKey(key, box) {
  const seq = ++state.lookupSeq;
  const epoch = state.epoch;
  const answer = await keyCall(key, "DELETE", seq, epoch, (text) => box.replaceChildren(el("p", { class: "problem", testid: "evict-problem", text })));
  if (answer === null) return;
  if (answer.status === 200 && isObject(answer.body)) {
    const r = answer.body;
    ui.lookupResult.replaceChildren(el("p", { class: "done", testid: "evict-done",
      text: "evicted " + shown(r.key) + " (was " + shown(r.state) + ", status " + shown(r.response_status) + ", generation " + shown(r.generation) + "): the next request with it runs again" }));
    load();
    return;
  }
  box.replaceChildren(el("p", { class: "problem", testid: "evict-problem", text: detailOf(answer) }));
}

/**
 * A new token (or none): everything the previous one showed goes first.
 * @param {string} token
 */
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
  state.cursor = /** @type {string | null} */ (state.earlier.pop());
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
