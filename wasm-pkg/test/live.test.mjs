// LiveBoard's rules against a scripted SSE server: a delta applies only when it chains and names
// the view's period instance; a gap reconnects with since_version=PERIOD_KEY:VERSION; resync
// starts over; going_away reconnects; a closed period is followed by the next one unless the URL
// pins `at`; an archived season ends it.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { LiveBoard } from "standings-wasm";

const entry = (rank, player_id, value) => ({ rank, player_id, value, achieved_at: "2026-10-13T10:05:00Z" });
const allTime = { period: "all_time", period_key: "all_time", period_start: null, period_end: null };
/** The period fields of the UTC day `key`. */
function day(key) {
  const start = new Date(`${key}T00:00:00Z`);
  const end = new Date(start.getTime() + 86_400_000);
  return { period: "daily", period_key: key, period_start: start.toISOString().replace(".000", ""), period_end: end.toISOString().replace(".000", "") };
}

/** One SSE event as the origin writes it: snapshots and deltas carry `id: PERIOD_KEY:VERSION`. */
function sse(message) {
  const id = message.type === "snapshot" || message.type === "delta" ? `id: ${message.period_key}:${message.board_version}\n` : "";
  // BigInt values print as their digits, as the server prints i64s.
  const data = JSON.stringify(message, (_, v) => (typeof v === "bigint" ? `${v}n` : v)).replace(/"(-?\d+)n"/g, "$1");
  return `event: ${message.type}\n${id}data: ${data}\n\n`;
}

/**
 * A server that answers its n-th subscription with `scripts[n]`, ending the stream unless the
 * script ends with a delta (the stream then stays open, as a live one does). Records each
 * request's `since_version` and `Authorization`.
 */
async function scriptedServer(t, scripts) {
  const asked = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    asked.push({ since: url.searchParams.get("since_version"), auth: req.headers.authorization });
    res.writeHead(200, { "content-type": "text/event-stream" });
    const script = scripts[asked.length - 1] ?? [];
    for (const m of script) res.write(sse(m));
    if (script.at(-1)?.type !== "delta") res.end();
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { base: `http://127.0.0.1:${server.address().port}/v1/leaderboards/g/m/s/c/subscribe`, asked };
}

/** Resolves once `predicate()` holds, polling; rejects after `ms`. */
async function until(predicate, ms = 5000) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${predicate}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Each applied change as [kind, boardVersion, periodKey, the players in the view then]. */
function changesOf(board) {
  const changes = [];
  board.addEventListener("change", (e) =>
    changes.push([e.detail.kind, e.detail.boardVersion, e.detail.periodKey, board.entries.map((x) => x.player_id).join()]),
  );
  return changes;
}

test("deltas chain, a gap reconnects from the held instance and version, resync and going_away reconnect, an archived season ends", async (t) => {
  const { base, asked } = await scriptedServer(t, [
    // 1: a snapshot, a delta that chains, then one from a version the client never held.
    [
      { type: "snapshot", view: "top:3", ...allTime, board_version: 5, entries: [entry(1, "a", 30), entry(2, "b", 20)] },
      { type: "delta", period_key: "all_time", base_version: 5, board_version: 6, changed: [entry(1, "c", 99), entry(2, "a", 30), entry(3, "b", 20)], left: [] },
      { type: "delta", period_key: "all_time", base_version: 9, board_version: 10, changed: [entry(1, "z", 1000)], left: ["c"] },
    ],
    // 2: asked from all_time:6, the catch-up delta; then resync.
    [
      { type: "delta", period_key: "all_time", base_version: 6, board_version: 10, changed: [entry(3, "d", 25)], left: ["b"] },
      { type: "resync", reason: "slow_consumer", detail: "fell behind" },
    ],
    // 3: without since_version, a fresh snapshot; then going_away.
    [
      { type: "snapshot", view: "top:3", ...allTime, board_version: 12, entries: [entry(1, "e", 2n ** 62n)] },
      { type: "going_away" },
    ],
    // 4: from all_time:12, an empty delta that only moves the version on; then the season is archived.
    [
      { type: "delta", period_key: "all_time", base_version: 12, board_version: 14, changed: [], left: [] },
      { type: "closed", reason: "season_archived", period_key: "all_time", board_version: 14 },
    ],
  ]);
  const board = new LiveBoard(`${base}?view=top:3`, { token: "tok", reconnectDelayMs: 10 });
  const changes = changesOf(board);
  const closed = new Promise((r) => board.addEventListener("closed", (e) => r(e.detail)));
  assert.deepEqual(await closed, { reason: "season_archived", periodKey: "all_time", following: false });

  assert.deepEqual(changes, [
    ["snapshot", 5, "all_time", "a,b"],
    ["delta", 6, "all_time", "c,a,b"],
    ["delta", 10, "all_time", "c,a,d"],
    ["snapshot", 12, "all_time", "e"],
    ["delta", 14, "all_time", "e"],
  ]);
  assert.deepEqual(asked.map((a) => a.since), [null, "all_time:6", null, "all_time:12"]);
  assert.ok(asked.every((a) => a.auth === "Bearer tok"));
  assert.equal(board.gaps, 1);
  assert.equal(board.resyncs, 1);
  assert.equal(board.status, "closed");
  assert.deepEqual(board.entries, [entry(1, "e", 2n ** 62n)]);
  assert.equal(board.boardVersion, 14);
  assert.equal(board.periodKey, "all_time");
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(asked.length, 4, "an archived season is not subscribed to again");
});

