//! The edge's logic: a request in, an answer (or a request to forward) out, over the
//! [`Origin`], [`Cache`] and [`Clock`] it is given.
//!
//! A read runs in steps, each of which may answer early: the caller's auth (a JWT verified
//! here, any other token introspected at the origin and remembered), the board instance's head
//! (its `at` placed in an instance learned from earlier heads and asked for in that instance's
//! one canonical form; held for its `max-age`; kept without expiry in the Cache API for when
//! the origin is down), the manifest and the parts the core's `SnapshotReader` asks for
//! (decoded in the isolate, raw in the Cache API, else from the origin, all by hash), and the
//! core's JSON writer. Every parameter is checked with the read contract the origin checks it
//! with (`standings_core::contract`), where the origin checks it, so the two tiers answer the
//! same bytes; errors about the board or the period are the origin's own, passed through from
//! the head.
//!
//! Each step is a module, each an `impl Edge` block over the isolate's state kept here:
//! - `dispatch`: a request routed to its read or forwarded, a read's stop turned into its
//!   answer, and the origin's answers passed on;
//! - `callers`: who the caller is (JWT or introspection) and whether the contract lets it read;
//! - `heads`: the board instance's head, held, refreshed once per lifetime, placed by `at`;
//! - `parts`: the manifest and chunks a read needs, one by one through the Cache API or in
//!   bundles from the origin, hash-checked and decoded;
//! - `lists`: the origin's friend lists and board lists, held for a head lifetime;
//! - `reads`: the read endpoints, each its parameters, its access rule and its answer;
//! - `live`: a live subscription sent to its board view's live object, or to the origin.
//!
//! The state is per isolate, behind a `RefCell` that is never borrowed across an `.await`:
//! requests of one isolate interleave at every fetch.

mod callers;
mod dispatch;
mod heads;
mod lists;
mod live;
mod parts;
mod reads;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use futures_util::future::LocalBoxFuture;
use http::header::AUTHORIZATION;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};

pub use self::dispatch::Outcome;
use self::heads::HeldHead;
use crate::auth::Introspection;
use crate::config::Config;
use crate::decoded::DecodedCache;
use crate::instances::KnownInstances;
use crate::platform::{Cache, Clock, Origin, Request, Response, Unavailable};
use crate::problem::Problem;
use crate::route::Routes;
use crate::stats::Stats;

/// How long the Cache API keeps what never changes under its key (parts, the last head).
const FOREVER_SECONDS: u64 = 31_536_000;
/// The head lifetime assumed until the origin names one.
const DEFAULT_HEAD_LIFETIME_MS: i64 = 1_000;
/// The most heads, refusals, tokens, friend lists or board lists one isolate holds of each:
/// past it, the expired ones are dropped, then all, so that requests naming ever new boards or
/// tokens cannot grow an isolate without bound.
const MAX_HELD: usize = 10_000;
/// The most period instance ranges one isolate keeps (`instances.rs`), least recently used
/// first out: the days, weeks and months its readers name, each with its held head.
const MAX_INSTANCES: usize = 512;

/// The `board_version` an answer is of.
const BOARD_VERSION: HeaderName = HeaderName::from_static("x-standings-board-version");
/// How old the snapshot an answer comes from is, in ms (0 for the origin's own).
const SNAPSHOT_AGE: HeaderName = HeaderName::from_static("x-standings-snapshot-age-ms");
/// `HIT` when the answer needed nothing from the origin, `MISS` otherwise.
const CACHE_STATUS: HeaderName = HeaderName::from_static("x-standings-cache");
/// `true` on an answer from a snapshot the origin could not refresh.
const STALE: HeaderName = HeaderName::from_static("x-standings-stale");
/// Why a read the edge serves was answered by the origin.
const FALLBACK: HeaderName = HeaderName::from_static("x-standings-fallback");
/// `application/json`.
const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// Why a read stopped before its answer.
#[derive(Debug)]
enum Stop {
    /// The edge's own error answer.
    Problem(Problem),
    /// The origin's answer, passed through (board and period errors from the head); boxed, as
    /// it is far larger than the other stops and every read step returns one.
    Origin(Box<Response>),
    /// Hand the request to the origin.
    Forward(Fallback),
}

impl From<Problem> for Stop {
    fn from(p: Problem) -> Stop {
        Stop::Problem(p)
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
    /// A service, moderator or admin token: it sees anonymous players' names, which only the
    /// origin holds.
    Trusted,
    /// A read asks for a write's position, which only the origin can wait for.
    MinPosition,
    /// A read within a segment of a version published as a patch, which does not restate
    /// the chunks' segment members (a board that declares segments is published whole).
    Segment,
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

/// An answer of the origin held for a while.
#[derive(Debug)]
struct Held<T> {
    value: T,
    until_ms: i64,
    /// Held past its lifetime because the origin was unreachable.
    stale: bool,
}

/// The isolate's state.
struct State {
    /// Held heads by the path they were asked for at: one per instance (`heads::Asked`).
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
    routes: Routes,
    /// `Bearer <EDGE_TOKEN>`, sent on the edge's own requests; `None` without a token.
    edge_authorization: Option<HeaderValue>,
    state: RefCell<State>,
}

impl<O: Origin, C: Cache, K: Clock> Edge<O, C, K> {
    /// An edge with nothing held yet.
    pub fn new(origin: O, cache: C, clock: K, config: Config) -> Edge<O, C, K> {
        let decoded = DecodedCache::new(config.decoded_cache_bytes);
        // The config has checked that the token makes a header value.
        let edge_authorization = (!config.edge_token.is_empty())
            .then(|| HeaderValue::try_from(format!("Bearer {}", config.edge_token)).ok())
            .flatten();
        Edge {
            origin,
            cache,
            clock,
            config,
            routes: Routes::default(),
            edge_authorization,
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

    fn count(&self, f: impl FnOnce(&mut Stats)) {
        f(&mut self.state.borrow_mut().stats);
    }

    fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// A request to the origin: `ORIGIN_URL` + `path_and_query`. `Unavailable` when that is
    /// not a URI (only a target near the 64 KiB limit of one), as the platform's refusal of
    /// the request would be. O(length).
    fn origin_request(
        &self,
        method: Method,
        path_and_query: &str,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Result<Request, Unavailable> {
        let uri = Uri::try_from(format!("{}{path_and_query}", self.config.origin_url))
            .map_err(|e| Unavailable(format!("the origin's URL for {path_and_query} is not a URI: {e}")))?;
        let mut request = Request::new(body);
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        *request.headers_mut() = headers;
        Ok(request)
    }

    /// A request of the edge's own to the origin, with the edge token.
    fn edge_request(
        &self,
        method: Method,
        path_and_query: &str,
        body: Vec<u8>,
    ) -> Result<Request, Unavailable> {
        let mut headers = HeaderMap::new();
        if let Some(authorization) = &self.edge_authorization {
            headers.insert(AUTHORIZATION, authorization.clone());
        }
        self.origin_request(method, path_and_query, headers, body)
    }

    /// `GET path_and_query` of the origin on the edge's own behalf, with the edge token.
    async fn origin_get(&self, path_and_query: &str) -> Result<Response, Unavailable> {
        self.origin
            .send(self.edge_request(Method::GET, path_and_query, Vec::new())?)
            .await
    }
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
