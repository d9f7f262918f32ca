//! The edge's logic: a request in, an answer (or a request to forward) out, over the
//! [`Origin`], [`Cache`] and [`Clock`] it is given.
//!
//! A read runs in steps, each of which may answer early: the caller's auth (a JWT verified
//! here, any other token introspected at the origin and remembered), the board instance's head
//! (its `at` placed in an instance learned from earlier heads and asked for in that instance's
//! one canonical form; held for its `max-age`; kept without expiry in the Cache API for when
//! the origin is down),
//! the manifest and the parts the core's [`SnapshotReader`] asks for (decoded in the isolate,
//! raw in the Cache API, else from the origin, all by hash), and the core's JSON writer. Every
//! parameter is checked where and as the origin checks it, so the two tiers answer the same
//! bytes; errors about the board or the period are the origin's own, passed through from the
//! head.
//!
//! The state is per isolate, behind a `RefCell` that is never borrowed across an `.await`:
//! requests of one isolate interleave at every fetch.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures_util::future::{LocalBoxFuture, join_all};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use standings_core::json::{
    RFC3339_RANGE_MS, parse_rfc3339, write_friends_answer, write_nearby_answer, write_rank_answer,
    write_rfc3339, write_top_answer,
};
use standings_core::snapshot::read::{Part, SnapshotReader, Step};
use standings_core::{
    BoardDigest, BoardId, ChunkHash, Cursor, CursorBinding, DecodeError, LookupChunk, Manifest, RankChunk,
    check_id,
};

use crate::auth::{self, Caller, Introspection, Presented, Refusal};
use crate::config::Config;
use crate::head::{Head, max_age_seconds};
use crate::instances::{KnownInstances, Range};
use crate::parts::{Decoded, DecodedCache, QueryParts};
use crate::platform::{Cache, Clock, HttpRequest, HttpResponse, Origin, OriginRequest, Unavailable};
use crate::problem::Problem;
use crate::route::{BoardPath, Route};
use crate::stats::Stats;

/// The most chunks one bundle (`GET /v1/snapshots/chunks?hashes=`) may name at the origin.
const MAX_BUNDLE_CHUNKS: usize = 200;
/// The most chunks a step fetches one by one: a Worker keeps 6 connections open per request,
/// so more would wait for each other, and one bundle is faster.
const MAX_ONE_BY_ONE: usize = 6;
/// The most entries one page or one rank-players call may hold (the origin's `MAX_LIMIT`).
const MAX_LIMIT: usize = 1_000;
/// The widest nearby radius (the origin's `MAX_RADIUS`).
const MAX_RADIUS: u64 = 100;
/// The largest body the origin reads (its `MAX_BODY_BYTES`); a larger one is its to refuse.
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
/// How long the Cache API keeps what never changes under its key (parts, the last head).
const FOREVER_SECONDS: u64 = 31_536_000;
/// How long the Cache API keeps a top page; a page is immutable for its version, and a new
/// version misses by itself, so this only bounds how long a dead version's pages stay.
const TOP_PAGE_SECONDS: u64 = 86_400;
/// How long other reads wait on one read's head refresh before asking the origin themselves.
const REFRESH_TIMEOUT_MS: i64 = 5_000;
/// The head lifetime assumed until the origin names one.
const DEFAULT_HEAD_LIFETIME_MS: i64 = 1_000;
/// The most heads, refusals, tokens, friend lists or board lists one isolate holds of each:
/// past it, the expired ones are dropped, then all, so that requests naming ever new boards or
/// tokens cannot grow an isolate without bound.
const MAX_HELD: usize = 10_000;
/// The most period instance ranges one isolate keeps (`instances.rs`), least recently used
/// first out: the days, weeks and months its readers name, each with its held head.
const MAX_INSTANCES: usize = 512;
/// How long a head refused `SNAPSHOT_INSTANCES_FULL` is not asked for again when the origin
/// names no `Retry-After`: meanwhile its reads go to the origin's read API straight away.
const DEFAULT_RETRY_AFTER_SECONDS: u64 = 10;
/// The longest such wait the edge takes from a `Retry-After`.
const MAX_RETRY_AFTER_SECONDS: u64 = 60;

/// What the edge does with a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Answer this.
    Answer(HttpResponse),
    /// Send this to the origin and answer with what it says (streamed as it comes); when it
    /// is unreachable, answer [`Edge::unreachable`].
    Forward(OriginRequest),
    /// A read the edge serves but hands to the origin this time (`fallback` says why): send
    /// it, read the answer whole and answer [`Edge::forwarded_read`] of it, which adds the read
    /// headers; when the origin is unreachable, answer [`Edge::unreachable`].
    ForwardRead {
        /// The request to send.
        request: OriginRequest,
        /// Why: `stale-cursor`, `too-many-parts`, `auth`, `body` or `instances-full`.
        fallback: &'static str,
    },
}

/// Why a read stopped before its answer.
#[derive(Debug)]
enum Stop {
    /// The edge's own error answer.
    Problem(Problem),
    /// The origin's answer, passed through (board and period errors from the head).
    Origin(HttpResponse),
    /// Hand the request to the origin.
    Forward(Fallback),
}

impl From<Problem> for Stop {
    fn from(p: Problem) -> Stop {
        Stop::Problem(p)
    }
}

impl From<Refusal> for Stop {
    fn from(r: Refusal) -> Stop {
        match r {
            Refusal::Problem(p) => Stop::Problem(p),
            Refusal::AskOrigin => Stop::Forward(Fallback::Auth),
        }
    }
}

/// Why a read the edge serves went to the origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fallback {
    StaleCursor,
    TooManyParts,
    Auth,
    Body,
    /// The origin follows as many instances as its caps allow and refused this one's head.
    InstancesFull,
}

/// What one read has spent and met.
#[derive(Debug, Default)]
struct Spend {
    /// Subrequests made or about to be made (origin fetches and Cache API lookups of parts).
    subrequests: usize,
    /// Whether a part came from the origin (the answer is a cache MISS).
    fetched_part: bool,
    /// Chunks fetched for this read (from the Cache API or the origin), each decoded.
    parts: usize,
}

/// A head as one read uses it.
#[derive(Clone, Debug)]
struct HeadRead {
    head: Rc<Head>,
    /// The origin could not be asked for a newer one.
    stale: bool,
}

#[derive(Debug)]
struct HeldHead {
    head: Rc<Head>,
    /// Until when it is used without asking the origin again.
    until_ms: i64,
    /// Held past its lifetime because the origin was unreachable.
    stale: bool,
    /// When a read of this isolate started asking the origin for a newer head, if one is
    /// asking: meanwhile the other reads answer from this one rather than ask too.
    refreshing_since: Option<i64>,
}

#[derive(Debug)]
struct Held<T> {
    value: T,
    until_ms: i64,
    stale: bool,
}

/// How a read names its instance's head, from its `period` and `at`.
#[derive(Debug)]
enum Asked {
    /// No `at`: the current instance, asked for and held under the path without `at`.
    Current,
    /// An `at` in a range learned here: that instance, asked for and held in its canonical
    /// form ([`instance_head_path`]).
    Placed {
        /// The `at` as the reader sent it.
        raw: String,
        at_ms: i64,
        range: Range,
    },
    /// An `at` the edge cannot place: not RFC 3339 as the core reads it, outside the times the
    /// origin reads, or in no range learned here. Sent as it came, for the origin to resolve or
    /// refuse in its words; its answer names the range, and is held in the canonical form.
    Unplaced {
        /// The `at` as the reader sent it.
        raw: String,
    },
}

