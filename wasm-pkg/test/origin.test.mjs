// The package against a real origin (started by tests/src/bin/web.rs, which passes its address
// and tokens in the environment): friend lists ranked as rank-players ranks them in all four
// modes with extreme values; snapshot reads equal to the read API's answers; a LiveBoard through
// a dropped connection, a lost message and a WebSocket, equal to fresh reads. Players have
// display names (not all ASCII), countries and event metadata, and one shows anonymously, so
// every comparison carries them; the package is public (snapshots and live messages are), so it
// is compared with what the API answers a player.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { rankFriends, parseExact, SnapshotReader, LiveBoard, I64_MAX, I64_MIN } from "standings-wasm";
import { env } from "./env.mjs";

const ORIGIN = env("STANDINGS_ORIGIN");
const ADMIN = env("STANDINGS_ADMIN_TOKEN");
const WRITER = env("STANDINGS_WRITER_TOKEN");
const JWT_SECRET = env("STANDINGS_JWT_SECRET");
const GAME = env("STANDINGS_GAME");
const MODES = ["highest", "cumulative", "fastest", "latest"];
/** The live tests' board (mode path segment), a `latest` board of its own. */
const LIVE = "live";
const PLAYERS = 300;

/** A deterministic generator (mulberry32), so a failure can be replayed. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = rng(Number(process.env.STANDINGS_SEED ?? 7));
const below = (n) => Math.floor(random() * n);
const pick = (list) => list[below(list.length)];

/** A player JWT of the game for `sub`, valid for ten minutes. */
function playerJwt(sub) {
  const b64 = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const unsigned = `${b64({ alg: "HS256", typ: "JWT" })}.${b64({ sub, games: [GAME], exp: Math.floor(Date.now() / 1000) + 600 })}`;
  return `${unsigned}.${createHmac("sha256", JWT_SECRET).update(unsigned).digest("base64url")}`;
}
/** A player's token: the API answers it the public form, as snapshots and live messages carry. */
const READER = playerJwt("p-reader");

/** The display names players get (every fourth player), escapes and non-ASCII included. */
const NAMES = ["Zoë 🚀", "Ava", 'the "quoted" one', "Łukasz", "李小龍", "back\\slash", "👩‍👩‍👧 family", "Ο Νίκος"];
/** The player who shows anonymously, with a name and a country only trusted tokens see. */
const ANONYMOUS = "p-013";

async function call(method, path, token, body) {
  const headers = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const answer = await fetch(`${ORIGIN}${path}`, { method, headers, body });
  const text = await answer.text();
  return { status: answer.status, text, json: () => parseExact(text) };
}

/** JSON with bigints printed as the integers they are. */
const exactJson = (value) =>
  JSON.stringify(value, (_, v) => (typeof v === "bigint" ? `@@${v}@@` : v)).replace(/"@@(-?\d+)@@"/g, "$1");

const board = (mode) => `/v1/leaderboards/${GAME}/${mode}/s1/global`;
const player = (i) => `p-${String(i).padStart(3, "0")}`;
let eventSeq = 0;

async function submit(mode, events) {
  const body = exactJson({
    events: events.map(([player_id, value, achieved_at, metadata, segments]) => ({
      event_id: `e-${mode}-${eventSeq++}`, player_id, game: GAME, mode, season: "s1", scopes: ["global"],
      value, achieved_at: new Date(achieved_at).toISOString(), ...(metadata === undefined ? {} : { metadata }),
      ...(segments === undefined ? {} : { segments }),
    })),
  });
  const answer = await call("POST", "/v1/score-events/batch", WRITER, body);
  assert.equal(answer.status, 200, answer.text);
  assert.equal((answer.text.match(/"ACCEPTED"/g) ?? []).length, events.length, answer.text);
}

/** What each mode's board holds per player: one event each, so the aggregate is that event. */
const standings = new Map();

// Values that a Number sort gets wrong, the i64 ends, and small ones that tie often.
const VALUES = [I64_MIN, I64_MIN + 1n, -(2n ** 53n) - 1n, -1n, 0n, 1n, 7n, 7n, 42n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 53n + 2n, 2n ** 62n, 2n ** 62n + 1n, I64_MAX - 1n, I64_MAX];
const NOW = Date.now();
const TIMES = [NOW - 86_400_000, NOW - 86_400_000, NOW - 3_600_000, NOW - 1, NOW - 2];

