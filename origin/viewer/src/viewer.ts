// The board viewer: picks a board of a game, follows its top N live, follows a player's window
// live (found by id or by exact display name), and ranks a pasted friend list by the board's
// rules. Entries show the player's display name (the id on hover) and country flag; a player
// who shows anonymously shows the id only. Everything comes from this origin. The token lives in
// sessionStorage and in request headers only, never in a URL, so it stays out of history and logs;
// a link `standings serve` prints may carry one in its fragment (`#token=`), which no browser
// sends to a server, and the page moves it to sessionStorage and drops the fragment at once.

import { LiveBoard, parseExact, rankFriends, stringifyExact } from "./pkg/index.js";
import type {
  EntryExtras,
  Friend,
  Instant,
  LiveEntry,
  LiveStatus,
  RankAnswer,
  Rules,
  ScoreMode,
  TopAnswer,
} from "./pkg/index.js";

/** Where the token is kept for the tab's lifetime. */
const TOKEN_KEY = "standings.token";
/** How many places either side of a player the search shows. */
const NEARBY_RADIUS = 5;
/** The largest top the page follows. */
const MAX_TOP = 100;
/** Heartbeats come every 15 s, so a stream silent for longer than this is suspect. */
const QUIET_AFTER_MS = 20_000;
/** The wait before reading a player's figures again when the answer trailed the live window. */
const FIGURES_RETRY_MS = 1_000;
/** How long a row that a delta changed stays marked (the fade in viewer.css lasts as long). */
const CHANGED_MS = 2_500;
/** How many ranks a name search reads when the name is not among the entries on the page. */
const NAME_SEARCH_RANKS = 1_000;
const SCORE_MODES: readonly ScoreMode[] = ["highest", "cumulative", "fastest", "latest"];

/** A board of `GET /v1/games/{game}/boards`; it also serves as the rules of `rankFriends`. */
interface Board {
  game: string;
  mode: string;
  season: string;
  scope: string;
  score_mode: ScoreMode;
  periods: string[];
  season_state: string;
  board_version?: number;
  total_players?: number;
}

interface GameBoards {
  game: string;
  boards: Board[];
}

/** An RFC 9457 problem document, as every error is answered. */
interface Problem {
  detail?: unknown;
  code?: unknown;
}

/** A board named by the query string, chosen once its game's boards are loaded. */
interface BoardName {
  mode: string;
  season: string;
  scope: string;
}

/** An answer that is not 2xx, with its problem document's code and detail when it has one. */
class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | null,
    detail: string,
  ) {
    super(detail);
    this.name = "ApiError";
  }
}

function element<T extends HTMLElement>(id: string, kind: { new (): T; prototype: T }): T {
  const found = document.getElementById(id);
  if (!(found instanceof kind)) {
    throw new Error(`the page has no ${kind.name} #${id}`);
  }
  return found;
}

function tableBody(id: string): HTMLTableSectionElement {
  const body = element(id, HTMLTableElement).tBodies.item(0);
  if (body === null) {
    throw new Error(`the table #${id} has no tbody`);
  }
  return body;
}

const ui = {
  pickerForm: element("picker-form", HTMLFormElement),
  token: element("token", HTMLInputElement),
  game: element("game", HTMLInputElement),
  load: element("load", HTMLButtonElement),
  board: element("board", HTMLSelectElement),
  period: element("period", HTMLSelectElement),
  topN: element("top-n", HTMLInputElement),
  pickerMessage: element("picker-message", HTMLElement),
  boardVersion: element("board-version", HTMLElement),
  liveStatus: element("live-status", HTMLElement),
  staleness: element("staleness", HTMLElement),
  liveMessage: element("live-message", HTMLElement),
  topBody: tableBody("top-table"),
  searchForm: element("search-form", HTMLFormElement),
  player: element("player", HTMLInputElement),
  playerResult: element("player-result", HTMLElement),
  nearbyBody: tableBody("nearby-table"),
  friendsForm: element("friends-form", HTMLFormElement),
  friendsInput: element("friends-input", HTMLTextAreaElement),
  friendsMode: element("friends-mode", HTMLSelectElement),
  friendsError: element("friends-error", HTMLElement),
  friendsBody: tableBody("friends-table"),
  friendsUnranked: element("friends-unranked", HTMLElement),
};

/** The boards of the game last loaded, in the order the board select lists them. */
let boards: Board[] = [];
/** The game and token the boards were loaded with; null when none are. */
let boardsLoadedFor: { game: string; token: string } | null = null;
/** The board and period the query string asked for, until a load of the game finds them. */
let wantedBoard: BoardName | null = null;
let wantedPeriod: string | null = null;
/** Bumped by each load, so that an answer overtaken by a newer request is dropped. */
let loadGeneration = 0;

/** The subscription followed, if any, and what it follows (see `liveKey`). */
let live: LiveBoard | null = null;
let liveFollows = "";
let liveStartedAt = 0;
/** When the followed view last moved: the last delta's arrival; null until one arrives (a
 * snapshot says what the board is, not when it last changed). */
let boardChangedAt: number | null = null;
/** The player followed in the player panel, if any (see `PlayerFollow`). */
let playerFollow: PlayerFollow | null = null;
/** The entries on screen, to tell which rows the next delta changed. */
let shownEntries: LiveEntry[] = [];
/** When each player's row last changed, while its mark lasts. */
const changedAt = new Map<string, number>();

/** When the friend list was last edited: the time of lines that give none. */
let friendsEditedAt: Date | null = null;
/** Bumped by each search and each player followed, so that a search overtaken by either is dropped. */
let searchGeneration = 0;

// ---- Small helpers ----------------------------------------------------------------------------

function say(target: HTMLElement, text: string, kind: "info" | "error" = "info"): void {
  target.textContent = text;
  target.dataset["kind"] = kind;
}

