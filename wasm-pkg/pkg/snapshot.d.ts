/** A fetch function: the global `fetch`, or one that adds the caller's headers. */
export type Fetch = (url: string) => Promise<Response>;
/** A board instance's head, as `GET /v1/snapshots/{game}/{mode}/{season}/{scope}/head` answers it. */
export interface Head {
    period: string;
    period_key: string;
    period_start: string | null;
    period_end: string | null;
    board_version: number;
    manifest: string;
    published_at: string;
    interval_ms: number;
}
/**
 * What an entry shows besides its standing; each field is there only when it is set. A player
 * who shows anonymously has none of them, except in the origin's answers to the game's own
 * service, moderator and admin tokens, which also say `anonymous: true` (snapshots and live
 * messages are public, so the edge, `SnapshotReader` and `LiveBoard` never carry them).
 */
export interface EntryExtras {
    /** The player's display name (NFC, at most 32 graphemes). */
    display_name?: string;
    /** The player's country, ISO 3166-1 alpha-2 (`"DE"`). */
    country?: string;
    /** The metadata object of the event behind the entry, as `parseExact` reads it. */
    metadata?: Record<string, unknown>;
    /** Only for the game's trusted tokens: the player shows anonymously to everyone else. */
    anonymous?: boolean;
}
/** A ranked entry of an answer, value exact, with its extras when set. */
export interface Entry extends EntryExtras {
    rank: number;
    player_id: string;
    value: bigint;
    achieved_at: string;
}
/** The period fields every read answer starts with. */
export interface PeriodFields {
    period: string;
    period_key: string;
    period_start: string | null;
    period_end: string | null;
}
/** `GET .../top` as the read API answers it. */
export interface TopAnswer extends PeriodFields {
    board_version: number;
    total_players: number;
    entries: Entry[];
    next_cursor: string | null;
}
/** `GET .../players/{player}/rank` as the read API answers it. */
export interface RankAnswer extends PeriodFields, Entry {
    board_version: number;
    competition_rank: number;
    dense_rank: number;
    percentile: number;
    total_players: number;
}
/**
 * `GET .../players/{player}/rank?approximate=interval` as the read API answers it: the exact
 * rank lies in `rank_interval.low` to `.high` (both included), at most 0.01 % of the board wide.
 */
export interface RankIntervalAnswer extends PeriodFields, Omit<Entry, "rank"> {
    board_version: number;
    rank: null;
    rank_interval: {
        low: number;
        high: number;
    };
    approximate: true;
    competition_rank: null;
    dense_rank: null;
    percentile: null;
    total_players: number;
}
/** `GET .../players/{player}/nearby` as the read API answers it. */
export interface NearbyAnswer extends PeriodFields {
    board_version: number;
    entries: Entry[];
}
/** An entry of an answer within a segment: `rank` within the segment, `global_rank` on the whole board. */
export interface SegmentEntry extends Entry {
    global_rank: number;
}
/** `GET .../top?segment=` as the read API answers it: `total_players` counts the segment's members. */
export interface SegmentTopAnswer extends PeriodFields {
    board_version: number;
    segment: string;
    total_players: number;
    entries: SegmentEntry[];
    next_cursor: string | null;
}
/** `GET .../players/{player}/rank?segment=` as the read API answers it, counted within the segment. */
export interface SegmentRankAnswer extends RankAnswer {
    segment: string;
    global_rank: number;
}
/** `GET .../players/{player}/nearby?segment=` as the read API answers it. */
export interface SegmentNearbyAnswer extends PeriodFields {
    board_version: number;
    segment: string;
    entries: SegmentEntry[];
}
/**
 * Answers `top`, `rank` and `nearby` from a board instance's published snapshot, exactly as the
 * read API answers them at the snapshot's `board_version`.
 *
 * The reader holds one version: `refresh()` reads the head again and moves to a newer manifest
 * when one was published. Chunks are fetched when a query first needs them and kept for the
 * version. Every manifest and chunk is checked against the hash that names it; one that does not
 * match fails the query, and nothing from it is read.
 */
export declare class SnapshotReader {
    #private;
    /**
     * A reader of the snapshot whose head is at `headUrl` (the origin's or an edge's
     * `.../v1/snapshots/{game}/{mode}/{season}/{scope}/head`, with `?period=` and `?at=` as in
     * reads). `fetchFn` fetches it and the parts; bind your token in it.
     */
    constructor(fetchFn: Fetch, headUrl: string | URL);
    /** The head the reader answers from, once read. */
    get head(): Head | null;
    /** The version the answers come from, once the head is read. */
    get boardVersion(): number | null;
    /** Reads the head; moves to its manifest when it names another. True when it moved. */
    refresh(): Promise<boolean>;
    /** The first `limit` entries (1 to 1000), or the page after `cursor`. */
    top(limit?: number, cursor?: string): Promise<TopAnswer>;
    /** The player's rank, or null when they have no score. */
    rank(player: string): Promise<RankAnswer | null>;
    /** The ranks the player's exact rank lies within, from the sketch (no rank chunk), or null when they have no score. */
    rankInterval(player: string): Promise<RankIntervalAnswer | null>;
    /** The `radius` (0 to 100) entries above and below the player, or null when they have no score. */
    nearby(player: string, radius?: number): Promise<NearbyAnswer | null>;
    /** The first `limit` members of `segment` (`country:DE`), each ranked within it and with its `global_rank`, or the page after `cursor`. */
    segmentTop(segment: string, limit?: number, cursor?: string): Promise<SegmentTopAnswer>;
    /** The player's rank within `segment`, or null when they have no score in it. */
    segmentRank(segment: string, player: string): Promise<SegmentRankAnswer | null>;
    /** The `radius` members of `segment` above and below the player, or null when they have no score in it. */
    segmentNearby(segment: string, player: string, radius?: number): Promise<SegmentNearbyAnswer | null>;
}
