// The console's stylesheet (GET /console/style.css), served by
// ../console.mjs. The page has no inline style (the Content-Security-Policy
// allows only this file): the trend chart's series are coloured by class.
export const CONSOLE_STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #5b6470; --bg: #ffffff; --panel: #f4f6f8; --line: #d4d9de; --bad: #b42318; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6e9ec; --muted: #9aa4af; --bg: #14171a; --panel: #1d2126; --line: #343a41; --bad: #ff8a80; }
}
[hidden] { display: none !important; }
* { box-sizing: border-box; }
body { margin: 0; padding: 1rem 1.5rem 3rem; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
h1 { font-size: 1.3rem; margin: 0 0 0.75rem; }
h2 { font-size: 1rem; margin: 0 0 0.5rem; }
h2 small { font-weight: normal; color: var(--muted); }
header form, section form { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; }
input { font: inherit; padding: 0.3rem 0.5rem; min-width: 22rem; max-width: 100%; border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); }
button { font: inherit; padding: 0.3rem 0.75rem; border: 1px solid var(--line); border-radius: 4px; background: var(--panel); color: var(--fg); cursor: pointer; }
button:disabled { opacity: 0.5; cursor: default; }
.status { color: var(--muted); margin: 0.5rem 0 0; min-height: 1.4em; }
.problem { color: var(--bad); font-weight: 600; border: 1px solid var(--bad); border-radius: 4px; padding: 0.75rem 1rem; white-space: pre-wrap; overflow-wrap: anywhere; }
main { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 1rem; margin-top: 1rem; }
@media (max-width: 50rem) { main { grid-template-columns: minmax(0, 1fr); } }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 0.75rem 1rem; min-width: 0; }
section.wide { grid-column: 1 / -1; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem; margin: 0 0 0.75rem; }
dl div { display: contents; }
dt { color: var(--muted); font-family: ui-monospace, monospace; }
dd { margin: 0; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 0.2rem 0.5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.num, th.num { font-variant-numeric: tabular-nums; text-align: right; }
button.key { font-family: ui-monospace, monospace; padding: 0; border: 0; background: none; text-align: left; white-space: pre-wrap; overflow-wrap: anywhere; text-decoration: underline dotted; }
.unavailable, .empty { color: var(--muted); font-style: italic; margin: 0; }
.gauge { display: grid; grid-template-columns: 8rem minmax(5rem, 12rem) auto; gap: 0.5rem; align-items: center; margin-bottom: 0.25rem; }
.gauge span { white-space: nowrap; }
meter { width: 100%; }
.pager { display: flex; gap: 0.75rem; align-items: center; margin-top: 0.5rem; }
svg.trend { width: 100%; height: auto; display: block; }
svg.trend .axis { stroke: var(--line); stroke-width: 1; }
svg.trend text { fill: var(--muted); font-size: 10px; }
svg.trend polyline { fill: none; stroke: var(--series); stroke-width: 1.5; }
.legend { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; list-style: none; padding: 0; margin: 0.25rem 0 0; }
.swatch { display: inline-block; width: 0.8rem; height: 0.8rem; border-radius: 2px; margin-right: 0.3rem; vertical-align: middle; background: var(--series); }
.series-claims { --series: #2563eb; }
.series-replays { --series: #16a34a; }
.series-in_use { --series: #d97706; }
.series-reused { --series: #9333ea; }
.series-takeovers { --series: #0891b2; }
.series-fenced_out { --series: #dc2626; }
.series-swept { --series: #6b7280; }
.series-evicted { --series: #be185d; }
button.danger { border-color: var(--bad); color: var(--bad); margin-top: 0.5rem; }
.confirm { border: 1px solid var(--bad); border-radius: 4px; padding: 0.5rem 1rem; margin-top: 0.5rem; }
.confirm button { margin-right: 0.5rem; }
`;
