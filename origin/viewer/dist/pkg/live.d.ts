import type { EntryExtras } from "./snapshot.js";
/** How to reach the subscribe endpoint. */
export type Transport = "sse" | "websocket";
/** Where a live board is in its life. */
export type LiveStatus = "connecting" | "live" | "reconnecting" | "closed";
/**
 * One entry of the view, value exact, with the player's display name, country and the entry's
 * metadata when set (in public form: a player who shows anonymously has none of them). A rename
 * comes as a delta like a score does, so `entries` always shows the names of `boardVersion`.
 */
export interface LiveEntry extends Omit<EntryExtras, "anonymous"> {
    /** The rank in the view's board, or within its segment (`segment=country:DE`). */
    rank: number;
    /** In a view within a segment, the rank on the whole board. */
    global_rank?: number;
    player_id: string;
    value: bigint;
    achieved_at: string;
}
/** Options of a [`LiveBoard`]. */
export interface LiveBoardOptions {
    /**
     * A token of the board's game. Over SSE it is sent as `Authorization: Bearer`; over a
     * WebSocket, which cannot carry headers from a browser, as `access_token`, which the server
     * takes only for a player JWT.
     */
    token?: string;
    /** SSE (the default) or WebSocket. */
    transport?: Transport;
    /** The wait before reconnecting after a drop; doubled on each failed try, up to 30 s. */
    reconnectDelayMs?: number;
    /** The fetch SSE reads with (the global one by default). */
    fetch?: typeof fetch;
    /**
     * When the period instance followed closes (`closed` with reason `period_closed`), subscribe
     * again from scratch to follow the next one, after dispatching `closed`. Only a URL without
     * `at` follows "the current" day, week or month, so only such a URL can follow; the default is
     * true for one. A pinned `at`, `false` here, or an archived season stays closed.
     */
    followNextPeriod?: boolean;
}
interface Message {
    type: string;
    board_version?: number;
    base_version?: number;
    entries?: LiveEntry[];
    changed?: LiveEntry[];
    left?: string[];
    reason?: string;
    detail?: string;
    period?: string;
    period_key?: string;
    period_start?: string | null;
    period_end?: string | null;
}
/**
 * A view of a board (`view=top:N`, `around:P:R` or `player:P`) in one period instance, kept
 * current by the server's snapshot and deltas, over SSE or a WebSocket.
 *
 * Events: `change` (detail `{ kind: "snapshot" | "delta", boardVersion, periodKey }`) after each
 * applied message; `status` (detail: the new status); `closed` (detail `{ reason, periodKey,
 * following }`) when the period instance closed or the season was archived, `following` telling
 * whether the board goes on with the next instance (see `followNextPeriod`); `error` (detail
 * `{ message }`) for a refused subscription or a drop. After a drop, `going_away`, or a delta
 * that does not chain or names another instance, it reconnects with
 * `since_version=PERIOD_KEY:VERSION`; after `resync` it starts from a fresh snapshot.
 */
export declare class LiveBoard extends EventTarget {
    #private;
    /**
     * Subscribes to `subscribeUrl` (`.../v1/leaderboards/{game}/{mode}/{season}/{scope}/subscribe?view=...`,
     * with `period` and `at` as wanted); connecting starts at once.
     */
    constructor(subscribeUrl: string | URL, options?: LiveBoardOptions);
    /** The view at `boardVersion`, in rank order. */
    get entries(): readonly LiveEntry[];
    /** The version the view is at; null before the first snapshot. */
    get boardVersion(): number | null;
    /** Where the board is in its life. */
    get status(): LiveStatus;
    /** The period fields of the last snapshot (`period`, `period_key`, `period_start`, `period_end`). */
    get period(): Omit<Message, "type"> | null;
    /** The period instance the view is of (`all_time`, `2026-10-13`, ...); null before the first snapshot. */
    get periodKey(): string | null;
    /** `Date.now()` of the last message, heartbeats included. */
    get lastMessageAt(): number | null;
    /** `Date.now()` of the last snapshot or delta applied. */
    get lastChangeAt(): number | null;
    /** How many times the view started over (a `resync` message). */
    get resyncs(): number;
    /** How many times it reconnected after a drop, `going_away` or an unchained delta. */
    get reconnects(): number;
    /** How many deltas were refused because their `base_version` or `period_key` was not the one held. */
    get gaps(): number;
    /** Stops following the board. */
    close(): void;
    /** Drops the connection as the network would, and reconnects after `pauseMs`. */
    drop(pauseMs?: number): void;
}
export {};