/// The isolate's state.
struct State {
    /// Held heads by the path they were asked for at: one per instance ([`Asked`]).
    heads: HashMap<String, HeldHead>,
    /// The period instances learned from heads, where reads' `at`s are placed.
    instances: KnownInstances,
    /// Head paths refused `SNAPSHOT_INSTANCES_FULL`, and until when not to ask again.
    refusals: HashMap<String, i64>,
    decoded: DecodedCache,
    tokens: HashMap<[u8; 32], (Introspection, i64)>,
    friends: HashMap<String, Held<Rc<Vec<String>>>>,
    boards: HashMap<String, Held<Rc<Vec<u8>>>>,
    /// The lifetime the origin last gave a head.
    head_lifetime_ms: i64,
    stats: Stats,
    /// Cache API puts not yet handed to the driver ([`Edge::take_deferred`]).
    deferred: Vec<LocalBoxFuture<'static, ()>>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("heads", &self.heads.len())
            .field("instances", &self.instances.len())
            .field("decoded", &self.decoded.len())
            .field("stats", &self.stats)
            .field("deferred", &self.deferred.len())
            .finish_non_exhaustive()
    }
}

/// The edge of one isolate.
pub struct Edge<O, C, K> {
    origin: O,
    cache: C,
    clock: K,
    config: Config,
    state: RefCell<State>,
}

/// A body the origin reads for rank-players.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RankPlayersBody {
    player_ids: Vec<String>,
}

/// The origin's friend list answer.
#[derive(Deserialize)]
struct FriendsAnswer {
    friends: Vec<String>,
}

impl<O: Origin, C: Cache, K: Clock> Edge<O, C, K> {
    /// An edge with nothing held yet.
    pub fn new(origin: O, cache: C, clock: K, config: Config) -> Edge<O, C, K> {
        let decoded = DecodedCache::new(config.decoded_cache_bytes);
        Edge {
            origin,
            cache,
            clock,
            config,
            state: RefCell::new(State {
                heads: HashMap::new(),
                instances: KnownInstances::new(MAX_INSTANCES),
                refusals: HashMap::new(),
                decoded,
                tokens: HashMap::new(),
                friends: HashMap::new(),
                boards: HashMap::new(),
                head_lifetime_ms: DEFAULT_HEAD_LIFETIME_MS,
                stats: Stats::default(),
                deferred: Vec::new(),
            }),
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The Cache API puts the reads made since the last call, for the driver to run after
    /// its answer (a Worker's `waitUntil`). Each is inert until polled.
    pub fn take_deferred(&self) -> Vec<LocalBoxFuture<'static, ()>> {
        std::mem::take(&mut self.state.borrow_mut().deferred)
    }

    /// Queues a Cache API put; see [`Edge::take_deferred`].
    fn defer_put(&self, key: &str, bytes: &[u8], max_age_seconds: u64) {
        let put = self.cache.put(key, bytes, max_age_seconds);
        self.state.borrow_mut().deferred.push(Box::pin(put));
    }

    /// The counters now. O(1).
    pub fn stats(&self) -> Stats {
        let state = self.state.borrow();
        let mut stats = state.stats.clone();
        stats.decoded_cache_bytes = state.decoded.used();
        stats.decoded_cache_parts = state.decoded.len();
        stats.decoded_cache_budget = self.config.decoded_cache_bytes;
        stats.held_heads = state.heads.len();
        stats.known_instances = state.instances.len();
        stats
    }

    /// Decides what to do with `request`: the edge's answer, or the request to forward.
    /// With the head and the parts held, a read costs the reader's work and the JSON (tens of
    /// microseconds natively, O(answer) plus O(log parts) per part); a cold one adds a fetch,
    /// hash check and decode per part (O(part bytes)), and the manifest's once per version.
    pub async fn handle(&self, request: HttpRequest) -> Outcome {
        let Some(route) = Route::of(&request) else {
            self.count(|s| s.requests.forwarded += 1);
            return self.forward(&request);
        };
        self.count(|s| match &route {
            Route::Top(_) => s.requests.top += 1,
            Route::Rank(..) => s.requests.rank += 1,
            Route::Nearby(..) => s.requests.nearby += 1,
            Route::FriendsOf(..) => s.requests.friends_of += 1,
            Route::RankPlayers(_) => s.requests.rank_players += 1,
            Route::Boards(_) => s.requests.boards += 1,
            Route::Stats => s.requests.stats += 1,
        });
        let mut spend = Spend::default();
        let read = match &route {
            Route::Stats => return Outcome::Answer(self.stats_answer()),
            Route::Top(board) => self.top(&request, board, &mut spend).await,
            Route::Rank(board, player) => self.rank(&request, board, player, &mut spend).await,
            Route::Nearby(board, player) => self.nearby(&request, board, player, &mut spend).await,
            Route::FriendsOf(board, player) => self.friends_of(&request, board, player, &mut spend).await,
            Route::RankPlayers(board) => self.rank_players(&request, board, &mut spend).await,
            Route::Boards(game) => self.boards(&request, game, &mut spend).await,
        };
        match read {
            Ok(answer) => Outcome::Answer(answer),
            Err(Stop::Problem(p)) => Outcome::Answer(p.response()),
            Err(Stop::Origin(answer)) => Outcome::Answer(answer),
            Err(Stop::Forward(why)) => {
                let fallback = self.count_fallback(why);
                Outcome::ForwardRead {
                    request: self.forward_request(&request),
                    fallback,
                }
            }
        }
    }

    /// Counts a fallback; its name for the `x-standings-fallback` header.
    fn count_fallback(&self, why: Fallback) -> &'static str {
        let mut state = self.state.borrow_mut();
        let fallbacks = &mut state.stats.fallbacks;
        match why {
            Fallback::StaleCursor => {
                fallbacks.stale_cursor += 1;
                "stale-cursor"
            }
            Fallback::TooManyParts => {
                fallbacks.too_many_parts += 1;
                "too-many-parts"
            }
            Fallback::Auth => {
                fallbacks.auth += 1;
                "auth"
            }
            Fallback::Body => {
                fallbacks.body += 1;
                "body"
            }
            Fallback::InstancesFull => {
                fallbacks.instances_full += 1;
                "instances-full"
            }
        }
    }

