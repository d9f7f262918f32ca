// The package through the edge worker under `wrangler dev` (started by tests/src/bin/web.rs):
// a SnapshotReader given the edge's head URL answers as the origin does at the same version.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SnapshotReader, parseExact } from "standings-wasm";
import { env } from "./env.mjs";

const ORIGIN = env("STANDINGS_ORIGIN");
const EDGE = env("STANDINGS_EDGE");
const ADMIN = env("STANDINGS_ADMIN_TOKEN");
const GAME = env("STANDINGS_GAME");
// The board origin.test.mjs seeded, in the same origin.
const BOARD = `/v1/leaderboards/${GAME}/highest/s1/global`;

test("SnapshotReader from the edge's head URL answers as the origin does", async () => {
  const asAdmin = (url) => fetch(url, { headers: { authorization: `Bearer ${ADMIN}` } });
  const origin = async (path) => parseExact(await (await asAdmin(`${ORIGIN}${path}`)).text());
  const version = (await origin(`${BOARD}/top?limit=1`)).board_version;
  const reader = new SnapshotReader(asAdmin, `${EDGE}/v1/snapshots/${GAME}/highest/s1/global/head`);
  const deadline = Date.now() + 20_000;
  await reader.refresh();
  while (reader.boardVersion !== version) {
    assert.ok(Date.now() < deadline, `the head stayed at ${reader.boardVersion}, the board is at ${version}`);
    await new Promise((r) => setTimeout(r, 100));
    await reader.refresh();
  }
  assert.deepEqual(await reader.top(25), await origin(`${BOARD}/top?limit=25`));
  for (const player of ["p-000", "p-150", "p-299"]) {
    assert.deepEqual(await reader.rank(player), await origin(`${BOARD}/players/${player}/rank`));
    assert.deepEqual(await reader.nearby(player, 3), await origin(`${BOARD}/players/${player}/nearby?radius=3`));
  }
});
