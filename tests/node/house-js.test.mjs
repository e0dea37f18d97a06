// The JS sources' sizes (docs/development.md "Source layout", the client/ line): no source file of
// client/, worker/, bench/ or scripts/ over 400 lines, no function over 80,
// so each reads in one sitting. A simple, honest counter, not a parser:
//   - a file's size is its line count (comments included);
//   - a function is one that starts a line (after indentation, `export`,
//     `default`, `async`, `static`): `function name(`, a class method
//     `name(…) {` (with `get`/`set`/`#`), or an arrow or function
//     expression assigned by `const`/`let`/`var`/`name =`/`name:`. Its
//     length runs from that line to the line of the brace that closes its
//     body, matched after strings, template literals, comments and regular
//     expression literals are blanked (a regex is told from a division by
//     the token before it). An arrow with an expression body ends at the
//     `;` or `,` that closes its statement.
//   - Not counted: a callback passed inline (`list.map((x) => { … })`), an
//     object literal's method on a line that does not start with its name.
//     Those live inside a counted function or statement anyway.
// client/generated/ is excluded: data written by scripts/build.sh, not code
// anyone edits.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";

const ROOT = new URL("../../", import.meta.url).pathname;
const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 80;

/** The JS sources of client/, worker/, bench/ and scripts/ (not declarations, not generated data, not build outputs). */
export function sources() {
  const files = [];
  for (const dir of ["client", "worker", "bench", "scripts"]) {
    for (const f of readdirSync(`${ROOT}${dir}`, { recursive: true })) {
      if (!/\.(m?js)$/.test(f) || /^generated\/|(^|\/)(node_modules|target|pkg|build)\//.test(f)) continue;
      files.push(`${dir}/${f}`);
    }
  }
  return files.sort();
}

// The token before a `/` that makes it start a regular expression.
const REGEX_AFTER = /(^|[=(,:;!&|?{}[\]+\-*%<>~^]|\breturn|\btypeof|\bcase|\bof|\bin|=>)\s*$/;

/** The text with every string, template, comment and regex blanked to spaces (newlines kept). */
export function blank(text) {
  let out = "";
  let i = 0;
  const keep = (c) => (c === "\n" ? "\n" : " ");
  const templates = []; // brace depth at which each open `${` returns to its template
  let depth = 0;
  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === "/" && next === "/") {
      while (i < text.length && text[i] !== "\n") { out += " "; i++; }
    } else if (c === "/" && next === "*") {
      const end = text.indexOf("*/", i + 2);
      const stop = end === -1 ? text.length : end + 2;
      for (; i < stop; i++) out += keep(text[i]);
    } else if (c === '"' || c === "'") {
      out += " "; i++;
      while (i < text.length && text[i] !== c && text[i] !== "\n") {
        if (text[i] === "\\") { out += " "; i++; }
        out += " "; i++;
      }
      out += " "; i++;
    } else if (c === "`" || (c === "}" && templates.length > 0 && templates.at(-1) === depth)) {
      if (c === "}") templates.pop();
      out += " "; i++;
      while (i < text.length && text[i] !== "`") {
        if (text[i] === "\\") { out += " "; i++; }
        else if (text[i] === "$" && text[i + 1] === "{") { templates.push(depth); out += "  "; i += 2; break; }
        out += keep(text[i]); i++;
      }
      if (text[i] === "`") { out += " "; i++; }
    } else if (c === "/" && REGEX_AFTER.test(out.slice(-40))) {
      let inClass = false;
      out += " "; i++;
      while (i < text.length && text[i] !== "\n" && (inClass || text[i] !== "/")) {
        if (text[i] === "\\") { out += " "; i++; }
        else if (text[i] === "[") inClass = true;
        else if (text[i] === "]") inClass = false;
        out += " "; i++;
      }
      out += " "; i++;
    } else {
      if (c === "{") depth++;
      if (c === "}") depth--;
      out += c; i++;
    }
  }
  return out;
}

