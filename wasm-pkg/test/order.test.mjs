// The package's order and exact values, without a server: the total order in each mode, ids
// by UTF-8 bytes, values beyond 2^53, and the errors bad input gets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { compare, rankFriends, parseExact, stringifyExact, I64_MAX, I64_MIN } from "standings-wasm";

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
  assert.throws(() => rankFriends("highest", [ok, { ...ok }]), { message: 'player "a" is listed twice; list each player once' });
  assert.throws(() => rankFriends("highest", [ok, { player_id: "a" }]), { message: 'player "a" is listed twice; list each player once' });
  assert.throws(() => rankFriends("highest", [{ player_id: "a" }, ok]), { message: 'player "a" is listed twice; list each player once' });
  assert.throws(() => rankFriends("highest", [{ ...ok, value: 2 ** 60 }]), /entries\[0\]\.value: .* not a safe integer/);
  assert.throws(() => rankFriends("highest", [{ ...ok, value: "1e3" }]), /not a decimal integer/);
  assert.throws(() => rankFriends("highest", [{ player_id: "u" }, { ...ok, achieved_at: "2026-10-13T10:05:00" }]), {
    name: "Error",
    message: 'entries[1].achieved_at: "2026-10-13T10:05:00" is not an RFC 3339 time with an offset (years 0000 to 9999)',
  });
  assert.throws(() => rankFriends("highest", [{ ...ok, player_id: "a\nb" }]), {
    name: "Error",
    message: "entries[0]: player_id holds a control character at byte 1",
  });
  assert.throws(() => rankFriends("highest", [{ ...ok, player_id: "" }]), { name: "Error", message: "entries[0]: player_id must not be empty" });
  // A scored entry after unscored ones is named by its place in the list as given.
  assert.throws(() => rankFriends("highest", [{ player_id: "u" }, { ...ok, player_id: "" }]), {
    name: "Error",
    message: "entries[1]: player_id must not be empty",
  });
  assert.deepEqual(rankFriends("latest", []), { entries: [], unranked: [] });
});

// The service's rank-players answers 400 for any of these ids, scored or not; so does the
// package, naming the entry, with the core's words (check_id's).
for (const [what, entry, error] of [
  ["an unscored entry with no player_id", { value: null }, { name: "TypeError", message: "entries[1].player_id: expected a string, got undefined" }],
  ["an unscored entry whose player_id is a number", { player_id: 7 }, { name: "TypeError", message: "entries[1].player_id: expected a string, got number" }],
  ["an unscored entry whose player_id is null", { player_id: null }, { name: "TypeError", message: "entries[1].player_id: expected a string, got null" }],
  ["an unscored entry with an empty player_id", { player_id: "" }, { name: "Error", message: "entries[1]: player_id must not be empty" }],
  ["an unscored entry with a control character", { player_id: "b\u0007" }, { name: "Error", message: "entries[1]: player_id holds a control character at byte 1" }],
  ["an unscored entry with a line feed", { player_id: "b\nc" }, { name: "Error", message: "entries[1]: player_id holds a control character at byte 1" }],
  ["an unscored entry with a C1 control character", { player_id: "\u00e9\u0085" }, { name: "Error", message: "entries[1]: player_id holds a control character at byte 2" }],
  ["an unscored entry over 128 bytes", { player_id: "\u00e9".repeat(65) }, { name: "Error", message: "entries[1]: player_id is 130 bytes long; at most 128 are allowed" }],
  ["a scored entry with no player_id", { value: 1, achieved_at: at }, { name: "TypeError", message: "entries[1].player_id: expected a string, got undefined" }],
  ["an entry that is null", null, { name: "TypeError", message: "entries[1]: expected an object with a player_id, got null" }],
  ["an entry that is a string", "p-b", { name: "TypeError", message: "entries[1]: expected an object with a player_id, got string" }],
  ["an entry that is undefined", undefined, { name: "TypeError", message: "entries[1]: expected an object with a player_id, got undefined" }],
]) {
  test(`rankFriends refuses ${what}`, () => {
    const list = [{ player_id: "p-a", value: 1, achieved_at: at }, entry, { player_id: "p-c" }];
    assert.throws(() => rankFriends("highest", list), error);
    // The same with times as numbers, which cross into WebAssembly the other way.
    const numbers = [{ player_id: "p-a", value: 1, achieved_at: Date.parse(at) }, entry, { player_id: "p-c" }];
    assert.throws(() => rankFriends("highest", numbers), error);
  });
}