    /// The origin's answer to a read the edge handed it, with the read headers: the
    /// `board_version` of the answer, age 0 (the origin answers live), `MISS`, and
    /// `x-standings-fallback` naming why. These replace any the origin sent under the same
    /// names: its `x-standings-board-version` is its board's version, which a page read at an
    /// older cursor's version does not hold, and a header read first must be the answer's. An
    /// error answer passes as it is. O(answer length).
    pub fn forwarded_read(&self, fallback: &str, answer: HttpResponse) -> HttpResponse {
        #[derive(Deserialize)]
        struct Versioned {
            board_version: u64,
        }
        const READ_HEADERS: [&str; 3] = [
            "x-standings-snapshot-age-ms",
            "x-standings-cache",
            "x-standings-fallback",
        ];
        let mut answer = pass_through(answer);
        if answer.status == 200 {
            let read = serde_json::from_slice::<Versioned>(&answer.body).ok();
            answer.headers.retain(|(name, _)| {
                let versioned = read.is_some() && name.eq_ignore_ascii_case("x-standings-board-version");
                !versioned && !READ_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h))
            });
            if let Some(read) = read {
                answer
                    .headers
                    .push(("x-standings-board-version".into(), read.board_version.to_string()));
            }
            answer.headers.extend([
                ("x-standings-snapshot-age-ms".to_string(), "0".to_string()),
                ("x-standings-cache".to_string(), "MISS".to_string()),
                ("x-standings-fallback".to_string(), fallback.to_string()),
            ]);
        }
        answer
    }

    /// [`Edge::handle`], with forwards sent through the [`Origin`] and read whole, and the
    /// Cache API puts run before it returns: what a driver without streaming (and the tests)
    /// answers.
    pub async fn serve(&self, request: HttpRequest) -> HttpResponse {
        let outcome = self.handle(request).await;
        for put in self.take_deferred() {
            put.await;
        }
        match outcome {
            Outcome::Answer(answer) => answer,
            Outcome::Forward(forward) => match self.origin.send(forward).await {
                Ok(answer) => pass_through(answer),
                Err(_) => self.unreachable(),
            },
            Outcome::ForwardRead { request, fallback } => match self.origin.send(request).await {
                Ok(answer) => self.forwarded_read(fallback, answer),
                Err(_) => self.unreachable(),
            },
        }
    }

    /// The answer to a forwarded request when the origin is unreachable: 503
    /// `ORIGIN_UNAVAILABLE`. Counted.
    pub fn unreachable(&self) -> HttpResponse {
        self.count(|s| s.origin_fetches.unreachable += 1);
        Problem::origin_unavailable(
            "the origin is unreachable; writes, and reads the edge holds no snapshot for, need it; retry shortly",
        )
        .response()
    }

    fn count(&self, f: impl FnOnce(&mut Stats)) {
        f(&mut self.state.borrow_mut().stats);
    }

    fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    fn stats_answer(&self) -> HttpResponse {
        HttpResponse {
            status: 200,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("cache-control".into(), "no-store".into()),
            ],
            body: serde_json::to_vec(&self.stats()).unwrap_or_default(),
        }
    }

    /// Forwards a request the edge does not serve.
    fn forward(&self, request: &HttpRequest) -> Outcome {
        Outcome::Forward(self.forward_request(request))
    }

    /// The request as the origin gets it: method, path, query, body, and the caller's headers
    /// but those that describe this hop. Counted.
    fn forward_request(&self, request: &HttpRequest) -> OriginRequest {
        self.count(|s| s.origin_fetches.forwarded += 1);
        const HOP: [&str; 6] = [
            "host",
            "content-length",
            "connection",
            "keep-alive",
            "transfer-encoding",
            "te",
        ];
        let mut url = format!("{}{}", self.config.origin_url, request.path);
        if let Some(query) = &request.query {
            url.push('?');
            url.push_str(query);
        }
        OriginRequest {
            method: request.method.clone(),
            url,
            headers: request
                .headers
                .iter()
                .filter(|(n, _)| !HOP.iter().any(|h| n.eq_ignore_ascii_case(h)))
                .cloned()
                .collect(),
            body: request.body.clone(),
        }
    }

    /// A `GET` of the origin on the edge's own behalf, with the edge token.
    fn edge_get(&self, path_and_query: &str) -> OriginRequest {
        OriginRequest {
            method: "GET".into(),
            url: format!("{}{path_and_query}", self.config.origin_url),
            headers: self.edge_auth(),
            body: Vec::new(),
        }
    }

    fn edge_auth(&self) -> Vec<(String, String)> {
        if self.config.edge_token.is_empty() {
            Vec::new()
        } else {
            vec![(
                "authorization".into(),
                format!("Bearer {}", self.config.edge_token),
            )]
        }
    }

    // ----- auth -----

    /// The caller the request's token names: verified here for a player JWT, introspected at
    /// the origin otherwise (remembered by the token's SHA-256 for as long as the origin
    /// allows).
    async fn caller(&self, request: &HttpRequest, spend: &mut Spend) -> Result<Option<Caller>, Stop> {
        let token = match auth::presented(request)? {
            Presented::Nobody => return Ok(None),
            Presented::Bearer(token) => token,
        };
        if let Some(key) = self.config.jwt_secret.as_deref()
            && auth::is_jwt(Some(key), token)
        {
            let now_secs = self.now_ms().div_euclid(1000);
            return Ok(Some(auth::verify_jwt(
                key,
                token,
                now_secs,
                self.config.jwt_max_lifetime_seconds,
            )?));
        }
        if token.is_empty() {
            return Err(Problem::unauthenticated("the token is not known").into());
        }
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = self.now_ms();
        if let Some((known, until)) = self.state.borrow().tokens.get(&key)
            && now < *until
        {
            return Ok(Some(known.caller()?));
        }
        spend.subrequests += 1;
        self.count(|s| s.origin_fetches.introspect += 1);
        let mut ask = self.edge_get("/v1/auth/introspect");
        ask.method = "POST".into();
        ask.headers
            .push(("content-type".into(), "application/json".into()));
        ask.body = serde_json::to_vec(&serde_json::json!({ "token": token })).unwrap_or_default();
        let answer = match self.origin.send(ask).await {
            Ok(answer) => answer,
            Err(_) => {
                self.count(|s| s.origin_fetches.unreachable += 1);
                return Err(Problem::origin_unavailable(
                    "the origin is unreachable and the edge does not know this token; retry shortly, or read with a player JWT",
                )
                .into());
            }
        };
        let known: Introspection = match (answer.status, serde_json::from_slice(&answer.body)) {
            (200, Ok(known)) => known,
            (status, _) => {
                return Err(Problem::bad_origin_answer(format!(
                    "the origin answered {status} to the edge's token introspection; EDGE_TOKEN must be an edge token of the origin"
                ))
                .into());
            }
        };
        let until = now.saturating_add(known.cache_seconds.max(0).saturating_mul(1000));
        let caller = known.caller();
        {
            let mut state = self.state.borrow_mut();
            make_room(&mut state.tokens, now, |(_, until)| *until);
            state.tokens.insert(key, (known, until));
        }
        Ok(Some(caller?))
    }

    /// The origin's `Auth::reader` for this request's caller.
    async fn reader(&self, request: &HttpRequest, game: &str, spend: &mut Spend) -> Result<(), Stop> {
        let caller = self.caller(request, spend).await?;
        Ok(auth::reader(caller.as_ref(), self.config.public_reads, game)?)
    }

    // ----- heads, manifests and parts -----

    /// The board instance's head: held if fresh, else asked of the origin; when the origin
    /// cannot answer, the last one held here or in the Cache API, marked stale; when it follows
    /// as many instances as it may, the read goes to its read API.
    ///
    /// A read's `at` names its instance. Placed in a range learned from an earlier head, it
    /// asks for that instance in one canonical form, so any number of `at`s of one day cost one
    /// held head, one Cache API entry and one instance followed at the origin. One the edge
    /// cannot place is sent as it came, once, and the answer teaches its range. O(log
    /// instances) when held, plus the fetch (and the manifest's) when not.
    async fn head(
        &self,
        board: &BoardPath,
        query: Option<&str>,
        spend: &mut Spend,
    ) -> Result<HeadRead, Stop> {
        let period = param(query, "period");
        let current = head_path(board, period.as_deref());
        let asked = match param(query, "at") {
            None => Asked::Current,
            Some(raw) => {
                // A time the core reads but the origin does not (past the range of its
                // timestamps) stays the origin's to refuse.
                let at_ms = parse_rfc3339(&raw).filter(|at| RFC3339_RANGE_MS.contains(at));
                let placed = at_ms.and_then(|at| self.state.borrow_mut().instances.place(&current, at));
                match (at_ms, placed) {
                    (Some(at_ms), Some(range)) => Asked::Placed { raw, at_ms, range },
                    _ => Asked::Unplaced { raw },
                }
            }
        };
        let misplaced = || Problem::bad_origin_answer("the origin's head is not of the instance asked for");
        if let Some(read) = self.head_as(&current, &asked, spend).await? {
            return Ok(read);
        }
        // The origin resolved the canonical `at` to an instance that does not hold the
        // reader's (the range learned for it is forgotten now): ask with the reader's own,
        // which the origin resolves itself. Only a placed `at` is answered `None`.
        let Asked::Placed { raw, .. } = asked else {
            return Err(misplaced().into());
        };
        self.head_as(&current, &Asked::Unplaced { raw }, spend)
            .await?
            .ok_or_else(|| misplaced().into())
    }

    /// [`Edge::head`] asked one way, `current` being the head path of the board and period
    /// without `at`. `None` only for a placed `at` that the instance the origin answered does
    /// not hold.
    async fn head_as(
        &self,
        current: &str,
        asked: &Asked,
        spend: &mut Spend,
    ) -> Result<Option<HeadRead>, Stop> {
        // Where the head is held: known before asking, but for an unplaced `at`, whose
        // instance only the answer names.
        let (held_at, path) = match asked {
            Asked::Current => (Some(current.to_string()), current.to_string()),
            Asked::Placed { range, .. } => {
                let path = instance_head_path(current, range);
                (Some(path.clone()), path)
            }
            Asked::Unplaced { raw } => (None, with_at(current, raw)),
        };
        let now = self.now_ms();
        if let Some(key) = &held_at {
            let mut state = self.state.borrow_mut();
            if let Some(held) = state.heads.get(key) {
                // One read refreshes an expired head; the reads that arrive while it asks
                // answer from the head held (one origin round trip older), so a busy isolate
                // asks once per lifetime. A refresh that never finished (its request was
                // dropped) is taken over after REFRESH_TIMEOUT_MS.
                let refreshing = held
                    .refreshing_since
                    .is_some_and(|since| now.saturating_sub(since) < REFRESH_TIMEOUT_MS);
                if now < held.until_ms || refreshing {
                    return Ok(Some(HeadRead {
                        head: held.head.clone(),
                        stale: held.stale,
                    }));
                }
            }
            if state.refusals.get(key).is_some_and(|until| now < *until) {
                return Err(Stop::Forward(Fallback::InstancesFull));
            }
            if let Some(held) = state.heads.get_mut(key) {
                held.refreshing_since = Some(now);
            }
        }
        spend.subrequests += 1;
        self.count(|s| s.origin_fetches.head += 1);
        let answer = self.origin.send(self.edge_get(&path)).await;
        match answer {
            Ok(answer) if answer.status == 200 => {
                let head = Rc::new(Head::parse(&answer.body).ok_or_else(|| {
                    Problem::bad_origin_answer(format!("the origin's head at {path} is not a head"))
                })?);
                let range = Range::of(&head);
                self.learn(current, range);
                if let Asked::Placed { at_ms, .. } = asked
                    && !range.holds(*at_ms)
                {
                    return Ok(None);
                }
                let key = match asked {
                    Asked::Current => current.to_string(),
                    Asked::Placed { .. } | Asked::Unplaced { .. } => instance_head_path(current, &range),
                };
                let lifetime_ms = answer
                    .header("cache-control")
                    .and_then(max_age_seconds)
                    .map_or(DEFAULT_HEAD_LIFETIME_MS, |s| {
                        i64::try_from(s.saturating_mul(1000)).unwrap_or(i64::MAX)
                    });
                // The new head reaches the isolate's other reads only with its manifest
                // decoded: meanwhile they answer from the head held, rather than each fetch and
                // decode the same manifest (the largest part, hundreds of KB on a large board).
                if let Err(stop) = self.manifest(&head, spend).await {
                    if let Some(held) = self.state.borrow_mut().heads.get_mut(&key) {
                        held.refreshing_since = None;
                    }
                    return Err(stop);
                }
                {
                    let mut state = self.state.borrow_mut();
                    state.head_lifetime_ms = lifetime_ms;
                    state.refusals.remove(&key);
                    make_room(&mut state.heads, now, |h| h.until_ms);
                    state.heads.insert(
                        key.clone(),
                        HeldHead {
                            head: head.clone(),
                            until_ms: now.saturating_add(lifetime_ms),
                            stale: false,
                            refreshing_since: None,
                        },
                    );
                }
                self.defer_put(&format!("/head{key}"), &answer.body, FOREVER_SECONDS);
                Ok(Some(HeadRead { head, stale: false }))
            }
            Ok(answer) if answer.status < 500 => {
                // The origin no longer serves this instance (or this caller): nothing held for
                // it answers any more.
                if let Some(key) = &held_at {
                    self.state.borrow_mut().heads.remove(key);
                }
                Err(Stop::Origin(pass_through(answer)))
            }
            Ok(answer) if let Some(wait_ms) = instances_full(&answer) => {
                // The instance is there, but the origin will not follow it now: its read API
                // answers, and for a head the edge can name it is not asked again meanwhile.
                if let Some(key) = held_at {
                    let mut state = self.state.borrow_mut();
                    if let Some(held) = state.heads.get_mut(&key) {
                        held.refreshing_since = None;
                    }
                    make_room(&mut state.refusals, now, |until| *until);
                    state.refusals.insert(key, now.saturating_add(wait_ms));
                }
                Err(Stop::Forward(Fallback::InstancesFull))
            }
            failed => {
                if failed.is_err() {
                    self.count(|s| s.origin_fetches.unreachable += 1);
                }
                // An unplaced `at` names no head held here or in the Cache API.
                let Some(key) = held_at else {
                    return Err(no_head(failed));
                };
                let held = self.state.borrow().heads.get(&key).map(|h| h.head.clone());
                let head = match held {
                    Some(head) => Some(head),
                    None => self
                        .cache
                        .get(&format!("/head{key}"))
                        .await
                        .and_then(|b| Head::parse(&b))
                        .map(Rc::new),
                };
                let Some(head) = head else {
                    return Err(no_head(failed));
                };
                // Wait one head lifetime before asking again, so a down origin is not asked
                // on every read.
                let mut state = self.state.borrow_mut();
                let until_ms = now.saturating_add(state.head_lifetime_ms);
                make_room(&mut state.heads, now, |h| h.until_ms);
                state.heads.insert(
                    key,
                    HeldHead {
                        head: head.clone(),
                        until_ms,
                        stale: true,
                        refreshing_since: None,
                    },
                );
                Ok(Some(HeadRead { head, stale: true }))
            }
        }
    }

    /// Learns the range of a head of the period whose current head path is `current`, and
    /// lets go of the heads held for the ranges that went (replaced, or out of room), so the
    /// held heads stay as bounded as the ranges. O(log instances) per range.
    fn learn(&self, current: &str, range: Range) {
        let mut state = self.state.borrow_mut();
        for (period, gone) in state.instances.learn(current, range) {
            // An unbounded instance's head is the current one, which stays useful.
            if gone.start_ms.is_some() {
                state.heads.remove(&instance_head_path(&period, &gone));
            }
        }
    }

    /// The bytes of a part: from the Cache API, else from the origin (then cached).
    async fn part_bytes(
        &self,
        kind: PartKind,
        hash: &ChunkHash,
        spend_origin: &RefCell<bool>,
    ) -> Result<Vec<u8>, Stop> {
        let key = format!("/part/{hash}");
        if let Some(bytes) = self.cache.get(&key).await {
            self.count(|s| s.cache.part_hits += 1);
            return Ok(bytes);
        }
        self.count(|s| {
            s.cache.part_misses += 1;
            match kind {
                PartKind::Manifest => s.origin_fetches.manifest += 1,
                PartKind::Chunk => s.origin_fetches.chunk += 1,
            }
        });
        *spend_origin.borrow_mut() = true;
        let path = match kind {
            PartKind::Manifest => format!("/v1/snapshots/manifests/{hash}"),
            PartKind::Chunk => format!("/v1/snapshots/chunks/{hash}"),
        };
        let mut fetched = self.origin.send(self.edge_get(&path)).await;
        if fetched.is_err() {
            // A part is immutable and its fetch idempotent: one retry rides out a dropped
            // connection, which would otherwise fail the whole read.
            self.count(|s| s.origin_fetches.unreachable += 1);
            fetched = self.origin.send(self.edge_get(&path)).await;
        }
        match fetched {
            Ok(answer) if answer.status == 200 => {
                self.defer_put(&key, &answer.body, FOREVER_SECONDS);
                Ok(answer.body)
            }
            Ok(answer) => Err(Problem::origin_unavailable(format!(
                "the origin answered {} for part {hash} of this snapshot; retry shortly",
                answer.status
            ))
            .into()),
            Err(_) => {
                self.count(|s| s.origin_fetches.unreachable += 1);
                Err(Problem::origin_unavailable(
                    "the origin is unreachable and the edge does not hold the part of the snapshot this read needs; retry shortly",
                )
                .into())
            }
        }
    }

    /// The head's manifest, decoded.
    async fn manifest(&self, head: &Head, spend: &mut Spend) -> Result<Rc<Manifest>, Stop> {
        let held = self.state.borrow_mut().decoded.get(&head.manifest);
        if let Some(Decoded::Manifest(m)) = held {
            self.count(|s| s.cache.decoded_hits += 1);
            return Ok(m);
        }
        spend.subrequests += 1;
        let fetched = RefCell::new(false);
        let bytes = self
            .part_bytes(PartKind::Manifest, &head.manifest, &fetched)
            .await?;
        spend.fetched_part |= fetched.into_inner();
        if BoardDigest::of(&bytes) != head.manifest {
            return Err(bad_part(&head.manifest, DecodeError::HashMismatch));
        }
        let manifest = Rc::new(Manifest::decode(&bytes).map_err(|e| bad_part(&head.manifest, e))?);
        self.state
            .borrow_mut()
            .decoded
            .insert(&head.manifest, Decoded::Manifest(manifest.clone()));
        Ok(manifest)
    }

    /// Puts the parts a query needs into `parts`: from the isolate, else fetched all at once:
    /// up to 6 one by one through the Cache API while that fits `MAX_SUBREQUESTS`, more
    /// straight from the origin in bundles of up to 200. A read that would fetch more than
    /// `MAX_PARTS_PER_READ` parts, or need more subrequests even in bundles, goes to the
    /// origin instead.
    async fn fetch_parts(
        &self,
        manifest: &Manifest,
        need: Vec<Part>,
        parts: &mut QueryParts,
        spend: &mut Spend,
    ) -> Result<(), Stop> {
        let mut missing = Vec::new();
        for part in need {
            let hash = match part {
                Part::Rank(i) => manifest.rank_chunks.get(i).map(|c| c.hash),
                Part::Lookup(p) => manifest.lookup_chunks.get(p).map(|c| c.hash),
            }
            .ok_or_else(|| {
                Problem::new(
                    500,
                    "INTERNAL",
                    format!("the snapshot reader asked for {part:?}, which the manifest does not have"),
                )
            })?;
            let held = self.state.borrow_mut().decoded.get(&hash);
            match (part, held) {
                (Part::Rank(i), Some(Decoded::Rank(c))) => {
                    parts.rank.insert(i, c);
                }
                (Part::Lookup(p), Some(Decoded::Lookup(c))) => {
                    parts.lookup.insert(p, c);
                }
                _ => {
                    missing.push((part, hash));
                    continue;
                }
            }
            self.count(|s| s.cache.decoded_hits += 1);
        }
        if missing.is_empty() {
            return Ok(());
        }
        if spend.parts + missing.len() > self.config.max_parts_per_read {
            return Err(Stop::Forward(Fallback::TooManyParts));
        }
        spend.parts += missing.len();
        let all = if missing.len() <= MAX_ONE_BY_ONE
            && spend.subrequests + missing.len() <= self.config.max_subrequests
        {
            spend.subrequests += missing.len();
            let fetched = RefCell::new(false);
            let all = join_all(
                missing
                    .iter()
                    .map(|(_, hash)| self.part_bytes(PartKind::Chunk, hash, &fetched)),
            )
            .await;
            spend.fetched_part |= fetched.into_inner();
            all.into_iter().collect::<Result<Vec<_>, _>>()?
        } else {
            let bundles = missing.len().div_ceil(MAX_BUNDLE_CHUNKS);
            if spend.subrequests + bundles > self.config.max_subrequests {
                return Err(Stop::Forward(Fallback::TooManyParts));
            }
            spend.subrequests += bundles;
            spend.fetched_part = true;
            let hashes: Vec<ChunkHash> = missing.iter().map(|(_, hash)| *hash).collect();
            let all = join_all(hashes.chunks(MAX_BUNDLE_CHUNKS).map(|some| self.bundle(some))).await;
            let mut parts = Vec::with_capacity(missing.len());
            for bundle in all {
                parts.extend(bundle?);
            }
            parts
        };
        for ((part, hash), bytes) in missing.into_iter().zip(all) {
            let decoded = match part {
                Part::Rank(i) => {
                    let chunk = Rc::new(RankChunk::decode(&bytes, &hash).map_err(|e| bad_part(&hash, e))?);
                    parts.rank.insert(i, chunk.clone());
                    Decoded::Rank(chunk)
                }
                Part::Lookup(p) => {
                    let chunk = Rc::new(LookupChunk::decode(&bytes, &hash).map_err(|e| bad_part(&hash, e))?);
                    parts.lookup.insert(p, chunk.clone());
                    Decoded::Lookup(chunk)
                }
            };
            self.state.borrow_mut().decoded.insert(&hash, decoded);
        }
        Ok(())
    }

    /// The answer `body` makes from the parts it asks for: each time it needs parts, they are
    /// fetched ([`Edge::fetch_parts`]) and it is asked again, until it answers.
    async fn answer_from_parts(
        &self,
        manifest: &Manifest,
        spend: &mut Spend,
        mut body: impl FnMut(&QueryParts) -> Result<Step<Vec<u8>>, Stop>,
    ) -> Result<Vec<u8>, Stop> {
        let mut parts = QueryParts::default();
        loop {
            match body(&parts)? {
                Step::Done(answer) => return Ok(answer),
                Step::Need(need) => self.fetch_parts(manifest, need, &mut parts, spend).await?,
            }
        }
    }

    /// The chunks `hashes` from the origin in one request, in that order, each checked by its
    /// caller's decode (which verifies the hash). Not put in the Cache API: a bundle serves a
    /// read whose parts would not fit the subrequests of one part at a time, puts included.
    async fn bundle(&self, hashes: &[ChunkHash]) -> Result<Vec<Vec<u8>>, Stop> {
        self.count(|s| s.origin_fetches.bundle += 1);
        let names: Vec<String> = hashes.iter().map(ChunkHash::to_string).collect();
        let path = format!("/v1/snapshots/chunks?hashes={}", names.join(","));
        let answer = match self.origin.send(self.edge_get(&path)).await {
            Ok(answer) => answer,
            Err(_) => {
                self.count(|s| s.origin_fetches.unreachable += 1);
                return Err(Problem::origin_unavailable(
                    "the origin is unreachable and the edge does not hold the parts of the snapshot this read needs; retry shortly",
                )
                .into());
            }
        };
        if answer.status != 200 {
            return Err(Problem::origin_unavailable(format!(
                "the origin answered {} for a bundle of {} parts of this snapshot; retry shortly",
                answer.status,
                hashes.len()
            ))
            .into());
        }
        let mut rest = &answer.body[..];
        let mut parts = Vec::with_capacity(hashes.len());
        for hash in hashes {
            let Some((length, tail)) = rest.split_first_chunk::<4>() else {
                return Err(bad_part(hash, DecodeError::Malformed));
            };
            let length = u32::from_be_bytes(*length) as usize;
            if tail.len() < length {
                return Err(bad_part(hash, DecodeError::Malformed));
            }
            let (part, tail) = tail.split_at(length);
            parts.push(part.to_vec());
            rest = tail;
        }
        match hashes.last() {
            Some(last) if !rest.is_empty() => Err(bad_part(last, DecodeError::TrailingBytes)),
            _ => Ok(parts),
        }
    }

    /// A read answer: the JSON with the edge's headers (and the stale mark). Counted when stale.
    fn read_answer(&self, head: &Head, stale: bool, hit: bool, mut body: Vec<u8>) -> HttpResponse {
        let mut headers = vec![
            ("content-type".into(), "application/json".into()),
            ("x-standings-board-version".into(), head.board_version.to_string()),
            (
                "x-standings-snapshot-age-ms".into(),
                self.now_ms()
                    .saturating_sub(head.published_at_ms)
                    .max(0)
                    .to_string(),
            ),
            (
                "x-standings-cache".into(),
                if hit { "HIT" } else { "MISS" }.into(),
            ),
        ];
        if stale {
            mark_stale(&mut body, &mut headers);
            self.count(|s| s.stale_answers += 1);
        }
        HttpResponse {
            status: 200,
            headers,
            body,
        }
    }

    // ----- the reads -----

    /// `GET .../top?limit=&cursor=`: a page from the isolate's memory or the Cache API when
    /// this version's page was made before, else from the rank chunks that hold it.
    async fn top(
        &self,
        request: &HttpRequest,
        board: &BoardPath,
        spend: &mut Spend,
    ) -> Result<HttpResponse, Stop> {
        self.reader(request, board.game(), spend).await?;
        let query = request.query.as_deref();
        let HeadRead { head, stale } = self.head(board, query, spend).await?;
        let limit = parse_param(
            query,
            "limit",
            10usize,
            |l| (1..=MAX_LIMIT).contains(l),
            "1 to 1000",
        )?;
        let id = board_id(board)?;
        let binding = CursorBinding::of(&id, &head.period_key);
        let cursor_text = param(query, "cursor");
        let cursor = match &cursor_text {
            None => None,
            Some(raw) => {
                let not_ours = || Problem::invalid_cursor("the cursor is not one this service made");
                let bytes = URL_SAFE_NO_PAD.decode(raw.as_bytes()).map_err(|_| not_ours())?;
                Some(Cursor::decode(&bytes, binding).map_err(|e| match e {
                    DecodeError::OtherBoard => Problem::invalid_cursor(format!(
                        "the cursor was made for another board or period, not {id} in {}; page this one from its first page",
                        head.period_key
                    )),
                    _ => not_ours(),
                })?)
            }
        };
        if cursor
            .as_ref()
            .is_some_and(|c| c.board_version != head.board_version)
        {
            return Err(Stop::Forward(Fallback::StaleCursor));
        }
        let page_key = format!(
            "/top/{}/{}/{}/{limit}/{}",
            board.raw,
            head.period_key,
            head.board_version,
            cursor_text.as_deref().unwrap_or("-")
        );
        // The isolate's memory first (no round trip), then the data centre's cache.
        let page_id = BoardDigest(Sha256::digest(page_key.as_bytes()).into());
        let held = self.state.borrow_mut().decoded.get(&page_id);
        if let Some(Decoded::Page(body)) = held {
            self.count(|s| {
                s.cache.top_hits += 1;
                s.cache.top_memory_hits += 1;
            });
            return Ok(self.read_answer(&head, stale, true, body.to_vec()));
        }
        if let Some(body) = self.cache.get(&page_key).await {
            self.count(|s| s.cache.top_hits += 1);
            self.state
                .borrow_mut()
                .decoded
                .insert(&page_id, Decoded::Page(Rc::new(body.clone())));
            return Ok(self.read_answer(&head, stale, true, body));
        }
        self.count(|s| s.cache.top_misses += 1);
        let manifest = self.manifest(&head, spend).await?;
        let reader = SnapshotReader::new(&manifest);
        let body = self
            .answer_from_parts(&manifest, spend, |parts| {
                match reader.top(parts, limit, cursor.as_ref()) {
                    // A snapshot holds one version; the origin holds a history of them, and its
                    // words for a cursor it no longer holds either.
                    Err(_) => Err(Stop::Forward(Fallback::StaleCursor)),
                    Ok(Step::Done(page)) => {
                        let next = page
                            .next_cursor
                            .as_ref()
                            .map(|c| URL_SAFE_NO_PAD.encode(c.encode(binding)));
                        let mut out = Vec::with_capacity(256 + 112 * page.entries.len());
                        write_top_answer(&mut out, &head.period_fields(), &page, next.as_deref());
                        Ok(Step::Done(out))
                    }
                    Ok(Step::Need(need)) => Ok(Step::Need(need)),
                }
            })
            .await?;
        self.state
            .borrow_mut()
            .decoded
            .insert(&page_id, Decoded::Page(Rc::new(body.clone())));
        self.defer_put(&page_key, &body, TOP_PAGE_SECONDS);
        Ok(self.read_answer(&head, stale, false, body))
    }

    /// `GET .../players/{player}/rank`: one lookup chunk finds the player, one rank chunk
    /// (plus the manifest's counts) ranks them.
    async fn rank(
        &self,
        request: &HttpRequest,
        board: &BoardPath,
        player: &str,
        spend: &mut Spend,
    ) -> Result<HttpResponse, Stop> {
        self.reader(request, board.game(), spend).await?;
        let HeadRead { head, stale } = self.head(board, request.query.as_deref(), spend).await?;
        check_player(player)?;
        let manifest = self.manifest(&head, spend).await?;
        let reader = SnapshotReader::new(&manifest);
        let body = self
            .answer_from_parts(&manifest, spend, |parts| {
                match reader.player_rank(parts, player) {
                    Step::Done(None) => Err(not_ranked(player, board)),
                    Step::Done(Some(found)) => {
                        let mut out = Vec::with_capacity(384);
                        write_rank_answer(&mut out, &head.period_fields(), &found);
                        Ok(Step::Done(out))
                    }
                    Step::Need(need) => Ok(Step::Need(need)),
                }
            })
            .await?;
        Ok(self.read_answer(&head, stale, !spend.fetched_part, body))
    }

    /// `GET .../players/{player}/nearby?radius=`.
    async fn nearby(
        &self,
        request: &HttpRequest,
        board: &BoardPath,
        player: &str,
        spend: &mut Spend,
    ) -> Result<HttpResponse, Stop> {
        self.reader(request, board.game(), spend).await?;
        let query = request.query.as_deref();
        let HeadRead { head, stale } = self.head(board, query, spend).await?;
        check_player(player)?;
        let radius = parse_param(query, "radius", 5u64, |r| *r <= MAX_RADIUS, "0 to 100")?;
        let manifest = self.manifest(&head, spend).await?;
        let reader = SnapshotReader::new(&manifest);
        let body = self
            .answer_from_parts(&manifest, spend, |parts| {
                match reader.nearby(parts, player, radius) {
                    Step::Done(None) => Err(not_ranked(player, board)),
                    Step::Done(Some(window)) => {
                        let mut out = Vec::with_capacity(256 + 112 * window.len());
                        write_nearby_answer(
                            &mut out,
                            &head.period_fields(),
                            head.board_version,
                            window.iter().copied(),
                        );
                        Ok(Step::Done(out))
                    }
                    Step::Need(need) => Ok(Step::Need(need)),
                }
            })
            .await?;
        Ok(self.read_answer(&head, stale, !spend.fetched_part, body))
    }

    /// `GET .../friends-of/{player}?include_self=`: the friend list from the origin (held
    /// for a head lifetime), ranked among itself from the snapshot.
    async fn friends_of(
        &self,
        request: &HttpRequest,
        board: &BoardPath,
        player: &str,
        spend: &mut Spend,
    ) -> Result<HttpResponse, Stop> {
        let caller = self.caller(request, spend).await?;
        auth::friends_reader(caller.as_ref(), board.game(), player)?;
        let query = request.query.as_deref();
        let HeadRead { head, stale } = self.head(board, query, spend).await?;
        check_player(player)?;
        let include_self = parse_param(query, "include_self", false, |_| true, "true or false")?;
        let (friends, friends_stale) = self.friends(board.game(), player, spend).await?;
        let mut players: Vec<&str> = Vec::with_capacity(friends.len() + 1);
        if include_self {
            players.push(player);
        }
        players.extend(friends.iter().map(String::as_str));
        self.rank_among(&head, stale || friends_stale, &players, spend)
            .await
    }

    /// `POST .../rank-players {"player_ids": [...]}`. A body the edge does not read as that
    /// shape goes to the origin, whose words for it (and whose order of checks) are the API's.
    async fn rank_players(
        &self,
        request: &HttpRequest,
        board: &BoardPath,
        spend: &mut Spend,
    ) -> Result<HttpResponse, Stop> {
        if request.body.len() > MAX_BODY_BYTES {
            return Err(Stop::Forward(Fallback::Body));
        }
        let Ok(body) = serde_json::from_slice::<RankPlayersBody>(&request.body) else {
            return Err(Stop::Forward(Fallback::Body));
        };
        self.reader(request, board.game(), spend).await?;
        let HeadRead { head, stale } = self.head(board, request.query.as_deref(), spend).await?;
        if body.player_ids.len() > MAX_LIMIT {
            return Err(Problem::new(
                413,
                "PAYLOAD_TOO_LARGE",
                format!(
                    "at most {MAX_LIMIT} players per call; this one has {}",
                    body.player_ids.len()
                ),
            )
            .into());
        }
        for p in &body.player_ids {
            check_player(p)?;
        }
        let players: Vec<&str> = body.player_ids.iter().map(String::as_str).collect();
        self.rank_among(&head, stale, &players, spend).await
    }

    /// Friends-of and rank-players: the players ranked among themselves from the snapshot.
    async fn rank_among(
        &self,
        head: &Head,
        stale: bool,
        players: &[&str],
        spend: &mut Spend,
    ) -> Result<HttpResponse, Stop> {
        let manifest = self.manifest(head, spend).await?;
        let reader = SnapshotReader::new(&manifest);
        let body = self
            .answer_from_parts(&manifest, spend, |parts| {
                Ok(match reader.rank_among(parts, players) {
                    Step::Done(ranked) => {
                        let mut out = Vec::with_capacity(256 + 128 * players.len());
                        write_friends_answer(&mut out, &head.period_fields(), &ranked);
                        Step::Done(out)
                    }
                    Step::Need(need) => Step::Need(need),
                })
            })
            .await?;
        Ok(self.read_answer(head, stale, !spend.fetched_part, body))
    }

    /// A player's friend list from the origin, held for a head lifetime; when the origin is
    /// unreachable, the last one held, marked stale.
    async fn friends(
        &self,
        game: &str,
        player: &str,
        spend: &mut Spend,
    ) -> Result<(Rc<Vec<String>>, bool), Stop> {
        let path = format!(
            "/v1/games/{}/players/{}/friends",
            encode_segment(game),
            encode_segment(player)
        );
        let now = self.now_ms();
        if let Some(held) = self.state.borrow().friends.get(&path)
            && now < held.until_ms
        {
            return Ok((held.value.clone(), held.stale));
        }
        spend.subrequests += 1;
        self.count(|s| s.origin_fetches.friends += 1);
        let answer = self.origin.send(self.edge_get(&path)).await;
        let lifetime = self.state.borrow().head_lifetime_ms;
        match answer {
            Ok(answer) if answer.status == 200 => {
                let list: FriendsAnswer = serde_json::from_slice(&answer.body).map_err(|_| {
                    Problem::bad_origin_answer(format!(
                        "the origin's friend list at {path} is not a friend list"
                    ))
                })?;
                let value = Rc::new(list.friends);
                let mut state = self.state.borrow_mut();
                make_room(&mut state.friends, now, |h| h.until_ms);
                state.friends.insert(
                    path,
                    Held {
                        value: value.clone(),
                        until_ms: now.saturating_add(lifetime),
                        stale: false,
                    },
                );
                Ok((value, false))
            }
            Ok(answer) if answer.status < 500 => Err(Stop::Origin(pass_through(answer))),
            failed => {
                if failed.is_err() {
                    self.count(|s| s.origin_fetches.unreachable += 1);
                }
                let mut state = self.state.borrow_mut();
                match state.friends.get_mut(&path) {
                    Some(held) => {
                        held.until_ms = now.saturating_add(lifetime);
                        held.stale = true;
                        Ok((held.value.clone(), true))
                    }
                    None => Err(match failed {
                        Ok(answer) => Stop::Origin(pass_through(answer)),
                        Err(_) => Problem::origin_unavailable(
                            "the origin is unreachable and the edge does not hold this player's friend list; retry shortly",
                        )
                        .into(),
                    }),
                }
            }
        }
    }

    /// `GET /v1/games/{game}/boards`: the origin's list, fetched with the edge token once the
    /// caller may read the game, and held for a head lifetime.
    async fn boards(
        &self,
        request: &HttpRequest,
        game: &str,
        spend: &mut Spend,
    ) -> Result<HttpResponse, Stop> {
        self.reader(request, game, spend).await?;
        let path = format!("/v1/games/{}/boards", encode_segment(game));
        let now = self.now_ms();
        let answer = |body: &[u8], hit: bool, stale: bool| {
            let mut body = body.to_vec();
            let mut headers = vec![
                ("content-type".into(), "application/json".into()),
                (
                    "x-standings-cache".into(),
                    if hit { "HIT" } else { "MISS" }.into(),
                ),
            ];
            if stale {
                mark_stale(&mut body, &mut headers);
                self.count(|s| s.stale_answers += 1);
            }
            HttpResponse {
                status: 200,
                headers,
                body,
            }
        };
        if let Some(held) = self.state.borrow().boards.get(&path)
            && now < held.until_ms
        {
            return Ok(answer(&held.value, true, held.stale));
        }
        spend.subrequests += 1;
        self.count(|s| s.origin_fetches.boards += 1);
        let fetched = self.origin.send(self.edge_get(&path)).await;
        let lifetime = self.state.borrow().head_lifetime_ms;
        match fetched {
            Ok(fetched) if fetched.status == 200 => {
                let body = Rc::new(fetched.body);
                {
                    let mut state = self.state.borrow_mut();
                    make_room(&mut state.boards, now, |h| h.until_ms);
                    state.boards.insert(
                        path,
                        Held {
                            value: body.clone(),
                            until_ms: now.saturating_add(lifetime),
                            stale: false,
                        },
                    );
                }
                Ok(answer(&body, false, false))
            }
            Ok(fetched) if fetched.status < 500 => Err(Stop::Origin(pass_through(fetched))),
            failed => {
                if failed.is_err() {
                    self.count(|s| s.origin_fetches.unreachable += 1);
                }
                let held = {
                    let mut state = self.state.borrow_mut();
                    state.boards.get_mut(&path).map(|held| {
                        held.until_ms = now.saturating_add(lifetime);
                        held.stale = true;
                        held.value.clone()
                    })
                };
                match (held, failed) {
                    (Some(body), _) => Ok(answer(&body, true, true)),
                    (None, Ok(fetched)) => Err(Stop::Origin(pass_through(fetched))),
                    (None, Err(_)) => Err(Problem::origin_unavailable(
                        "the origin is unreachable and the edge does not hold this game's boards; retry shortly",
                    )
                    .into()),
                }
            }
        }
    }
}