test("names, countries and metadata come with the entries, and a rename is a delta that shows the new name", async (t) => {
  const named = (rank, player_id, value, extras) => ({ ...entry(rank, player_id, value), ...extras });
  const metadata = { car: "R8", value: 7n, laps: [1.5, { value: "gold" }], note: "line\nbreak" };
  const { base } = await scriptedServer(t, [
    [
      {
        type: "snapshot", view: "top:3", ...allTime, board_version: 5,
        entries: [
          named(1, "a", 30, { display_name: "Zoë 🚀", country: "DE", metadata }),
          // A player who shows anonymously: no fields at all.
          entry(2, "b", 20),
          named(3, "c", 10, { country: "FR" }),
        ],
      },
      // The rename of "a": the entry changed, nothing else about it.
      { type: "delta", period_key: "all_time", base_version: 5, board_version: 6, changed: [named(1, "a", 30, { display_name: "Zoë 2", country: "DE", metadata })], left: [] },
      // "c" loses their country and gets a name; "d" enters with metadata only.
      { type: "delta", period_key: "all_time", base_version: 6, board_version: 7, changed: [named(3, "c", 10, { display_name: "\"quoted\" name" }), named(4, "d", 5, { metadata: {} })], left: [] },
    ],
  ]);
  const board = new LiveBoard(`${base}?view=top:4`, { reconnectDelayMs: 10 });
  t.after(() => board.close());
  const names = [];
  board.addEventListener("change", () => names.push(board.entries.map((e) => e.display_name ?? e.player_id).join()));
  await until(() => board.boardVersion === 7);
  assert.deepEqual(names, ["Zoë 🚀,b,c", "Zoë 2,b,c", 'Zoë 2,b,"quoted" name,d']);
  assert.deepEqual(board.entries, [
    named(1, "a", 30n, { display_name: "Zoë 2", country: "DE", metadata }),
    entry(2, "b", 20n),
    named(3, "c", 10n, { display_name: '"quoted" name' }),
    named(4, "d", 5n, { metadata: {} }),
  ]);
  assert.deepEqual(Object.keys(board.entries[0]), ["rank", "player_id", "value", "achieved_at", "display_name", "country", "metadata"]);
  assert.equal(board.gaps, 0);
});

