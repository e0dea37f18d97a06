// What every benchmark shares: its command-line options (benchOptions) and
// the V8 CPU profile of a workerd isolate over the inspector
// (profileIsolate). The HTTP benches' servers, load and scenarios are in
// bench/server.mjs; the built Worker in workerd is scripts/workerd.mjs.
// Nothing here imports a test.
//
// What must stay true: an option a bench does not know, or a number that
// is not one, stops the bench before it starts anything, naming the option
// (a typo must not run 8 minutes of the defaults); defaults are the ones
// docs/development.md states.
import WebSocket from "ws";
import { parseArgs } from "node:util";

/**
 * The load options of the benches that drive autocannon (cpu, http,
 * embedded, profile): seconds measured per scenario, seconds of warm-up,
 * connections, and rounds.
 */
export const LOAD = {
  duration: { default: 8, help: "seconds of load measured per scenario" },
  warmup: { default: 3, help: "seconds of warm-up load before each scenario" },
  connections: { default: 16, help: "autocannon connections", whole: true },
  rounds: { default: 2, help: "rounds of every scenario", whole: true },
};

/**
 * Parses this bench's options from process.argv. `options` maps a name to
 * `{ default, help }` (and, for numbers, `whole` and `min`/`max`): a number
 * default makes a numeric option, returned as a number; `false` a flag; a
 * string or `undefined` a text option. `load: true` adds LOAD. `--help`
 * prints them and exits.
 * @param {Record<string, { default?: number | string | boolean, help: string, whole?: boolean, min?: number, max?: number }>} options
 * @param {{ load?: boolean, usage?: string }} [how]
 */
export function benchOptions(options, { load = false, usage = "" } = {}) {
  const spec = { ...(load ? LOAD : {}), ...options };
  const parse = { help: { type: "boolean", default: false } };
  for (const [name, o] of Object.entries(spec)) {
    parse[name] = typeof o.default === "boolean"
      ? { type: "boolean", default: o.default }
      : { type: "string", ...(o.default === undefined ? {} : { default: String(o.default) }) };
  }
  let values;
  try {
    ({ values } = parseArgs({ options: parse, strict: true, allowPositionals: false }));
  } catch (error) {
    fail(`${error.message}\n${describe(spec, usage)}`);
  }
  if (values.help) {
    console.log(describe(spec, usage));
    process.exit(0);
  }
  const out = {};
  for (const [name, o] of Object.entries(spec)) {
    const raw = values[name];
    if (typeof o.default !== "number") { out[name] = raw; continue; }
    const n = Number(raw);
    const min = o.min ?? (o.whole ? 1 : Number.MIN_VALUE);
    const whole = o.whole ?? false;
    if (raw.trim() === "" || !Number.isFinite(n) || n < min || (o.max !== undefined && n > o.max) || (whole && !Number.isInteger(n))) {
      const range = `${whole ? "a whole number" : "a number"} ${min === Number.MIN_VALUE ? "above 0" : `from ${min}`}${o.max !== undefined ? ` to ${o.max}` : ""}`;
      fail(`--${name} must be ${range}, not ${JSON.stringify(raw)}`);
    }
    out[name] = n;
  }
  return out;
}

function describe(spec, usage) {
  const lines = Object.entries(spec).map(([name, o]) =>
    `  --${name}${typeof o.default === "boolean" ? "" : " <value>"}  ${o.help}${o.default === undefined || o.default === false ? "" : ` (default ${o.default})`}`);
  return `${usage ? `${usage}\n` : ""}options:\n${lines.join("\n")}`;
}

function fail(message) {
  console.error(message);
  process.exit(2);
}

/**
 * Records a V8 CPU profile of one workerd isolate while `during()` runs,
 * over the DevTools protocol of the inspector on `port` (wrangler's
 * `--inspector-port` or Miniflare's `inspectorPort`), sampling every 200 µs.
 * `target` picks the isolate among the inspector's list (default: the
 * first); `origin` is sent as the WebSocket's Origin header (wrangler's
 * inspector proxy wants one, which Node's own WebSocket cannot send: the
 * `ws` package can). Waits up to `waitMs` for the inspector to list a
 * target. Returns the profile, its self time per call frame and
 * `during()`'s result.
 * @template T
 * @param {{ port: number | string, during: () => Promise<T>, target?: (t: { webSocketDebuggerUrl: string }) => boolean, origin?: string, waitMs?: number }} how
 */
export async function profileIsolate({ port, during, target = () => true, origin, waitMs = 60_000 }) {
  const deadline = Date.now() + waitMs;
  let found;
  for (;;) {
    try {
      const list = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
      found = list.find(target);
    } catch {}
    if (found) break;
    if (Date.now() > deadline) throw new Error(`no inspector target on port ${port}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const ws = new WebSocket(found.webSocketDebuggerUrl, origin ? { origin } : {});
  await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject; });
  let id = 0;
  const pending = new Map();
  ws.onmessage = (m) => {
    const msg = JSON.parse(String(m.data));
    if (msg.id && pending.has(msg.id)) { pending.get(msg.id)(msg); pending.delete(msg.id); }
  };
  const send = (method, params = {}) => new Promise((resolve) => {
    const i = ++id;
    pending.set(i, resolve);
    ws.send(JSON.stringify({ id: i, method, params }));
  });
  try {
    await send("Profiler.enable");
    await send("Profiler.setSamplingInterval", { interval: 200 });
    await send("Profiler.start");
    const result = await during();
    const { result: { profile } } = await send("Profiler.stop");
    return { profile, frames: selfTime(profile), result };
  } finally {
    ws.close();
  }
}

/**
 * Self time (µs) per sampled node of a V8 CPU profile, with its call
 * frame: `[{ callFrame, us }]`, idle included (callers group and skip).
 */
export function selfTime(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  profile.samples.forEach((nodeId, i) => self.set(nodeId, (self.get(nodeId) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  return [...self].map(([nodeId, us]) => ({ callFrame: byId.get(nodeId).callFrame, us }));
}