before(async () => {
  for (const mode of MODES) {
    const define = await call("PUT", `/v1/boards/${GAME}/${mode}/s1/global`, ADMIN, `{"score_mode":"${mode}"}`);
    assert.ok(define.status === 201 || define.status === 200, define.text);
    const events = [];
    const held = new Map();
    for (let i = 0; i < PLAYERS; i++) {
      const value = random() < 0.7 ? pick(VALUES) : BigInt(below(1000)) - 500n;
      const at = random() < 0.6 ? pick(TIMES) : NOW - below(30 * 86_400_000);
      // Every fifth event with metadata, a `value` field of its own included.
      const metadata = i % 5 === 0 ? { car: "R8", lap: i, value: BigInt(i), note: "Zoë" } : undefined;
      events.push([player(i), value, at, metadata]);
      held.set(player(i), { value, at });
    }
    for (let i = 0; i < events.length; i += 100) await submit(mode, events.slice(i, i + 100));
    standings.set(mode, held);
  }
  // Profiles belong to the game, so every board shows them.
  for (let i = 0; i < PLAYERS; i++) {
    const profile = {};
    if (i % 4 === 0) profile.display_name = `${NAMES[(i / 4) % NAMES.length]} ${i}`;
    if (i % 6 === 0) profile.country = ["DE", "FR", "JP", "BR"][(i / 6) % 4];
    if (player(i) === ANONYMOUS) Object.assign(profile, { display_name: "Secret Sam", country: "SE", anonymous: true });
    if (Object.keys(profile).length === 0) continue;
    const set = await call("PUT", `/v1/games/${GAME}/players/${player(i)}/profile`, WRITER, JSON.stringify(profile));
    assert.equal(set.status, 200, set.text);
  }
  // The live tests' board, climbed by ever higher values from an empty start.
  const live = await call("PUT", `/v1/boards/${GAME}/${LIVE}/s1/global`, ADMIN, '{"score_mode":"latest"}');
  assert.ok(live.status === 201 || live.status === 200, live.text);
  await submit(LIVE, Array.from({ length: 30 }, (_, i) => [player(i), BigInt(i), NOW - 300_000]));
});

for (const mode of MODES) {
  test(`rankFriends ranks 40 random friend lists as rank-players does, ${mode}`, async () => {
    const held = standings.get(mode);
    for (let list = 0; list < 40; list++) {
      const size = list === 0 ? 0 : below(list < 5 ? 3 : 80) + 1;
      const ids = new Set();
      while (ids.size < size) ids.add(random() < 0.1 ? `nobody-${below(50)}` : player(below(PLAYERS)));
      const asked = [...ids];
      const served = await call("POST", `${board(mode)}/rank-players`, WRITER, JSON.stringify({ player_ids: asked }));
      assert.equal(served.status, 200, served.text);
      const friends = asked.map((id) => {
        const s = held.get(id);
        return s ? { player_id: id, value: s.value, achieved_at: s.at } : { player_id: id };
      });
      const ours = rankFriends(mode, friends);
      const theirs = served.json();
      assert.deepEqual(
        ours.entries.map((e) => [e.rank, e.player_id, e.value]),
        theirs.entries.map((e) => [e.rank, e.player_id, e.value]),
        `list ${list}: ${asked.join(",")}`,
      );
      assert.deepEqual(ours.unranked, theirs.unranked);
      // The service's own entries, ranked again by the package, come back as they were (less
      // the global rank), names, countries and metadata passed through.
      const again = rankFriends(mode, [...theirs.entries, ...theirs.unranked.map((player_id) => ({ player_id }))]);
      assert.deepEqual(again.entries, theirs.entries.map(({ global_rank: _, ...entry }) => entry));
      assert.deepEqual(again.unranked, theirs.unranked);
    }
  });
}

