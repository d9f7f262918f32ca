//! Measures the edge's own work per read natively (release build): the time `Edge::serve`
//! takes for each query kind on a large board, in three states of the isolate, with an
//! in-memory origin and cache that cost nothing. It is the CPU the worker spends, as a native
//! proxy for the wasm figure (which V8 runs some 1.5 to 3 times slower), and the origin
//! fetches and parts each query needs.
//!
//! ```text
//! cargo run --release -p standings-edge --example measure -- [PLAYERS]
//! ```
//!
//! - cold: a new isolate, empty cache: every part comes from the origin, verified and decoded;
//! - cached: a new isolate whose data centre cache holds the parts (verify and decode only);
//! - warm: the same isolate again (parts decoded and held; for top, a page of one entry fewer,
//!   which it has not made yet);
//! - next version: the warm isolate's first read once the head names the next version, a
//!   patch over the manifest it holds that moved 100 players (as the origin publishes it).
//!
//! Each figure is the least of 7 runs (the machine may be shared).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use standings_core::snapshot::DEFAULT_MAX_PATCH_BYTES;
use standings_core::{
    Board, BoardDigest, BoardRules, ChunkingOptions, Publisher, Root, ScoreEvent, ScoreMode, Snapshot,
    Standing,
};
use standings_edge::{Cache, Clock, Config, Edge, Origin, Request, Response, Unavailable};

const ORIGIN: &str = "http://origin.measure";
const HEAD: &str = "/v1/snapshots/g/m/s/global/head";

/// Serves one published snapshot and counts what it was asked.
struct MemoryOrigin {
    files: RefCell<HashMap<String, Vec<u8>>>,
    asked: RefCell<usize>,
}

impl Origin for &MemoryOrigin {
    async fn send(&self, request: Request) -> Result<Response, Unavailable> {
        *self.asked.borrow_mut() += 1;
        let url = request.uri().to_string();
        let path = url.strip_prefix(ORIGIN).unwrap_or_default();
        let files = self.files.borrow();
        if let Some(hashes) = path.strip_prefix("/v1/snapshots/chunks?hashes=") {
            let mut body = Vec::new();
            for hash in hashes.split(',') {
                let bytes = &files[&format!("/v1/snapshots/chunks/{hash}")];
                body.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
                body.extend_from_slice(bytes);
            }
            return Ok(Response::new(body));
        }
        let path = path.split('?').next().unwrap_or_default();
        Ok(match files.get(path) {
            Some(bytes) => {
                let mut answer = Response::new(bytes.clone());
                answer.headers_mut().insert(
                    "cache-control",
                    http::HeaderValue::from_static("public, max-age=3600"),
                );
                answer
            }
            None => {
                let mut answer = Response::new(Vec::new());
                *answer.status_mut() = http::StatusCode::NOT_FOUND;
                answer
            }
        })
    }
}

/// The data centre's cache, shared by every isolate made with a clone.
#[derive(Clone, Default)]
struct MemoryCache(Rc<RefCell<HashMap<String, Vec<u8>>>>);

impl Cache for MemoryCache {
    async fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.0.borrow().get(key).cloned()
    }

    fn put(&self, key: &str, bytes: &[u8], _max_age_seconds: u64) -> impl Future<Output = ()> + 'static {
        let (cache, key, bytes) = (self.clone(), key.to_string(), bytes.to_vec());
        async move {
            cache.0.borrow_mut().insert(key, bytes);
        }
    }
}

/// A clock the run moves on, past a head's lifetime, to show an isolate the next version.
#[derive(Clone, Default)]
struct SharedClock(Rc<std::cell::Cell<i64>>);

impl Clock for SharedClock {
    fn now_ms(&self) -> i64 {
        1_796_000_000_000 + self.0.get()
    }
}

fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => panic!("an in-memory call waited"),
    }
}

