/* tslint:disable */
/* eslint-disable */

/**
 * A snapshot head read with the contract's reader (`standings_core::contract::head`), as
 * the origin prints it; refused when the bytes are not one.
 */
export class HeadFields {
    private constructor();
    free(): void;
    [Symbol.dispose](): void;
    /**
     * The version the manifest holds.
     */
    readonly boardVersion: number;
    /**
     * How often the origin republishes the instance.
     */
    readonly intervalMs: number;
    /**
     * The manifest's hash.
     */
    readonly manifest: string;
    /**
     * Its end, as printed (`undefined` for all time).
     */
    readonly periodEnd: string | undefined;
    /**
     * The period instance's key.
     */
    readonly periodKey: string;
    /**
     * Its start, as printed (`undefined` for all time).
     */
    readonly periodStart: string | undefined;
    /**
     * The period kind.
     */
    readonly period: string;
    /**
     * When it was published, as printed.
     */
    readonly publishedAt: string;
}

/**
 * A live view followed with the core's `ViewState` (see [`live`]).
 */
export class LiveView {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * The times of the entries as the service prints them, joined by `\n`.
     */
    achievedAt(): string;
    /**
     * Applies a delta message with the core's checks; refused (changing nothing) when it is
     * of another instance, does not start at the version held, or does not fit the entries.
     * The changed entries cross as the constructor's do.
     */
    apply(period_key: string, base_version: number, board_version: number, ranks: Float64Array | number[], players: string, values: BigInt64Array | bigint[], achieved_at: string, display_names: string, countries: string, metadata: string, global_ranks: Float64Array | number[], left: string, left_count: number): void;
    /**
     * The countries of the entries, joined by `\n` (an empty line for none).
     */
    countries(): string;
    /**
     * The display names of the entries, joined by `\n` (an empty line for none).
     */
    displayNames(): string;
    /**
     * In a view within a segment, each entry's rank on the whole board; empty otherwise.
     */
    globalRanks(): Float64Array;
    /**
     * The metadata of the entries as JSON texts, joined by `\n` (an empty line for none).
     */
    metadata(): string;
    /**
     * The view of a snapshot message: its instance, version and entries as columns (ids,
     * times, display names, countries and metadata JSON texts joined by `\n`, an empty line
     * for an extra that is not set).
     */
    constructor(period_key: string, board_version: number, ranks: Float64Array | number[], players: string, values: BigInt64Array | bigint[], achieved_at: string, display_names: string, countries: string, metadata: string, global_ranks: Float64Array | number[]);
    /**
     * The ids of the entries, joined by `\n`.
     */
    players(): string;
    /**
     * The ranks of the entries, in order.
     */
    ranks(): Float64Array;
    /**
     * The values of the entries.
     */
    values(): BigInt64Array;
    /**
     * The version the view is at.
     */
    readonly boardVersion: number;
}

/**
 * A snapshot at one version, read part by part (see [`SnapshotView`]).
 */