test("the seeded names show in reads: in public form for a player, with the anonymous player's for a trusted token", async () => {
  const path = `${board("highest")}/players/${ANONYMOUS}/rank`;
  const trusted = (await call("GET", path, WRITER)).json();
  assert.equal(trusted.display_name, "Secret Sam");
  assert.equal(trusted.anonymous, true);
  const asPlayer = (await call("GET", path, READER)).json();
  for (const field of ["display_name", "country", "metadata", "anonymous"]) assert.equal(field in asPlayer, false, field);
  const named = (await call("GET", `${board("highest")}/players/${player(4)}/rank`, READER)).json();
  assert.equal(named.display_name, `${NAMES[1]} 4`);
  const top = (await call("GET", `${board("highest")}/top?limit=300`, READER)).json();
  assert.ok(top.entries.some((e) => e.metadata?.value !== undefined && typeof e.metadata.value === "bigint"), "metadata values read exactly");
});

test("SnapshotReader answers top pages, ranks and windows as the origin does at the same version", async () => {
  const mode = "highest";
  const headUrl = `${ORIGIN}/v1/snapshots/${GAME}/${mode}/s1/global/head`;
  const fetchAsAdmin = (url) => fetch(url, { headers: { authorization: `Bearer ${ADMIN}` } });
  const version = (await call("GET", `${board(mode)}/top?limit=1`, WRITER)).json().board_version;
  const reader = new SnapshotReader(fetchAsAdmin, headUrl);
  // The origin follows an instance once its head is asked for, then publishes within an interval.
  const deadline = Date.now() + 20_000;
  await reader.refresh();
  while (reader.boardVersion !== version) {
    assert.ok(Date.now() < deadline, `the head stayed at ${reader.boardVersion}, the board is at ${version}`);
    await new Promise((r) => setTimeout(r, 100));
    await reader.refresh();
  }
  let cursor;
  let named = 0;
  for (const limit of [10, 50, 120]) {
    const ours = await reader.top(limit, cursor);
    const theirs = (await call("GET", `${board(mode)}/top?limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`, READER)).json();
    named += ours.entries.filter((e) => e.display_name !== undefined).length;
    assert.deepEqual(ours, theirs, `top ${limit} after ${cursor}`);
    cursor = ours.next_cursor;
  }
  assert.ok(named > 10, `${named} named entries in the pages read`);
  for (let n = 0; n < 25; n++) {
    const id = n === 0 ? "nobody-at-all" : n === 1 ? ANONYMOUS : n === 2 ? player(4) : player(below(PLAYERS));
    const rank = await call("GET", `${board(mode)}/players/${id}/rank`, READER);
    const ours = await reader.rank(id);
    if (rank.status === 404) assert.equal(ours, null);
    else assert.deepEqual(ours, rank.json(), `rank of ${id}`);
    const radius = below(8);
    const nearby = await call("GET", `${board(mode)}/players/${id}/nearby?radius=${radius}`, READER);
    const window = await reader.nearby(id, radius);
    if (nearby.status === 404) assert.equal(window, null);
    else assert.deepEqual(window, nearby.json(), `nearby ${id} radius ${radius}`);
  }
});