/// Which snapshot path a part is fetched from.
#[derive(Clone, Copy, Debug)]
enum PartKind {
    Manifest,
    Chunk,
}

/// Makes room for one more entry in a map of held answers: at [`MAX_HELD`], the expired
/// entries go, and all of them if none had expired. O(entries) when full, O(1) otherwise.
fn make_room<K, V>(map: &mut HashMap<K, V>, now: i64, until_ms: impl Fn(&V) -> i64) {
    if map.len() >= MAX_HELD {
        map.retain(|_, v| until_ms(v) > now);
        if map.len() >= MAX_HELD {
            map.clear();
        }
    }
}

/// Why a read has no head when the origin did not give one and none is held: its error answer
/// passed on, or unreachable.
fn no_head(failed: Result<HttpResponse, Unavailable>) -> Stop {
    match failed {
        Ok(answer) => Stop::Origin(pass_through(answer)),
        Err(_) => Problem::origin_unavailable(
            "the origin is unreachable and the edge holds no snapshot of this board; retry shortly",
        )
        .into(),
    }
}

/// The origin's head path of `board` for the reader's `period` (the current instance): the
/// key its instances are learned under. O(length).
fn head_path(board: &BoardPath, period: Option<&str>) -> String {
    let mut path = format!("/v1/snapshots/{}/head", board.raw);
    if let Some(period) = period {
        path.push('?');
        path.push_str(
            &form_urlencoded::Serializer::new(String::new())
                .append_pair("period", period)
                .finish(),
        );
    }
    path
}

