// The board viewer in a real headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core; never a downloaded browser), loaded from a running origin and through the
// edge worker under `wrangler dev` (both started by tests/src/bin/web.rs): the top N appears with
// display names (the id as their title) and country flags (the code as their title), an
// anonymous player by id only; a score submitted through the API shows within a second; a player
// search by id matches the API and then follows the player live; a search by exact display name
// finds a player on the page, one further down the board, and lets the user choose between
// players who share a name; a rename shows in the live top; a pasted friend list matches the
// package; and the page asks nothing of any other host. A screenshot of each is saved to
// $STANDINGS_ARTIFACTS.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { rankFriends, parseExact } from "standings-wasm";
import { env } from "../env.mjs";

const ORIGIN = env("STANDINGS_ORIGIN");
const EDGE = env("STANDINGS_EDGE");
const ADMIN = env("STANDINGS_ADMIN_TOKEN");
const WRITER = env("STANDINGS_WRITER_TOKEN");
const ARTIFACTS = env("STANDINGS_ARTIFACTS");
const GAME = env("STANDINGS_GAME");
const VIEWER_LINK = env("STANDINGS_VIEWER_LINK");
const MODE = "viewer";
const BOARD = `/v1/leaderboards/${GAME}/${MODE}/s1/global`;

async function call(base, method, path, body) {
  const headers = { authorization: `Bearer ${method === "PUT" ? ADMIN : WRITER}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const answer = await fetch(`${base}${path}`, { method, headers, body });
  const text = await answer.text();
  return { status: answer.status, text, json: () => parseExact(text) };
}

let seq = 0;
async function submit(base, events) {
  const body = JSON.stringify({
    events: events.map(([player_id, value, metadata]) => ({
      event_id: `viewer-${seq++}`, player_id, game: GAME, mode: MODE, season: "s1", scopes: ["global"],
      value, achieved_at: new Date(Date.now() - 1000).toISOString(), ...(metadata === undefined ? {} : { metadata }),
    })),
  });
  const answer = await call(base, "POST", "/v1/score-events/batch", body);
  assert.equal(answer.status, 200, answer.text);
  assert.equal((answer.text.match(/"ACCEPTED"/g) ?? []).length, events.length, answer.text);
}

/** The seeded profiles: names on the page and further down, a shared name, an anonymous player. */
const PROFILES = {
  "v-39": { display_name: "Zoë 🚀", country: "DE" },
  "v-38": { display_name: "Ava", country: "FR" },
  "v-37": { display_name: "Secret Sam", country: "SE", anonymous: true },
  "v-36": { country: "JP" },
  "v-05": { display_name: "Deep Dora", country: "BR" },
  "v-06": { display_name: "Twin" },
  "v-07": { display_name: "Twin", country: "NZ" },
};

let browser;
before(async () => {
  const define = await call(ORIGIN, "PUT", `/v1/boards/${GAME}/${MODE}/s1/global`, '{"score_mode":"highest","periods":["all_time","daily"]}');
  assert.ok(define.status === 200 || define.status === 201, define.text);
  await submit(ORIGIN, Array.from({ length: 40 }, (_, i) => [`v-${String(i).padStart(2, "0")}`, 100 + i * 10, i === 39 ? { car: "R8" } : undefined]));
  for (const [player, profile] of Object.entries(PROFILES)) {
    const set = await call(ORIGIN, "PUT", `/v1/games/${GAME}/players/${player}/profile`, JSON.stringify(profile));
    assert.equal(set.status, 200, set.text);
  }
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});
after(async () => {
  await browser?.close();
});

/** The player ids of a table's body rows, in order. */
const rowsOf = (page, table) =>
  page.$$eval(`#${table} tbody tr`, (rows) => rows.map((r) => r.dataset.player ?? r.cells[1]?.textContent));

/** Polls `probe` until `check` holds on its result; fails after `ms` with the last result. */
async function eventually(what, probe, check, ms = 15_000) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    last = await probe();
    if (check(last)) return last;
    if (Date.now() > deadline) assert.fail(`${what} within ${ms} ms; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// The first minute: the link `standings viewer-link` prints opens the board, watched live, with
// the read-only player token of its fragment (no write token pasted anywhere); the token leaves
// the address at once; "last change" is never claimed before the board is seen to move.
test("the viewer from a printed link: watched at once with a read-only token", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  try {
    assert.ok(VIEWER_LINK.startsWith(`${ORIGIN}/?game=${GAME}&mode=${MODE}&season=s1&scope=global#token=`), VIEWER_LINK);
    await page.goto(VIEWER_LINK);
    const expected = (await call(ORIGIN, "GET", `${BOARD}/top?limit=10`)).json().entries.map((e) => e.player_id);
    await eventually("the top shown", () => rowsOf(page, "top-table"), (rows) => rows.slice(0, 10).join() === expected.join());
    assert.equal(await page.getAttribute("#live-status", "data-status"), "live");
    assert.equal(new URL(page.url()).hash, "", "the token left the address");
    const token = await page.evaluate(() => sessionStorage.getItem("standings.token"));
    assert.equal(token.split(".").length, 3, "a JWT, not a static token");
    const write = await fetch(`${ORIGIN}/v1/boards/${GAME}/${MODE}/s1/global`, {
      method: "PUT", headers: { authorization: `Bearer ${token}` }, body: '{"score_mode":"highest"}',
    });
    assert.equal(write.status, 403, "the link's token cannot write");
    assert.match(await page.textContent("#staleness"), /^no change since you started watching/);
    await submit(ORIGIN, [["link-mover", 700]]);
    await eventually("a change seen", () => page.textContent("#staleness"), (t) => /^last change \d+ s ago/.test(t));
  } finally {
    await context.close();
  }
});