test("SnapshotReader answers reads within country and platform segments as the origin does", async () => {
  const mode = "segsnap";
  const define = await call("PUT", `/v1/boards/${GAME}/${mode}/s1/global`, ADMIN, '{"score_mode":"highest","segments":{"country":"profile","platform":["ios","pc"]}}');
  assert.ok(define.status === 201 || define.status === 200, define.text);
  // Values that tie often; every third player on no platform.
  const events = Array.from({ length: PLAYERS }, (_, i) => [
    player(i), BigInt(below(40)), pick(TIMES), undefined, i % 3 === 2 ? undefined : { platform: i % 3 === 0 ? "ios" : "pc" },
  ]);
  for (let i = 0; i < events.length; i += 100) await submit(mode, events.slice(i, i + 100));
  const headUrl = `${ORIGIN}/v1/snapshots/${GAME}/${mode}/s1/global/head`;
  const fetchAsAdmin = (url) => fetch(url, { headers: { authorization: `Bearer ${ADMIN}` } });
  const version = (await call("GET", `${board(mode)}/top?limit=1`, WRITER)).json().board_version;
  const reader = new SnapshotReader(fetchAsAdmin, headUrl);
  const deadline = Date.now() + 20_000;
  await reader.refresh();
  while (reader.boardVersion !== version) {
    assert.ok(Date.now() < deadline, `the head stayed at ${reader.boardVersion}, the board is at ${version}`);
    await new Promise((r) => setTimeout(r, 100));
    await reader.refresh();
  }
  for (const segment of ["country:DE", "country:SE", "platform:ios", "platform:pc"]) {
    let cursor;
    for (const limit of [7, 30]) {
      const ours = await reader.segmentTop(segment, limit, cursor);
      const theirs = (await call("GET", `${board(mode)}/top?limit=${limit}&segment=${segment}${cursor ? `&cursor=${cursor}` : ""}`, READER)).json();
      assert.deepEqual(ours, theirs, `${segment} top ${limit} after ${cursor}`);
      cursor = ours.next_cursor ?? undefined;
    }
    for (const id of ["nobody-at-all", ANONYMOUS, player(0), player(6), player(1), player(2), player(below(PLAYERS))]) {
      const rank = await call("GET", `${board(mode)}/players/${id}/rank?segment=${segment}`, READER);
      const ours = await reader.segmentRank(segment, id);
      if (rank.status === 404) assert.equal(ours, null, `${segment} rank of ${id}`);
      else assert.deepEqual(ours, rank.json(), `${segment} rank of ${id}`);
      const nearby = await call("GET", `${board(mode)}/players/${id}/nearby?radius=3&segment=${segment}`, READER);
      const window = await reader.segmentNearby(segment, id, 3);
      if (nearby.status === 404) assert.equal(window, null, `${segment} nearby ${id}`);
      else assert.deepEqual(window, nearby.json(), `${segment} nearby ${id}`);
    }
  }
  // A segment the board does not declare is refused in the API's words.
  const refused = await call("GET", `${board(mode)}/top?segment=region:eu`, READER);
  assert.equal(refused.status, 400);
  await assert.rejects(reader.segmentTop("region:eu"), (e) => e.message === refused.json().detail);
});

test("SnapshotReader refuses a chunk whose bytes are not the ones its hash names", async () => {
  const mode = "highest";
  const headUrl = `${ORIGIN}/v1/snapshots/${GAME}/${mode}/s1/global/head`;
  const tampering = async (url) => {
    const answer = await fetch(url, { headers: { authorization: `Bearer ${ADMIN}` } });
    if (!url.includes("/chunks")) return answer;
    const bytes = new Uint8Array(await answer.arrayBuffer());
    bytes[bytes.length - 1] ^= 1;
    return new Response(bytes, { status: answer.status });
  };
  const reader = new SnapshotReader(tampering, headUrl);
  await assert.rejects(reader.top(5), /content hash does not match|malformed|chunk bundle/);
});