/// `current` (a [`head_path`]) with `at` added, encoded. O(length).
fn with_at(current: &str, at: &str) -> String {
    let at = form_urlencoded::Serializer::new(String::new())
        .append_pair("at", at)
        .finish();
    let separator = if current.contains('?') { '&' } else { '?' };
    format!("{current}{separator}{at}")
}

/// The one head path of the instance `range` of the period whose current head path is
/// `current`: `at=` the instance's start as the core prints times, so every `at` inside it
/// names this path; `current` itself for an unbounded instance (all time), whose head is the
/// same at any `at`. O(length).
fn instance_head_path(current: &str, range: &Range) -> String {
    let Some(start_ms) = range.start_ms else {
        return current.to_string();
    };
    let mut at = Vec::with_capacity(24);
    write_rfc3339(&mut at, start_ms);
    with_at(current, &String::from_utf8_lossy(&at))
}

/// How long not to ask again for a head the origin refused `503 SNAPSHOT_INSTANCES_FULL`: its
/// `Retry-After` in seconds, within [`MAX_RETRY_AFTER_SECONDS`]; `None` for any other answer.
/// O(answer length).
fn instances_full(answer: &HttpResponse) -> Option<i64> {
    #[derive(Deserialize)]
    struct Coded {
        code: String,
    }
    if answer.status != 503 {
        return None;
    }
    let problem: Coded = serde_json::from_slice(&answer.body).ok()?;
    if problem.code != "SNAPSHOT_INSTANCES_FULL" {
        return None;
    }
    let seconds = answer
        .header("retry-after")
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_RETRY_AFTER_SECONDS)
        .min(MAX_RETRY_AFTER_SECONDS);
    Some(i64::try_from(seconds * 1000).unwrap_or(i64::MAX))
}