function messageOf(error: unknown): string {
  if (error instanceof ApiError) {
    return error.message;
  }
  if (error instanceof TypeError && error.message.toLowerCase().includes("fetch")) {
    return `the service cannot be reached (${error.message})`;
  }
  return error instanceof Error ? error.message : String(error);
}

function token(): string {
  return ui.token.value.trim();
}

function storeToken(): void {
  try {
    const value = token();
    if (value === "") {
      sessionStorage.removeItem(TOKEN_KEY);
    } else {
      sessionStorage.setItem(TOKEN_KEY, value);
    }
  } catch {
    // Storage can be switched off; the token then lives in the field alone.
  }
}

function storedToken(): string {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? "";
  } catch {
    return "";
  }
}

function boardPath(board: Board): string {
  const parts = [board.game, board.mode, board.season, board.scope].map(encodeURIComponent);
  return `/v1/leaderboards/${parts.join("/")}`;
}

function boardLabel(board: BoardName): string {
  return `${board.mode} / ${board.season} / ${board.scope}`;
}

function periodLabel(period: string): string {
  return period.replaceAll("_", " ");
}

/** The problem document of a failed answer, or its status when the body is not one. */
function problemOf(response: Response, text: string): ApiError {
  try {
    const problem = parseExact<Problem>(text);
    if (typeof problem === "object" && problem !== null && typeof problem.detail === "string") {
      const code = typeof problem.code === "string" ? problem.code : null;
      return new ApiError(response.status, code, problem.detail);
    }
  } catch {
    // Not JSON: a proxy's error page, say. The status still tells what happened.
  }
  return new ApiError(response.status, null, `HTTP ${response.status} ${response.statusText}`.trim());
}

/** A read of this origin with the token; values are exact bigints, and `stale` is the edge tier's mark. */
async function read<T extends object>(path: string): Promise<{ answer: T; stale: boolean }> {
  const headers = new Headers({ accept: "application/json" });
  const bearer = token();
  if (bearer !== "") {
    headers.set("authorization", `Bearer ${bearer}`);
  }
  const response = await fetch(path, { headers, cache: "no-store", credentials: "omit" });
  const text = await response.text();
  if (!response.ok) {
    throw problemOf(response, text);
  }
  const answer = parseExact<T & { stale?: unknown }>(text);
  const stale = response.headers.has("x-standings-stale") || answer.stale === true;
  return { answer, stale };
}

function instantText(instant: Instant | null | undefined): string {
  if (instant === null || instant === undefined) {
    return "";
  }
  if (typeof instant === "string") {
    return instant;
  }
  const date = typeof instant === "number" ? new Date(instant) : instant;
  return Number.isNaN(date.getTime()) ? String(instant) : date.toISOString();
}

function cell(text: string, className: string): HTMLTableCellElement {
  const td = document.createElement("td");
  td.className = className;
  td.textContent = text;
  return td;
}

/** The achieved-at cell: the exact RFC 3339 text, the reader's local time as its tooltip. */
function timeCell(instant: Instant | null | undefined): HTMLTableCellElement {
  const td = document.createElement("td");
  td.className = "time";
  const text = instantText(instant);
  const time = document.createElement("time");
  time.dateTime = text;
  // A narrow table may break the line between the date and the time, and nowhere else.
  const split = /^(\d{4}-\d{2}-\d{2})(T.*)$/.exec(text);
  if (split !== null) {
    time.append(split[1] ?? "", document.createElement("wbr"), split[2] ?? "");
  } else {
    time.textContent = text;
  }
  const date = new Date(text);
  if (!Number.isNaN(date.getTime())) {
    time.title = date.toLocaleString();
  }
  td.append(time);
  return td;
}

/** An entry as the tables show it: its standing, and its player's name and country when set. */
interface ShownEntry extends EntryExtras {
  rank: number;
  player_id: string;
  value: bigint;
  achieved_at: Instant;
}

/**
 * The name an entry shows: its display name, or null when it has none or the player shows
 * anonymously (a trusted token's answers carry the name with `anonymous: true`; the page shows
 * such a player as everyone else sees them, by id).
 */
function shownName(entry: EntryExtras): string | null {
  return entry.anonymous === true ? null : (entry.display_name ?? null);
}

/** The country an entry shows, under the same rule as its name. */
function shownCountry(entry: EntryExtras): string | null {
  return entry.anonymous === true ? null : (entry.country ?? null);
}

/**
 * The flag of an ISO 3166-1 alpha-2 code: its two letters as regional indicator symbols, which
 * fonts draw as the flag (and others as the two letters). Null for anything else.
 */
function flagOf(country: string): string | null {
  if (!/^[A-Z]{2}$/.test(country)) {
    return null;
  }
  const base = 0x1f1e6 - "A".charCodeAt(0);
  return String.fromCodePoint(base + country.charCodeAt(0), base + country.charCodeAt(1));
}

/**
 * Who an entry is: the country's flag (the code as its title) and the display name (the player id
 * as its title), or the player id alone when it shows no name. Text only, never markup.
 */
function playerLabel(entry: ShownEntry): HTMLElement[] {
  const parts: HTMLElement[] = [];
  const country = shownCountry(entry);
  if (country !== null) {
    const flag = document.createElement("span");
    flag.className = "flag";
    flag.dataset["country"] = country;
    flag.title = country;
    flag.setAttribute("role", "img");
    flag.setAttribute("aria-label", country);
    flag.textContent = flagOf(country) ?? country;
    parts.push(flag);
  }
  const who = document.createElement("span");
  const name = shownName(entry);
  if (name !== null) {
    who.className = "name";
    who.textContent = name;
    who.title = entry.player_id;
  } else {
    who.className = "id";
    who.textContent = entry.player_id;
  }
  parts.push(who);
  return parts;
}

