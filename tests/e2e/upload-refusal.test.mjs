// A client still sending a body the gateway refused (docs/contract.md §2.4):
// the 413 goes out at once and its body stays open while the gateway reads
// and discards the rest of the upload, up to its bound, so the client reads
// the 413 and its problem document instead of a reset connection. Raw Node
// HTTP clients against workerd's own socket (Miniflare's URL): fetch would
// not show the reset, which happens while the client is still writing.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { startGateway, slug } from "./harness.mjs";

const MiB = 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 120);
// The drain's bound: DRAIN_AFTER_REFUSAL_FACTOR (src/contract/admission.rs) × the 1 MiB default.
const DRAIN_BOUND = 64 * MiB;

let gw;
let port;
before(async () => {
  gw = await startGateway();
  port = Number(new URL(await gw.mf.ready).port);
});
after(() => gw?.dispose());

/**
 * POSTs a chunked body of `total` bytes (generated on the fly, no
 * Content-Length) and records what came back. `stopOnAnswer`: stop sending
 * once the status line arrived (as curl does); else keep sending until the
 * server cuts the connection or all was sent.
 */
function upload({ total, stopOnAnswer, key }) {
  return new Promise((resolve) => {
    const started = Date.now();
    const got = { status: null, body: "", sent: 0, sentAtStatus: null, error: null, ended: false };
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      resolve({ ...got, ms: Date.now() - started });
    };
    const req = http.request({
      host: "127.0.0.1", port, method: "POST", path: "/v1/orders", agent: false,
      headers: { authorization: "Bearer dev-token-acme", "idempotency-key": key, "content-type": "application/json", "transfer-encoding": "chunked" },
    });
    req.on("response", (res) => {
      got.status = res.statusCode;
      got.sentAtStatus = got.sent;
      res.setEncoding("utf8");
      res.on("data", (d) => { got.body += d; });
      res.on("end", () => { got.ended = true; if (stopOnAnswer) { req.destroy(); finish(); } });
      res.on("error", () => {});
    });
    req.on("error", (e) => { got.error = e.code ?? String(e); });
    req.on("close", () => setTimeout(finish, 100));
    const pump = () => {
      while (got.sent < total && !req.destroyed && !(stopOnAnswer && got.status !== null)) {
        got.sent += CHUNK.length;
        if (!req.write(CHUNK)) { req.once("drain", pump); return; }
      }
      if (got.sent >= total && !req.destroyed) req.end();
    };
    pump();
  });
}

/**
 * A client that ignores its answer and keeps sending a chunked body of
 * `total` bytes over a raw socket (Node's own client would stop once the
 * response ended): how much it sent before the server cut it off, and what
 * it read.
 */
function stubbornUpload({ total, key }) {
  return new Promise((resolve) => {
    const started = Date.now();
    const got = { sent: 0, received: "", error: null, sentAtStatus: null };
    const socket = net.connect(port, "127.0.0.1");
    const frame = Buffer.concat([Buffer.from(`${CHUNK.length.toString(16)}\r\n`), CHUNK, Buffer.from("\r\n")]);
    let done = false;
    const finish = () => { if (!done) { done = true; socket.destroy(); resolve({ ...got, ms: Date.now() - started }); } };
    socket.setEncoding("latin1");
    socket.on("data", (d) => {
      if (got.sentAtStatus === null) got.sentAtStatus = got.sent;
      got.received += d;
    });
    socket.on("error", (e) => { got.error = e.code ?? String(e); finish(); });
    socket.on("close", finish);
    socket.on("connect", () => {
      socket.write(`POST /v1/orders HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer dev-token-acme\r\nidempotency-key: ${key}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`);
      const pump = () => {
        while (!done && got.sent < total) {
          got.sent += CHUNK.length;
          if (!socket.write(frame)) { socket.once("drain", pump); return; }
        }
        if (!done && got.sent >= total) socket.end("0\r\n\r\n");
      };
      pump();
    });
    setTimeout(finish, 40_000).unref();
  });
}

const problemOf = (r) => { try { return JSON.parse(r.body); } catch { return null; } };

test("a 32 MiB chunked upload over the limit gets its 413 and the problem document, every attempt", async () => {
  const results = [];
  for (let i = 0; i < 8; i++) results.push(await upload({ total: 32 * MiB, stopOnAnswer: true, key: `up-32-${i}` }));
  const summary = results.map((r) => `${r.status ?? r.error}@${(r.sentAtStatus ?? r.sent) / MiB | 0}MiB`).join(" ");
  for (const r of results) {
    assert.equal(r.status, 413, `every attempt reads its status line (${summary})`);
    assert.equal(slug(problemOf(r) ?? { type: "" }), "request-too-large", `and the whole problem document (${summary})`);
    assert.ok(r.ended, `the document ends by its Content-Length (${summary})`);
    assert.equal(r.error, null, `and the connection was not reset under the client (${summary})`);
  }
  console.log(`# 32 MiB uploads: ${summary}`);
});

test("a 1 GiB upload is never read whole: a client that stops on its 413 stops long before 1 GiB; one that keeps sending is cut off at the drain's bound", async () => {
  const polite = await upload({ total: 1024 * MiB, stopOnAnswer: true, key: "up-1g-polite" });
  assert.equal(polite.status, 413);
  assert.equal(slug(problemOf(polite)), "request-too-large");
  assert.ok(polite.sent < 128 * MiB, `it stopped sending after ${polite.sent / MiB} MiB`);
  assert.ok(polite.ms < 20_000, `within ${polite.ms} ms`);

  const stubborn = await stubbornUpload({ total: 1024 * MiB, key: "up-1g-stubborn" });
  console.log(`# 1 GiB uploads: polite stopped after ${polite.sent / MiB | 0} MiB in ${polite.ms} ms; stubborn cut off after ${stubborn.sent / MiB | 0} MiB in ${stubborn.ms} ms (${stubborn.error ?? "closed"}), status line after ${stubborn.sentAtStatus / MiB | 0} MiB`);
  assert.match(stubborn.received, /^HTTP\/1\.1 413 /, "the status line came while it was still sending");
  assert.match(stubborn.received, /"type":"[^"]*request-too-large"/, "and the problem document");
  assert.ok(stubborn.sent < 1024 * MiB, "the connection closed before all of it was sent");
  assert.ok(stubborn.sent >= DRAIN_BOUND, `the server read on after its 413, to its bound (${stubborn.sent / MiB} MiB sent)`);
  // The drain's bound plus what the sockets buffer between the two ends: far below 1 GiB.
  assert.ok(stubborn.sent < DRAIN_BOUND + 192 * MiB, `the server stopped reading near its bound (${stubborn.sent / MiB} MiB sent)`);
  assert.ok(stubborn.ms < 30_000, `within ${stubborn.ms} ms`);
});