/// The origin's answer as the edge passes it on: status, body and the headers that describe
/// the content, not the hop.
fn pass_through(answer: HttpResponse) -> HttpResponse {
    const HOP: [&str; 5] = [
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "content-encoding",
    ];
    HttpResponse {
        status: answer.status,
        headers: answer
            .headers
            .into_iter()
            .filter(|(n, _)| !HOP.iter().any(|h| n.eq_ignore_ascii_case(h)))
            .collect(),
        body: answer.body,
    }
}

/// Marks an answer stale: `,"stale":true` before the JSON's final `}`, and the header.
fn mark_stale(body: &mut Vec<u8>, headers: &mut Vec<(String, String)>) {
    if body.last() == Some(&b'}') {
        let at = body.len() - 1;
        body.splice(at..at, b",\"stale\":true".iter().copied());
    }
    headers.push(("x-standings-stale".into(), "true".into()));
}

/// A part the origin sent that does not decode or match its hash.
fn bad_part(hash: &ChunkHash, e: DecodeError) -> Stop {
    Problem::bad_origin_answer(format!("the origin's snapshot part {hash} cannot be used: {e}")).into()
}

/// The value of the query parameter `name`, percent-decoded; the last one when given twice
/// (the origin's `ReadQuery::get`). O(query length).
fn param(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .filter(|(key, _)| key == name)
        .last()
        .map(|(_, value)| value.into_owned())
}