/** A table row of rank, player, value and achieved at; values print exactly, as bigints. */
function entryRow(entry: ShownEntry): HTMLTableRowElement {
  const row = document.createElement("tr");
  row.dataset["player"] = entry.player_id;
  const player = document.createElement("td");
  player.className = "player";
  player.append(...playerLabel(entry));
  row.append(cell(String(entry.rank), "num"), player, cell(entry.value.toString(), "num"), timeCell(entry.achieved_at));
  return row;
}

/** Seconds, minutes or hours, as a person reads an age. */
function ago(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 120) {
    return `${seconds} s ago`;
  }
  const minutes = Math.floor(seconds / 60);
  if (minutes < 120) {
    return `${minutes} min ago`;
  }
  return `${Math.floor(minutes / 60)} h ago`;
}

// ---- The board picker -------------------------------------------------------------------------

function selectedBoard(): Board | null {
  if (ui.board.disabled || ui.board.value === "") {
    return null;
  }
  return boards[Number(ui.board.value)] ?? null;
}

function topN(): number | null {
  const n = Number(ui.topN.value);
  return Number.isInteger(n) && n >= 1 && n <= MAX_TOP ? n : null;
}

/** Lists `boards` in the board select, keeping the chosen board (or the wanted one) chosen. */
function fillBoards(preferred: BoardName | null): void {
  const previousPeriod = ui.period.value;
  ui.board.replaceChildren();
  if (boards.length === 0) {
    const option = new Option(boardsLoadedFor === null ? "Load a game first" : "This game has no boards", "");
    ui.board.append(option);
    ui.board.disabled = true;
    fillPeriods(null, null);
    syncFriendsMode();
    return;
  }
  boards.forEach((board, index) => {
    const state = board.season_state === "active" ? "" : `, ${board.season_state}`;
    ui.board.append(new Option(`${boardLabel(board)} (${board.score_mode}${state})`, String(index)));
  });
  const chosen = preferred === null ? -1 : boards.findIndex((b) => sameBoard(b, preferred));
  ui.board.value = String(Math.max(chosen, 0));
  ui.board.disabled = false;
  fillPeriods(selectedBoard(), wantedPeriod ?? previousPeriod);
  syncFriendsMode();
}

function sameBoard(a: BoardName, b: BoardName): boolean {
  return a.mode === b.mode && a.season === b.season && a.scope === b.scope;
}

/** Lists the board's periods: the preferred one if the board keeps it, else all time, else its first. */
function fillPeriods(board: Board | null, preferred: string | null): void {
  ui.period.replaceChildren();
  const periods = board?.periods ?? [];
  for (const period of periods) {
    ui.period.append(new Option(periodLabel(period), period));
  }
  ui.period.disabled = periods.length === 0;
  if (preferred !== null && periods.includes(preferred)) {
    ui.period.value = preferred;
  } else if (periods.includes("all_time")) {
    ui.period.value = "all_time";
  }
}

/** Loads the game's boards into the select; true when a board is chosen (the wanted one, if one was). */
async function loadBoards(): Promise<boolean> {
  const game = ui.game.value.trim();
  if (game === "") {
    say(ui.pickerMessage, "Enter a game id first.", "error");
    ui.game.focus();
    return false;
  }
  storeToken();
  const generation = ++loadGeneration;
  const bearer = token();
  ui.load.disabled = true;
  say(ui.pickerMessage, `Loading the boards of ${game}…`);
  try {
    const { answer } = await read<GameBoards>(`/v1/games/${encodeURIComponent(game)}/boards`);
    if (generation !== loadGeneration) {
      return false;
    }
    const previous = selectedBoard();
    boards = Array.isArray(answer.boards) ? answer.boards : [];
    boardsLoadedFor = { game, token: bearer };
    const wanted = wantedBoard;
    fillBoards(wanted ?? previous);
    wantedBoard = null;
    wantedPeriod = null;
    followPlayerSelection();
    if (boards.length === 0) {
      say(ui.pickerMessage, `${game} has no boards yet.`, "error");
      return false;
    }
    if (wanted !== null && !boards.some((b) => sameBoard(b, wanted))) {
      const text = `${game} has no board ${boardLabel(wanted)}; choose one of its ${boards.length}.`;
      say(ui.pickerMessage, text, "error");
      return false;
    }
    say(ui.pickerMessage, `${boards.length} board${boards.length === 1 ? "" : "s"} in ${game}.`);
    return true;
  } catch (error) {
    if (generation !== loadGeneration) {
      return false;
    }
    boards = [];
    boardsLoadedFor = null;
    fillBoards(null);
    followPlayerSelection();
    say(ui.pickerMessage, `Cannot load the boards of ${game}: ${messageOf(error)}`, "error");
    return false;
  } finally {
    if (generation === loadGeneration) {
      ui.load.disabled = false;
    }
  }
}

/**
 * Follows the chosen board's top N, loading the game's boards first when they are not loaded (or
 * were loaded with another token).
 */
async function watch(): Promise<void> {
  storeToken();
  const game = ui.game.value.trim();
  const loaded = boardsLoadedFor;
  if (loaded === null || loaded.game !== game || loaded.token !== token()) {
    if (!(await loadBoards())) {
      return;
    }
  }
  const board = selectedBoard();
  if (board === null) {
    say(ui.pickerMessage, "Choose a board first.", "error");
    return;
  }
  const n = topN();
  if (n === null) {
    say(ui.pickerMessage, `Top N must be a whole number from 1 to ${MAX_TOP}.`, "error");
    ui.topN.focus();
    return;
  }
  writeQuery();
  // The same subscription, connected or connecting, is kept; one that waits to reconnect starts now.
  const following = live !== null && (live.status === "live" || live.status === "connecting");
  if (!following || liveKey(board, ui.period.value, n) !== liveFollows) {
    startLive(board, ui.period.value, n);
  }
}

