// The answers of tests/e2e/workers/ledger-model.mjs's `run`, made from its
// instruction and its effect row's `n`: shared by the object (which
// answers them) and js-surfaces-model-ledger.test.mjs (which must know the bytes
// each first answer carries).

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/** A text body of exactly `size` bytes (ASCII): `n=<n>;` then the alphabet, cut at `size`. */
export function bodyOf(n, size) {
  let s = `n=${n};`;
  while (s.length < size) s += ALPHABET;
  return s.slice(0, size);
}

/** A binary body of exactly `size` bytes, every byte value likely (not UTF-8). */
export function bytesOf(n, size) {
  const bytes = new Uint8Array(size);
  for (let j = 0; j < size; j++) bytes[j] = (n * 31 + j * 7 + (j >> 3)) & 255;
  return bytes;
}

/** The `json` answer's value: its serialisation is about `size` bytes (at least 17). */
export function jsonOf(n, size) {
  return { n, pad: "j".repeat(Math.max(0, size - 16)) };
}

/** The headers the answer carries, as [name, value] pairs, lowercase names. */
export function headerPairsOf(i, n) {
  const pairs = [];
  if (i.ct) pairs.push(["content-type", i.ct]);
  if (i.loc) pairs.push(["location", `/effects/${n}`]);
  if (i.etag) pairs.push(["etag", `"e${n}"`]);
  if (i.extra) pairs.push(["x-extra", `not-stored-${n}`]);
  return pairs;
}