/** Resolves once `predicate()` holds, polling; rejects after `ms` with `what`. */
async function until(what, predicate, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The board's top `n` now, as the read API answers a player (live views are public). */
const freshTop = async (mode, n) => (await call("GET", `${board(mode)}/top?limit=${n}`, READER)).json().entries;

/**
 * Waits until the live view equals a fresh read of the same top, once the last climber is
 * visible (an accepted event is durable first and visible a moment later).
 */
async function settles(live, mode, n) {
  let fresh = [];
  await until(
    () => `the top never showed ${climb}: ${exactJson(fresh)}`,
    async () => (fresh = await freshTop(mode, n))[0]?.value === climb,
  );
  await until(
    () => `live at ${live.boardVersion}: ${exactJson(live.entries)}\nfresh: ${exactJson(fresh)}`,
    async () => {
      fresh = await freshTop(mode, n);
      return exactJson(live.entries) === exactJson(fresh);
    },
  );
}

/**
 * Events that move players into the top of a `latest` board, ever higher and each achieved a
 * ms after the one before, so that every one of them changes the board.
 */
let climb = 1000n;
let climbedAt = Date.now() - 120_000;
const climbers = (count) =>
  Array.from({ length: count }, () => [player(below(PLAYERS)), (climb += 1000n), (climbedAt += 1)]);

test("LiveBoard follows a real origin through a dropped connection and a lost message", async () => {
  const mode = LIVE;
  const url = `${ORIGIN}${board(mode)}/subscribe?view=top:10`;
  // Each subscription's since_version, as the board asked it.
  const since = [];
  const recording = (input, init) => {
    since.push(new URL(input).searchParams.get("since_version"));
    return fetch(input, init);
  };
  const live = new LiveBoard(url, { token: WRITER, reconnectDelayMs: 50, fetch: recording });
  const kinds = [];
  live.addEventListener("change", (e) => kinds.push(e.detail.kind));
  try {
    await until(() => "no snapshot", () => live.boardVersion !== null);
    assert.equal(live.periodKey, "all_time");
    await submit(mode, climbers(5));
    await settles(live, mode, 10);
    assert.equal(kinds[0], "snapshot");
    assert.ok(kinds.slice(1).every((k) => k === "delta"), kinds.join());

    // Dropped: the board moves while nobody listens; back, one delta from the held instance
    // and version.
    const before = kinds.length;
    const held = live.boardVersion;
    live.drop(400);
    await submit(mode, climbers(4));
    await settles(live, mode, 10);
    assert.equal(live.reconnects, 1);
    assert.deepEqual(kinds.slice(before), ["delta"]);
    assert.deepEqual(since, [null, `all_time:${held}`]);
    assert.equal(live.gaps, 0);
  } finally {
    live.close();
  }

  // A transport that loses the first delta: the next does not chain, so the board asks again
  // from its version and ends equal to a fresh read, never having applied a wrong delta.
  let lost = false;
  const lossy = async (input, init) => {
    const answer = await fetch(input, init);
    if (lost) return answer;
    const decoder = new TextDecoder();
    const encoder = new TextEncoder();
    let pending = "";
    const body = answer.body.pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          pending += decoder.decode(chunk, { stream: true });
          let end;
          while ((end = pending.indexOf("\n\n")) >= 0) {
            const event = pending.slice(0, end + 2);
            pending = pending.slice(end + 2);
            if (!lost && event.startsWith("event: delta")) lost = true;
            else controller.enqueue(encoder.encode(event));
          }
        },
      }),
    );
    return new Response(body, { status: answer.status, headers: answer.headers });
  };
  const lossyLive = new LiveBoard(url, { token: WRITER, reconnectDelayMs: 50, fetch: lossy });
  try {
    await until(() => "no snapshot", () => lossyLive.boardVersion !== null);
    await submit(mode, climbers(3));
    await until(() => "no delta lost yet", () => lost);
    await new Promise((r) => setTimeout(r, 300));
    await submit(mode, climbers(3));
    await settles(lossyLive, mode, 10);
    assert.equal(lossyLive.gaps, 1, "the delta after the lost one did not chain and was refused");
    assert.equal(lossyLive.reconnects, 1);
  } finally {
    lossyLive.close();
  }
});

test("LiveBoard away longer than the board's history starts over from a fresh snapshot", async () => {
  const mode = LIVE;
  const live = new LiveBoard(`${ORIGIN}${board(mode)}/subscribe?view=top:10`, { token: WRITER, reconnectDelayMs: 50 });
  const kinds = [];
  live.addEventListener("change", (e) => kinds.push(e.detail.kind));
  try {
    await until(() => "no snapshot", () => live.boardVersion !== null);
    const held = live.boardVersion;
    // Away, while the board moves past the 4,096 versions it keeps deltas for.
    live.drop(600_000);
    for (let batch = 0; batch < 5; batch++) await submit(mode, climbers(1000));
    const before = kinds.length;
    live.drop(0);
    await settles(live, mode, 10);
    assert.equal(kinds[before], "snapshot", `after coming back: ${kinds.slice(before).join()}`);
    assert.ok(live.boardVersion > held + 4096, `${live.boardVersion} after ${held}`);
    assert.equal(live.gaps, 0);
  } finally {
    live.close();
  }
});

test("LiveBoard over a WebSocket with a player JWT", async () => {
  const mode = LIVE;
  const jwt = playerJwt("p-000");
  const live = new LiveBoard(`${ORIGIN}${board(mode)}/subscribe?view=top:5`, { token: jwt, transport: "websocket", reconnectDelayMs: 50 });
  try {
    await until(() => `no snapshot (status ${live.status})`, () => live.boardVersion !== null);
    await submit(mode, climbers(2));
    await settles(live, mode, 5);
    assert.equal(live.gaps, 0);
  } finally {
    live.close();
  }
});

