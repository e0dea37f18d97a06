// @ts-check
// Waiting for an in-flight result: the `wait` preference of Prefer
// (RFC 7240 §4.3), read as the gateway reads it (Rust contract::waiting).
// Shared vectors: tests/fixtures/prefer-wait.json.

/**
 * Splits on `sep` where it is not inside a quoted string.
 * @param {string} s
 * @param {string} sep
 */
function splitOutsideQuotes(s, sep) {
  const parts = [];
  let start = 0, quoted = false, escaped = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (escaped) escaped = false;
    else if (c === "\\" && quoted) escaped = true;
    else if (c === '"') quoted = !quoted;
    else if (c === sep && !quoted) { parts.push(s.slice(start, i)); start = i + 1; }
  }
  parts.push(s.slice(start));
  return parts;
}

/**
 * The `wait` preference of a Prefer header value (RFC 7240 §4.3) in
 * seconds, read exactly as the gateway reads it: only the first `wait`
 * counts, a quoted value is allowed, and an unreadable one is ignored
 * (null). Values too large to matter come back as Infinity.
 * @param {string | null | undefined} header
 * @returns {number | null}
 */
export function preferWait(header) {
  if (header === null || header === undefined) return null;
  for (const preference of splitOutsideQuotes(String(header), ",")) {
    const head = splitOutsideQuotes(preference, ";")[0];
    const eq = head.indexOf("=");
    const name = (eq === -1 ? head : head.slice(0, eq)).trim();
    if (name.toLowerCase() !== "wait") continue;
    if (eq === -1) return null;
    let value = head.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (!/^[0-9]+$/.test(value)) return null;
    const n = Number(value);
    return Number.isSafeInteger(n) ? n : Infinity;
  }
  return null;
}