test("a delta of another period instance is refused even when its base_version chains, and no instance mixes into another", async (t) => {
  const { base, asked } = await scriptedServer(t, [
    // 1: the 13th; its delta applies; then a delta of the 14th whose base_version is the one held.
    [
      { type: "snapshot", view: "top:3", ...day("2026-10-13"), board_version: 40, entries: [entry(1, "a", 30), entry(2, "b", 20)] },
      { type: "delta", period_key: "2026-10-13", base_version: 40, board_version: 41, changed: [entry(1, "b", 35), entry(2, "a", 30)], left: [] },
      { type: "delta", period_key: "2026-10-14", base_version: 41, board_version: 42, changed: [entry(1, "x", 5)], left: ["a", "b"] },
    ],
    // 2: asked from 2026-10-13:41 after the day turned: a snapshot of the 14th, an empty delta
    // that only moves the version on, a delta of the 14th, and one of the 13th (late, refused).
    [
      { type: "snapshot", view: "top:3", ...day("2026-10-14"), board_version: 42, entries: [entry(1, "x", 5)] },
      { type: "delta", period_key: "2026-10-14", base_version: 42, board_version: 43, changed: [], left: [] },
      { type: "delta", period_key: "2026-10-14", base_version: 43, board_version: 44, changed: [entry(2, "y", 4)], left: [] },
      { type: "delta", period_key: "2026-10-13", base_version: 44, board_version: 45, changed: [entry(1, "a", 99)], left: [] },
    ],
    // 3: asked from 2026-10-14:44, the 14th goes on.
    [
      { type: "delta", period_key: "2026-10-14", base_version: 44, board_version: 46, changed: [entry(1, "y", 6), entry(2, "x", 5)], left: [] },
    ],
  ]);
  const board = new LiveBoard(`${base}?view=top:3&period=daily`, { reconnectDelayMs: 10 });
  t.after(() => board.close());
  const changes = changesOf(board);
  await until(() => board.boardVersion === 46);

  assert.deepEqual(changes, [
    ["snapshot", 40, "2026-10-13", "a,b"],
    ["delta", 41, "2026-10-13", "b,a"],
    ["snapshot", 42, "2026-10-14", "x"],
    ["delta", 43, "2026-10-14", "x"],
    ["delta", 44, "2026-10-14", "x,y"],
    ["delta", 46, "2026-10-14", "y,x"],
  ]);
  assert.deepEqual(asked.map((a) => a.since), [null, "2026-10-13:41", "2026-10-14:44"]);
  assert.equal(board.gaps, 2);
  assert.equal(board.periodKey, "2026-10-14");
  assert.deepEqual(
    [board.period.period, board.period.period_key, board.period.period_start, board.period.period_end],
    ["daily", "2026-10-14", "2026-10-14T00:00:00Z", "2026-10-15T00:00:00Z"],
  );
});

test("a closed period is followed by a fresh subscription to the next one when the URL has no `at`", async (t) => {
  const { base, asked } = await scriptedServer(t, [
    [
      { type: "snapshot", view: "top:3", ...day("2026-10-13"), board_version: 7, entries: [entry(1, "a", 30)] },
      { type: "closed", reason: "period_closed", period_key: "2026-10-13", board_version: 7 },
    ],
    [
      { type: "snapshot", view: "top:3", ...day("2026-10-14"), board_version: 0, entries: [] },
      { type: "delta", period_key: "2026-10-14", base_version: 0, board_version: 1, changed: [entry(1, "b", 3)], left: [] },
    ],
  ]);
  const board = new LiveBoard(`${base}?view=top:3&period=daily`, { reconnectDelayMs: 10 });
  t.after(() => board.close());
  const changes = changesOf(board);
  const statuses = [];
  board.addEventListener("status", (e) => statuses.push(e.detail));
  const closed = [];
  board.addEventListener("closed", (e) => closed.push(e.detail));
  await until(() => board.boardVersion === 1);

  assert.deepEqual(closed, [{ reason: "period_closed", periodKey: "2026-10-13", following: true }]);
  assert.deepEqual(changes, [
    ["snapshot", 7, "2026-10-13", "a"],
    ["snapshot", 0, "2026-10-14", ""],
    ["delta", 1, "2026-10-14", "b"],
  ]);
  assert.deepEqual(asked.map((a) => a.since), [null, null], "the next instance is subscribed to afresh");
  assert.deepEqual(statuses, ["live", "connecting", "live"]);
  assert.equal(board.status, "live");
  assert.equal(board.periodKey, "2026-10-14");
  assert.equal(board.reconnects, 0);
});

for (const [what, query, options] of [
  ["a URL that pins `at`", "&at=2026-10-13T12:00:00Z", {}],
  ["followNextPeriod: false", "", { followNextPeriod: false }],
]) {
  test(`a closed period stays closed with ${what}`, async (t) => {
    const { base, asked } = await scriptedServer(t, [
      [
        { type: "snapshot", view: "top:3", ...day("2026-10-13"), board_version: 7, entries: [entry(1, "a", 30)] },
        { type: "closed", reason: "period_closed", period_key: "2026-10-13", board_version: 7 },
      ],
      [{ type: "snapshot", view: "top:3", ...day("2026-10-14"), board_version: 0, entries: [] }],
    ]);
    const board = new LiveBoard(`${base}?view=top:3&period=daily${query}`, { reconnectDelayMs: 10, ...options });
    const closed = await new Promise((r) => board.addEventListener("closed", (e) => r(e.detail)));
    assert.deepEqual(closed, { reason: "period_closed", periodKey: "2026-10-13", following: false });
    assert.equal(board.status, "closed");
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(asked.length, 1);
    assert.equal(board.periodKey, "2026-10-13");
    assert.deepEqual(board.entries, [entry(1, "a", 30n)]);
  });
}

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