test("LiveBoard follows a view within a country segment as the segment's reads answer it", async () => {
  const mode = "segmented";
  const define = await call("PUT", `/v1/boards/${GAME}/${mode}/s1/global`, ADMIN, '{"score_mode":"latest","segments":{"country":"profile"}}');
  assert.ok(define.status === 201 || define.status === 200, define.text);
  // The profiles of before(): every sixth player has a country, DE, FR, JP and BR in turn.
  const german = [0, 24, 48].map(player);
  await submit(mode, Array.from({ length: 60 }, (_, i) => [player(i), BigInt(i), NOW - 300_000]));
  const segmentTop = async () => (await call("GET", `${board(mode)}/top?limit=5&segment=country:DE`, READER)).json().entries;
  const live = new LiveBoard(`${ORIGIN}${board(mode)}/subscribe?view=top:5&segment=country:DE`, { token: WRITER, reconnectDelayMs: 50 });
  try {
    for (let round = 0; round < 3; round++) {
      // The Germans take turns at the top, and a French player passes them all (only global ranks move).
      await submit(mode, [
        [german[round], BigInt(1000 + round), NOW - 200_000 + round],
        [player(6), BigInt(2000 + round), NOW - 200_000 + round],
      ]);
      let fresh = [];
      await until(
        () => `live at ${live.boardVersion}: ${exactJson(live.entries)}\nfresh: ${exactJson(fresh)}`,
        async () => {
          fresh = await segmentTop();
          return fresh[0]?.player_id === german[round] && exactJson(live.entries) === exactJson(fresh);
        },
      );
    }
    assert.deepEqual(Object.keys(live.entries[0]).slice(0, 3), ["rank", "global_rank", "player_id"]);
    assert.equal(live.entries[0].rank, 1);
    assert.equal(live.entries[0].global_rank, 2, "the French player is first on the whole board");
  } finally {
    live.close();
  }
});

test("LiveBoard shows names as a fresh read does, and a rename arrives as one delta with the new name", async () => {
  const mode = LIVE;
  const live = new LiveBoard(`${ORIGIN}${board(mode)}/subscribe?view=top:10`, { token: WRITER, reconnectDelayMs: 50 });
  const kinds = [];
  live.addEventListener("change", (e) => kinds.push([e.detail.kind, e.detail.boardVersion]));
  try {
    // The top holds named players, one of them anonymous (public form: no fields).
    await submit(mode, climbers(6).map(([p, value, at], i) => [[ANONYMOUS, player(4), player(8)][i] ?? p, value, at, i === 1 ? { car: "R8", value: 3n } : undefined]));
    await settles(live, mode, 10);
    const anonymous = live.entries.find((e) => e.player_id === ANONYMOUS);
    assert.ok(anonymous, exactJson(live.entries));
    assert.deepEqual(Object.keys(anonymous), ["rank", "player_id", "value", "achieved_at"]);
    const renamed = live.entries.find((e) => e.player_id === player(4));
    assert.equal(renamed.display_name, `${NAMES[1]} 4`);
    assert.deepEqual(renamed.metadata, { car: "R8", value: 3n });

    const before = kinds.length;
    const version = live.boardVersion;
    const set = await call("PUT", `/v1/games/${GAME}/players/${player(4)}/profile`, WRITER, '{"display_name":"Zoë 🚀 renamed","country":"NZ"}');
    assert.equal(set.status, 200, set.text);
    await until(
      () => `the rename never showed: ${exactJson(live.entries)}`,
      () => live.entries.find((e) => e.player_id === player(4))?.display_name === "Zoë 🚀 renamed",
    );
    assert.deepEqual(kinds.slice(before), [["delta", version + 1]], "one delta, one version");
    const entry = live.entries.find((e) => e.player_id === player(4));
    assert.deepEqual([entry.rank, entry.value, entry.country], [renamed.rank, renamed.value, "NZ"]);
    assert.equal(exactJson(live.entries), exactJson(await freshTop(mode, 10)));
  } finally {
    live.close();
  }
});
