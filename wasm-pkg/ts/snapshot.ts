// Reads of a published snapshot in the browser: the head names the manifest, the manifest the
// chunks, and the core (in WebAssembly) answers top, rank and nearby from the chunks a query
// names, checking every part against its SHA-256 before reading it.
import { SnapshotView, parseHead } from "./standings_wasm.js";
import { parseExact, toMs } from "./exact.js";

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
  rank_interval: { low: number; high: number };
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

/** The most chunks asked of the origin in one bundle request, as it allows. */
const BUNDLE_MAX = 200;
/** Every query answers within 3 rounds of parts; more means the parts are not the manifest's. */
const MAX_ROUNDS = 4;

/** `url`'s answer; an error naming `what`, the URL and the problem when it is not 2xx. */
async function fetchOk(fetchFn: Fetch, url: string, what: string): Promise<Response> {
  const answer = await fetchFn(url);
  if (!answer.ok) {
    throw new Error(`${what}: ${url} answered ${answer.status}: ${(await answer.text()).slice(0, 300)}`);
  }
  return answer;
}

async function bytesOf(fetchFn: Fetch, url: string, what: string): Promise<Uint8Array> {
  return new Uint8Array(await (await fetchOk(fetchFn, url, what)).arrayBuffer());
}

/** A head's bytes read with the core's reader of the origin's head format; throws for anything else. */
function headOf(bytes: Uint8Array): Head {
  let fields;
  try {
    fields = parseHead(bytes);
  } catch (e) {
    throw new Error(`head: ${(e as Error).message}`);
  }
  try {
    return {
      period: fields.period,
      period_key: fields.periodKey,
      period_start: fields.periodStart ?? null,
      period_end: fields.periodEnd ?? null,
      board_version: fields.boardVersion,
      manifest: fields.manifest,
      published_at: fields.publishedAt,
      interval_ms: fields.intervalMs,
    };
  } finally {
    fields.free();
  }
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
export class SnapshotReader {
  readonly #fetch: Fetch;
  readonly #headUrl: URL;
  readonly #board: [string, string, string, string];
  #head: Head | null = null;
  #view: SnapshotView | null = null;
  #bases = new Map<string, Uint8Array>();

  /**
   * A reader of the snapshot whose head is at `headUrl` (the origin's or an edge's
   * `.../v1/snapshots/{game}/{mode}/{season}/{scope}/head`, with `?period=` and `?at=` as in
   * reads). `fetchFn` fetches it and the parts; bind your token in it.
   */
  constructor(fetchFn: Fetch, headUrl: string | URL) {
    this.#fetch = fetchFn;
    this.#headUrl = new URL(headUrl);
    const segments = this.#headUrl.pathname.split("/");
    const at = segments.lastIndexOf("snapshots");
    const board = segments.slice(at + 1, at + 5).map(decodeURIComponent);
    if (at < 0 || segments.length !== at + 6 || segments[at + 5] !== "head" || board.some((s) => s === "")) {
      throw new TypeError(`${headUrl} is not a head URL (.../v1/snapshots/{game}/{mode}/{season}/{scope}/head)`);
    }
    this.#board = board as [string, string, string, string];
  }

  /** The head the reader answers from, once read. */
  get head(): Head | null {
    return this.#head;
  }

  /** The version the answers come from, once the head is read. */
  get boardVersion(): number | null {
    return this.#head?.board_version ?? null;
  }

  /** Reads the head; moves to its manifest when it names another. True when it moved. */
  async refresh(): Promise<boolean> {
    const head = headOf(await bytesOf(this.#fetch, this.#headUrl.href, "head"));
    if (this.#view && this.#head?.manifest === head.manifest) return false;
    const manifestUrl = new URL(`../../../../manifests/${head.manifest}`, this.#headUrl).href;
    const bytes = await bytesOf(this.#fetch, manifestUrl, "manifest");
    // A patch stands on a base (a manifest, or a patch over one) that the versions after it
    // share: each fetched once and kept while heads name it.
    const bases: Uint8Array[] = [];
    const kept = new Map<string, Uint8Array>();
    for (let hash = SnapshotView.baseOf(bytes); hash !== undefined; ) {
      let base = this.#bases.get(hash);
      if (base === undefined) {
        const baseUrl = new URL(`../../../../manifests/${hash}`, this.#headUrl).href;
        base = await bytesOf(this.#fetch, baseUrl, "base manifest");
      }
      kept.set(hash, base);
      bases.push(base);
      hash = bases.length < 2 ? SnapshotView.baseOf(base) : undefined;
    }
    this.#bases = kept;
    const [game, mode, season, scope] = this.#board;
    const start = head.period_start === null ? undefined : toMs(head.period_start, "period_start");
    const end = head.period_end === null ? undefined : toMs(head.period_end, "period_end");
    const view = new SnapshotView(game, mode, season, scope, head.period, head.period_key, start, end, head.manifest, bytes, bases[0], bases[1]);
    this.#view?.free();
    this.#view = view;
    this.#head = head;
    return true;
  }

  /** The first `limit` entries (1 to 1000), or the page after `cursor`. */
  async top(limit = 10, cursor?: string): Promise<TopAnswer> {
    return (await this.#answer((v) => v.top(limit, cursor))) as TopAnswer;
  }

  /** The player's rank, or null when they have no score. */
  async rank(player: string): Promise<RankAnswer | null> {
    return (await this.#answer((v) => v.rank(player))) as RankAnswer | null;
  }

  /** The ranks the player's exact rank lies within, from the sketch (no rank chunk), or null when they have no score. */
  async rankInterval(player: string): Promise<RankIntervalAnswer | null> {
    return (await this.#answer((v) => v.rankInterval(player))) as RankIntervalAnswer | null;
  }

  /** The `radius` (0 to 100) entries above and below the player, or null when they have no score. */
  async nearby(player: string, radius = 5): Promise<NearbyAnswer | null> {
    return (await this.#answer((v) => v.nearby(player, radius))) as NearbyAnswer | null;
  }

  /** The first `limit` members of `segment` (`country:DE`), each ranked within it and with its `global_rank`, or the page after `cursor`. */
  async segmentTop(segment: string, limit = 10, cursor?: string): Promise<SegmentTopAnswer> {
    return (await this.#answer((v) => v.segmentTop(segment, limit, cursor))) as SegmentTopAnswer;
  }

  /** The player's rank within `segment`, or null when they have no score in it. */
  async segmentRank(segment: string, player: string): Promise<SegmentRankAnswer | null> {
    return (await this.#answer((v) => v.segmentRank(segment, player))) as SegmentRankAnswer | null;
  }

  /** The `radius` members of `segment` above and below the player, or null when they have no score in it. */
  async segmentNearby(segment: string, player: string, radius = 5): Promise<SegmentNearbyAnswer | null> {
    return (await this.#answer((v) => v.segmentNearby(segment, player, radius))) as SegmentNearbyAnswer | null;
  }

  /** Runs a query, fetching the chunks it names, until it answers. */
  async #answer(query: (view: SnapshotView) => string | undefined): Promise<unknown> {
    if (!this.#view) await this.refresh();
    const view = this.#view as SnapshotView;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const json = query(view);
      if (json !== undefined) return parseExact(json);
      const needed = view.needed();
      for (let i = 0; i < needed.length; i += BUNDLE_MAX) {
        await this.#fetchParts(view, needed.slice(i, i + BUNDLE_MAX));
      }
    }
    throw new Error(`the snapshot's parts did not answer within ${MAX_ROUNDS} rounds`);
  }

  /** Fetches `hashes` (one request, a bundle when several) and hands each to the view. */
  async #fetchParts(view: SnapshotView, hashes: string[]): Promise<void> {
    const chunks = new URL("../../../../chunks", this.#headUrl);
    if (hashes.length === 1) {
      view.addPart(hashes[0], await bytesOf(this.#fetch, `${chunks.href}/${hashes[0]}`, "chunk"));
      return;
    }
    const body = await bytesOf(this.#fetch, `${chunks.href}?hashes=${hashes.join(",")}`, "chunk bundle");
    // The bundle is each chunk's length (4 bytes, big-endian) and bytes, in the order asked.
    const data = new DataView(body.buffer, body.byteOffset, body.byteLength);
    let at = 0;
    for (const hash of hashes) {
      if (at + 4 > body.length) throw new Error(`chunk bundle: it ends before chunk ${hash}`);
      const length = data.getUint32(at);
      if (at + 4 + length > body.length) throw new Error(`chunk bundle: chunk ${hash} is cut short`);
      view.addPart(hash, body.subarray(at + 4, at + 4 + length));
      at += 4 + length;
    }
    if (at !== body.length) throw new Error("chunk bundle: bytes follow the last chunk asked for");
  }
}
