// The Rust sources stay small enough to read: no file under src/ over 400
// lines, no function over 80 (its signature to its closing brace). Node
// only, no build: it reads src/**/*.rs and matches braces, skipping
// comments, strings and character literals.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const MAX_FILE_LINES = 400;
const MAX_FN_LINES = 80;
const root = fileURLToPath(new URL("../..", import.meta.url));

/** Every .rs file under `dir`. */
function rustFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return rustFiles(path);
    return entry.name.endsWith(".rs") ? [path] : [];
  });
}

/** `text` with comments, string and char literals blanked (newlines kept). */
export function codeOnly(text) {
  let out = "";
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    const next = text[i + 1];
    if (c === "/" && next === "/") {
      while (i < n && text[i] !== "\n") i++;
    } else if (c === "/" && next === "*") {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (text[i] === "/" && text[i + 1] === "*") { depth++; i += 2; continue; }
        if (text[i] === "*" && text[i + 1] === "/") { depth--; i += 2; continue; }
        if (text[i] === "\n") out += "\n";
        i++;
      }
    } else if (c === "r" && /^r#*"/.test(text.slice(i, i + 10)) && !/\w/.test(text[i - 1] ?? "")) {
      // Raw string r"…" / r#"…"#.
      const hashes = /^r(#*)"/.exec(text.slice(i))[1];
      const end = `"${hashes}`;
      i += 2 + hashes.length;
      while (i < n && text.slice(i, i + end.length) !== end) {
        if (text[i] === "\n") out += "\n";
        i++;
      }
      i += end.length;
      out += '""';
    } else if (c === '"') {
      i++;
      while (i < n && text[i] !== '"') {
        if (text[i] === "\\") i++;
        else if (text[i] === "\n") out += "\n";
        i++;
      }
      i++;
      out += '""';
    } else if (c === "'" && /^'(\\.[^']*|[^\\'])'/.test(text.slice(i, i + 12))) {
      // A char literal ('{', '\n', '\u{7f}'), not a lifetime ('a).
      i += /^'(\\.[^']*|[^\\'])'/.exec(text.slice(i, i + 12))[0].length;
      out += "' '";
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Each function with a body: its name, first line (1-based) and length in lines. */
export function functions(text) {
  const lines = codeOnly(text).split("\n");
  const found = [];
  const fnStart = /^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"[^"]*"\s+)?fn\s+(\w+)/;
  for (let start = 0; start < lines.length; start++) {
    const m = fnStart.exec(lines[start]);
    if (!m) continue;
    let depth = 0;
    let opened = false;
    let end = -1;
    let bodiless = false;
    let nested = 0;
    for (let l = start; l < lines.length && end < 0 && !bodiless; l++) {
      for (const ch of lines[l]) {
        // A `;` outside the parameters and types (`[u8; 4]`) before any
        // brace: a declaration without a body.
        if (!opened && (ch === "(" || ch === "[")) nested++;
        if (!opened && (ch === ")" || ch === "]")) nested--;
        if (!opened && ch === ";" && nested === 0) { bodiless = true; break; }
        if (ch === "{") { depth++; opened = true; }
        if (ch === "}") { depth--; if (opened && depth === 0) { end = l; break; } }
      }
    }
    if (end >= 0) found.push({ name: m[7], line: start + 1, lines: end - start + 1 });
  }
  return found;
}

const files = rustFiles(join(root, "src")).map((path) => ({
  path: relative(root, path),
  text: readFileSync(path, "utf8"),
}));

test(`no Rust source file under src/ is over ${MAX_FILE_LINES} lines`, () => {
  const over = files
    .map(({ path, text }) => ({ path, lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0) }))
    .filter(({ lines }) => lines > MAX_FILE_LINES)
    .map(({ path, lines }) => `${path}: ${lines} lines`);
  assert.deepEqual(over, []);
});

test(`no Rust function under src/ is over ${MAX_FN_LINES} lines`, () => {
  const over = files.flatMap(({ path, text }) =>
    functions(text)
      .filter((f) => f.lines > MAX_FN_LINES)
      .map((f) => `${path}:${f.line} fn ${f.name}: ${f.lines} lines`),
  );
  assert.deepEqual(over, []);
});

test("the function counter matches braces past strings, chars and comments", () => {
  const source = [
    "fn short() {",
    '    let s = "}}}{"; // }',
    "    let c = '{';",
    "    /* } */",
    '    let r = r#"}"#;',
    "}",
    "fn declared(x: u32) -> u32;",
    "fn array(x: [u8; 4]) {",
    "}",
    "pub(crate) async fn other<'a>(x: &'a str) -> &'a str {",
    "    x",
    "}",
  ].join("\n");
  assert.deepEqual(functions(source), [
    { name: "short", line: 1, lines: 6 },
    { name: "array", line: 8, lines: 2 },
    { name: "other", line: 10, lines: 3 },
  ]);
});