/** What a subscription of the current form follows, to tell whether a change of it changes anything. */
function liveKey(board: Board, period: string, n: number): string {
  return JSON.stringify([boardPath(board), period, n, token()]);
}

/** The selection changed: follow the new one at once if something was followed. */
function selectionChanged(): void {
  writeQuery();
  followPlayerSelection();
  if (live !== null) {
    void watch();
  }
}

// ---- Live top ---------------------------------------------------------------------------------

interface ChangeDetail {
  kind: "snapshot" | "delta";
  boardVersion: number;
}

/** A live board's `closed` event: `following` when it goes on with the period's next instance. */
interface ClosedDetail {
  reason?: string;
  periodKey?: string | null;
  following?: boolean;
}

function stopLive(): void {
  live?.close();
  live = null;
}

function startLive(board: Board, period: string, n: number): void {
  stopLive();
  const params = new URLSearchParams({ view: `top:${n}` });
  if (period !== "") {
    params.set("period", period);
  }
  const url = new URL(`${boardPath(board)}/subscribe?${params.toString()}`, location.origin);
  const bearer = token();
  const next = new LiveBoard(url, bearer === "" ? {} : { token: bearer });
  live = next;
  liveFollows = liveKey(board, period, n);
  liveStartedAt = Date.now();
  boardChangedAt = null;
  shownEntries = [];
  changedAt.clear();
  const watching = `Top ${n} of ${boardLabel(board)}, ${periodLabel(period || "all_time")}.`;
  // Every listener checks that its board is still the one followed: a closed board may still
  // deliver an event that was already queued.
  next.addEventListener("change", (event) => {
    if (live === next) {
      if ((event as CustomEvent<ChangeDetail>).detail.kind === "delta") {
        boardChangedAt = Date.now();
      }
      applyChange(next, (event as CustomEvent<ChangeDetail>).detail);
    }
  });
  next.addEventListener("status", () => {
    if (live === next) {
      showStatus(next.status);
      if (next.status === "live") {
        say(ui.liveMessage, watching);
      }
    }
  });
  next.addEventListener("closed", (event) => {
    if (live === next) {
      say(ui.liveMessage, closedText((event as CustomEvent<ClosedDetail | null>).detail));
      showStatus(next.status);
    }
  });
  next.addEventListener("error", (event) => {
    if (live === next) {
      const message = (event as CustomEvent<{ message?: string } | null>).detail?.message;
      say(ui.liveMessage, liveErrorText(message), "error");
    }
  });
  ui.boardVersion.textContent = "";
  ui.topBody.replaceChildren();
  say(ui.liveMessage, watching);
  showStatus(next.status);
  showStaleness();
}

/** A live board's error, which for a refusal is "status: body": the problem's detail when the body is one. */
function liveErrorText(message: string | undefined): string {
  if (message === undefined || message === "") {
    return "The live stream failed.";
  }
  const refusal = /^(\d{3}): (\{[\s\S]*\})\s*$/.exec(message);
  if (refusal !== null) {
    try {
      const problem = parseExact<Problem>(refusal[2] ?? "");
      if (typeof problem.detail === "string") {
        return `The live stream was refused (${refusal[1] ?? ""}): ${problem.detail}`;
      }
    } catch {
      // Not a problem document: the message is shown as it is.
    }
    return message;
  }
  // Anything else is a broken connection, which the live board mends by itself.
  return `The connection broke (${message}); reconnecting…`;
}

function closedText(detail: ClosedDetail | null): string {
  if (detail?.following === true) {
    const which = detail.periodKey ? ` (${detail.periodKey})` : "";
    return `This period${which} has closed; its results stay readable. Following the next one…`;
  }
  const reason = detail?.reason;
  switch (reason) {
    case "period_closed":
      return "This period has closed; its results stay readable. Watch again to follow the next one.";
    case "season_archived":
      return "The season was archived; nothing on this board changes any more.";
    default:
      return `The stream ended${reason ? ` (${reason})` : ""}.`;
  }
}

function showStatus(status: LiveStatus): void {
  ui.liveStatus.textContent = status;
  ui.liveStatus.dataset["status"] = status;
}

/** Draws the board's view; after a delta, marks the rows whose player entered, moved or changed. */
function applyChange(board: LiveBoard, detail: ChangeDetail | null): void {
  const entries = board.entries.map((entry) => ({ ...entry }));
  if (detail?.kind === "delta") {
    const before = new Map(shownEntries.map((entry) => [entry.player_id, entry]));
    const now = Date.now();
    for (const entry of entries) {
      const old = before.get(entry.player_id);
      if (
        old === undefined ||
        old.rank !== entry.rank ||
        old.value !== entry.value ||
        old.achieved_at !== entry.achieved_at ||
        old.display_name !== entry.display_name ||
        old.country !== entry.country
      ) {
        changedAt.set(entry.player_id, now);
      }
    }
    window.setTimeout(expireChanged, CHANGED_MS + 50);
  }
  shownEntries = entries;
  renderTop();
  ui.boardVersion.textContent = board.boardVersion === null ? "" : String(board.boardVersion);
  showStaleness();
}

function renderTop(): void {
  const now = Date.now();
  const rows = shownEntries.map((entry) => {
    const row = entryRow(entry);
    const at = changedAt.get(entry.player_id);
    if (at !== undefined && now - at < CHANGED_MS) {
      row.classList.add("changed");
      // A redrawn row carries on with its fade rather than starting it again.
      row.style.animationDelay = `${at - now}ms`;
    }
    return row;
  });
  ui.topBody.replaceChildren(...rows);
}

