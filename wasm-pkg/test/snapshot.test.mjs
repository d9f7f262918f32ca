// SnapshotReader's refusals, without a server: a URL that is not a head's, and a head or a
// manifest the server refuses or that is not what the head names.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SnapshotReader } from "standings-wasm";

const HEAD = "http://127.0.0.1:1/v1/snapshots/g/m/s/c/head?period=daily";

test("a URL that is not a head's is refused at once", () => {
  for (const url of ["http://x/v1/leaderboards/g/m/s/c/top", "http://x/v1/snapshots/g/m/s/head", "http://x/v1/snapshots/g/m/s/c/d/head", "http://x/v1/snapshots/g//s/c/head"]) {
    assert.throws(() => new SnapshotReader(fetch, url), /is not a head URL/, url);
  }
});

test("a refused head, and a manifest that is not the one the head names, fail the read", async () => {
  const refusing = async () => new Response('{"code":"FORBIDDEN"}', { status: 403 });
  await assert.rejects(new SnapshotReader(refusing, HEAD).top(), /head: .* answered 403: .*FORBIDDEN/);

  const head = { period: "daily", period_key: "2026-12-02", period_start: "2026-12-02T00:00:00Z", period_end: "2026-12-03T00:00:00Z", board_version: 3, manifest: "ab".repeat(32), published_at: "2026-12-02T01:00:00Z", interval_ms: 1000 };
  const asked = [];
  const lying = async (url) => {
    asked.push(url);
    return url.includes("/head") ? Response.json(head) : new Response(new Uint8Array([1, 2, 3]));
  };
  await assert.rejects(new SnapshotReader(lying, HEAD).rank("p"), /snapshot part abab.*content hash does not match/);
  assert.deepEqual(asked, [HEAD, `http://127.0.0.1:1/v1/snapshots/manifests/${"ab".repeat(32)}`]);
});
