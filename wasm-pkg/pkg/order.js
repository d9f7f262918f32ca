// The core's total order in the browser: value (in the board's direction), then the earliest
// achievement, then the player id's UTF-8 bytes. The comparison runs in WebAssembly, on exact
// 64-bit values, so a friend list ranks exactly as the server ranks the same players.
import { checkPlayerId, compareStandings, rankOrder, rankOrderMs } from "./standings_wasm.js";
import { toI64, toMs } from "./exact.js";
function modeOf(rules) {
    const mode = typeof rules === "string" ? rules : rules?.score_mode;
    if (typeof mode !== "string")
        throw new TypeError("rules: expected a score mode or an object with score_mode");
    return mode;
}
/**
 * -1 when `a` ranks before `b`, 1 when after, 0 for the same standing of the same player: the
 * service's total order under `rules`. Throws on a value beyond i64, an unparseable time, an
 * invalid player id or an unknown mode.
 */
export function compare(rules, a, b) {
    return compareStandings(modeOf(rules), toI64(a.value, "a.value"), BigInt(toMs(a.achieved_at, "a.achieved_at")), a.player_id, toI64(b.value, "b.value"), BigInt(toMs(b.achieved_at, "b.achieved_at")), b.player_id);
}
/**
 * Ranks players among themselves as the service's `rank-players` and `friends-of` rank them:
 * ranks 1..n in the total order, players with no value listed apart in the order asked. A
 * player listed twice is an error (which standing would count?), as is an invalid id.
 * O(k log k) for k players.
 */
export function rankFriends(rules, friends) {
    const mode = modeOf(rules);
    // Where each scored friend was in the list, for errors that name the entry.
    const asked = [];
    const unranked = [];
    const seenUnranked = new Set();
    friends.forEach((friend, i) => {
        if (friend.value === null || friend.value === undefined) {
            if (!seenUnranked.has(friend.player_id)) {
                seenUnranked.add(friend.player_id);
                unranked.push(friend.player_id);
            }
        }
        else {
            asked.push(i);
        }
    });
    const values = new BigInt64Array(asked.length);
    // Times cross as text for the core's parser when all are strings (as the API gives them),
    // else as ms.
    const allText = asked.every((i) => typeof friends[i].achieved_at === "string");
    const achieved = allText ? new Array(asked.length) : new Float64Array(asked.length);
    const ids = new Array(asked.length);
    for (let k = 0; k < asked.length; k++) {
        const i = asked[k];
        const f = friends[i];
        values[k] = toI64(f.value, `entries[${i}].value`);
        if (allText) {
            const text = f.achieved_at;
            if (text.includes("\n"))
                throw new TypeError(`entries[${i}].achieved_at: ${JSON.stringify(text)} is not an RFC 3339 time`);
            achieved[k] = text;
        }
        else {
            achieved[k] = toMs(f.achieved_at, `entries[${i}].achieved_at`);
        }
        if (typeof f.player_id !== "string")
            throw new TypeError(`entries[${i}].player_id: expected a string`);
        // The ids cross joined by "\n", which only an invalid id holds: name it before it splits.
        if (f.player_id.includes("\n")) {
            try {
                checkPlayerId(f.player_id);
            }
            catch (e) {
                throw new Error(`entry ${i}: ${e.message}`);
            }
        }
        if (seenUnranked.has(f.player_id)) {
            throw new Error(`player ${JSON.stringify(f.player_id)} is listed twice; list each player once`);
        }
        ids[k] = f.player_id;
    }
    let order;
    try {
        order = allText
            ? rankOrder(mode, values, achieved.join("\n"), ids.join("\n"))
            : rankOrderMs(mode, values, achieved, ids.join("\n"));
    }
    catch (e) {
        // The core counts the scored entries only; name the entry as the caller listed it.
        const message = e.message.replace(/^entry (\d+):/, (_, k) => `entry ${asked[Number(k)]}:`);
        throw new Error(message);
    }
    const entries = new Array(order.length);
    for (let r = 0; r < order.length; r++) {
        const k = order[r];
        entries[r] = { rank: r + 1, player_id: ids[k], value: values[k], achieved_at: friends[asked[k]].achieved_at };
    }
    return { entries, unranked };
}