function expireChanged(): void {
  const now = Date.now();
  for (const [player, at] of changedAt) {
    if (now - at >= CHANGED_MS) {
      changedAt.delete(player);
    }
  }
  for (const row of ui.topBody.rows) {
    if (!changedAt.has(row.dataset["player"] ?? "")) {
      row.classList.remove("changed");
      row.style.animationDelay = "";
    }
  }
}

/** "last change 3 s ago · last message 1 s ago" (or "no change since you started watching 1 min
 * ago"), marked when no message came for too long. */
function showStaleness(): void {
  if (live === null) {
    ui.staleness.textContent = "not watching";
    ui.staleness.classList.remove("quiet");
    ui.staleness.title = "";
    return;
  }
  const now = Date.now();
  const message = live.lastMessageAt;
  ui.staleness.textContent = [
    boardChangedAt === null
      ? `no change since you started watching ${ago(now - liveStartedAt)}`
      : `last change ${ago(now - boardChangedAt)}`,
    message === null ? "no message yet" : `last message ${ago(now - message)}`,
  ].join(" · ");
  const quiet = live.status !== "closed" && now - (message ?? liveStartedAt) > QUIET_AFTER_MS;
  ui.staleness.classList.toggle("quiet", quiet);
  ui.staleness.dataset["quiet"] = String(quiet);
  ui.staleness.title = quiet ? "No message for over 20 s: the stream may be stuck." : "";
}

// ---- Player search ----------------------------------------------------------------------------

function fact(list: HTMLDListElement, name: string, field: string, value: string): void {
  const wrap = document.createElement("div");
  const dt = document.createElement("dt");
  dt.textContent = name;
  const dd = document.createElement("dd");
  dd.dataset["field"] = field;
  dd.textContent = value;
  wrap.append(dt, dd);
  list.append(wrap);
}

function playerMessage(text: string, kind: "info" | "error"): HTMLParagraphElement {
  const p = document.createElement("p");
  p.className = "message";
  say(p, text, kind);
  return p;
}

function showPlayerMessage(text: string, kind: "info" | "error"): void {
  ui.playerResult.replaceChildren(playerMessage(text, kind));
}

/** The figures only a rank read gives, as last read; or why there are none. */
type Figures =
  | { kind: "read"; answer: RankAnswer; stale: boolean }
  | { kind: "unranked" }
  | { kind: "failed"; message: string };

/**
 * The player panel's subject: one player of one board and period, followed live through a
 * LiveBoard of its own on `view=around:PLAYER:R` (the window the panel shows), so the panel moves
 * with the live top instead of showing a one-off read. The figures only a rank read gives
 * (competition and dense rank, percentile, total players) are read again whenever the window
 * changes, with the board_version they were read at: one read in flight at most, and one more
 * after it if the window changed meanwhile, so a busy board costs a read per answer, not one per
 * delta.
 */
class PlayerFollow {
  readonly live: LiveBoard;
  figures: Figures | null = null;
  /** How the search found the player, when it did not take the text as the id. */
  readonly found: string | null;
  /** The last thing the subscription said that is not a change (closed, an error), if any. */
  note: { text: string; kind: "info" | "error" } | null = null;
  #reading = false;
  #readAgain = false;
  #retry: number | null = null;

  constructor(
    readonly key: string,
    readonly board: Board,
    readonly period: string,
    readonly player: string,
    found: string | null,
  ) {
    this.found = found;
    const params = new URLSearchParams({ view: `around:${player}:${NEARBY_RADIUS}` });
    if (period !== "") {
      params.set("period", period);
    }
    const url = new URL(`${boardPath(board)}/subscribe?${params.toString()}`, location.origin);
    const bearer = token();
    this.live = new LiveBoard(url, bearer === "" ? {} : { token: bearer });
    // Every listener checks that this is still the player followed: a closed board may still
    // deliver an event that was already queued.
    this.live.addEventListener("change", () => {
      if (playerFollow === this) {
        this.note = null;
        // A player with no score has no figures to read; their first score comes as a change.
        if (this.self !== undefined) {
          this.#readFigures();
        }
        renderPlayer(this);
      }
    });
    this.live.addEventListener("status", () => {
      if (playerFollow === this) {
        renderPlayer(this);
      }
    });
    this.live.addEventListener("closed", (event) => {
      if (playerFollow === this) {
        this.note = { text: closedText((event as CustomEvent<ClosedDetail | null>).detail), kind: "info" };
        renderPlayer(this);
      }
    });
    this.live.addEventListener("error", (event) => {
      if (playerFollow === this) {
        const message = (event as CustomEvent<{ message?: string } | null>).detail?.message;
        this.note = { text: liveErrorText(message), kind: "error" };
        renderPlayer(this);
      }
    });
  }

  /** The player's own entry in the window; undefined while they have no score. */
  get self(): LiveEntry | undefined {
    return this.live.entries.find((entry) => entry.player_id === this.player);
  }

  close(): void {
    this.live.close();
    this.#cancelRetry();
  }

  #cancelRetry(): void {
    if (this.#retry !== null) {
      window.clearTimeout(this.#retry);
      this.#retry = null;
    }
  }

