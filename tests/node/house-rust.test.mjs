// The Rust sources stay small enough to read: no file of src/, bench/ or
// build.rs over 400 lines, no function over 80 (its signature to its
// closing brace). Node only, no build: it reads the .rs files and matches
// braces, skipping comments, strings and character literals.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const MAX_FILE_LINES = 400;
const MAX_FN_LINES = 80;
const root = fileURLToPath(new URL("../..", import.meta.url));

/** Every .rs file under `dir` (not in a build's target/). */
function rustFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "target" ? [] : rustFiles(path);
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

const files = [...rustFiles(join(root, "src")), ...rustFiles(join(root, "bench")), join(root, "build.rs")].map((path) => ({
  path: relative(root, path),
  text: readFileSync(path, "utf8"),
}));

test(`no Rust source file is over ${MAX_FILE_LINES} lines`, () => {
  const over = files
    .map(({ path, text }) => ({ path, lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0) }))
    .filter(({ lines }) => lines > MAX_FILE_LINES)
    .map(({ path, lines }) => `${path}: ${lines} lines`);
  assert.deepEqual(over, []);
});

test(`no Rust function is over ${MAX_FN_LINES} lines`, () => {
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

/** The modules a face (`mod.rs`, or `lib.rs` for src/) declares: `mod x;` / `pub mod x;`. */
function declaredModules(facePath) {
  const text = codeOnly(readFileSync(join(root, facePath), "utf8"));
  return new Set([...text.matchAll(/^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*[;{]/gm)].map((m) => m[1]));
}

/** The names of the crate's #[macro_export] macros (named at the crate root, as `crate::name`). */
const exportedMacros = new Set(
  rustFiles(join(root, "src")).flatMap((path) =>
    [...readFileSync(path, "utf8").matchAll(/#\[macro_export\]\s*macro_rules!\s*(\w+)/g)].map((m) => m[1])),
);

/** The face of a folder of src/ (`src` itself: lib.rs). */
const faceOf = (dir) => (dir === "src" ? "src/lib.rs" : `${dir}/mod.rs`);

/** `code` without the bodies of its inline modules (`mod tests { … }`), where `super::` is the file itself. */
function blankInlineModules(code) {
  let out = code;
  for (;;) {
    const m = /\bmod\s+\w+\s*\{/.exec(out);
    if (!m) return out;
    let depth = 0;
    let end = m.index + m[0].length - 1;
    for (; end < out.length; end++) {
      if (out[end] === "{") depth++;
      if (out[end] === "}" && --depth === 0) break;
    }
    out = out.slice(0, m.index) + out.slice(m.index, end + 1).replace(/[^\n]/g, " ") + out.slice(end + 1);
  }
}

/**
 * Every path in `path`'s code that names an item of its own folder's face, or
 * of an enclosing folder's, instead of the file below it that defines the item
 * (`super::Ledger`, `crate::ledger::Millis` inside src/ledger/): an import
 * that runs back up. A path through a module (`super::clock::Millis`) is not.
 */
export function upwardImports(path, text) {
  const segments = path.split("/");
  const inFace = segments.at(-1) === "mod.rs" || path === "src/lib.rs";
  // The folder whose face `super::` names, and the folders enclosing the file.
  const own = segments.slice(0, -1).join("/");
  const parentOf = (dir) => dir.split("/").slice(0, -1).join("/");
  const found = [];
  const code = blankInlineModules(codeOnly(text));
  for (const m of code.matchAll(/\b((?:super::)+)(\w+|\{[^}]*\})/g)) {
    let dir = inFace ? parentOf(own) : own;
    for (let up = m[1].length / "super::".length; up > 1; up--) dir = parentOf(dir);
    if (dir === "") continue;
    // `super::{a, b::c}`: the first name of each path in the group.
    const names = m[2].startsWith("{") ? m[2].slice(1, -1).split(",").map((p) => p.trim().split("::")[0]).filter(Boolean) : [m[2]];
    for (const name of names) {
      if (!declaredModules(faceOf(dir)).has(name)) found.push(`${path}: ${m[1]}${name} (an item of ${faceOf(dir)})`);
    }
  }
  for (const m of code.matchAll(/\bcrate((?:::\w+)+)/g)) {
    const names = m[1].slice(2).split("::");
    let dir = "src";
    for (const name of names) {
      const enclosing = own === dir || own.startsWith(`${dir}/`);
      if (!enclosing) break;
      // A #[macro_export] macro is named at the crate root wherever it is written.
      if (dir === "src" && exportedMacros.has(name)) break;
      if (!declaredModules(faceOf(dir)).has(name)) {
        found.push(`${path}: crate${m[1]} (an item of ${faceOf(dir)})`);
        break;
      }
      dir = `${dir}/${name}`;
    }
  }
  return found;
}

test("no Rust file under src/ imports from its own folder's face or an enclosing one (each mod.rs only declares and names)", () => {
  const files2 = files.filter(({ path }) => path.startsWith("src/") && path !== "src/lib.rs");
  const upward = files2.flatMap(({ path, text }) => upwardImports(path, text));
  assert.deepEqual(upward, []);
});

test("the upward-import check sees super:: and crate:: paths to a face's own items", () => {
  assert.deepEqual(upwardImports("src/ledger/claim.rs", "use super::clock::Millis;\nuse super::{machine::Ledger, Stored};\nfn f() { super::earliest(a, b) }\nmod tests {\n    use super::*;\n}\n"), [
    "src/ledger/claim.rs: super::Stored (an item of src/ledger/mod.rs)",
    "src/ledger/claim.rs: super::earliest (an item of src/ledger/mod.rs)",
  ]);
  assert.deepEqual(upwardImports("src/ledger/outcome/wire.rs", "use crate::ledger::Millis;\nuse crate::ledger::clock::Millis;\nuse crate::rpc::Call;\n"), [
    "src/ledger/outcome/wire.rs: crate::ledger::Millis (an item of src/ledger/mod.rs)",
  ]);
  assert.deepEqual(upwardImports("src/ledger/outcome/mod.rs", "use super::clock::Millis;\nuse super::Stats;\n"), [
    "src/ledger/outcome/mod.rs: super::Stats (an item of src/ledger/mod.rs)",
  ]);
});
