import { type ExactValue, type Instant } from "./exact.js";
import type { EntryExtras } from "./snapshot.js";
/** How a board aggregates and which way it ranks. */
export type ScoreMode = "highest" | "cumulative" | "fastest" | "latest";
/** A board's rules: its score mode, or any object with `score_mode` (a board of `GET /v1/games/{game}/boards`). */
export type Rules = ScoreMode | {
    score_mode: ScoreMode;
};
/** A player's standing: their aggregate value and when they achieved it. */
export interface Standing {
    player_id: string;
    value: ExactValue;
    achieved_at: Instant;
}
/**
 * A player of a friend list: with no `value` (null or absent), they have no score yet. An entry
 * of a read answer is one, its display name, country and metadata included.
 */
export interface Friend extends EntryExtras {
    player_id: string;
    value?: ExactValue | null;
    achieved_at?: Instant | null;
}
/**
 * One ranked friend: the rank among the list, the exact value, the time as given, and the
 * friend's `display_name`, `country`, `metadata` and `anonymous` as given, when given.
 */
export interface RankedFriend extends EntryExtras {
    rank: number;
    player_id: string;
    value: bigint;
    achieved_at: Instant;
}
/** A friend list ranked: the ranked players in order, and those with no score, as asked. */
export interface FriendsRanking {
    entries: RankedFriend[];
    unranked: string[];
}
/**
 * -1 when `a` ranks before `b`, 1 when after, 0 for the same standing of the same player: the
 * service's total order under `rules`. Throws on a missing or invalid player id (with the
 * service's words), a value beyond i64, an unparseable time or an unknown mode.
 */
export declare function compare(rules: Rules, a: Standing, b: Standing): -1 | 0 | 1;
/**
 * Ranks players among themselves as the service's `rank-players` and `friends-of` rank them:
 * ranks 1..n in the total order, players with no value listed apart in the order asked. Every
 * entry's player id, scored or not, is checked as the service checks it; a player listed twice
 * is an error (which standing would count?), except one listed twice with no value. Errors
 * name the entry (`entries[3]: ...`). A ranked entry keeps the friend's `display_name`,
 * `country`, `metadata` and `anonymous` as given, so entries of a read answer rank with their
 * names. O(k log k) for k players, in one call into WebAssembly.
 */
export declare function rankFriends(rules: Rules, friends: readonly Friend[]): FriendsRanking;
