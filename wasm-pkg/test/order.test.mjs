// The package's order and exact values, without a server: the total order in each mode, ids
// by UTF-8 bytes, values beyond 2^53, and the errors bad input gets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { compare, rankFriends, parseExact, I64_MAX, I64_MIN } from "standings-wasm";

const at = "2026-10-13T10:05:00Z";

test("highest ranks the greatest value first, then the earliest time, then the player id", () => {
  const ranked = rankFriends("highest", [
    { player_id: "p-b", value: 10n, achieved_at: at },
    { player_id: "p-a", value: 10n, achieved_at: at },
    { player_id: "p-c", value: 10n, achieved_at: "2026-10-13T10:04:59.999Z" },
    { player_id: "p-d", value: "11", achieved_at: at },
    { player_id: "p-e" },
  ]);
  assert.deepEqual(
    ranked.entries.map((e) => [e.rank, e.player_id, e.value]),
    [[1, "p-d", 11n], [2, "p-c", 10n], [3, "p-a", 10n], [4, "p-b", 10n]],
  );
  assert.deepEqual(ranked.unranked, ["p-e"]);
});

test("fastest ranks the least value first; the board object works as rules", () => {
  const board = { game: "g", mode: "m", score_mode: "fastest" };
  const ranked = rankFriends(board, [
    { player_id: "slow", value: 90_000, achieved_at: 5 },
    { player_id: "fast", value: 61_000, achieved_at: 9 },
  ]);
  assert.deepEqual(ranked.entries.map((e) => e.player_id), ["fast", "slow"]);
  assert.equal(compare(board, ranked.entries[0], ranked.entries[1]), -1);
  assert.equal(compare("highest", ranked.entries[0], ranked.entries[1]), 1);
});

test("values beyond 2^53 keep their exact order, where a Number sort ties them", () => {
  const big = 2n ** 60n;
  const friends = [
    { player_id: "a", value: big, achieved_at: at },
    { player_id: "b", value: big + 1n, achieved_at: at },
    { player_id: "c", value: (big + 2n).toString(), achieved_at: at },
  ];
  assert.deepEqual(rankFriends("highest", friends).entries.map((e) => e.player_id), ["c", "b", "a"]);
  // Number(2^60 + 1) === Number(2^60): a Number sort falls through to the id and gets it wrong.
  const plain = [...friends].sort((x, y) => Number(y.value) - Number(x.value) || (x.player_id < y.player_id ? -1 : 1));
  assert.deepEqual(plain.map((e) => e.player_id), ["a", "b", "c"]);
});

test("the i64 extremes rank at the ends, and one past them is refused", () => {
  const ranked = rankFriends("highest", [
    { player_id: "min", value: I64_MIN, achieved_at: at },
    { player_id: "max", value: I64_MAX.toString(), achieved_at: at },
    { player_id: "zero", value: 0, achieved_at: at },
  ]);
  assert.deepEqual(ranked.entries.map((e) => e.player_id), ["max", "zero", "min"]);
  assert.throws(() => rankFriends("highest", [{ player_id: "x", value: I64_MAX + 1n, achieved_at: at }]), RangeError);
  assert.throws(() => rankFriends("highest", [{ player_id: "x", value: "-9223372036854775809", achieved_at: at }]), RangeError);
});

test("player ids compare by UTF-8 bytes, as the server compares them, not by UTF-16 units", () => {
  // U+FF61 is EF BD A1 in UTF-8, U+1F600 is F0 9F 98 80; in UTF-16 the emoji's D83D sorts first.
  const ranked = rankFriends("highest", [
    { player_id: "\u{1F600}", value: 1, achieved_at: at },
    { player_id: "\u{FF61}", value: 1, achieved_at: at },
  ]);
  assert.deepEqual(ranked.entries.map((e) => e.player_id), ["\u{FF61}", "\u{1F600}"]);
  assert.ok("\u{1F600}" < "\u{FF61}", "JavaScript's own string order is the other way");
});

test("bad input is refused with a message naming the entry", () => {
  const ok = { player_id: "a", value: 1, achieved_at: at };
  assert.throws(() => rankFriends("best", [ok]), /unknown score mode "best"/);
  assert.throws(() => rankFriends("highest", [ok, { ...ok }]), /listed twice/);
  assert.throws(() => rankFriends("highest", [ok, { player_id: "a" }]), /listed twice/);
  assert.throws(() => rankFriends("highest", [{ ...ok, value: 2 ** 60 }]), /entries\[0\]\.value: .* not a safe integer/);
  assert.throws(() => rankFriends("highest", [{ ...ok, value: "1e3" }]), /not a decimal integer/);
  assert.throws(() => rankFriends("highest", [{ ...ok, achieved_at: "2026-10-13T10:05:00" }]), /with an offset/);
  assert.throws(() => rankFriends("highest", [{ ...ok, player_id: "a\nb" }]), /entry 0: /);
  assert.throws(() => rankFriends("highest", [{ ...ok, player_id: "" }]), /entry 0: /);
  assert.deepEqual(rankFriends("latest", []), { entries: [], unranked: [] });
});

test("times: offsets, fractions beyond ms and numbers all read as the server reads them", () => {
  const ranked = rankFriends("highest", [
    { player_id: "a", value: 1, achieved_at: "2026-10-13T12:05:00.0019+02:00" },
    { player_id: "b", value: 1, achieved_at: Date.parse("2026-10-13T10:05:00.001Z") },
    { player_id: "c", value: 1, achieved_at: new Date("2026-10-13T10:05:00Z") },
  ]);
  // a and b are both at 10:05:00.001 UTC; c is a ms earlier.
  assert.deepEqual(ranked.entries.map((e) => e.player_id), ["c", "a", "b"]);
});

test("parseExact reads every value as a bigint, and nothing else", () => {
  const text = '{"board_version":7,"entries":[{"rank":1,"player_id":"x\\"value\\":1","value":9223372036854775807,"achieved_at":"t"}]}';
  const parsed = parseExact(text);
  assert.equal(parsed.entries[0].value, 9223372036854775807n);
  assert.equal(parsed.entries[0].player_id, 'x"value":1');
  assert.equal(parsed.board_version, 7);
});