/// A query parameter parsed with the origin's words for a bad one.
fn parse_param<T: std::str::FromStr>(
    query: Option<&str>,
    name: &str,
    default: T,
    valid: impl Fn(&T) -> bool,
    expected: &str,
) -> Result<T, Problem> {
    match param(query, name) {
        None => Ok(default),
        Some(raw) => raw.parse::<T>().ok().filter(|v| valid(v)).ok_or_else(|| {
            Problem::invalid_request(format!("{name}={raw:?} is not valid; expected {expected}"))
        }),
    }
}

/// The origin's check of a player id in a path or a body.
fn check_player(player: &str) -> Result<(), Problem> {
    check_id("player_id", player).map_err(|e| Problem::invalid_request(e.to_string()))
}

/// The board of a path whose head the origin answered (so its parts are valid ids).
fn board_id(board: &BoardPath) -> Result<BoardId, Problem> {
    let [g, m, s, c] = &board.parts;
    BoardId::new(g, m, s, c).map_err(|e| {
        Problem::bad_origin_answer(format!("the origin answered a head for an invalid board: {e}"))
    })
}

/// The origin's 404 for a player with no score on the board.
fn not_ranked(player: &str, board: &BoardPath) -> Stop {
    match board_id(board) {
        Ok(id) => Problem::player_not_ranked(format!("player {player:?} has no score on board {id}")).into(),
        Err(bad) => bad.into(),
    }
}

/// A path segment percent-encoded: everything but ASCII letters, digits and `-._~`.
/// O(length).
fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