fn main() {
    let players: usize = std::env::args()
        .nth(1)
        .map_or(1_000_000, |n| n.parse().expect("PLAYERS is a number"));
    let names: Vec<String> = (0..players).map(|i| format!("player-{i:07}")).collect();
    let mut board = Board::from_aggregates(
        BoardRules::new(ScoreMode::Highest),
        1234,
        names.iter().enumerate().map(|(i, p)| {
            let standing = Standing {
                value: (i as i64).wrapping_mul(2_654_435_761) % 1_000_003,
                achieved_at: 1_760_000_000_000 + (i as i64 % 86_400) * 1000,
            };
            (p.as_str(), standing, "")
        }),
    )
    .expect("the board holds the players");
    let snapshot = Snapshot::build(&board);
    let manifest_hash = BoardDigest::of(&snapshot.manifest_bytes);
    // The next version as the origin publishes it: 100 players moved, a patch over the manifest.
    let mut publisher = Publisher::patching(ChunkingOptions::default(), DEFAULT_MAX_PATCH_BYTES);
    assert_eq!(publisher.publish(&board).manifest_hash, manifest_hash);
    let first_version = board.version();
    let first_head = head_of(first_version, &manifest_hash);
    for i in 0..100 {
        let player = &names[(i * 9973) % players];
        let event = ScoreEvent::new(
            &format!("move-{i}"),
            player,
            1_000_100 + i as i64,
            1_760_000_000_000,
        )
        .expect("a valid event");
        board.apply(&event).expect("applies");
    }
    let next = publisher.publish(&board);
    assert_eq!(next.patches.len(), 1, "100 moves are a patch");
    let next_head = head_of(board.version(), &next.manifest_hash);
    let mut files = HashMap::new();
    files.insert(
        format!("/v1/snapshots/manifests/{manifest_hash}"),
        snapshot.manifest_bytes.clone(),
    );
    let refs = snapshot
        .manifest
        .rank_chunks
        .iter()
        .map(|c| c.hash)
        .chain(snapshot.manifest.lookup_chunks.iter().map(|c| c.hash));
    for (hash, bytes) in refs.zip(snapshot.rank_chunks.iter().chain(&snapshot.lookup_chunks)) {
        files.insert(format!("/v1/snapshots/chunks/{hash}"), bytes.clone());
    }
    files.insert(
        format!("/v1/snapshots/manifests/{}", next.manifest_hash),
        next.manifest_bytes.clone(),
    );
    for (hash, bytes) in &next.new_parts {
        files.insert(format!("/v1/snapshots/chunks/{hash}"), bytes.clone());
    }
    let sketch = snapshot.manifest.sketch;
    files.insert(format!("/v1/snapshots/chunks/{sketch}"), snapshot.sketch.clone());
    files.insert(HEAD.into(), first_head.clone());
    let origin = &MemoryOrigin {
        files: RefCell::new(files),
        asked: RefCell::new(0),
    };
    let config = Config::from_vars(|name| match name {
        "ORIGIN_URL" => Some(ORIGIN.into()),
        "PUBLIC_READS" => Some("true".into()),
        _ => None,
    })
    .expect("the settings are valid");
    let rank_sizes: Vec<u32> = snapshot.manifest.rank_chunks.iter().map(|c| c.count).collect();
    println!(
        "{players} players: {} rank chunks ({}..{} entries), {} lookup chunks, manifest {} bytes, largest chunk {} bytes",
        rank_sizes.len(),
        rank_sizes.iter().min().unwrap_or(&0),
        rank_sizes.iter().max().unwrap_or(&0),
        snapshot.manifest.lookup_chunks.len(),
        snapshot.manifest_bytes.len(),
        snapshot
            .rank_chunks
            .iter()
            .chain(&snapshot.lookup_chunks)
            .map(Vec::len)
            .max()
            .unwrap_or(0)
    );

    let middle = &names[players / 2];
    let cursor = {
        let entry = board.player_rank(middle).expect("ranked").entry;
        let cursor = standings_core::Cursor {
            board_version: first_version,
            value: entry.value,
            achieved_at: entry.achieved_at,
            player: entry.player.into(),
        };
        let binding = standings_core::CursorBinding::of(
            &standings_core::BoardId::new("g", "m", "s", "global").expect("a valid id"),
            "all_time",
        );
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(cursor.encode(binding))
    };
    let base = "/v1/leaderboards/g/m/s/global";
    let friends = |n: usize| -> Vec<u8> {
        let ids: Vec<&str> = (0..n)
            .map(|i| names[(i * 7919 * 13) % players].as_str())
            .collect();
        serde_json::to_vec(&serde_json::json!({ "player_ids": ids })).expect("json")
    };
    let rank_players = |n: usize| {
        let mut request = get(&format!("{base}/rank-players"), None);
        *request.method_mut() = http::Method::POST;
        *request.body_mut() = friends(n);
        request
    };
    let queries: Vec<(&str, Request)> = vec![
        ("top limit=10", get(&format!("{base}/top"), Some("limit=10"))),
        ("top limit=1000", get(&format!("{base}/top"), Some("limit=1000"))),
        (
            "top limit=1000 after a cursor mid-board",
            get(
                &format!("{base}/top"),
                Some(&format!("limit=1000&cursor={cursor}")),
            ),
        ),
        ("rank", get(&format!("{base}/players/{middle}/rank"), None)),
        (
            "nearby radius=100",
            get(&format!("{base}/players/{middle}/nearby"), Some("radius=100")),
        ),
        ("rank-players 16", rank_players(16)),
        ("rank-players 31 (friends-of 30, in bundles)", rank_players(31)),
        (
            "rank-players 48 (in bundles, 96 parts: MAX_PARTS_PER_READ)",
            rank_players(48),
        ),
    ];
    let mut decode = Vec::new();
    for _ in 0..7 {
        decode.push(
            time(|| {
                assert_eq!(BoardDigest::of(&snapshot.manifest_bytes), manifest_hash);
                standings_core::Manifest::decode(&snapshot.manifest_bytes).expect("a manifest")
            })
            .0,
        );
    }
    println!("manifest hash check and decode: {}", least(&mut decode));
    let mut patch_decode = Vec::new();
    for _ in 0..7 {
        patch_decode.push(
            time(|| {
                assert_eq!(BoardDigest::of(&next.manifest_bytes), next.manifest_hash);
                Root::decode(&next.manifest_bytes).expect("a patch")
            })
            .0,
        );
    }
    println!(
        "the next version's patch ({} bytes): hash check and decode: {}",
        next.manifest_bytes.len(),
        least(&mut patch_decode)
    );
    println!(
        "| query | cold | cached | warm | next version (a patch over the manifest held) | origin fetches (cold) | answer bytes |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, request) in &queries {
        let mut cold = Vec::new();
        let mut cached = Vec::new();
        let mut warm = Vec::new();
        let mut patched = Vec::new();
        let mut fetches = 0;
        let mut bytes = 0;
        for _ in 0..7 {
            let cache = MemoryCache::default();
            let clock = SharedClock::default();
            let edge = Edge::new(origin, cache.clone(), clock.clone(), config.clone());
            let before = *origin.asked.borrow();
            let (t, answer) = time(|| block_on(edge.serve(request.clone())));
            assert_eq!(
                answer.status(),
                200,
                "{name}: {}",
                String::from_utf8_lossy(answer.body())
            );
            fetches = *origin.asked.borrow() - before;
            bytes = answer.body().len();
            cold.push(t);
            // The top page itself is cached: leave it out for the "cached" and "warm" runs of
            // top, so they measure the page being made from parts.
            cache.0.borrow_mut().retain(|k, _| !k.starts_with("/top/"));
            let other = Edge::new(origin, cache.clone(), clock.clone(), config.clone());
            cached.push(time(|| block_on(other.serve(request.clone()))).0);
            // The isolate now holds the page too: the warm run of a top page asks for one
            // entry fewer, a page it has not made, over the same parts.
            warm.push(time(|| block_on(other.serve(one_fewer(request)))).0);
            // A cursor names its version: at the next one the edge hands it to the origin.
            if name.contains("cursor") {
                continue;
            }
            // The head moves on to the patch; the isolate's held head expires.
            origin.files.borrow_mut().insert(HEAD.into(), next_head.clone());
            clock.0.set(clock.0.get() + 3_601_000);
            let (t, answer) = time(|| block_on(other.serve(request.clone())));
            assert_eq!(answer.status(), 200, "{name} at the next version");
            patched.push(t);
            origin.files.borrow_mut().insert(HEAD.into(), first_head.clone());
        }
        println!(
            "| {name} | {} | {} | {} | {} | {fetches} | {bytes} |",
            least(&mut cold),
            least(&mut cached),
            least(&mut warm),
            if patched.is_empty() {
                "(to the origin)".to_string()
            } else {
                least(&mut patched)
            }
        );
    }
    let cache = MemoryCache::default();
    let edge = Edge::new(origin, cache.clone(), SharedClock::default(), config);
    block_on(edge.serve(queries[1].1.clone()));
    let mut hits = Vec::new();
    for _ in 0..20 {
        hits.push(time(|| block_on(edge.serve(queries[1].1.clone()))).0);
    }
    println!(
        "| top limit=1000, page cached (HIT) | | | {} | | 0 | |",
        least(&mut hits)
    );
}