  /** Reads the rank answer for the figures, unless one is in flight (then once more after it). */
  #readFigures(): void {
    if (this.#reading) {
      this.#readAgain = true;
      return;
    }
    this.#cancelRetry();
    this.#reading = true;
    this.#readAgain = false;
    const query = new URLSearchParams();
    if (this.period !== "") {
      query.set("period", this.period);
    }
    const path = `${boardPath(this.board)}/players/${encodeURIComponent(this.player)}/rank?${query.toString()}`;
    read<RankAnswer>(path)
      .then(
        ({ answer, stale }): Figures => ({ kind: "read", answer, stale }),
        (error: unknown): Figures =>
          error instanceof ApiError && error.code === "PLAYER_NOT_RANKED"
            ? { kind: "unranked" }
            : { kind: "failed", message: messageOf(error) },
      )
      .then((figures) => {
        this.#reading = false;
        if (playerFollow !== this) {
          return;
        }
        this.figures = figures;
        renderPlayer(this);
        if (this.#readAgain) {
          this.#readFigures();
        } else if (this.#trails(figures)) {
          // An edge answers from a snapshot that may trail the window; no change of the window
          // may come to ask again, so ask again until the answer has caught up.
          this.#retry = window.setTimeout(() => {
            this.#retry = null;
            if (playerFollow === this) {
              this.#readFigures();
            }
          }, FIGURES_RETRY_MS);
        }
      });
  }

  /**
   * Whether `figures` trail what the window shows: an older version (a read of the origin is
   * never older, the window's version being that of its last change, but one of an edge may be),
   * another period instance (read as a period turned), or no score where the window has one.
   */
  #trails(figures: Figures): boolean {
    const version = this.live.boardVersion;
    if (version === null || this.self === undefined) {
      return false;
    }
    if (figures.kind === "unranked") {
      return true;
    }
    return (
      figures.kind === "read" &&
      (figures.answer.board_version < version || figures.answer.period_key !== this.live.periodKey)
    );
  }
}

/** What a player follow of the current form follows, to tell whether a change of it changes anything. */
function playerKey(board: Board, period: string, player: string): string {
  return JSON.stringify([boardPath(board), period, player, token()]);
}

function stopPlayer(): void {
  playerFollow?.close();
  playerFollow = null;
}

/**
 * Follows `player` on `board` in `period`, in place of whatever the panel followed; `found` says
 * how the search found them, when not by their id.
 */
function followPlayer(board: Board, period: string, player: string, found: string | null = null): void {
  stopPlayer();
  searchGeneration++;
  const follow = new PlayerFollow(playerKey(board, period, player), board, period, player, found);
  playerFollow = follow;
  renderPlayer(follow);
}

/**
 * After the board or the period changed: the player followed is followed on the new choice, and
 * the old subscription closed; with no board chosen, the panel stops.
 */
function followPlayerSelection(): void {
  const follow = playerFollow;
  if (follow === null) {
    return;
  }
  const board = selectedBoard();
  if (board === null) {
    stopPlayer();
    ui.nearbyBody.replaceChildren();
    showPlayerMessage("Load a game and choose a board to follow a player.", "info");
    return;
  }
  if (playerKey(board, ui.period.value, follow.player) !== follow.key) {
    followPlayer(board, ui.period.value, follow.player, follow.found);
  }
}

/** Draws the player panel: the live window, the player's entry in it, and the figures last read. */
function renderPlayer(follow: PlayerFollow): void {
  const { live, player } = follow;
  const self = follow.self;
  ui.nearbyBody.replaceChildren(
    ...live.entries.map((entry) => {
      const row = entryRow(entry);
      if (entry.player_id === player) {
        row.classList.add("self");
        row.setAttribute("aria-current", "true");
      }
      return row;
    }),
  );
  const period = live.period;
  const periodText =
    period?.period === undefined
      ? periodLabel(follow.period || "all_time")
      : `${periodLabel(period.period)}${period.period_key === period.period ? "" : ` ${period.period_key ?? ""}`}`;
  const parts: HTMLElement[] = [];
  if (follow.found !== null) {
    parts.push(playerMessage(follow.found, "info"));
  }
  if (live.boardVersion === null) {
    if (follow.note === null) {
      parts.push(playerMessage(`Following ${player}…`, "info"));
    }
  } else if (self === undefined) {
    parts.push(playerMessage(`${player}: no score on this board (${periodText}) yet; it shows here when one arrives.`, "info"));
  } else {
    const figures = follow.figures;
    const title = document.createElement("p");
    title.className = "result-title";
    const name = document.createElement("strong");
    name.dataset["field"] = "player";
    name.append(...playerLabel(self));
    title.append(name);
    if (shownName(self) !== null) {
      const id = document.createElement("span");
      id.className = "player-id";
      id.dataset["field"] = "player_id";
      id.textContent = player;
      title.append(" ", id);
    }
    title.append(` · ${periodText}`);
    if (figures?.kind === "read" && figures.stale) {
      const badge = document.createElement("span");
      badge.className = "badge";
      badge.dataset["field"] = "stale";
      badge.textContent = "stale";
      badge.title = "The figures were answered by the edge from an older snapshot.";
      title.append(" ", badge);
    }
    const facts = document.createElement("dl");
    facts.className = "facts";
    fact(facts, "Rank", "rank", String(self.rank));
    fact(facts, "Value", "value", self.value.toString());
    fact(facts, "Achieved at", "achieved_at", self.achieved_at);
    if (self.metadata !== undefined) {
      fact(facts, "Metadata", "metadata", stringifyExact(self.metadata));
    }
    fact(facts, "Board version", "board_version", String(live.boardVersion));
    fact(facts, "Live", "live_status", live.status);
    // The figures come from a read, which may be of another version than the window's: each
    // says its own.
    const read = figures?.kind === "read" ? figures.answer : null;
    const pending = figures === null ? "…" : "";
    fact(facts, "Competition rank", "competition_rank", read === null ? pending : String(read.competition_rank));
    fact(facts, "Dense rank", "dense_rank", read === null ? pending : String(read.dense_rank));
    const percentile = read?.percentile.toLocaleString(undefined, { maximumFractionDigits: 2 });
    fact(facts, "Percentile", "percentile", read === null ? pending : `${percentile ?? ""} %`);
    fact(facts, "Total players", "total_players", read === null ? pending : String(read.total_players));
    fact(facts, "Figures read at version", "figures_board_version", read === null ? pending : String(read.board_version));
    parts.push(title, facts);
    if (figures?.kind === "failed") {
      parts.push(playerMessage(`The figures cannot be read: ${figures.message}`, "error"));
    }
  }
  if (follow.note !== null) {
    parts.push(playerMessage(follow.note.text, follow.note.kind));
  }
  ui.playerResult.replaceChildren(...parts);
}

