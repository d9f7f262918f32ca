// A live view of a board over the subscribe endpoint. The rule that keeps it exact: a delta is
// applied only when it names the period instance held (its period_key) and its base_version is
// the version held; anything else means a message was missed or belongs to another instance, and
// the view is fetched again (from the held instance and version when the server still has them).
import { parseExact, stringifyExact } from "./exact.js";
import { LiveView } from "./standings_wasm.js";
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
export class LiveBoard extends EventTarget {
    #url;
    #options;
    /** Whether a `period_closed` starts a fresh subscription (see `followNextPeriod`). */
    #followNextPeriod;
    #entries = [];
    /** The view in WebAssembly, which applies each delta with the core's checks. */
    #view = null;
    #version = null;
    #status = "connecting";
    #period = null;
    #lastMessageAt = null;
    #lastChangeAt = null;
    #resyncs = 0;
    #reconnects = 0;
    #gaps = 0;
    #failures = 0;
    /** The instance the last `closed` closed, to tell a server that still resolves it. */
    #lastClosedKey = null;
    #stop = null;
    #timer = null;
    /**
     * Subscribes to `subscribeUrl` (`.../v1/leaderboards/{game}/{mode}/{season}/{scope}/subscribe?view=...`,
     * with `period` and `at` as wanted); connecting starts at once.
     */
    constructor(subscribeUrl, options = {}) {
        super();
        this.#url = new URL(subscribeUrl);
        if (!this.#url.searchParams.get("view"))
            throw new TypeError("the subscribe URL needs a view (top:N, around:P:R or player:P)");
        this.#options = options;
        this.#followNextPeriod = !this.#url.searchParams.has("at") && (options.followNextPeriod ?? true);
        this.#connect();
    }
    /** The view at `boardVersion`, in rank order. */
    get entries() {
        return this.#entries;
    }
    /** The version the view is at; null before the first snapshot. */
    get boardVersion() {
        return this.#version;
    }
    /** Where the board is in its life. */
    get status() {
        return this.#status;
    }
    /** The period fields of the last snapshot (`period`, `period_key`, `period_start`, `period_end`). */
    get period() {
        return this.#period;
    }
    /** The period instance the view is of (`all_time`, `2026-10-13`, ...); null before the first snapshot. */
    get periodKey() {
        return this.#period?.period_key ?? null;
    }
    /** `Date.now()` of the last message, heartbeats included. */
    get lastMessageAt() {
        return this.#lastMessageAt;
    }
    /** `Date.now()` of the last snapshot or delta applied. */
    get lastChangeAt() {
        return this.#lastChangeAt;
    }
    /** How many times the view started over (a `resync` message). */
    get resyncs() {
        return this.#resyncs;
    }
    /** How many times it reconnected after a drop, `going_away` or an unchained delta. */
    get reconnects() {
        return this.#reconnects;
    }
    /** How many deltas were refused because their `base_version` or `period_key` was not the one held. */
    get gaps() {
        return this.#gaps;
    }
    /** Stops following the board. */
    close() {
        this.#teardown();
        this.#setStatus("closed");
    }
    /** Drops the connection as the network would, and reconnects after `pauseMs`. */
    drop(pauseMs = 0) {
        this.#teardown();
        this.#reconnectSoon(pauseMs);
    }
    #teardown() {
        if (this.#timer !== null)
            clearTimeout(this.#timer);
        this.#timer = null;
        const stop = this.#stop;
        this.#stop = null;
        stop?.();
    }
    #setStatus(status) {
        if (this.#status === status)
            return;
        this.#status = status;
        this.dispatchEvent(new CustomEvent("status", { detail: status }));
    }
    #connect() {
        const url = new URL(this.#url);
        // The version names its instance: a bare version would be taken as one of whatever instance
        // the URL resolves to now, which after a period turned is another.
        const key = this.periodKey;
        if (this.#version !== null && key !== null)
            url.searchParams.set("since_version", `${key}:${this.#version}`);
        const handle = (text) => this.#onMessage(text);
        const ended = (error) => {
            if (error)
                this.dispatchEvent(new CustomEvent("error", { detail: { message: error } }));
            if (this.#status !== "closed")
                this.#reconnectSoon();
        };
        this.#stop =
            this.#options.transport === "websocket" ? this.#openSocket(url, handle, ended) : this.#openSse(url, handle, ended);
    }
    #reconnectSoon(delay) {
        if (this.#status === "closed")
            return;
        this.#stop = null;
        this.#setStatus("reconnecting");
        const base = this.#options.reconnectDelayMs ?? 1000;
        const wait = delay ?? Math.min(30_000, base * 2 ** Math.min(this.#failures, 5));
        this.#failures++;
        this.#reconnects++;
        this.#timer = setTimeout(() => {
            this.#timer = null;
            this.#connect();
        }, wait);
    }
    #openSse(url, onMessage, ended) {
        const controller = new AbortController();
        const headers = { accept: "text/event-stream" };
        if (this.#options.token)
            headers.authorization = `Bearer ${this.#options.token}`;
        const fetchFn = this.#options.fetch ?? fetch;
        (async () => {
            const answer = await fetchFn(url.href, { headers, signal: controller.signal });
            if (!answer.ok || !answer.body) {
                const problem = await answer.text();
                // A refusal (auth, an unknown board, a bad view) will not change by retrying.
                if (answer.status < 500 && answer.status !== 429) {
                    this.dispatchEvent(new CustomEvent("error", { detail: { message: `${answer.status}: ${problem}` } }));
                    this.close();
                    return;
                }
                ended(`${answer.status}: ${problem}`);
                return;
            }
            const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
            let buffer = "";
            for (;;) {
                const { value, done } = await reader.read();
                if (done)
                    break;
                buffer += value;
                // Events end with a blank line; the data of ours is one line of JSON.
                let end;
                while ((end = buffer.indexOf("\n\n")) >= 0) {
                    const event = buffer.slice(0, end);
                    buffer = buffer.slice(end + 2);
                    const data = event
                        .split("\n")
                        .filter((line) => line.startsWith("data:"))
                        .map((line) => line.slice(5).trimStart())
                        .join("\n");
                    if (data)
                        onMessage(data);
                    if (controller.signal.aborted)
                        return;
                }
            }
            if (!controller.signal.aborted)
                ended();
        })().catch((e) => {
            if (!controller.signal.aborted)
                ended(e instanceof Error ? e.message : String(e));
        });
        return () => controller.abort();
    }
    #openSocket(url, onMessage, ended) {
        url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
        if (this.#options.token)
            url.searchParams.set("access_token", this.#options.token);
        const socket = new WebSocket(url.href);
        let stopped = false;
        socket.onmessage = (event) => onMessage(String(event.data));
        socket.onclose = (event) => {
            if (!stopped)
                ended(event.code === 1000 || event.code === 1001 ? undefined : `the socket closed (${event.code})`);
        };
        return () => {
            stopped = true;
            socket.close();
        };
    }
    #onMessage(text) {
        this.#lastMessageAt = Date.now();
        const message = parseExact(text);
        switch (message.type) {
            case "snapshot": {
                const { type: _, entries, ...period } = message;
                const [ranks, players, values, times, names, countries, metadata, globalRanks] = columnsOf(entries ?? []);
                const view = new LiveView(period.period_key ?? "", message.board_version ?? 0, ranks, players, values, times, names, countries, metadata, globalRanks);
                this.#view?.free();
                this.#view = view;
                this.#entries = entriesOf(view);
                this.#version = view.boardVersion;
                this.#period = period;
                this.#changed("snapshot");
                break;
            }
            case "delta": {
                const [ranks, players, values, times, names, countries, metadata, globalRanks] = columnsOf(message.changed ?? []);
                const left = message.left ?? [];
                try {
                    if (!this.#view)
                        throw new Error("no view held");
                    this.#view.apply(message.period_key ?? "", message.base_version ?? -1, message.board_version ?? -1, ranks, players, values, times, names, countries, metadata, globalRanks, left.join("\n"), left.length);
                }
                catch {
                    // The core refused it, changing nothing: a message was missed, or this one is of
                    // another instance than the view's (or does not fit it). Ask again from the instance
                    // and version held, which the server answers with one exact delta, or a fresh
                    // snapshot when it no longer holds that version (or the instance moved on).
                    this.#gaps++;
                    this.#teardown();
                    this.#reconnectSoon(0);
                    return;
                }
                this.#entries = entriesOf(this.#view);
                this.#version = this.#view.boardVersion;
                this.#changed("delta");
                break;
            }
            case "resync":
                this.#resyncs++;
                this.#version = null;
                this.#teardown();
                this.#reconnectSoon(0);
                break;
            case "going_away":
                this.#teardown();
                this.#reconnectSoon();
                break;
            case "closed": {
                this.#teardown();
                const periodKey = message.period_key ?? this.periodKey;
                const following = message.reason === "period_closed" && this.#followNextPeriod;
                if (!following)
                    this.#setStatus("closed");
                this.dispatchEvent(new CustomEvent("closed", { detail: { reason: message.reason, periodKey, following } }));
                // A listener may have closed the board.
                if (following && this.#status !== "closed")
                    this.#followNext(periodKey);
                break;
            }
            default:
                // Heartbeats, and message types a newer server may add.
                break;
        }
    }
    /**
     * Starts over with a fresh subscription of the same URL, which resolves "the current" instance
     * anew. At once, unless `closedKey` closed just before too: a server that has not moved on
     * yet answers with that instance again, so it is asked no faster than after a failure.
     */
    #followNext(closedKey) {
        const again = closedKey !== null && closedKey === this.#lastClosedKey;
        this.#lastClosedKey = closedKey;
        this.#version = null;
        this.#setStatus("connecting");
        let wait = 0;
        if (again) {
            wait = Math.min(30_000, (this.#options.reconnectDelayMs ?? 1000) * 2 ** Math.min(this.#failures, 5));
            this.#failures++;
        }
        this.#timer = setTimeout(() => {
            this.#timer = null;
            this.#connect();
        }, wait);
    }
    #changed(kind) {
        this.#failures = 0;
        this.#lastChangeAt = Date.now();
        this.#setStatus("live");
        this.dispatchEvent(new CustomEvent("change", { detail: { kind, boardVersion: this.#version, periodKey: this.periodKey } }));
    }
}
/**
 * Entries as the columns the WebAssembly view takes: ranks, ids and times joined by "\n", values,
 * then display names, countries and metadata JSON texts joined by "\n", an empty line where an
 * entry has none. No name or country holds a line break (the service refuses control
 * characters), and `stringifyExact` writes no whitespace.
 */
function columnsOf(entries) {
    const within = entries.some((e) => e.global_rank !== undefined);
    return [
        Float64Array.from(entries, (e) => e.rank),
        entries.map((e) => e.player_id).join("\n"),
        BigInt64Array.from(entries, (e) => BigInt(e.value)),
        entries.map((e) => e.achieved_at).join("\n"),
        entries.map((e) => e.display_name ?? "").join("\n"),
        entries.map((e) => e.country ?? "").join("\n"),
        entries.map((e) => (e.metadata === undefined ? "" : stringifyExact(e.metadata))).join("\n"),
        within ? Float64Array.from(entries, (e) => e.global_rank ?? 0) : new Float64Array(0),
    ];
}
/**
 * The entries the WebAssembly view holds, in rank order, times as the service prints them, and
 * each extra only when set, in the order the service prints an entry's fields (so an entry
 * equals the same entry of a fresh read parsed with `parseExact`).
 */
function entriesOf(view) {
    const ranks = view.ranks();
    if (ranks.length === 0)
        return [];
    const players = view.players().split("\n");
    const values = view.values();
    const times = view.achievedAt().split("\n");
    const names = view.displayNames().split("\n");
    const countries = view.countries().split("\n");
    const metadata = view.metadata().split("\n");
    const global = view.globalRanks();
    return Array.from(ranks, (rank, i) => {
        // A segment's entries print `global_rank` right after `rank`, as its reads do.
        const entry = global.length > 0
            ? { rank, global_rank: global[i], player_id: players[i], value: values[i], achieved_at: times[i] }
            : { rank, player_id: players[i], value: values[i], achieved_at: times[i] };
        if (names[i])
            entry.display_name = names[i];
        if (countries[i])
            entry.country = countries[i];
        if (metadata[i])
            entry.metadata = parseExact(metadata[i]);
        return entry;
    });
}
