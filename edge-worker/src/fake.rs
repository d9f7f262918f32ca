//! In-memory implementations of the platform traits for the unit tests: an origin that serves
//! real snapshots of core `Board`s (heads, manifests, chunks one by one or in bundles), friend
//! lists, introspection and an echo for everything else; a cache; a clock.
//!
//! Its heads resolve `at` as the origin does, to the published instance that holds it, else (for
//! a daily period) to the UTC day that holds it, answered with the empty snapshot at version 0.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use standings_core::json::{PeriodFields, RFC3339_RANGE_MS, parse_rfc3339, write_rfc3339};
use standings_core::{
    Board, BoardDigest, BoardRules, ChunkingOptions, Publication, Publisher, ScoreMode, Snapshot,
};

use http::HeaderMap;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};

use crate::platform::{Cache, Clock, Origin, Request, Response, Unavailable};

/// The origin's address in the tests.
pub(crate) const ORIGIN: &str = "http://origin.test";
/// The edge token the fake origin takes.
pub(crate) const EDGE_TOKEN: &str = "edge-secret";

/// Small chunks, so that a board of a few thousand players has many of each kind.
pub(crate) const SMALL_CHUNKS: ChunkingOptions = ChunkingOptions {
    min_entries: 32,
    boundary_modulus: 32,
    max_entries: 128,
    lookup_target: 128,
};

/// A published instance of a period, for heads that name an `at`.
struct Instance {
    /// `g/m/s/c?period=P` (or `g/m/s/c`), as a head without `at` names it.
    period: String,
    start_ms: i64,
    end_ms: i64,
    head: Vec<u8>,
}

/// A fake origin.
#[derive(Default)]
pub struct FakeOrigin {
    /// Current heads by `g/m/s/c?query` (the query as the edge sends it, empty for none), with
    /// whether their instance is unbounded (all time: the same at any `at`).
    heads: RefCell<HashMap<String, (Vec<u8>, bool)>>,
    /// Instances with a start and an end, current or not.
    instances: RefCell<Vec<Instance>>,
    /// Parts (manifests and chunks) by hex hash.
    parts: RefCell<HashMap<String, Vec<u8>>>,
    /// Friend lists by player.
    pub friends: RefCell<HashMap<String, Vec<String>>>,
    /// Introspection answers by token.
    pub tokens: RefCell<HashMap<String, String>>,
    /// While true, every request fails as unreachable.
    pub down: Cell<bool>,
    /// This many of the next requests fail as unreachable (a dropped connection).
    pub drop_next: Cell<usize>,
    /// While true, a head request waits once before it is answered, so that other requests
    /// run meanwhile.
    pub slow_heads: Cell<bool>,
    /// While true, a manifest request waits once before it is answered.
    pub slow_manifests: Cell<bool>,
    /// Bytes appended to every bundle, to test a malformed one.
    pub bundle_tail: Cell<Option<&'static [u8]>>,
    /// While true, every bundle loses its last byte.
    pub bundle_cut: Cell<bool>,
    /// While true, every head naming an `at` in a period with bounds is refused 503
    /// `SNAPSHOT_INSTANCES_FULL`.
    pub instances_full: Cell<bool>,
    /// Every request that reached it (not those sent while down).
    pub sent: RefCell<Vec<Sent>>,
}

impl FakeOrigin {
    /// Publishes `board` as the current head of `board_path` (`g/m/s/c`) for the head query
    /// `query` (`""`, or `period=daily` as the edge sends it), with `period` and
    /// `published_at_ms`; a bounded `period` is also the instance heads naming an `at` in it
    /// find.
    pub fn publish(
        &self,
        board_path: &str,
        query: &str,
        board: &Board,
        period: &PeriodFields<'_>,
        published_at_ms: i64,
    ) {
        let head = self.publish_instance(board_path, query, board, period, published_at_ms);
        self.heads
            .borrow_mut()
            .insert(head_key(board_path, query), (head, period.start_ms.is_none()));
    }

    /// Publishes `board` as the instance `period` of `board_path` and `query` (`period=daily`),
    /// found by heads naming an `at` in it, and not as the current one. Returns its head.
    pub fn publish_instance(
        &self,
        board_path: &str,
        query: &str,
        board: &Board,
        period: &PeriodFields<'_>,
        published_at_ms: i64,
    ) -> Vec<u8> {
        let head = self.snapshot_head(board, period, published_at_ms);
        if let (Some(start_ms), Some(end_ms)) = (period.start_ms, period.end_ms) {
            let period = head_key(board_path, query);
            let mut instances = self.instances.borrow_mut();
            instances.retain(|i| !(i.period == period && i.start_ms == start_ms));
            instances.push(Instance {
                period,
                start_ms,
                end_ms,
                head: head.clone(),
            });
        }
        head
    }