for (const [tier, base] of [["origin", ORIGIN], ["edge", EDGE]]) {
  test(`the viewer from the ${tier}: live top 10, a new score within a second, a player followed live, friends`, async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1100 } });
    const page = await context.newPage();
    const asked = [];
    page.on("request", (r) => asked.push(r.url()));
    const problems = [];
    page.on("pageerror", (e) => problems.push(e.message));
    try {
      await page.addInitScript((token) => sessionStorage.setItem("standings.token", token), WRITER);
      await page.goto(`${base}/?game=${GAME}&mode=${MODE}&season=s1&scope=global&n=10`);

      // The live top 10 equals a fresh read of it.
      const top = async () => (await call(base, "GET", `${BOARD}/top?limit=10`)).json().entries.map((e) => e.player_id);
      const expected = await top();
      await eventually("the top 10 shown", () => rowsOf(page, "top-table"), (rows) => rows.join() === expected.join());
      const shownVersion = Number(await page.textContent("#board-version"));
      assert.ok(Number.isInteger(shownVersion) && shownVersion > 0, `board_version shown: ${shownVersion}`);
      assert.equal(await page.getAttribute("#live-status", "data-status"), "live");

      // Names show with the id as their title, countries as flags with the code as their title,
      // and the anonymous player (whose name only a trusted token reads) by id alone.
      const playerCell = (player) => page.$eval(`#top-table tbody tr[data-player="${player}"] td.player`, (td) => ({
        text: td.textContent,
        name: td.querySelector(".name")?.textContent ?? null,
        nameTitle: td.querySelector(".name")?.title ?? null,
        flag: td.querySelector(".flag")?.textContent ?? null,
        flagTitle: td.querySelector(".flag")?.title ?? null,
      }));
      assert.deepEqual(await playerCell("v-39"), { text: "🇩🇪Zoë 🚀", name: "Zoë 🚀", nameTitle: "v-39", flag: "🇩🇪", flagTitle: "DE" });
      assert.deepEqual(await playerCell("v-36"), { text: "🇯🇵v-36", name: null, nameTitle: null, flag: "🇯🇵", flagTitle: "JP" });
      assert.deepEqual(await playerCell("v-37"), { text: "v-37", name: null, nameTitle: null, flag: null, flagTitle: null });
      // The page's token (the game's service) is told the hidden name, by the origin and through
      // the edge alike (the edge hands a trusted token's reads to the origin). The page shows
      // the id either way.
      const hidden = (await call(base, "GET", `${BOARD}/players/v-37/rank`)).json();
      assert.deepEqual([hidden.anonymous, hidden.display_name], [true, "Secret Sam"]);

      // A score submitted through the API is on the page within a second of its acknowledgement.
      const newcomer = `new-${tier}`;
      await submit(base, [[newcomer, tier === "origin" ? 1_000_000 : 2_000_000]]);
      const acked = Date.now();
      await page.waitForSelector(`#top-table tbody tr[data-player="${newcomer}"]`, { timeout: 1000 });
      console.log(`# ${tier}: the new score showed ${Date.now() - acked} ms after its acknowledgement`);
      assert.equal((await rowsOf(page, "top-table"))[0], newcomer);
      assert.ok(Number(await page.textContent("#board-version")) > shownVersion);

      // A player search shows the rank the API gives. The edge answers from a snapshot that
      // may trail the board for a head lifetime, so compare once it has caught up.
      const player = "v-20";
      const current = (await call(ORIGIN, "GET", `${BOARD}/players/${player}/rank`)).json();
      const rank = await eventually(
        "the rank answer at the board's version",
        async () => (await call(base, "GET", `${BOARD}/players/${player}/rank`)).json(),
        (r) => r.board_version === current.board_version,
      );
      await page.fill("#player", player);
      await page.click("#search");
      await page.waitForSelector('#player-result dd[data-field="rank"]');
      const panel = (field) => page.textContent(`#player-result dd[data-field="${field}"]`);
      assert.equal(await panel("rank"), String(rank.rank));
      assert.equal(await panel("value"), String(rank.value));
      assert.equal(await panel("board_version"), String(rank.board_version));
      await eventually(
        "the figures read at the window's version",
        async () => [await panel("competition_rank"), await panel("figures_board_version")],
        ([competition, version]) => competition === String(rank.competition_rank) && version === String(rank.board_version),
      );
      const window = await rowsOf(page, "nearby-table");
      assert.equal(window.length, 11, window.join());
      assert.equal(window[5], player);

      // The panel follows the player live: a score that passes them moves their rank, the
      // window and the version with no new search, and the figures only a rank read gives are
      // read again at the new version.
      const passer = `passer-${tier}`;
      await submit(base, [[passer, Number(rank.value) + 5]]);
      const passed = await eventually(
        "the player's rank after being passed",
        async () => (await call(ORIGIN, "GET", `${BOARD}/players/${player}/rank`)).json(),
        (r) => r.rank === rank.rank + 1,
      );
      await eventually(
        "the panel at the passed rank, live",
        async () => [await panel("rank"), await panel("board_version"), (await rowsOf(page, "nearby-table"))[4]],
        ([shown, version, above]) => shown === String(passed.rank) && version === String(passed.board_version) && above === passer,
      );
      await eventually(
        "the figures read again at the new version",
        async () => [await panel("competition_rank"), await panel("figures_board_version")],
        ([competition, version]) => competition === String(passed.competition_rank) && version === String(passed.board_version),
      );
      assert.equal(await panel("live_status"), "live");

      // A search by exact display name: a player in the live top (no request), ...
      const following = async () => [
        await page.textContent('#player-result [data-field="player_id"]').catch(() => null),
        await page.getAttribute("#nearby-table tbody tr.self", "data-player").catch(() => null),
      ];
      await page.fill("#player", "Zoë 🚀");
      await page.click("#search");
      await eventually("Zoë 🚀 followed", following, ([id, self]) => id === "v-39" && self === "v-39");
      assert.match(await page.textContent("#player-result"), /Found by display name: "Zoë 🚀" is v-39/);
      assert.equal(await panel("metadata"), '{"car":"R8"}');
      // ... one further down the board (a read of its first ranks), ...
      await page.fill("#player", "Deep Dora");
      await page.click("#search");
      await eventually("Deep Dora followed", following, ([id, self]) => id === "v-05" && self === "v-05");
      // ... and players who share a name, to choose from.
      await page.fill("#player", "Twin");
      await page.click("#search");
      await page.waitForSelector("#search-choices button");
      // In rank order.
      assert.deepEqual(await page.$$eval("#search-choices button", (b) => b.map((x) => x.dataset.player)), ["v-07", "v-06"]);
      await page.click('#search-choices button[data-player="v-07"]');
      await eventually("the chosen twin followed", following, ([id, self]) => id === "v-07" && self === "v-07");
      // An anonymous player's hidden name finds nobody: the text is followed as an id.
      await page.fill("#player", "Secret Sam");
      await page.click("#search");
      await eventually("the hidden name not found", () => page.textContent("#player-result"), (t) => /No player on the page .* "Secret Sam"/.test(t) && /no score on this board/.test(t));

      // A rename reaches the live top as a delta: the new name, at a new version.
      const renamedFrom = Number(await page.textContent("#board-version"));
      const renamed = `Ava ${tier}`;
      const set = await call(base, "PUT", `/v1/games/${GAME}/players/v-38/profile`, JSON.stringify({ display_name: renamed }));
      assert.equal(set.status, 200, set.text);
      await eventually(
        "the new name in the live top",
        async () => [await page.textContent('#top-table tbody tr[data-player="v-38"] .name'), Number(await page.textContent("#board-version"))],
        ([name, version]) => name === renamed && version > renamedFrom,
      );

      // A pasted friend list is ranked in the page exactly as the package ranks it, values
      // beyond 2^53 included.
      const lines = [
        "ava 9007199254740993 2026-10-13T10:05:00Z",
        "bo 9007199254740992 2026-10-13T10:04:00Z",
        "cy 9007199254740993 2026-10-13T10:04:00Z",
        "dee",
        "eve -5 2026-10-13T10:00:00Z",
      ];
      await page.fill("#friends-input", lines.join("\n"));
      await page.click("#rank-friends");
      const ours = rankFriends("highest", lines.map((l) => l.split(" ")).map(([player_id, value, achieved_at]) => ({ player_id, value, achieved_at })));
      await eventually("the friends ranked", () => rowsOf(page, "friends-table"), (rows) => rows.length === ours.entries.length);
      assert.deepEqual(await rowsOf(page, "friends-table"), ours.entries.map((e) => e.player_id));
      assert.deepEqual(
        await page.$$eval("#friends-table tbody tr", (rows) => rows.map((r) => r.cells[2].textContent)),
        ours.entries.map((e) => e.value.toString()),
      );
      assert.match(await page.textContent("#friends-unranked"), /dee/);
      assert.equal(await page.textContent("#friends-error"), "");

      await page.screenshot({ path: `${ARTIFACTS}/viewer-${tier}.png`, fullPage: true });

      // A bad line is an error on the page, not an exception.
      await page.fill("#friends-input", "ava 1e5 2026-10-13T10:05:00Z");
      await page.click("#rank-friends");
      await eventually("the error shown", () => page.textContent("#friends-error"), (t) => /decimal integer/.test(t));

      const foreign = asked.filter((url) => !url.startsWith(`${base}/`));
      assert.deepEqual(foreign, [], "the page asks nothing of any other host");
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
    }
  });
}
