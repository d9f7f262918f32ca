// The package through the edge worker under `wrangler dev` (started by tests/src/bin/web.rs):
// a SnapshotReader given the edge's head URL answers as the origin does at the same version,
// names, countries and metadata included (in public form, so compared with what the origin
// answers a player).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { SnapshotReader, parseExact } from "standings-wasm";
import { env } from "./env.mjs";

const ORIGIN = env("STANDINGS_ORIGIN");
const EDGE = env("STANDINGS_EDGE");
const ADMIN = env("STANDINGS_ADMIN_TOKEN");
const JWT_SECRET = env("STANDINGS_JWT_SECRET");
const GAME = env("STANDINGS_GAME");
// The board origin.test.mjs seeded, in the same origin, with its anonymous player.
const BOARD = `/v1/leaderboards/${GAME}/highest/s1/global`;
const ANONYMOUS = "p-013";

/** A player JWT of the game, valid for ten minutes. */
function playerJwt(sub) {
  const b64 = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const unsigned = `${b64({ alg: "HS256", typ: "JWT" })}.${b64({ sub, games: [GAME], exp: Math.floor(Date.now() / 1000) + 600 })}`;
  return `${unsigned}.${createHmac("sha256", JWT_SECRET).update(unsigned).digest("base64url")}`;
}

test("SnapshotReader from the edge's head URL answers as the origin does", async () => {
  const asAdmin = (url) => fetch(url, { headers: { authorization: `Bearer ${ADMIN}` } });
  const reader = playerJwt("p-reader");
  const origin = async (path) =>
    parseExact(await (await fetch(`${ORIGIN}${path}`, { headers: { authorization: `Bearer ${reader}` } })).text());
  const version = (await origin(`${BOARD}/top?limit=1`)).board_version;
  const snapshot = new SnapshotReader(asAdmin, `${EDGE}/v1/snapshots/${GAME}/highest/s1/global/head`);
  const deadline = Date.now() + 20_000;
  await snapshot.refresh();
  while (snapshot.boardVersion !== version) {
    assert.ok(Date.now() < deadline, `the head stayed at ${snapshot.boardVersion}, the board is at ${version}`);
    await new Promise((r) => setTimeout(r, 100));
    await snapshot.refresh();
  }
  const top = await snapshot.top(300);
  assert.deepEqual(top, await origin(`${BOARD}/top?limit=300`));
  assert.ok(top.entries.filter((e) => e.display_name !== undefined).length > 50, "names in the top");
  for (const player of ["p-000", "p-004", ANONYMOUS, "p-150", "p-299"]) {
    assert.deepEqual(await snapshot.rank(player), await origin(`${BOARD}/players/${player}/rank`));
    assert.deepEqual(await snapshot.nearby(player, 3), await origin(`${BOARD}/players/${player}/nearby?radius=3`));
    assert.deepEqual(
      await snapshot.rankInterval(player),
      await origin(`${BOARD}/players/${player}/rank?approximate=interval`),
    );
  }
  const anonymous = await snapshot.rank(ANONYMOUS);
  for (const field of ["display_name", "country", "metadata", "anonymous"]) assert.equal(field in anonymous, false, field);
});