/** The entries the page has read from the board: the live top and the followed player's window. */
function entriesOnPage(): ShownEntry[] {
  return [...shownEntries, ...(playerFollow?.live.entries ?? [])];
}

/** The players of `entries` who show exactly `name`, each once, in the order met. */
function playersNamed(entries: readonly ShownEntry[], name: string): ShownEntry[] {
  const found = new Map<string, ShownEntry>();
  for (const entry of entries) {
    if (shownName(entry) === name && !found.has(entry.player_id)) {
      found.set(entry.player_id, entry);
    }
  }
  return [...found.values()];
}

/** Whether `player` is an id the board ranks in `period` (a read of its rank). */
async function isRanked(board: Board, period: string, player: string): Promise<boolean> {
  const query = new URLSearchParams();
  if (period !== "") {
    query.set("period", period);
  }
  try {
    await read<RankAnswer>(`${boardPath(board)}/players/${encodeURIComponent(player)}/rank?${query.toString()}`);
    return true;
  } catch (error) {
    // No score, or not even an id the service takes (a name longer than any id, say).
    if (error instanceof ApiError && (error.code === "PLAYER_NOT_RANKED" || error.code === "INVALID_REQUEST")) {
      return false;
    }
    throw error;
  }
}

/** Follows the one player named `name`, or lists them when several share it (names are not unique). */
function followNamed(board: Board, period: string, name: string, named: readonly ShownEntry[]): void {
  const [only] = named;
  if (named.length === 1 && only !== undefined) {
    followPlayer(board, period, only.player_id, `Found by display name: "${name}" is ${only.player_id}.`);
    return;
  }
  stopPlayer();
  ui.nearbyBody.replaceChildren();
  const list = document.createElement("ul");
  list.className = "choices";
  list.id = "search-choices";
  for (const entry of named) {
    const choose = document.createElement("button");
    choose.type = "button";
    choose.dataset["player"] = entry.player_id;
    const id = document.createElement("span");
    id.className = "player-id";
    id.textContent = entry.player_id;
    choose.append(...playerLabel(entry), " ", id);
    choose.addEventListener("click", () => {
      followPlayer(board, period, entry.player_id, `Found by display name: "${name}" is ${entry.player_id}.`);
    });
    const item = document.createElement("li");
    item.append(choose);
    list.append(item);
  }
  ui.playerResult.replaceChildren(playerMessage(`${named.length} players are named "${name}"; choose one:`, "info"), list);
}

/**
 * Follows the player entered, on the chosen board and period, closing what the panel followed:
 * an id or an exact display name on the page first (no request), then an id the board ranks
 * (a rank read), then a name among the board's first NAME_SEARCH_RANKS ranks (one top read);
 * anything else is followed as an id, which shows once it scores.
 */
async function search(): Promise<void> {
  const text = ui.player.value.trim();
  const board = selectedBoard();
  if (text === "" || board === null) {
    stopPlayer();
    ui.nearbyBody.replaceChildren();
    showPlayerMessage(text === "" ? "Enter a player id or a display name." : "Load a game and choose a board first.", "error");
    return;
  }
  storeToken();
  const period = ui.period.value;
  // Names are kept in NFC, so a name typed in another normal form still finds them.
  const name = text.normalize("NFC");
  const onPage = entriesOnPage();
  if (onPage.some((entry) => entry.player_id === text)) {
    followPlayer(board, period, text);
    return;
  }
  const named = playersNamed(onPage, name);
  if (named.length > 0) {
    followNamed(board, period, name, named);
    return;
  }
  // The panel stops following whom it followed, so that their changes do not draw over the search.
  stopPlayer();
  ui.nearbyBody.replaceChildren();
  const generation = ++searchGeneration;
  showPlayerMessage(`Looking for ${text}…`, "info");
  try {
    const ranked = await isRanked(board, period, text);
    if (generation !== searchGeneration) {
      return;
    }
    if (ranked) {
      followPlayer(board, period, text);
      return;
    }
    const query = new URLSearchParams({ limit: String(NAME_SEARCH_RANKS) });
    if (period !== "") {
      query.set("period", period);
    }
    const { answer } = await read<TopAnswer>(`${boardPath(board)}/top?${query.toString()}`);
    if (generation !== searchGeneration) {
      return;
    }
    const found = playersNamed(answer.entries, name);
    if (found.length > 0) {
      followNamed(board, period, name, found);
      return;
    }
    followPlayer(
      board,
      period,
      text,
      `No player on the page or in the first ${NAME_SEARCH_RANKS.toLocaleString("en")} ranks shows the name "${name}", and no ranked player has that id; following it as a player id.`,
    );
  } catch (error) {
    if (generation === searchGeneration) {
      stopPlayer();
      ui.nearbyBody.replaceChildren();
      showPlayerMessage(`Cannot search for ${text}: ${messageOf(error)}`, "error");
    }
  }
}

// ---- Friends ----------------------------------------------------------------------------------

/**
 * The pasted friends: a JSON array of {player_id, value, achieved_at} (values read exactly), or
 * lines of `player_id value [achieved_at]`, a line without a time taking `editedAt` and a line with
 * only a player id having no score. The package checks each field; this checks the shape.
 */