/// The head of the board at `version`, naming `root`.
fn head_of(version: u64, root: &BoardDigest) -> Vec<u8> {
    format!(
        r#"{{"period":"all_time","period_key":"all_time","period_start":null,"period_end":null,"board_version":{version},"manifest":"{root}","published_at":"2026-12-01T00:00:00Z","interval_ms":1000}}"#
    )
    .into_bytes()
}

/// A top request for one entry fewer (`limit=N` -> `limit=N-1`); other requests as they are.
fn one_fewer(request: &Request) -> Request {
    let mut request = request.clone();
    if let Some(query) = request.uri().query()
        && let Some(rest) = query.strip_prefix("limit=")
    {
        let (limit, tail) = rest.split_once('&').map_or((rest, ""), |(l, t)| (l, t));
        let fewer = limit.parse::<usize>().map_or(1, |l| l.saturating_sub(1).max(1));
        let tail = if tail.is_empty() {
            String::new()
        } else {
            format!("&{tail}")
        };
        let path = request.uri().path().to_string();
        *request.uri_mut() = format!("{path}?limit={fewer}{tail}")
            .parse()
            .expect("a path and query");
    }
    request
}

/// A `GET` of `path` and `query`, as a caller sends it.
fn get(path: &str, query: Option<&str>) -> Request {
    let target = match query {
        Some(query) => format!("{path}?{query}"),
        None => path.to_string(),
    };
    let mut request = Request::new(Vec::new());
    *request.uri_mut() = target.parse().expect("a path and query");
    request
}

fn time<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let out = f();
    (start.elapsed(), out)
}

/// The least of the runs: the machine is shared, and the least is the work itself.
fn least(times: &mut [Duration]) -> String {
    times.sort();
    format!("{:.2} ms", times[0].as_secs_f64() * 1000.0)
}