export class SnapshotView {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Hands over a needed chunk; refused when its bytes do not hash to `hash` or do not decode.
     */
    addPart(hash: string, bytes: Uint8Array | number[]): void;
    /**
     * The hash of the base that a head's manifest bytes (or a base's) stand on, when they are a
     * patch (fetch it as a manifest; pass the root's base and, when that is a patch too, its
     * base to the constructor); `undefined` for a manifest.
     */
    static baseOf(manifest: Uint8Array | number[]): string | undefined;
    /**
     * The nearby answer's JSON (`null` for no score), or `undefined` when chunks are needed.
     */
    nearby(player: string, radius: number): string | undefined;
    /**
     * The hashes of the chunks the last query needs, as 64 hex digits.
     */
    needed(): string[];
    /**
     * The snapshot of board `game/mode/season/scope` in a period instance, from its manifest's
     * bytes, which must hash to `manifest_hash`. Times are ms since the epoch.
     */
    constructor(game: string, mode: string, season: string, scope: string, period: string, period_key: string, period_start_ms: number | null | undefined, period_end_ms: number | null | undefined, manifest_hash: string, manifest: Uint8Array | number[], base?: Uint8Array | number[] | null, base_of_base?: Uint8Array | number[] | null);
    /**
     * The rank interval answer's JSON (`null` for no score), or `undefined` when parts are
     * needed (the player's lookup chunk and the sketch, never a rank chunk).
     */
    rankInterval(player: string): string | undefined;
    /**
     * The rank answer's JSON (`null` for no score), or `undefined` when chunks are needed.
     */
    rank(player: string): string | undefined;
    /**
     * The segment nearby answer's JSON (`null` when not in the segment), or `undefined` when
     * chunks are needed.
     */
    segmentNearby(segment: string, player: string, radius: number): string | undefined;
    /**
     * The segment rank answer's JSON (`null` when not in the segment), or `undefined` when
     * chunks are needed.
     */
    segmentRank(segment: string, player: string): string | undefined;
    /**
     * The segment top answer's JSON (`segment` as `country:DE`), or `undefined` when chunks
     * must be fetched first.
     */
    segmentTop(segment: string, limit: number, cursor?: string | null): string | undefined;
    /**
     * The top answer's JSON, or `undefined` when chunks must be fetched first ([`Self::needed`]).
     */
    top(limit: number, cursor?: string | null): string | undefined;
    /**
     * The version the snapshot was taken at.
     */
    readonly boardVersion: number;
    /**
     * Ranked players in the snapshot.
     */
    readonly totalPlayers: number;
}

/**
 * Checks a player id as the service checks it: 1 to 128 bytes of UTF-8, no control
 * characters. O(length).
 */
export function checkPlayerId(player: string): void;

/**
 * -1, 0 or 1: how two standings compare in the total order of `mode` (-1: `a` ranks first);
 * both player ids are checked as the service checks them. O(length of the ids).
 */
export function compareStandings(mode: string, a_value: bigint, a_achieved_at: bigint, a_player: string, b_value: bigint, b_achieved_at: bigint, b_player: string): number;

/**
 * Reads a head's bytes. O(length).
 */
export function parseHead(bytes: Uint8Array | number[]): HeadFields;

/**
 * An RFC 3339 time (with an offset) as ms since the epoch, read as the service reads it;
 * `undefined` when it is not one. O(1).
 */
export function parseTime(text: string): number | undefined;

/**
 * The indices of the scored entries in rank order, as the caller listed them. The list crosses
 * whole, one row per entry: `scored[i]` is 0 for a player with no score (whose value and time
 * are not read, but whose id is checked like every other), `achieved_at` and `players` hold
 * one RFC 3339 time (empty for no score) and one id per entry, joined by `\n` (neither holds
 * one), so they cross into WebAssembly as two strings instead of two per entry, and the times
 * are read by the core's parser. O(k log k) for k entries.
 */
export function rankOrder(mode: string, scored: Uint8Array | number[], values: BigInt64Array | bigint[], achieved_at: string, players: string): Uint32Array;

/**
 * [`rank_order_js`] with the times as ms since the epoch, for callers that hold numbers.
 * O(k log k).
 */
export function rankOrderMs(mode: string, scored: Uint8Array | number[], values: BigInt64Array | bigint[], achieved_at_ms: Float64Array | number[], players: string): Uint32Array;

export type InitInput = RequestInfo | URL | Response | BufferSource | WebAssembly.Module;

