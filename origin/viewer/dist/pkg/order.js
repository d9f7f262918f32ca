// The core's total order in the browser: value (in the board's direction), then the earliest
// achievement, then the player id's UTF-8 bytes. The comparison runs in WebAssembly, on exact
// 64-bit values, so a friend list ranks exactly as the server ranks the same players.
import { checkPlayerId, compareStandings, rankOrder, rankOrderMs } from "./standings_wasm.js";
import { toI64, toMs } from "./exact.js";
/** The extras a ranked friend carries over from the friend as given, in the API's order. */
const EXTRAS = ["display_name", "country", "metadata", "anonymous"];
function modeOf(rules) {
    const mode = typeof rules === "string" ? rules : rules?.score_mode;
    if (typeof mode !== "string")
        throw new TypeError("rules: expected a score mode or an object with score_mode");
    return mode;
}
/**
 * The player id of `entry`, which `what` names in errors: a TypeError when `entry` is not an
 * object or its `player_id` is not a string. Whether the id is one the service takes is the
 * WebAssembly's to check, with the core's rule.
 */
function playerIdOf(entry, what) {
    if (typeof entry !== "object" || entry === null) {
        throw new TypeError(`${what}: expected an object with a player_id, got ${entry === null ? "null" : typeof entry}`);
    }
    const id = entry.player_id;
    if (typeof id !== "string")
        throw new TypeError(`${what}.player_id: expected a string, got ${id === null ? "null" : typeof id}`);
    return id;
}
/**
 * -1 when `a` ranks before `b`, 1 when after, 0 for the same standing of the same player: the
 * service's total order under `rules`. Throws on a missing or invalid player id (with the
 * service's words), a value beyond i64, an unparseable time or an unknown mode.
 */
export function compare(rules, a, b) {
    const mode = modeOf(rules);
    const aPlayer = playerIdOf(a, "a");
    const bPlayer = playerIdOf(b, "b");
    return compareStandings(mode, toI64(a.value, "a.value"), BigInt(toMs(a.achieved_at, "a.achieved_at")), aPlayer, toI64(b.value, "b.value"), BigInt(toMs(b.achieved_at, "b.achieved_at")), bPlayer);
}
/**
 * Ranks players among themselves as the service's `rank-players` and `friends-of` rank them:
 * ranks 1..n in the total order, players with no value listed apart in the order asked. Every
 * entry's player id, scored or not, is checked as the service checks it; a player listed twice
 * is an error (which standing would count?), except one listed twice with no value. Errors
 * name the entry (`entries[3]: ...`). A ranked entry keeps the friend's `display_name`,
 * `country`, `metadata` and `anonymous` as given, so entries of a read answer rank with their
 * names. O(k log k) for k players, in one call into WebAssembly.
 */
export function rankFriends(rules, friends) {
    const mode = modeOf(rules);
    if (!Array.isArray(friends))
        throw new TypeError("friends: expected an array of {player_id, value, achieved_at}");
    const n = friends.length;
    // The whole list crosses, one row per entry in the caller's order, so that the WebAssembly
    // checks every id in the call that ranks and names entries as listed.
    const scored = new Uint8Array(n);
    const values = new BigInt64Array(n);
    const ids = new Array(n);
    const unranked = [];
    const seenUnranked = new Set();
    // Times cross as text for the core's parser when all are strings (as the API gives them),
    // else as ms.
    let allText = true;
    for (let i = 0; i < n; i++) {
        const f = friends[i];
        const id = playerIdOf(f, `entries[${i}]`);
        // The ids cross joined by "\n", which only an invalid id holds: name it before it splits.
        if (id.includes("\n")) {
            try {
                checkPlayerId(id);
            }
            catch (e) {
                throw new Error(`entries[${i}]: ${e.message}`);
            }
        }
        ids[i] = id;
        if (f.value === null || f.value === undefined) {
            if (!seenUnranked.has(id)) {
                seenUnranked.add(id);
                unranked.push(id);
            }
        }
        else {
            scored[i] = 1;
            values[i] = toI64(f.value, `entries[${i}].value`);
            if (typeof f.achieved_at !== "string")
                allText = false;
        }
    }
    let order;
    if (allText) {
        const achieved = new Array(n);
        for (let i = 0; i < n; i++) {
            const text = scored[i] === 1 ? friends[i].achieved_at : "";
            if (text.includes("\n"))
                throw new TypeError(`entries[${i}].achieved_at: ${JSON.stringify(text)} is not an RFC 3339 time`);
            achieved[i] = text;
        }
        order = rankOrder(mode, scored, values, achieved.join("\n"), ids.join("\n"));
    }
    else {
        const achieved = new Float64Array(n);
        for (let i = 0; i < n; i++) {
            if (scored[i] === 1)
                achieved[i] = toMs(friends[i].achieved_at, `entries[${i}].achieved_at`);
        }
        order = rankOrderMs(mode, scored, values, achieved, ids.join("\n"));
    }
    const entries = new Array(order.length);
    for (let r = 0; r < order.length; r++) {
        const i = order[r];
        const friend = friends[i];
        const entry = { rank: r + 1, player_id: ids[i], value: values[i], achieved_at: friend.achieved_at };
        // Passed through unchanged: what a player shows is not the order's to check.
        for (const extra of EXTRAS) {
            if (friend[extra] !== undefined)
                Object.assign(entry, { [extra]: friend[extra] });
        }
        entries[r] = entry;
    }
    return { entries, unranked };
}