const KEYWORDS = new Set(["if", "for", "while", "switch", "catch", "with", "return", "function", "do", "else", "try", "new", "await", "typeof"]);
const DECLARATION = /^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*([\w$]*)\s*\(/;
const ASSIGNED = /^\s*(?:export\s+)?(?:(?:const|let|var)\s+)?([\w$.#]+)\s*[=:]\s*(?:async\s+)?(?:function\b|(?:\([^)]*\)|[\w$]+)\s*=>|\(\s*$)/;
const METHOD = /^\s*(?:static\s+)?(?:async\s+)?(?:\*\s*)?(?:(?:get|set)\s+)?(#?[\w$]+)\s*\([^;]*\)\s*\{\s*$|^\s*(?:static\s+)?(?:async\s+)?(?:(?:get|set)\s+)?(#?[\w$]+)\s*\(\s*$/;

/** Every counted function of a file's text: its name, first line and length in lines. */
export function functions(text) {
  const code = blank(text);
  const lines = code.split("\n");
  const starts = [];
  let offset = 0;
  for (const [n, line] of lines.entries()) {
    const m = DECLARATION.exec(line) ?? ASSIGNED.exec(line) ?? METHOD.exec(line);
    const name = m?.[1] ?? m?.[2];
    if (m && !(name && KEYWORDS.has(name))) starts.push({ name: name || "(anonymous)", line: n + 1, offset: offset + m.index });
    offset += line.length + 1;
  }
  return starts.map((s) => ({ ...s, lines: end(code, s.offset) - s.line + 1 }));
}

/** The line on which the function starting at `from` ends. */
function end(code, from) {
  let parens = 0;
  let i = from;
  let arrow = false;
  for (; i < code.length; i++) {
    const c = code[i];
    if (c === "(" || c === "[") parens++;
    else if (c === ")" || c === "]") parens--;
    else if (c === "=" && code[i + 1] === ">" && parens === 0) { arrow = true; i++; }
    else if (c === "{" && parens === 0) break;
    else if (arrow && parens === 0 && /\S/.test(c)) return lineOf(code, statementEnd(code, i));
  }
  let braces = 0;
  for (; i < code.length; i++) {
    if (code[i] === "{") braces++;
    else if (code[i] === "}" && --braces === 0) break;
  }
  return lineOf(code, i);
}

/** Where an expression-bodied arrow's statement ends: `;`, or `,`/`)` closing its enclosing list. */
function statementEnd(code, from) {
  let depth = 0;
  for (let i = from; i < code.length; i++) {
    const c = code[i];
    if ("([{".includes(c)) depth++;
    else if (")]}".includes(c)) { if (--depth < 0) return i; }
    else if ((c === ";" || c === ",") && depth === 0) return i;
  }
  return code.length - 1;
}

const lineOf = (code, index) => code.slice(0, index).split("\n").length;

test(`no JS source file is over ${MAX_FILE_LINES} lines`, () => {
  const over = sources()
    .map((f) => ({ f, lines: readFileSync(`${ROOT}${f}`, "utf8").split("\n").length - 1 }))
    .filter(({ lines }) => lines > MAX_FILE_LINES)
    .map(({ f, lines }) => `${f}: ${lines} lines`);
  assert.deepEqual(over, [], "split these by seam");
});

test(`no JS function is over ${MAX_FUNCTION_LINES} lines`, () => {
  const over = [];
  for (const f of sources()) {
    for (const fn of functions(readFileSync(`${ROOT}${f}`, "utf8"))) {
      if (fn.lines > MAX_FUNCTION_LINES) over.push(`${f}:${fn.line} ${fn.name}: ${fn.lines} lines`);
    }
  }
  assert.deepEqual(over, [], "split these functions");
});

// The package ships client/ and worker/ without src/ (package.json
// "files"), so a comment there names the Rust side by module
// (`protocol::key`), not by a src/ path that would point nowhere.
test("the package's sources name Rust code by module, not by src/ path", () => {
  const named = [];
  for (const f of sources().filter((f) => /^(client|worker)\//.test(f))) {
    for (const [i, line] of readFileSync(`${ROOT}${f}`, "utf8").split("\n").entries()) {
      const m = /\bsrc\/[\w/]+\.rs\b/.exec(line);
      if (m) named.push(`${f}:${i + 1} ${m[0]}`);
    }
  }
  assert.deepEqual(named, [], "name the module instead, e.g. `Rust protocol::key`");
});

test("the counter sees declarations, methods and arrows, and what closes them", () => {
  const text = [
    "const re = /}/g; // }",
    "export async function a(x = {}) {",
    "  const s = `${x} }`;",
    "  return s;",
    "}",
    "class K {",
    "  static async m(y) {",
    "    if (y) {",
    "      return 1;",
    "    }",
    "  }",
    "}",
    "const b = async (z) => {",
    "  return '}';",
    "};",
    "const c = (w) => w + 1;",
  ].join("\n");
  assert.deepEqual(functions(text).map(({ name, line, lines }) => [name, line, lines]), [
    ["a", 2, 4],
    ["m", 7, 5],
    ["b", 13, 3],
    ["c", 16, 1],
  ]);
});