export interface InitOutput {
    readonly memory: WebAssembly.Memory;
    readonly __wbg_headfields_free: (a: number, b: number) => void;
    readonly __wbg_liveview_free: (a: number, b: number) => void;
    readonly __wbg_snapshotview_free: (a: number, b: number) => void;
    readonly checkPlayerId: (a: number, b: number, c: number) => void;
    readonly compareStandings: (a: number, b: number, c: number, d: bigint, e: bigint, f: number, g: number, h: bigint, i: bigint, j: number, k: number) => void;
    readonly headfields_boardVersion: (a: number) => number;
    readonly headfields_intervalMs: (a: number) => number;
    readonly headfields_manifest: (a: number, b: number) => void;
    readonly headfields_period: (a: number, b: number) => void;
    readonly headfields_periodEnd: (a: number, b: number) => void;
    readonly headfields_periodKey: (a: number, b: number) => void;
    readonly headfields_periodStart: (a: number, b: number) => void;
    readonly headfields_publishedAt: (a: number, b: number) => void;
    readonly liveview_achievedAt: (a: number, b: number) => void;
    readonly liveview_apply: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number, i: number, j: number, k: number, l: number, m: number, n: number, o: number, p: number, q: number, r: number, s: number, t: number, u: number, v: number, w: number, x: number, y: number) => void;
    readonly liveview_boardVersion: (a: number) => number;
    readonly liveview_countries: (a: number, b: number) => void;
    readonly liveview_displayNames: (a: number, b: number) => void;
    readonly liveview_globalRanks: (a: number, b: number) => void;
    readonly liveview_metadata: (a: number, b: number) => void;
    readonly liveview_new: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number, i: number, j: number, k: number, l: number, m: number, n: number, o: number, p: number, q: number, r: number, s: number, t: number) => void;
    readonly liveview_players: (a: number, b: number) => void;
    readonly liveview_ranks: (a: number, b: number) => void;
    readonly liveview_values: (a: number, b: number) => void;
    readonly parseHead: (a: number, b: number, c: number) => void;
    readonly parseTime: (a: number, b: number, c: number) => void;
    readonly rankOrder: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number, i: number, j: number, k: number) => void;
    readonly rankOrderMs: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number, i: number, j: number, k: number) => void;
    readonly snapshotview_addPart: (a: number, b: number, c: number, d: number, e: number, f: number) => void;
    readonly snapshotview_baseOf: (a: number, b: number, c: number) => void;
    readonly snapshotview_boardVersion: (a: number) => number;
    readonly snapshotview_nearby: (a: number, b: number, c: number, d: number, e: number) => void;
    readonly snapshotview_needed: (a: number, b: number) => void;
    readonly snapshotview_new: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number, i: number, j: number, k: number, l: number, m: number, n: number, o: number, p: number, q: number, r: number, s: number, t: number, u: number, v: number, w: number, x: number, y: number) => void;
    readonly snapshotview_rank: (a: number, b: number, c: number, d: number) => void;
    readonly snapshotview_rankInterval: (a: number, b: number, c: number, d: number) => void;
    readonly snapshotview_segmentNearby: (a: number, b: number, c: number, d: number, e: number, f: number, g: number) => void;
    readonly snapshotview_segmentRank: (a: number, b: number, c: number, d: number, e: number, f: number) => void;
    readonly snapshotview_segmentTop: (a: number, b: number, c: number, d: number, e: number, f: number, g: number) => void;
    readonly snapshotview_top: (a: number, b: number, c: number, d: number, e: number) => void;
    readonly snapshotview_totalPlayers: (a: number) => number;
    readonly __wbindgen_externrefs: WebAssembly.Table;
    readonly __wbindgen_add_to_stack_pointer: (a: number) => number;
    readonly __wbindgen_export: (a: number, b: number) => number;
    readonly __wbindgen_export2: (a: number, b: number, c: number, d: number) => number;
    readonly __wbindgen_export3: (a: number, b: number, c: number) => void;
    readonly __wbindgen_export4: (a: number) => void;
    readonly __wbindgen_export5: (a: number, b: number) => void;
    readonly __wbindgen_start: () => void;
}

export type SyncInitInput = BufferSource | WebAssembly.Module;

/**
 * Instantiates the given `module`, which can either be bytes or
 * a precompiled `WebAssembly.Module`.
 *
 * @param {{ module: SyncInitInput }} module - Passing `SyncInitInput` directly is deprecated.
 *
 * @returns {InitOutput}
 */
export function initSync(module: { module: SyncInitInput } | SyncInitInput): InitOutput;

/**
 * If `module_or_path` is {RequestInfo} or {URL}, makes a request and
 * for everything else, calls `WebAssembly.instantiate` directly.
 *
 * @param {{ module_or_path: InitInput | Promise<InitInput> }} module_or_path - Passing `InitInput` directly is deprecated.
 *
 * @returns {Promise<InitOutput>}
 */
export default function __wbg_init (module_or_path?: { module_or_path: InitInput | Promise<InitInput> } | InitInput | Promise<InitInput>): Promise<InitOutput>;