function parseFriends(text: string, editedAt: Date): Friend[] {
  if (text.trim().startsWith("[")) {
    let parsed: unknown;
    try {
      parsed = parseExact<unknown>(text);
    } catch (error) {
      throw new Error(`the JSON does not parse: ${messageOf(error)}`);
    }
    if (!Array.isArray(parsed)) {
      throw new Error("the JSON must be an array of {player_id, value, achieved_at}");
    }
    return parsed as Friend[];
  }
  const friends: Friend[] = [];
  text.split(/\r?\n/).forEach((line, index) => {
    const words = line.trim().split(/\s+/).filter((word) => word !== "");
    const [playerId, value, achievedAt] = words;
    if (playerId === undefined) {
      return;
    }
    if (words.length > 3) {
      throw new Error(
        `line ${index + 1}: expected "player_id value [achieved_at]", found ${words.length} words`,
      );
    }
    if (value === undefined) {
      friends.push({ player_id: playerId });
    } else {
      friends.push({ player_id: playerId, value, achieved_at: achievedAt ?? editedAt });
    }
  });
  return friends;
}

/** The chosen board's rules, or the score mode chosen when no board is. */
function friendsRules(): Rules {
  const board = selectedBoard();
  if (board !== null) {
    return board;
  }
  return SCORE_MODES.find((mode) => mode === ui.friendsMode.value) ?? "highest";
}

/** The mode select decides only without a board, so it shows the board's mode, fixed, when there is one. */
function syncFriendsMode(): void {
  const board = selectedBoard();
  if (board !== null) {
    ui.friendsMode.value = board.score_mode;
  }
  ui.friendsMode.disabled = board !== null;
}

function showFriends(): void {
  ui.friendsError.textContent = "";
  ui.friendsBody.replaceChildren();
  ui.friendsUnranked.textContent = "";
  try {
    const friends = parseFriends(ui.friendsInput.value, friendsEditedAt ?? new Date());
    if (friends.length === 0) {
      ui.friendsError.textContent = "Paste at least one line: player_id value [achieved_at].";
      return;
    }
    const { entries, unranked } = rankFriends(friendsRules(), friends);
    ui.friendsBody.replaceChildren(...entries.map(entryRow));
    if (unranked.length > 0) {
      ui.friendsUnranked.textContent = `No score: ${unranked.join(", ")}`;
    }
  } catch (error) {
    ui.friendsError.textContent = messageOf(error);
  }
}

// ---- The query string -------------------------------------------------------------------------

/** Fills the form from the query string; true when it names a whole board, to watch at once. */
function readQuery(): boolean {
  const query = new URLSearchParams(location.search);
  const game = query.get("game");
  if (game !== null) {
    ui.game.value = game;
  }
  const n = query.get("n");
  if (n !== null) {
    ui.topN.value = n;
  }
  wantedPeriod = query.get("period");
  const mode = query.get("mode");
  const season = query.get("season");
  const scope = query.get("scope");
  if (mode && season && scope) {
    wantedBoard = { mode, season, scope };
  }
  return Boolean(game) && wantedBoard !== null;
}

/** Puts the selection in the query string, so the address can be shared; never the token. */
function writeQuery(): void {
  const query = new URLSearchParams();
  const game = ui.game.value.trim();
  if (game !== "") {
    query.set("game", game);
  }
  const board = selectedBoard() ?? wantedBoard;
  if (board !== null) {
    query.set("mode", board.mode);
    query.set("season", board.season);
    query.set("scope", board.scope);
  }
  const period = selectedBoard() === null ? wantedPeriod : ui.period.value;
  if (period) {
    query.set("period", period);
  }
  const n = topN();
  if (n !== null) {
    query.set("n", String(n));
  }
  const search = query.toString();
  const address = search === "" ? location.pathname : `${location.pathname}?${search}`;
  history.replaceState(history.state, "", address);
}

// ---- Wiring -----------------------------------------------------------------------------------

/** A token handed over in the address's fragment (`#token=...`, as `standings serve` prints a
 * link): kept like a typed one, and the fragment dropped so it stays out of history. */
function takeTokenFromFragment(): void {
  const handed = new URLSearchParams(location.hash.slice(1)).get("token");
  if (handed === null || handed.trim() === "") {
    return;
  }
  ui.token.value = handed.trim();
  storeToken();
  history.replaceState(history.state, "", `${location.pathname}${location.search}`);
}

ui.token.value = storedToken();
takeTokenFromFragment();
ui.token.addEventListener("change", storeToken);

ui.game.addEventListener("change", () => {
  // The listed boards belong to the game they were loaded for; another game lists none until loaded.
  if (boardsLoadedFor !== null && boardsLoadedFor.game !== ui.game.value.trim()) {
    boards = [];
    boardsLoadedFor = null;
    fillBoards(null);
    followPlayerSelection();
  }
  wantedBoard = null;
  wantedPeriod = null;
  writeQuery();
});
ui.game.addEventListener("keydown", (event) => {
  if (event.key === "Enter") {
    event.preventDefault();
    void loadBoards().then(writeQuery);
  }
});
ui.load.addEventListener("click", () => {
  void loadBoards().then(writeQuery);
});
ui.board.addEventListener("change", () => {
  fillPeriods(selectedBoard(), ui.period.value);
  syncFriendsMode();
  selectionChanged();
});
ui.period.addEventListener("change", selectionChanged);
ui.topN.addEventListener("change", () => {
  if (topN() === null) {
    say(ui.pickerMessage, `Top N must be a whole number from 1 to ${MAX_TOP}.`, "error");
    return;
  }
  selectionChanged();
});
ui.pickerForm.addEventListener("submit", (event) => {
  event.preventDefault();
  void watch();
});
ui.searchForm.addEventListener("submit", (event) => {
  event.preventDefault();
  void search();
});
ui.friendsInput.addEventListener("input", () => {
  friendsEditedAt = new Date();
});
ui.friendsForm.addEventListener("submit", (event) => {
  event.preventDefault();
  showFriends();
});

window.setInterval(showStaleness, 1000);
fillBoards(null);
if (readQuery()) {
  void watch();
} else if (ui.game.value.trim() !== "") {
  void loadBoards();
}