    /// Forgets every instance published with [`FakeOrigin::publish_instance`] (the current
    /// heads stay), as if the calendar had changed.
    pub fn forget_instances(&self) {
        self.instances.borrow_mut().clear();
    }

    /// Publishes `board` as the current head of `board_path` with `publisher`, as the origin
    /// does: a whole manifest, or a patch over the last one. Returns the publication.
    pub fn publish_with(
        &self,
        board_path: &str,
        publisher: &mut Publisher,
        board: &Board,
        period: &PeriodFields<'_>,
        published_at_ms: i64,
    ) -> Publication {
        let publication = publisher.publish(board);
        {
            let mut parts = self.parts.borrow_mut();
            parts.insert(
                publication.manifest_hash.to_string(),
                publication.manifest_bytes.clone(),
            );
            for (hash, bytes) in &publication.new_parts {
                parts.insert(hash.to_string(), bytes.clone());
            }
        }
        let head = head_text(board, period, &publication.manifest_hash, published_at_ms);
        self.heads
            .borrow_mut()
            .insert(head_key(board_path, ""), (head, period.start_ms.is_none()));
        publication
    }

    /// Holds the parts of `board`'s snapshot and returns the head that names it.
    fn snapshot_head(&self, board: &Board, period: &PeriodFields<'_>, published_at_ms: i64) -> Vec<u8> {
        let snapshot = Snapshot::build_with(board, SMALL_CHUNKS);
        let manifest_hash = BoardDigest::of(&snapshot.manifest_bytes);
        let mut parts = self.parts.borrow_mut();
        parts.insert(manifest_hash.to_string(), snapshot.manifest_bytes.clone());
        for (r, bytes) in snapshot.manifest.rank_chunks.iter().zip(&snapshot.rank_chunks) {
            parts.insert(r.hash.to_string(), bytes.clone());
        }
        for (l, bytes) in snapshot
            .manifest
            .lookup_chunks
            .iter()
            .zip(&snapshot.lookup_chunks)
        {
            parts.insert(l.hash.to_string(), bytes.clone());
        }
        parts.insert(snapshot.manifest.sketch.to_string(), snapshot.sketch.clone());
        head_text(board, period, &manifest_hash, published_at_ms)
    }