test("rankFriends refuses a list that is not an array", () => {
  assert.throws(() => rankFriends("highest", "p-a"), { name: "TypeError", message: "friends: expected an array of {player_id, value, achieved_at}" });
});

test("an unscored player listed twice is listed once, and valid ids of every kind pass", () => {
  const ranked = rankFriends("highest", [
    { player_id: "u" },
    { player_id: "\u{1F600}", value: 1, achieved_at: at },
    { player_id: "u", value: null },
    { player_id: "x".repeat(128) },
    { player_id: " spaced id " },
  ]);
  assert.deepEqual(ranked.entries.map((e) => e.player_id), ["\u{1F600}"]);
  assert.deepEqual(ranked.unranked, ["u", "x".repeat(128), " spaced id "]);
});

test("compare names the side of a missing or invalid player id", () => {
  const ok = { player_id: "a", value: 1, achieved_at: at };
  assert.throws(() => compare("highest", { value: 1, achieved_at: at }, ok), { name: "TypeError", message: "a.player_id: expected a string, got undefined" });
  assert.throws(() => compare("highest", ok, { ...ok, player_id: 5 }), { name: "TypeError", message: "b.player_id: expected a string, got number" });
  assert.throws(() => compare("highest", null, ok), { name: "TypeError", message: "a: expected an object with a player_id, got null" });
  assert.throws(() => compare("highest", ok, undefined), { name: "TypeError", message: "b: expected an object with a player_id, got undefined" });
  assert.throws(() => compare("highest", { ...ok, player_id: "" }, ok), { name: "Error", message: "a: player_id must not be empty" });
  assert.throws(() => compare("highest", ok, { ...ok, player_id: "b\u0000" }), { name: "Error", message: "b: player_id holds a control character at byte 1" });
  assert.equal(compare("highest", ok, { ...ok, player_id: "b" }), -1);
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

test("parseExact reads metadata as JSON.parse does, but for integer `value` fields, which are bigints", () => {
  const text =
    '{"rank":1,"player_id":"p","value":5,"achieved_at":"t","display_name":"Zoë \\"value\\":2 🚀","metadata":' +
    '{"value": "gold", "laps":[{"value" : 12},{"value":1.5},{"value":1e3}], "i":"i7", "s":"", "car":"R\\u00e9\\n"}}';
  const parsed = parseExact(text);
  assert.equal(parsed.value, 5n);
  assert.equal(parsed.display_name, 'Zoë "value":2 🚀');
  assert.deepEqual(parsed.metadata, { value: "gold", laps: [{ value: 12n }, { value: 1.5 }, { value: 1000 }], i: "i7", s: "", car: "Ré\n" });
  // stringifyExact is its inverse: one line, no whitespace, bigints as integers.
  const text2 = stringifyExact(parsed);
  assert.equal(text2.includes("\n"), false);
  assert.deepEqual(parseExact(text2), parsed);
  assert.equal(stringifyExact({ value: 2n ** 63n - 1n, a: [null, true, "x", { value: 3 }] }), '{"value":9223372036854775807,"a":[null,true,"x",{"value":3.0}]}');
});

test("rankFriends passes a friend's display name, country, metadata and anonymity through unchanged", () => {
  const metadata = { car: "R8", value: 3n };
  const ranked = rankFriends("highest", [
    { player_id: "a", value: 1, achieved_at: at, display_name: "Zoë 🚀", country: "DE", metadata },
    { player_id: "b", value: 2, achieved_at: at, display_name: "Bo", anonymous: true },
    { player_id: "c", value: 0, achieved_at: at },
    { player_id: "d", display_name: "No score" },
  ]);
  assert.deepEqual(ranked.entries, [
    { rank: 1, player_id: "b", value: 2n, achieved_at: at, display_name: "Bo", anonymous: true },
    { rank: 2, player_id: "a", value: 1n, achieved_at: at, display_name: "Zoë 🚀", country: "DE", metadata },
    { rank: 3, player_id: "c", value: 0n, achieved_at: at },
  ]);
  assert.equal(ranked.entries[1].metadata, metadata, "the very object given");
  assert.deepEqual(Object.keys(ranked.entries[1]), ["rank", "player_id", "value", "achieved_at", "display_name", "country", "metadata"]);
  assert.deepEqual(ranked.unranked, ["d"]);
  // The ids are still checked as the service checks them, names or not.
  assert.throws(() => rankFriends("highest", [{ player_id: "", value: 1, achieved_at: at, display_name: "x" }]), /entries\[0\]: player_id must not be empty/);
});
