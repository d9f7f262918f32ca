// LiveBoard's rules against a scripted SSE server: a delta applies only when it chains; a gap
// reconnects with since_version; resync starts over; going_away reconnects; closed ends.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { LiveBoard } from "standings-wasm";

const entry = (rank, player_id, value) => ({ rank, player_id, value, achieved_at: "2026-10-13T10:05:00Z" });
const sse = (message) => `event: ${message.type}\ndata: ${JSON.stringify(message)}\n\n`;

/** Resolves once `predicate()` holds, polling; rejects after `ms`. */
async function until(predicate, ms = 5000) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${predicate}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test("deltas chain, a gap reconnects from the held version, resync and going_away reconnect, closed ends", async (t) => {
  const asked = [];
  const scripts = [
    // 1: a snapshot, a delta that chains, then one from a version the client never held.
    [
      { type: "snapshot", view: "top:3", period: "all_time", period_key: "all_time", period_start: null, period_end: null, board_version: 5, entries: [entry(1, "a", 30), entry(2, "b", 20)] },
      { type: "delta", base_version: 5, board_version: 6, changed: [entry(1, "c", 99), entry(2, "a", 30), entry(3, "b", 20)], left: [] },
      { type: "delta", base_version: 9, board_version: 10, changed: [entry(1, "z", 1000)], left: ["c"] },
    ],
    // 2: asked from 6, the catch-up delta; then resync.
    [
      { type: "delta", base_version: 6, board_version: 10, changed: [entry(3, "d", 25)], left: ["b"] },
      { type: "resync", reason: "slow_consumer", detail: "fell behind" },
    ],
    // 3: without since_version, a fresh snapshot; then going_away.
    [
      { type: "snapshot", view: "top:3", period: "all_time", period_key: "all_time", period_start: null, period_end: null, board_version: 12, entries: [entry(1, "e", 2n ** 62n)] },
      { type: "going_away" },
    ],
    // 4: from 12, nothing changed; then the period closes.
    [
      { type: "delta", base_version: 12, board_version: 12, changed: [], left: [] },
      { type: "closed", reason: "period_closed", board_version: 12 },
    ],
  ];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    asked.push({ since: url.searchParams.get("since_version"), auth: req.headers.authorization });
    res.writeHead(200, { "content-type": "text/event-stream" });
    const script = scripts[asked.length - 1] ?? [];
    for (const m of script) res.write(sse(m).replace(/"value":"(-?\d+)"/g, '"value":$1'));
    if (script.at(-1)?.type !== "delta") res.end();
  });
  // BigInt values print as their digits in the stream, as the server prints i64s.
  BigInt.prototype.toJSON = function () { return this.toString(); };
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const base = `http://127.0.0.1:${server.address().port}`;

  const board = new LiveBoard(`${base}/v1/leaderboards/g/m/s/c/subscribe?view=top:3`, { token: "tok", reconnectDelayMs: 10 });
  const kinds = [];
  board.addEventListener("change", (e) => kinds.push([e.detail.kind, e.detail.boardVersion]));
  const closed = new Promise((r) => board.addEventListener("closed", (e) => r(e.detail.reason)));
  assert.equal(await closed, "period_closed");

  assert.deepEqual(kinds, [["snapshot", 5], ["delta", 6], ["delta", 10], ["snapshot", 12], ["delta", 12]]);
  assert.deepEqual(asked.map((a) => a.since), [null, "6", null, "12"]);
  assert.ok(asked.every((a) => a.auth === "Bearer tok"));
  assert.equal(board.gaps, 1);
  assert.equal(board.resyncs, 1);
  assert.equal(board.status, "closed");
  assert.deepEqual(board.entries, [entry(1, "e", 2n ** 62n)]);
  assert.equal(board.boardVersion, 12);
  delete BigInt.prototype.toJSON;
});

test("a refused subscription is an error event and closes, without retrying", async (t) => {
  let calls = 0;
  const server = http.createServer((req, res) => {
    calls++;
    res.writeHead(401, { "content-type": "application/problem+json" });
    res.end('{"code":"UNAUTHENTICATED","detail":"no token"}');
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const board = new LiveBoard(`http://127.0.0.1:${server.address().port}/v1/leaderboards/g/m/s/c/subscribe?view=top:3`);
  const error = await new Promise((r) => board.addEventListener("error", (e) => r(e.detail.message)));
  assert.match(error, /^401: .*UNAUTHENTICATED/);
  await until(() => board.status === "closed");
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(calls, 1);
});

test("a subscribe URL without a view is refused at once", () => {
  assert.throws(() => new LiveBoard("http://127.0.0.1:1/v1/leaderboards/g/m/s/c/subscribe"), /needs a view/);
});