    /// The head of a head request's `g/m/s/c?query`: the current one without `at`; with one,
    /// the instance holding it (published, the unbounded current one, or an empty UTC day).
    fn head(&self, key: &str) -> Result<Vec<u8>, Box<Response>> {
        let (board_path, query) = key.split_once('?').unwrap_or((key, ""));
        let mut period = None;
        let mut at = None;
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            match &*name {
                "period" => period = Some(value.into_owned()),
                "at" => at = Some(value.into_owned()),
                _ => {}
            }
        }
        let current = match &period {
            Some(period) => format!("{board_path}?period={period}"),
            None => board_path.to_string(),
        };
        let held = self.heads.borrow().get(&current).cloned();
        let Some((head, unbounded)) = held else {
            return Err(Box::new(if period.is_some() {
                problem(400, "INVALID_REQUEST", "period=\\\"x\\\" is not kept by board")
            } else {
                problem(404, "UNKNOWN_BOARD", "no board; define it with PUT")
            }));
        };
        let Some(at) = at else {
            return Ok(head);
        };
        let Some(at_ms) = parse_rfc3339(&at).filter(|at| RFC3339_RANGE_MS.contains(at)) else {
            return Err(Box::new(problem(
                400,
                "INVALID_REQUEST",
                "at is not an RFC 3339 timestamp",
            )));
        };
        if unbounded {
            return Ok(head);
        }
        if self.instances_full.get() {
            let mut full = problem(
                503,
                "SNAPSHOT_INSTANCES_FULL",
                "the origin follows as many instances as it may",
            );
            full.headers_mut()
                .insert(RETRY_AFTER, http::HeaderValue::from_static("10"));
            return Err(Box::new(full));
        }
        if let Some(found) = self
            .instances
            .borrow()
            .iter()
            .find(|i| i.period == current && i.start_ms <= at_ms && at_ms < i.end_ms)
        {
            return Ok(found.head.clone());
        }
        let start_ms = at_ms - at_ms.rem_euclid(86_400_000);
        let mut start = Vec::new();
        write_rfc3339(&mut start, start_ms);
        let day = String::from_utf8_lossy(&start[..10]).into_owned();
        let empty = Board::new(BoardRules::new(ScoreMode::Highest));
        let fields = PeriodFields {
            kind: period.as_deref().unwrap_or("all_time"),
            key: &day,
            start_ms: Some(start_ms),
            end_ms: Some(start_ms + 86_400_000),
        };
        Ok(self.snapshot_head(&empty, &fields, start_ms))
    }

    /// Requests whose URL contains `part`.
    pub fn count(&self, part: &str) -> usize {
        self.sent.borrow().iter().filter(|r| r.url.contains(part)).count()
    }

    fn answer(&self, request: &Sent) -> Response {
        let path_and_query = request.url.strip_prefix(ORIGIN).unwrap_or(&request.url);
        let edge = request.header("authorization") == Some(&format!("Bearer {EDGE_TOKEN}"));
        let json = |status: u16, body: String| {
            answer(status, &[(CONTENT_TYPE, "application/json")], body.into_bytes())
        };
        if let Some(rest) = path_and_query.strip_prefix("/v1/snapshots/") {
            if !edge {
                return problem(401, "UNAUTHENTICATED", "this needs an edge token");
            }
            if let Some(hashes) = rest.strip_prefix("chunks?hashes=") {
                let parts = self.parts.borrow();
                let mut body = Vec::new();
                for hash in hashes.split(',') {
                    let Some(bytes) = parts.get(hash) else {
                        return problem(404, "SNAPSHOT_PART_NOT_FOUND", "no such part");
                    };
                    body.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
                    body.extend_from_slice(bytes);
                }
                if let Some(tail) = self.bundle_tail.get() {
                    body.extend_from_slice(tail);
                }
                if self.bundle_cut.get() {
                    body.pop();
                }
                return answer(200, &[(CONTENT_TYPE, "application/octet-stream")], body);
            }
            if let Some(hash) = rest
                .strip_prefix("manifests/")
                .or_else(|| rest.strip_prefix("chunks/"))
            {
                return match self.parts.borrow().get(hash) {
                    Some(bytes) => answer(
                        200,
                        &[
                            (CONTENT_TYPE, "application/octet-stream"),
                            (CACHE_CONTROL, "public, max-age=31536000, immutable"),
                        ],
                        bytes.clone(),
                    ),
                    None => problem(404, "SNAPSHOT_PART_NOT_FOUND", "no such part"),
                };
            }
            return match self.head(&rest.replacen("/head", "", 1)) {
                Ok(head) => answer(
                    200,
                    &[
                        (CONTENT_TYPE, "application/json"),
                        (CACHE_CONTROL, "public, max-age=1"),
                    ],
                    head,
                ),
                Err(refused) => *refused,
            };
        }
        if path_and_query == "/v1/auth/introspect" {
            let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
            let token = body["token"].as_str().unwrap();
            return match self.tokens.borrow().get(token) {
                Some(answer) => json(200, answer.clone()),
                None => json(200, r#"{"active":false,"cache_seconds":10}"#.into()),
            };
        }
        if let Some(rest) = path_and_query.strip_prefix("/v1/games/g/players/")
            && let Some(player) = rest.strip_suffix("/friends")
        {
            let friends = self.friends.borrow().get(player).cloned().unwrap_or_default();
            return json(
                200,
                serde_json::json!({"game": "g", "player_id": player, "friends": friends}).to_string(),
            );
        }
        if path_and_query == "/v1/games/g/boards" {
            return json(200, r#"{"boards":[],"game":"g"}"#.into());
        }
        // The origin's read headers name its board's version, which a page at an older
        // cursor's version (here, the body's 99) does not hold.
        let mut echo = json(
            200,
            serde_json::json!({"echo": request.method, "url": request.url, "body": String::from_utf8_lossy(&request.body), "board_version": 99}).to_string(),
        );
        echo.headers_mut()
            .insert("x-standings-board-version", http::HeaderValue::from_static("100"));
        echo
    }
}

/// `g/m/s/c?query`, or `g/m/s/c` for an empty query: how heads are found.
/// A head naming `manifest_hash` for `board` at `period`, as the origin prints it.
fn head_text(
    board: &Board,
    period: &PeriodFields<'_>,
    manifest_hash: &BoardDigest,
    published_at_ms: i64,
) -> Vec<u8> {
    let time = |ms: Option<i64>| match ms {
        None => "null".to_string(),
        Some(ms) => {
            let mut out = Vec::new();
            write_rfc3339(&mut out, ms);
            format!("\"{}\"", String::from_utf8(out).unwrap())
        }
    };
    let head = format!(
        r#"{{"period":"{}","period_key":"{}","period_start":{},"period_end":{},"board_version":{},"manifest":"{manifest_hash}","published_at":{},"interval_ms":1000}}"#,
        period.kind,
        period.key,
        time(period.start_ms),
        time(period.end_ms),
        board.version(),
        time(Some(published_at_ms)),
    );
    head.into_bytes()
}

fn head_key(board_path: &str, query: &str) -> String {
    if query.is_empty() {
        board_path.to_string()
    } else {
        format!("{board_path}?{query}")
    }
}

/// A problem answer of the fake origin (`detail` is put in the JSON as it is).
fn problem(status: u16, code: &str, detail: &str) -> Response {
    answer(
        status,
        &[(CONTENT_TYPE, "application/problem+json")],
        format!(
            r#"{{"type":"about:blank","title":"x","status":{status},"code":"{code}","detail":"{detail}"}}"#
        )
        .into_bytes(),
    )
}

/// An answer of the fake origin.
fn answer(status: u16, headers: &[(http::HeaderName, &'static str)], body: Vec<u8>) -> Response {
    let mut answer = Response::new(body);
    *answer.status_mut() = http::StatusCode::from_u16(status).unwrap();
    for (name, value) in headers {
        answer
            .headers_mut()
            .insert(name, http::HeaderValue::from_static(value));
    }
    answer
}

/// A request as the fake origin saw it.
#[derive(Clone, Debug)]
pub struct Sent {
    /// The method.
    pub method: String,
    /// The whole URL.
    pub url: String,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Vec<u8>,
}

impl Sent {
    /// The first value of the header `name`, as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

impl Origin for Rc<FakeOrigin> {
    async fn send(&self, request: Request) -> Result<Response, Unavailable> {
        if self.down.get() {
            return Err(Unavailable("connection refused".into()));
        }
        if self.drop_next.get() > 0 {
            self.drop_next.set(self.drop_next.get() - 1);
            return Err(Unavailable("connection reset".into()));
        }
        let path = request.uri().path();
        if (self.slow_heads.get() && path.contains("/head"))
            || (self.slow_manifests.get() && path.contains("/manifests/"))
        {
            YieldOnce(false).await;
        }
        let (parts, body) = request.into_parts();
        let request = Sent {
            method: parts.method.to_string(),
            url: parts.uri.to_string(),
            headers: parts.headers,
            body,
        };
        let answer = self.answer(&request);
        self.sent.borrow_mut().push(request);
        Ok(answer)
    }
}

/// A cache that keeps everything (ignoring lifetimes) until cleared.
#[derive(Default)]
pub struct FakeCache {
    /// The entries by key.
    pub entries: RefCell<HashMap<String, Vec<u8>>>,
}

impl Cache for Rc<FakeCache> {
    async fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.entries.borrow().get(key).cloned()
    }

    fn put(&self, key: &str, bytes: &[u8], _max_age_seconds: u64) -> impl Future<Output = ()> + 'static {
        let (cache, key, bytes) = (self.clone(), key.to_string(), bytes.to_vec());
        async move {
            cache.entries.borrow_mut().insert(key, bytes);
        }
    }
}

/// A clock the test moves.
pub struct FakeClock(pub Cell<i64>);

impl FakeClock {
    /// Moves the clock on by `ms`.
    pub fn advance(&self, ms: i64) {
        self.0.set(self.0.get() + ms);
    }
}

impl Clock for Rc<FakeClock> {
    fn now_ms(&self) -> i64 {
        self.0.get()
    }
}

/// Pending on its first poll, ready on the next: lets the futures joined with it run.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            std::task::Poll::Ready(())
        } else {
            self.0 = true;
            std::task::Poll::Pending
        }
    }
}

/// Runs a future over the fakes, which are ready at once or after one [`YieldOnce`]; polls it
/// again while it is pending, a few times at most.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    for _ in 0..100 {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
    }
    panic!("a future over the fakes stayed pending")
}
