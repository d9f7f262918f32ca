//! The edge against a fake origin that serves real snapshots of core boards: every read kind
//! answers the bytes the core's JSON writers make from the `Board` itself (display names,
//! countries and metadata included; an anonymous player's never), and the caching, stale,
//! forwarding, auth and budget rules hold.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;
use standings_core::json::{
    PeriodFields, write_friends_answer, write_interval_answer, write_nearby_answer, write_rank_answer,
    write_segment_friends_answer, write_segment_nearby_answer, write_segment_rank_answer,
    write_segment_top_answer, write_top_answer,
};
use standings_core::profile::Metadata;
use standings_core::{
    Audience, Board, BoardId, BoardRules, Cursor, CursorBinding, EventDimension, Extras, Profile, Publisher,
    RankedEntry, ScoreEvent, ScoreMode, SegmentKey, SegmentSpec, Standing,
};

use crate::auth::sign_jwt;
use crate::fake::{EDGE_TOKEN, FakeCache, FakeClock, FakeOrigin, ORIGIN, block_on};
use crate::platform::{Request, Response};
use crate::problem::{Code, Problem};
use crate::{Config, Edge, Outcome};

const NOW: i64 = 1_792_000_000_000;
const PUBLISHED: i64 = NOW - 250;
const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
const BOARD: &str = "g/m/s/global";
const ALL_TIME: PeriodFields<'static> = PeriodFields {
    kind: "all_time",
    key: "all_time",
    start_ms: None,
    end_ms: None,
};
const DAILY: PeriodFields<'static> = PeriodFields {
    kind: "daily",
    key: "2026-10-13",
    start_ms: Some(1_791_849_600_000),
    end_ms: Some(1_791_936_000_000),
};

type TestEdge = Edge<Rc<FakeOrigin>, Rc<FakeCache>, Rc<FakeClock>>;

/// One data centre: an origin, the shared cache, a clock, and an isolate's edge.
struct World {
    origin: Rc<FakeOrigin>,
    cache: Rc<FakeCache>,
    clock: Rc<FakeClock>,
    config: Config,
    edge: TestEdge,
}

impl World {
    fn new(vars: &[(&str, &str)]) -> World {
        let mut all = vec![
            ("ORIGIN_URL", ORIGIN),
            ("EDGE_TOKEN", EDGE_TOKEN),
            ("PLAYER_JWT_HS256_SECRET", std::str::from_utf8(KEY).unwrap()),
            ("PUBLIC_READS", "true"),
        ];
        for (name, value) in vars {
            all.retain(|(n, _)| n != name);
            all.push((name, value));
        }
        let config =
            Config::from_vars(|name| all.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()))
                .unwrap();
        let origin = Rc::new(FakeOrigin::default());
        let cache = Rc::new(FakeCache::default());
        let clock = Rc::new(FakeClock(Cell::new(NOW)));
        let edge = Edge::new(origin.clone(), cache.clone(), clock.clone(), config.clone());
        World {
            origin,
            cache,
            clock,
            config,
            edge,
        }
    }

    /// Another isolate of the same data centre: the same origin, cache and clock, nothing held.
    fn another_isolate(&self) -> TestEdge {
        Edge::new(
            self.origin.clone(),
            self.cache.clone(),
            self.clock.clone(),
            self.config.clone(),
        )
    }

    fn send(&self, method: &str, target: &str, token: Option<&str>, body: &[u8]) -> Answer {
        send(&self.edge, method, target, token, body)
    }

    fn get(&self, target: &str) -> Answer {
        self.send("GET", target, None, b"")
    }
}

/// An answer of the edge as the tests read it.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: http::HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    /// The first value of the header `name`, as text.
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

impl From<Response> for Answer {
    fn from(answer: Response) -> Answer {
        let (parts, body) = answer.into_parts();
        Answer {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        }
    }
}

/// A request as a caller sends it to the edge: `target` is the path and query.
fn request(method: &str, target: &str, token: Option<&str>, body: &[u8]) -> Request {
    let mut request = Request::new(body.to_vec());
    *request.method_mut() = http::Method::from_bytes(method.as_bytes()).unwrap();
    *request.uri_mut() = format!("https://edge.test{target}").parse().unwrap();
    let headers = request.headers_mut();
    headers.insert("content-type", http::HeaderValue::from_static("application/json"));
    if let Some(token) = token {
        headers.insert(
            "authorization",
            http::HeaderValue::try_from(format!("Bearer {token}")).unwrap(),
        );
    }
    request
}

fn send(edge: &TestEdge, method: &str, target: &str, token: Option<&str>, body: &[u8]) -> Answer {
    block_on(edge.serve(request(method, target, token, body))).into()
}

/// A board of `n` players with many ties, some ids that JSON escapes, at `version`; every third
/// player has a display name (some that JSON escapes, some not ASCII), every fifth a country,
/// every seventh metadata as it was sent.
fn board(n: usize, version: u64, shift: i64) -> Board {
    let mut players: Vec<String> = (0..n).map(|i| format!("p{i:04}")).collect();
    players.extend(["quote\"d", "ünï-cödé", "back\\slash"].map(String::from));
    let aggregates: Vec<(String, Standing)> = players
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let standing = Standing {
                value: (i as i64 * 7919 + shift) % 997,
                achieved_at: 1_760_000_000_000 + (i as i64 * 31 % 5000) * 125,
            };
            (p, standing)
        })
        .collect();
    let mut board = Board::from_aggregates(
        BoardRules::new(ScoreMode::Highest),
        version,
        aggregates.iter().map(|(p, s)| (p.as_str(), *s, "")),
    )
    .unwrap();
    for (i, (player, _)) in aggregates.iter().enumerate() {
        let profile = Profile {
            display_name: (i % 3 == 0).then(|| format!("Zoë \"{i}\" 🚀\\").into()),
            country: (i % 5 == 0).then(|| "DE".into()),
            anonymous: false,
        };
        let metadata = (i % 7 == 0).then(|| {
            Arc::new(Metadata {
                event_id: format!("e{i}").into(),
                json: format!(r#"{{"lap": {i}, "car":"R\u00e9"}}"#).into(),
                segments: None,
            })
        });
        let extras = Extras {
            profile: (!profile.is_empty()).then(|| Arc::new(profile)),
            metadata,
        };
        board.restore_extras(player, extras);
    }
    board
}

fn binding(period: &PeriodFields<'_>) -> CursorBinding {
    CursorBinding::of(&BoardId::new("g", "m", "s", "global").unwrap(), period.key)
}

fn cursor_text(cursor: &Cursor, period: &PeriodFields<'_>) -> String {
    URL_SAFE_NO_PAD.encode(cursor.encode(binding(period)))
}

fn expected_top(
    board: &Board,
    period: &PeriodFields<'_>,
    limit: usize,
    cursor: Option<&Cursor>,
) -> (Vec<u8>, Option<Cursor>) {
    let page = board.top(limit, cursor).unwrap();
    let next = page.next_cursor.as_ref().map(|c| cursor_text(c, period));
    let mut out = Vec::new();
    write_top_answer(&mut out, period, &page, next.as_deref());
    (out, page.next_cursor.clone())
}

fn jwt(sub: &str, games: &[&str], exp: i64) -> String {
    sign_jwt(KEY, &json!({"sub": sub, "exp": exp, "games": games}))
}

fn text(answer: &Answer) -> String {
    String::from_utf8_lossy(&answer.body).into_owned()
}

fn detail(answer: &Answer) -> (u16, String, String) {
    let problem: serde_json::Value =
        serde_json::from_slice(&answer.body).unwrap_or_else(|_| panic!("{}", text(answer)));
    (
        answer.status,
        problem["code"].as_str().unwrap_or_default().to_string(),
        problem["detail"].as_str().unwrap_or_default().to_string(),
    )
}

const TOP: &str = "/v1/leaderboards/g/m/s/global/top";

/// Every top page, followed by its cursors to the end, equals the board's own page written
/// by the core, for several limits and both an all-time and a daily instance.
#[test]
fn top_pages_equal_the_boards() {
    let world = World::new(&[]);
    let all_time = board(3000, 41, 0);
    let daily = board(700, 9, 3);
    world.origin.publish(BOARD, "", &all_time, &ALL_TIME, PUBLISHED);
    world
        .origin
        .publish(BOARD, "period=daily", &daily, &DAILY, PUBLISHED);
    for (b, period, query) in [(&all_time, ALL_TIME, ""), (&daily, DAILY, "period=daily&")] {
        for limit in [1, 10, 333, 1000] {
            let mut cursor: Option<Cursor> = None;
            let mut pages = 0;
            loop {
                let mut target = format!("{TOP}?{query}limit={limit}");
                if let Some(c) = &cursor {
                    target.push_str(&format!("&cursor={}", cursor_text(c, &period)));
                }
                let answer = world.get(&target);
                let (expected, next) = expected_top(b, &period, limit, cursor.as_ref());
                assert_eq!(text(&answer), String::from_utf8(expected).unwrap(), "{target}");
                assert_eq!(
                    answer.header("x-standings-board-version"),
                    Some(b.version().to_string().as_str())
                );
                assert_eq!(answer.header("x-standings-snapshot-age-ms"), Some("250"));
                pages += 1;
                match next {
                    Some(next) if pages < 8 => cursor = Some(next),
                    _ => break,
                }
            }
        }
    }
    let (expected, _) = expected_top(&all_time, &ALL_TIME, 10, None);
    assert_eq!(world.get(TOP).body, expected, "limit defaults to 10");
}

/// `approximate=interval` answers byte for byte as the origin's board does, from the lookup
/// chunk and the sketch: no rank chunk is fetched.
#[test]
fn rank_intervals_equal_the_boards_without_a_rank_chunk() {
    let world = World::new(&[]);
    let b = board(25_000, 41, 0);
    world.origin.publish(BOARD, "", &b, &ALL_TIME, PUBLISHED);
    let base = "/v1/leaderboards/g/m/s/global";
    for i in (0..25_000).step_by(331).chain([0, 1, 24_999]) {
        let player = format!("p{i:04}");
        let found = b.rank_interval(&player).unwrap();
        assert!(found.interval.width() <= standings_core::interval::step(b.total_players()));
        let mut expected = Vec::new();
        write_interval_answer(&mut expected, &ALL_TIME, &found);
        let answer = world.get(&format!("{base}/players/{player}/rank?approximate=interval"));
        assert_eq!(text(&answer), String::from_utf8(expected).unwrap(), "{player}");
    }
    let snapshot = standings_core::Snapshot::build_with(&b, crate::fake::SMALL_CHUNKS);
    for chunk in &snapshot.manifest.rank_chunks {
        assert_eq!(
            world.origin.count(&chunk.hash.to_string()),
            0,
            "a rank chunk was fetched"
        );
    }
    assert!(world.origin.count(&snapshot.manifest.sketch.to_string()) > 0);
}

/// Rank, nearby, friends-of and rank-players equal the core's answers from the board.
#[test]
fn player_reads_equal_the_boards() {
    let world = World::new(&[]);
    let b = board(3000, 41, 0);
    world.origin.publish(BOARD, "", &b, &ALL_TIME, PUBLISHED);
    let base = "/v1/leaderboards/g/m/s/global";
    for i in (0..3000).step_by(97).chain([0, 1, 2999]) {
        let player = format!("p{i:04}");
        let mut expected = Vec::new();
        write_rank_answer(&mut expected, &ALL_TIME, &b.player_rank(&player).unwrap());
        let answer = world.get(&format!("{base}/players/{player}/rank"));
        assert_eq!(text(&answer), String::from_utf8(expected).unwrap());
        for radius in [0, 1, 5, 100] {
            let window = b.nearby(&player, radius).unwrap();
            let mut expected = Vec::new();
            write_nearby_answer(&mut expected, &ALL_TIME, b.version(), window.iter().copied());
            let answer = world.get(&format!("{base}/players/{player}/nearby?radius={radius}"));
            assert_eq!(
                text(&answer),
                String::from_utf8(expected).unwrap(),
                "{player} {radius}"
            );
        }
    }
    let answer = world.get(&format!("{base}/players/%C3%BCn%C3%AF-c%C3%B6d%C3%A9/rank"));
    let mut expected = Vec::new();
    write_rank_answer(&mut expected, &ALL_TIME, &b.player_rank("ünï-cödé").unwrap());
    assert_eq!(
        answer.body, expected,
        "a percent-encoded id is decoded as the origin decodes it"
    );

    world.origin.friends.borrow_mut().insert(
        "p0007".into(),
        vec![
            "p0100".into(),
            "nobody".into(),
            "p2999".into(),
            "quote\"d".into(),
            "p0100".into(),
        ],
    );
    let token = jwt("p0007", &["g"], NOW / 1000 + 600);
    for include_self in [false, true] {
        let mut players: Vec<&str> = vec!["p0100", "nobody", "p2999", "quote\"d", "p0100"];
        if include_self {
            players.insert(0, "p0007");
        }
        let mut expected = Vec::new();
        write_friends_answer(&mut expected, &ALL_TIME, &b.rank_among(&players));
        let answer = world.send(
            "GET",
            &format!("{base}/friends-of/p0007?include_self={include_self}"),
            Some(&token),
            b"",
        );
        assert_eq!(text(&answer), String::from_utf8(expected).unwrap());
    }
    let asked = ["p0001", "ünï-cödé", "ghost", "p0001", "p1234", "back\\slash"];
    let mut expected = Vec::new();
    write_friends_answer(&mut expected, &ALL_TIME, &b.rank_among(&asked));
    let body = serde_json::to_vec(&json!({ "player_ids": asked })).unwrap();
    let answer = world.send("POST", &format!("{base}/rank-players"), None, &body);
    assert_eq!(text(&answer), String::from_utf8(expected).unwrap());
}

/// A player who shows anonymously shows nothing besides the standing at the edge, to the
/// public and a player alike (snapshots carry the public form): rank, nearby, a top page and
/// rank-players are the core's answers for the public; the game's service token is the origin's
/// to answer.
#[test]
fn an_anonymous_player_shows_only_the_standing() {
    let world = World::new(&[]);
    let mut b = board(300, 5, 0);
    let hidden = "p0003";
    b.restore_extras(
        hidden,
        Extras {
            profile: Some(Arc::new(Profile {
                display_name: Some("Hidden Hana".into()),
                country: Some("SE".into()),
                anonymous: true,
            })),
            metadata: Some(Arc::new(Metadata {
                event_id: "e3".into(),
                json: r#"{"secret":true}"#.into(),
                segments: None,
            })),
        },
    );
    world.origin.publish(BOARD, "", &b, &ALL_TIME, PUBLISHED);
    world.origin.tokens.borrow_mut().insert(
        "svc".into(),
        r#"{"active":true,"role":"service","games":["g"],"player_id":null,"cache_seconds":60}"#.into(),
    );
    /// The entry as the public sees it.
    fn public(mut entry: RankedEntry<'_>) -> RankedEntry<'_> {
        entry.info = entry.info.for_audience(Audience::Public);
        entry
    }
    let mut found = b.player_rank(hidden).unwrap();
    assert!(found.entry.info.anonymous, "the board holds the trusted form");
    found.entry = public(found.entry);
    let mut rank = Vec::new();
    write_rank_answer(&mut rank, &ALL_TIME, &found);
    let window: Vec<_> = b.nearby(hidden, 2).unwrap().into_iter().map(public).collect();
    let mut nearby = Vec::new();
    write_nearby_answer(&mut nearby, &ALL_TIME, b.version(), window);
    let mut players = b.rank_among(&[hidden, "p0006"]);
    for entry in &mut players.entries {
        entry.info = entry.info.for_audience(Audience::Public);
    }
    let mut rank_players = Vec::new();
    write_friends_answer(&mut rank_players, &ALL_TIME, &players);
    let base = "/v1/leaderboards/g/m/s/global";
    let body = serde_json::to_vec(&json!({ "player_ids": [hidden, "p0006"] })).unwrap();
    let player = jwt("p0001", &["g"], NOW / 1000 + 600);
    for token in [None, Some(player.as_str())] {
        let read = |target: &str| text(&world.send("GET", target, token, b""));
        assert_eq!(
            read(&format!("{base}/players/{hidden}/rank")),
            String::from_utf8(rank.clone()).unwrap()
        );
        assert_eq!(
            read(&format!("{base}/players/{hidden}/nearby?radius=2")),
            String::from_utf8(nearby.clone()).unwrap()
        );
        let top = read(&format!("{TOP}?limit=1000"));
        assert!(top.contains(&format!("\"player_id\":\"{hidden}\"")) && top.contains("\"display_name\":"));
        for hidden_text in ["Hidden Hana", "\"SE\"", "secret", "anonymous"] {
            assert!(!top.contains(hidden_text), "{token:?}: {hidden_text} in {top}");
        }
        let answer = world.send("POST", &format!("{base}/rank-players"), token, &body);
        assert_eq!(text(&answer), String::from_utf8(rank_players.clone()).unwrap());
    }
    // The service token sees the anonymous player's fields, which only the origin holds: its
    // reads are handed to the origin, whatever the snapshot could answer.
    let answer = world.send("GET", &format!("{base}/players/{hidden}/rank"), Some("svc"), b"");
    assert_eq!(answer.header("x-standings-fallback"), Some("trusted-caller"));
    assert!(
        text(&answer).contains("\"echo\":\"GET\""),
        "the origin answered: {}",
        text(&answer)
    );
}

/// A read that hands back a write's position is the origin's to answer (only it can wait for
/// its boards to reach the position), by the parameter or the header; one without is the edge's.
#[test]
fn a_read_with_a_position_goes_to_the_origin() {
    let world = World::new(&[]);
    world
        .origin
        .publish(BOARD, "", &board(50, 5, 0), &ALL_TIME, PUBLISHED);
    let plain = world.send("GET", TOP, None, b"");
    assert_eq!(plain.header("x-standings-fallback"), None);
    let by_query = world.send(
        "GET",
        &format!("{TOP}?limit=3&min_position=p1-00000000-7"),
        None,
        b"",
    );
    assert_eq!(by_query.header("x-standings-fallback"), Some("min-position"));
    assert!(
        text(&by_query).contains("\"echo\":\"GET\""),
        "{}",
        text(&by_query)
    );
    let mut asked = request("GET", TOP, None, b"");
    asked.headers_mut().insert(
        "x-standings-min-position",
        http::HeaderValue::from_static("p1-00000000-7"),
    );
    let by_header: Answer = block_on(world.edge.serve(asked)).into();
    assert_eq!(by_header.header("x-standings-fallback"), Some("min-position"));
    let stats: serde_json::Value = serde_json::from_slice(&world.get("/edge/stats").body).unwrap();
    assert_eq!(stats["fallbacks"]["min_position"], 2);
}

/// A board that declares country and platform segments: every fifth player in `DE` (as
/// [`board`] has it), every second on a platform, `ios` or `pc` by turns.
fn segment_board() -> Board {
    let mut b = board(300, 5, 0);
    for i in (0..300).step_by(2) {
        let player = format!("p{i:04}");
        let mut extras = b.extras_of(&player);
        let platform = if i % 4 == 0 { "ios" } else { "pc" };
        let json = extras
            .metadata
            .as_ref()
            .map_or_else(|| "".into(), |m| m.json.clone());
        extras.metadata = Some(Arc::new(Metadata {
            event_id: format!("e{i}").into(),
            json,
            segments: Some(format!("platform:{platform}").into()),
        }));
        b.restore_extras(&player, extras);
    }
    b.declare_segments(SegmentSpec {
        country: true,
        events: vec![EventDimension {
            name: "platform".into(),
            values: vec!["ios".into(), "pc".into()],
        }],
    });
    b
}

/// Reads within a segment answer from the snapshot byte for byte as the board answers them,
/// for every read kind (pages with their cursors, rank, nearby, rank-players), and refuse in
/// the origin's words; none goes to the origin.
#[test]
fn segment_reads_answer_from_the_snapshot_as_the_board() {
    let world = World::new(&[]);
    let b = segment_board();
    world.origin.publish(BOARD, "", &b, &ALL_TIME, PUBLISHED);
    let base = "/v1/leaderboards/g/m/s/global";
    for raw in ["country:DE", "platform:ios", "platform:pc", "country:FR"] {
        let (dimension, value) = raw.split_once(':').unwrap();
        let key = SegmentKey { dimension, value };
        let mut cursor: Option<Cursor> = None;
        for _ in 0..3 {
            let page = b.segment_top(&key, 7, cursor.as_ref()).unwrap();
            let next = page.next_cursor.as_ref().map(|c| cursor_text(c, &ALL_TIME));
            let mut expected = Vec::new();
            write_segment_top_answer(&mut expected, &ALL_TIME, &key, &page, next.as_deref());
            let target = match &cursor {
                None => format!("{TOP}?limit=7&segment={raw}"),
                Some(c) => format!("{TOP}?limit=7&segment={raw}&cursor={}", cursor_text(c, &ALL_TIME)),
            };
            let answer = world.get(&target);
            assert_eq!(answer.header("x-standings-fallback"), None, "{target}");
            assert_eq!(text(&answer), String::from_utf8(expected).unwrap(), "{target}");
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        for i in [0usize, 2, 4, 5, 10, 13, 150, 298, 299] {
            let player = format!("p{i:04}");
            let target = format!("{base}/players/{player}/rank?segment={raw}");
            let answer = world.get(&target);
            match b.segment_rank(&key, &player) {
                Some(found) => {
                    let mut expected = Vec::new();
                    write_segment_rank_answer(&mut expected, &ALL_TIME, &key, &found);
                    assert_eq!(text(&answer), String::from_utf8(expected).unwrap(), "{target}");
                }
                None => assert_eq!(
                    detail(&answer),
                    (
                        404,
                        "PLAYER_NOT_RANKED".into(),
                        format!("player \"{player}\" has no score in segment {raw} of board g/m/s/global")
                    ),
                    "{target}"
                ),
            }
            let target = format!("{base}/players/{player}/nearby?radius=3&segment={raw}");
            let answer = world.get(&target);
            match b.segment_nearby(&key, &player, 3) {
                Some(window) => {
                    let mut expected = Vec::new();
                    write_segment_nearby_answer(&mut expected, &ALL_TIME, &key, b.version(), &window);
                    assert_eq!(text(&answer), String::from_utf8(expected).unwrap(), "{target}");
                }
                None => assert_eq!(detail(&answer).0, 404, "{target}"),
            }
        }
        let asked = ["p0000", "p0004", "p0005", "p0010", "ghost", "p0150"];
        let mut expected = Vec::new();
        write_segment_friends_answer(&mut expected, &ALL_TIME, &key, &b.segment_among(&key, &asked));
        let body = serde_json::to_vec(&json!({ "player_ids": asked })).unwrap();
        let answer = world.send("POST", &format!("{base}/rank-players?segment={raw}"), None, &body);
        assert_eq!(text(&answer), String::from_utf8(expected).unwrap(), "{raw}");
    }
    let bad_request = |d: &str| (400, "INVALID_REQUEST".to_string(), d.to_string());
    assert_eq!(
        detail(&world.get(&format!("{TOP}?segment=region:eu"))),
        bad_request(
            "segment=\"region:eu\": board g/m/s/global ranks no segments by \"region\"; its dimensions: country, platform"
        )
    );
    assert_eq!(
        detail(&world.get(&format!("{TOP}?segment=platform:switch"))),
        bad_request("segment=\"platform:switch\": platform is one of ios, pc on board g/m/s/global")
    );
    assert_eq!(
        detail(&world.get(&format!(
            "{base}/players/p0000/rank?segment=country:DE&approximate=interval"
        ))),
        bad_request("approximate=interval is not answered within a segment; ask for the exact rank")
    );
    let stats: serde_json::Value = serde_json::from_slice(&world.get("/edge/stats").body).unwrap();
    assert_eq!(stats["fallbacks"]["segment"], 0);
}

/// A version published as a patch does not restate the chunks' segment members, so a read
/// within a segment of it is the origin's (a board that declares segments is published
/// whole, so only a board that declares none is patched); the same read without the segment
/// is the edge's.
#[test]
fn a_segment_read_of_a_patched_version_goes_to_the_origin() {
    let world = World::new(&[]);
    let mut b = board(3000, 41, 0);
    let mut publisher = Publisher::patching(crate::fake::SMALL_CHUNKS, 64 * 1024);
    world
        .origin
        .publish_with(BOARD, &mut publisher, &b, &ALL_TIME, PUBLISHED);
    let event = ScoreEvent::new("move", "p0071", 2_000, NOW).unwrap();
    b.apply(&event).unwrap();
    let second = world
        .origin
        .publish_with(BOARD, &mut publisher, &b, &ALL_TIME, PUBLISHED + 1_000);
    assert!(second.patch().is_some());
    world.clock.advance(1_001);
    let base = TOP.trim_end_matches("/top");
    for path in [
        format!("{TOP}?segment=country:DE"),
        format!("{base}/players/p1/rank?segment=country:DE"),
        format!("{base}/players/p1/nearby?segment=country:DE"),
    ] {
        let answer = world.get(&path);
        assert_eq!(answer.header("x-standings-fallback"), Some("segment"), "{path}");
        assert!(
            text(&answer).contains("\"echo\":\"GET\""),
            "{path}: {}",
            text(&answer)
        );
    }
    let plain = world.get(&format!("{base}/players/p0071/rank"));
    assert_eq!(plain.header("x-standings-fallback"), None);
    let stats: serde_json::Value = serde_json::from_slice(&world.get("/edge/stats").body).unwrap();
    assert_eq!(stats["fallbacks"]["segment"], 3);
}

/// Parameter errors are the origin's, in its order and words; board and period errors are the
/// origin's own answer to the head.
#[test]
fn errors_are_the_origins() {
    let world = World::new(&[]);
    let b = board(300, 5, 0);
    world.origin.publish(BOARD, "", &b, &ALL_TIME, PUBLISHED);
    let base = "/v1/leaderboards/g/m/s/global";
    let bad_request = |d: &str| (400, "INVALID_REQUEST".to_string(), d.to_string());
    assert_eq!(
        detail(&world.get(&format!("{TOP}?limit=0"))),
        bad_request("limit=\"0\" is not valid; expected 1 to 1000")
    );
    assert_eq!(
        detail(&world.get(&format!("{TOP}?limit=x&limit=1001"))),
        bad_request("limit=\"1001\" is not valid; expected 1 to 1000")
    );
    assert_eq!(
        detail(&world.get(&format!("{base}/players/p0001/nearby?radius=101"))),
        bad_request("radius=\"101\" is not valid; expected 0 to 100")
    );
    assert_eq!(
        detail(&world.get(&format!("{TOP}?cursor=%%%"))),
        (
            400,
            "INVALID_CURSOR".into(),
            "the cursor is not one this service made".into()
        )
    );
    let other = URL_SAFE_NO_PAD.encode(b.top(1, None).unwrap().next_cursor.unwrap().encode(
        CursorBinding::of(&BoardId::new("g", "m", "s", "eu").unwrap(), "all_time"),
    ));
    assert_eq!(
        detail(&world.get(&format!("{TOP}?cursor={other}"))),
        (
            400,
            "INVALID_CURSOR".into(),
            "the cursor was made for another board or period, not g/m/s/global in all_time; page this one from its first page".into()
        )
    );
    assert_eq!(
        detail(&world.get(&format!("{base}/players/ghost/rank"))),
        (
            404,
            "PLAYER_NOT_RANKED".into(),
            "player \"ghost\" has no score on board g/m/s/global".into()
        )
    );
    assert_eq!(detail(&world.get(&format!("{base}/players/ghost/nearby"))).0, 404);
    assert_eq!(
        detail(&world.get(&format!("{base}/players/a%01b/rank"))),
        bad_request("player_id holds a control character at byte 1")
    );
    let token = jwt("p0001", &["g"], NOW / 1000 + 600);
    assert_eq!(
        detail(&world.send(
            "GET",
            &format!("{base}/friends-of/p0001?include_self=yes"),
            Some(&token),
            b""
        )),
        bad_request("include_self=\"yes\" is not valid; expected true or false")
    );
    let many: Vec<String> = (0..1001).map(|i| format!("p{i}")).collect();
    let body = serde_json::to_vec(&json!({ "player_ids": many })).unwrap();
    assert_eq!(
        detail(&world.send("POST", &format!("{base}/rank-players"), None, &body)),
        (
            413,
            "PAYLOAD_TOO_LARGE".into(),
            "at most 1000 players per call; this one has 1001".into()
        )
    );
    let unknown = world.get("/v1/leaderboards/g/m/s/nowhere/top");
    assert_eq!(detail(&unknown).1, "UNKNOWN_BOARD");
    assert_eq!(unknown.header("content-type"), Some("application/problem+json"));
    assert_eq!(detail(&world.get(&format!("{TOP}?period=x"))).0, 400);
    // A body the edge does not read as {"player_ids": [...]} is the origin's to refuse.
    let before = world.origin.count("/rank-players");
    let answer = world.send(
        "POST",
        &format!("{base}/rank-players"),
        None,
        br#"{"player_ids":[1]}"#,
    );
    assert_eq!(world.origin.count("/rank-players"), before + 1);
    assert!(text(&answer).contains("\"echo\":\"POST\""));
    assert_eq!(world.edge.stats().fallbacks.body, 1);
}

/// The read contract's table of bad parameters (`standings_core::contract::query`), fed
/// through the edge's whole read path: every answer is the contract's problem document, byte
/// for byte. The origin and the browser package feed the same table, so a tier that drifts
/// fails its tests.
#[test]
fn the_contracts_bad_parameters_are_refused_in_its_words() {
    let world = World::new(&[]);
    world
        .origin
        .publish(BOARD, "", &board(300, 5, 0), &ALL_TIME, PUBLISHED);
    let base = "/v1/leaderboards/g/m/s/global";
    let token = jwt("p0001", &["g"], NOW / 1000 + 600);
    for (read, query, status, code, detail) in standings_core::contract::query::BAD_PARAMETERS {
        let target = match *read {
            "top" => format!("{TOP}?{query}"),
            "nearby" => format!("{base}/players/p0001/nearby?{query}"),
            "rank" => format!("{base}/players/p0001/rank?{query}"),
            "friends" => format!("{base}/friends-of/p0001?{query}"),
            other => panic!("no read {other}"),
        };
        let answer = world.send("GET", &target, Some(&token), b"");
        assert_eq!(answer.status, *status, "{target}: {}", text(&answer));
        assert_eq!(
            answer.header("content-type"),
            Some("application/problem+json"),
            "{target}"
        );
        assert_eq!(
            text(&answer),
            String::from_utf8(Problem::new(Code::new(*status, code), *detail).body()).unwrap(),
            "{target}"
        );
    }
    assert_eq!(
        world.origin.count("/v1/leaderboards/"),
        0,
        "the edge refused them all itself"
    );
}

/// A repeated top page is a Cache API HIT, in this isolate and in another; a new version
/// misses by itself; parts come from the Cache API in a new isolate, not from the origin.
#[test]
fn top_pages_and_parts_are_cached() {
    let world = World::new(&[]);
    world
        .origin
        .publish(BOARD, "", &board(3000, 41, 0), &ALL_TIME, PUBLISHED);
    let first = world.get(&format!("{TOP}?limit=50"));
    assert_eq!(first.header("x-standings-cache"), Some("MISS"));
    let second = world.get(&format!("{TOP}?limit=50"));
    assert_eq!(second.header("x-standings-cache"), Some("HIT"));
    assert_eq!(first.body, second.body);
    let stats = world.edge.stats();
    assert_eq!((stats.cache.top_hits, stats.cache.top_misses), (1, 1));
    assert_eq!(
        stats.cache.top_memory_hits, 1,
        "the isolate holds the page it made"
    );
    let elsewhere = another_isolate_reads(&world, &format!("{TOP}?limit=50"));
    assert_eq!(elsewhere.header("x-standings-cache"), Some("HIT"));
    assert_eq!(
        elsewhere.body, first.body,
        "another isolate finds the page in the Cache API"
    );
    assert_eq!(stats.origin_fetches.head, 1, "the head is held for its max-age");

    let rank = "/v1/leaderboards/g/m/s/global/players/p0042/rank";
    assert_eq!(world.get(rank).header("x-standings-cache"), Some("MISS"));
    assert_eq!(world.get(rank).header("x-standings-cache"), Some("HIT"));
    let chunks = world.origin.count("/v1/snapshots/chunks/");
    let isolate = another_isolate_reads(&world, rank);
    assert_eq!(isolate.header("x-standings-cache"), Some("HIT"));
    assert_eq!(
        world.origin.count("/v1/snapshots/chunks/"),
        chunks,
        "another isolate finds the parts in the Cache API"
    );

    let next = board(3000, 42, 5);
    world
        .origin
        .publish(BOARD, "", &next, &ALL_TIME, PUBLISHED + 1000);
    world.clock.advance(1001);
    let moved = world.get(&format!("{TOP}?limit=50"));
    assert_eq!(moved.header("x-standings-cache"), Some("MISS"));
    assert_eq!(moved.header("x-standings-board-version"), Some("42"));
    assert_eq!(moved.body, expected_top(&next, &ALL_TIME, 50, None).0);
}

fn another_isolate_reads(world: &World, target: &str) -> Answer {
    send(&world.another_isolate(), "GET", target, None, b"")
}

/// With the origin down, reads answer from the last snapshot, marked stale, in this isolate
/// and (through the Cache API) in a new one; writes and unheld reads answer 503; when the
/// origin is back the next head makes answers fresh again.
#[test]
fn origin_down_answers_stale_and_refuses_writes() {
    let world = World::new(&[]);
    let b = board(500, 7, 0);
    world.origin.publish(BOARD, "", &b, &ALL_TIME, PUBLISHED);
    let rank = "/v1/leaderboards/g/m/s/global/players/p0003/rank";
    let fresh = world.get(rank);
    assert_eq!(fresh.header("x-standings-stale"), None);
    world
        .origin
        .friends
        .borrow_mut()
        .insert("p0003".into(), vec!["p0004".into()]);
    let token = jwt("p0003", &["g"], NOW / 1000 + 600);
    let friends = "/v1/leaderboards/g/m/s/global/friends-of/p0003";
    let fresh_friends = world.send("GET", friends, Some(&token), b"");
    assert_eq!(fresh_friends.status, 200);
    world.origin.down.set(true);
    world.clock.advance(5_000);
    let stale = world.get(rank);
    let mut expected = fresh.body.clone();
    expected.pop();
    expected.extend_from_slice(b",\"stale\":true}");
    assert_eq!(text(&stale), String::from_utf8(expected).unwrap());
    assert_eq!(stale.header("x-standings-stale"), Some("true"));
    assert_eq!(stale.header("x-standings-snapshot-age-ms"), Some("5250"));
    let isolate = another_isolate_reads(&world, rank);
    assert_eq!(
        isolate.body, stale.body,
        "another isolate reads the head kept in the Cache API"
    );
    let stale_friends = world.send("GET", friends, Some(&token), b"");
    assert_eq!(stale_friends.header("x-standings-stale"), Some("true"));
    let mut marked = fresh_friends.body.clone();
    marked.pop();
    marked.extend_from_slice(b",\"stale\":true}");
    assert_eq!(
        stale_friends.body, marked,
        "the friend list held is answered, marked"
    );

    let write = world.send("POST", "/v1/score-events", Some("svc"), b"{}");
    assert_eq!(detail(&write).0, 503);
    assert_eq!(detail(&write).1, "ORIGIN_UNAVAILABLE");
    // Players whose parts were never fetched cannot be answered: nothing is invented.
    let mut refused = 0;
    for i in (100..500).step_by(37) {
        let answer = world.get(&format!("/v1/leaderboards/g/m/s/global/players/p{i:04}/rank"));
        if answer.status == 200 {
            assert_eq!(answer.header("x-standings-stale"), Some("true"));
        } else {
            assert_eq!(detail(&answer).1, "ORIGIN_UNAVAILABLE");
            refused += 1;
        }
    }
    assert!(refused > 0);
    let never = world.get("/v1/leaderboards/g/m/s/other/top");
    assert_eq!(detail(&never).1, "ORIGIN_UNAVAILABLE");
    assert!(world.edge.stats().stale_answers >= 1);

    world.origin.down.set(false);
    world.clock.advance(1_001);
    let back = world.get(rank);
    assert_eq!(back.header("x-standings-stale"), None);
    assert_eq!(back.body, fresh.body);
}

/// Writes and the paths the edge does not serve reach the origin unchanged (method, path,
/// query, Authorization, content type, body), and its answer comes back.
#[test]
fn other_requests_are_forwarded_unchanged() {
    let world = World::new(&[]);
    for (method, target, body) in [
        (
            "PUT",
            "/v1/boards/g/m/s/global",
            &br#"{"score_mode":"highest"}"#[..],
        ),
        ("POST", "/v1/score-events?dry=1", br#"{"event_id":"e1"}"#),
        ("DELETE", "/v1/whatever/x", b""),
        ("GET", "/v1/leaderboards/g/m/s/global/digest", b""),
        ("GET", "/v1/leaderboards/g/m/s/results", b""),
        ("POST", "/v1/leaderboards/g/m/s/global/top", b""),
    ] {
        let answer = world.send(method, target, Some("svc-token"), body);
        let sent = world.origin.sent.borrow().last().cloned().unwrap();
        assert_eq!(sent.method, method);
        assert_eq!(sent.url, format!("{ORIGIN}{target}"));
        assert_eq!(sent.body, body);
        assert_eq!(sent.header("authorization"), Some("Bearer svc-token"));
        assert_eq!(sent.header("content-type"), Some("application/json"));
        assert!(text(&answer).contains(&format!("\"echo\":\"{method}\"")));
    }
    assert_eq!(world.edge.stats().requests.forwarded, 6);
    assert_eq!(world.edge.stats().origin_fetches.forwarded, 6);
}

/// Player JWTs are verified here (valid, expired, another game), tokens are introspected once
/// per cache lifetime, public reads need no token, and a static token of another game is
/// the origin's to refuse.
#[test]
fn auth_is_the_origins() {
    let world = World::new(&[("PUBLIC_READS", "false")]);
    world
        .origin
        .publish(BOARD, "", &board(100, 3, 0), &ALL_TIME, PUBLISHED);
    let now_secs = NOW / 1000;
    let read = |token: Option<&str>| world.send("GET", TOP, token, b"");
    assert_eq!(
        detail(&read(None)),
        (401, "UNAUTHENTICATED".into(), "reads need a token".into())
    );
    assert_eq!(read(Some(&jwt("ava", &["g"], now_secs + 60))).status, 200);
    assert_eq!(read(Some(&jwt("ava", &["*"], now_secs + 60))).status, 200);
    assert_eq!(
        detail(&read(Some(&jwt("ava", &["g"], now_secs)))).2,
        "the player token is not valid: it has expired"
    );
    assert_eq!(
        detail(&read(Some(&jwt("ava", &["h"], now_secs + 60)))),
        (
            403,
            "FORBIDDEN".into(),
            "token \"jwt:ava\" may not read game \"g\"".into()
        )
    );
    assert_eq!(
        detail(&world.send(
            "GET",
            "/v1/leaderboards/g/m/s/global/friends-of/bo",
            Some(&jwt("ava", &["g"], now_secs + 60)),
            b""
        ))
        .2,
        "a player token reads only its own player's friends, not \"bo\"'s"
    );

    world.origin.tokens.borrow_mut().insert(
        "svc".into(),
        r#"{"active":true,"role":"service","games":["g"],"player_id":null,"cache_seconds":60}"#.into(),
    );
    world.origin.tokens.borrow_mut().insert(
        "other".into(),
        r#"{"active":true,"role":"service","games":["h"],"player_id":null,"cache_seconds":60}"#.into(),
    );
    assert_eq!(read(Some("svc")).status, 200);
    assert_eq!(read(Some("svc")).status, 200);
    assert_eq!(
        world.origin.count("/v1/auth/introspect"),
        1,
        "the answer is cached"
    );
    world.clock.advance(61_000);
    world
        .origin
        .publish(BOARD, "", &board(100, 3, 0), &ALL_TIME, NOW + 60_000);
    assert_eq!(read(Some("svc")).status, 200);
    assert_eq!(
        world.origin.count("/v1/auth/introspect"),
        2,
        "and asked again past cache_seconds"
    );
    let asked = world.origin.count("/v1/auth/introspect");
    for _ in 0..2 {
        assert_eq!(
            detail(&read(Some("bogus"))),
            (401, "UNAUTHENTICATED".into(), "the token is not known".into())
        );
    }
    assert_eq!(
        world.origin.count("/v1/auth/introspect"),
        asked + 1,
        "an inactive answer is cached too"
    );
    let before = world.origin.count(TOP);
    let other = read(Some("other"));
    assert_eq!(
        world.origin.count(TOP),
        before + 1,
        "the origin words a static token's 403"
    );
    assert!(text(&other).contains("echo"));
    assert_eq!(world.edge.stats().fallbacks.auth, 1);
    assert_eq!(
        detail(&world.send("GET", TOP, None, b"")).0,
        401,
        "no token without public reads"
    );
    let open = World::new(&[("PUBLIC_READS", "true")]);
    open.origin
        .publish(BOARD, "", &board(100, 3, 0), &ALL_TIME, PUBLISHED);
    assert_eq!(open.get(TOP).status, 200);
    assert_eq!(
        detail(&open.get("/v1/leaderboards/g/m/s/global/friends-of/p0001")).2,
        "a friend list is private: friends-of needs a token"
    );
    assert_eq!(
        open.send("GET", "/v1/games/g/boards", Some("svc"), b"").status,
        401
    );
    let boards = open.get("/v1/games/g/boards");
    assert_eq!(
        (boards.status, text(&boards)),
        (200, r#"{"boards":[],"game":"g"}"#.to_string())
    );
    assert_eq!(
        open.get("/v1/games/g/boards").header("x-standings-cache"),
        Some("HIT")
    );
}

/// A query whose parts would not fit MAX_SUBREQUESTS one at a time fetches them in bundles,
/// one per step, and answers the core's bytes; the same query again is answered from the
/// isolate with no fetch.
#[test]
fn many_parts_come_in_bundles() {
    let world = World::new(&[("MAX_SUBREQUESTS", "6")]);
    let b = board(3000, 41, 0);
    world.origin.publish(BOARD, "", &b, &ALL_TIME, PUBLISHED);
    let asked: Vec<String> = (0..3000).step_by(50).map(|i| format!("p{i:04}")).collect();
    let body = serde_json::to_vec(&json!({ "player_ids": asked })).unwrap();
    let target = "/v1/leaderboards/g/m/s/global/rank-players";
    let answer = world.send("POST", target, None, &body);
    let refs: Vec<&str> = asked.iter().map(String::as_str).collect();
    let mut expected = Vec::new();
    write_friends_answer(&mut expected, &ALL_TIME, &b.rank_among(&refs));
    assert_eq!(text(&answer), String::from_utf8(expected.clone()).unwrap());
    assert_eq!(answer.header("x-standings-cache"), Some("MISS"));
    let stats = world.edge.stats();
    assert_eq!(
        (stats.origin_fetches.bundle, stats.origin_fetches.chunk),
        (2, 0),
        "one bundle of lookup chunks, one of rank chunks: {stats:?}"
    );
    assert_eq!(world.origin.count("/v1/snapshots/chunks?hashes="), 2);
    assert_eq!(stats.fallbacks.too_many_parts, 0);
    let again = world.send("POST", target, None, &body);
    assert_eq!(again.body, expected);
    assert_eq!(
        world.origin.count("/v1/snapshots/chunks"),
        2,
        "nothing fetched again"
    );
}

/// A query that would need more subrequests than MAX_SUBREQUESTS even in bundles (here its
/// first step alone needs two bundles of lookup chunks) goes to the origin, counted; the same query with the parts held in the isolate is answered here.
#[test]
fn too_many_parts_go_to_the_origin() {
    let world = World::new(&[("MAX_SUBREQUESTS", "4")]);
    let b = board(30_000, 41, 0);
    world.origin.publish(BOARD, "", &b, &ALL_TIME, PUBLISHED);
    let asked: Vec<String> = (0..30_000).step_by(30).map(|i| format!("p{i:04}")).collect();
    let body = serde_json::to_vec(&json!({ "player_ids": asked })).unwrap();
    let target = "/v1/leaderboards/g/m/s/global/rank-players";
    let answer = world.send("POST", target, None, &body);
    assert!(text(&answer).contains("\"echo\":\"POST\""), "{}", text(&answer));
    assert_eq!(world.edge.stats().fallbacks.too_many_parts, 1);
    assert_eq!(answer.header("x-standings-fallback"), Some("too-many-parts"));
    assert_eq!(answer.header("x-standings-board-version"), Some("99"));
    let small = serde_json::to_vec(&json!({ "player_ids": ["p0001"] })).unwrap();
    let refs = ["p0001"];
    let mut expected = Vec::new();
    write_friends_answer(&mut expected, &ALL_TIME, &b.rank_among(&refs));
    assert_eq!(world.send("POST", target, None, &small).body, expected);
    assert_eq!(world.edge.stats().fallbacks.too_many_parts, 1);
}

/// A read answers before its Cache API puts run: `handle` leaves them with the edge, inert,
/// and they store the parts and the page only when the driver runs them.
#[test]
fn cache_puts_wait_for_the_driver() {
    let world = World::new(&[]);
    world
        .origin
        .publish(BOARD, "", &board(3000, 41, 0), &ALL_TIME, PUBLISHED);
    let outcome = block_on(world.edge.handle(request(
        "GET",
        "/v1/leaderboards/g/m/s/global/top?limit=10",
        None,
        b"",
    )));
    assert!(
        matches!(outcome, crate::Outcome::Answer(ref a) if a.status() == 200),
        "{outcome:?}"
    );
    assert!(world.cache.entries.borrow().is_empty(), "nothing stored yet");
    let deferred = world.edge.take_deferred();
    assert!(
        deferred.len() >= 3,
        "the head, the manifest, a chunk and the page"
    );
    for put in deferred {
        block_on(put);
    }
    let stored = world.cache.entries.borrow();
    assert!(
        stored.keys().any(|k| k.starts_with("/part/")),
        "{:?}",
        stored.keys()
    );
    assert!(
        stored.keys().any(|k| k.starts_with("/top/")),
        "{:?}",
        stored.keys()
    );
    assert!(world.edge.take_deferred().is_empty(), "taken once");
}

/// A read that would fetch more parts than MAX_PARTS_PER_READ goes to the origin, counted,
/// however few subrequests its bundles would take; a smaller one is answered here.
#[test]
fn a_read_over_its_parts_goes_to_the_origin() {
    let world = World::new(&[("MAX_PARTS_PER_READ", "16")]);
    let b = board(3000, 41, 0);
    world.origin.publish(BOARD, "", &b, &ALL_TIME, PUBLISHED);
    let target = "/v1/leaderboards/g/m/s/global/rank-players";
    let asked: Vec<String> = (0..3000).step_by(50).map(|i| format!("p{i:04}")).collect();
    let body = serde_json::to_vec(&json!({ "player_ids": asked })).unwrap();
    let answer = world.send("POST", target, None, &body);
    assert_eq!(answer.header("x-standings-fallback"), Some("too-many-parts"));
    assert_eq!(world.edge.stats().fallbacks.too_many_parts, 1);
    let few = ["p0001", "p0002"];
    let body = serde_json::to_vec(&json!({ "player_ids": few })).unwrap();
    let mut expected = Vec::new();
    write_friends_answer(&mut expected, &ALL_TIME, &b.rank_among(&few));
    assert_eq!(world.send("POST", target, None, &body).body, expected);
    assert_eq!(world.edge.stats().fallbacks.too_many_parts, 1);
}

/// A bundle that is cut short, or has bytes after its last part, is refused as a bad part,
/// never read as another part's bytes.
#[test]
fn a_malformed_bundle_is_refused() {
    let world = World::new(&[("MAX_SUBREQUESTS", "6")]);
    let b = board(3000, 41, 0);
    world.origin.publish(BOARD, "", &b, &ALL_TIME, PUBLISHED);
    let asked: Vec<String> = (0..3000).step_by(50).map(|i| format!("p{i:04}")).collect();
    let body = serde_json::to_vec(&json!({ "player_ids": asked })).unwrap();
    world.origin.bundle_tail.set(Some(b"x"));
    let answer = world.send("POST", "/v1/leaderboards/g/m/s/global/rank-players", None, &body);
    assert_eq!(answer.status, 502, "{}", text(&answer));
    assert!(
        text(&answer).contains("unexpected bytes after"),
        "{}",
        text(&answer)
    );
    world.origin.bundle_tail.set(None);
    world.origin.bundle_cut.set(true);
    let answer = world.send("POST", "/v1/leaderboards/g/m/s/global/rank-players", None, &body);
    assert_eq!(answer.status, 502, "{}", text(&answer));
}

/// The decoded-part cache stays within its budget by evicting, and a part evicted is read
/// again from the Cache API, not the origin.
#[test]
fn the_decoded_cache_keeps_its_budget() {
    let world = World::new(&[("DECODED_CACHE_BYTES", "20000")]);
    world
        .origin
        .publish(BOARD, "", &board(3000, 41, 0), &ALL_TIME, PUBLISHED);
    for i in (0..3000).step_by(150) {
        assert_eq!(
            world
                .get(&format!("/v1/leaderboards/g/m/s/global/players/p{i:04}/rank"))
                .status,
            200
        );
        let stats = world.edge.stats();
        assert!(stats.decoded_cache_bytes <= 20_000, "{stats:?}");
    }
    let chunks = world.origin.count("/v1/snapshots/chunks/");
    let hits = world.edge.stats().cache.part_hits;
    assert_eq!(
        world
            .get("/v1/leaderboards/g/m/s/global/players/p0000/rank")
            .status,
        200
    );
    assert_eq!(world.origin.count("/v1/snapshots/chunks/"), chunks);
    assert!(
        world.edge.stats().cache.part_hits > hits,
        "evicted parts come back from the Cache API"
    );
}

/// A cursor made at an older version than the snapshot's is the origin's to page (it holds a
/// history); the edge counts it.
#[test]
fn a_cursor_of_another_version_goes_to_the_origin() {
    let world = World::new(&[]);
    let old = board(500, 7, 0);
    world.origin.publish(BOARD, "", &old, &ALL_TIME, PUBLISHED);
    let next = old.top(10, None).unwrap().next_cursor.unwrap();
    world
        .origin
        .publish(BOARD, "", &board(500, 8, 1), &ALL_TIME, PUBLISHED + 1000);
    let target = format!("{TOP}?cursor={}", cursor_text(&next, &ALL_TIME));
    let answer = world.get(&target);
    assert!(text(&answer).contains("\"echo\":\"GET\""));
    assert_eq!(
        world.origin.sent.borrow().last().unwrap().url,
        format!("{ORIGIN}{target}")
    );
    assert_eq!(world.edge.stats().fallbacks.stale_cursor, 1);
    // The origin's answer carries the read headers, its own board_version among them, once:
    // the body's, not the one the origin's header names.
    let versions: Vec<&str> = answer
        .headers
        .get_all("x-standings-board-version")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(versions, ["99"]);
    assert_eq!(answer.header("x-standings-cache"), Some("MISS"));
    assert_eq!(answer.header("x-standings-snapshot-age-ms"), Some("0"));
    assert_eq!(answer.header("x-standings-fallback"), Some("stale-cursor"));
}

/// `/edge/stats` answers the counters as JSON.
#[test]
fn stats_answer_the_counters() {
    let world = World::new(&[]);
    world
        .origin
        .publish(BOARD, "", &board(100, 3, 0), &ALL_TIME, PUBLISHED);
    world.get(TOP);
    let stats: serde_json::Value = serde_json::from_slice(&world.get("/edge/stats").body).unwrap();
    assert_eq!(stats["requests"]["top"], 1);
    assert_eq!(stats["requests"]["stats"], 1);
    assert_eq!(stats["origin_fetches"]["head"], 1);
    assert_eq!(stats["origin_fetches"]["manifest"], 1);
    assert!(stats["decoded_cache_bytes"].as_u64().unwrap() > 0);
    assert_eq!(stats["decoded_cache_budget"], 33_554_432);
}

/// A part fetch that meets a dropped connection is tried once more, so the read still
/// answers fresh; two drops in a row fail it as unreachable.
#[test]
fn a_dropped_part_fetch_is_retried_once() {
    let world = World::new(&[]);
    world
        .origin
        .publish(BOARD, "", &board(500, 7, 0), &ALL_TIME, PUBLISHED);
    assert_eq!(world.get(TOP).status, 200);
    world.origin.drop_next.set(1);
    let answer = world.get("/v1/leaderboards/g/m/s/global/players/p0001/rank");
    assert_eq!((answer.status, answer.header("x-standings-stale")), (200, None));
    assert_eq!(world.edge.stats().origin_fetches.unreachable, 1);
    world.origin.drop_next.set(2);
    let answer = world.get("/v1/leaderboards/g/m/s/global/players/p0499/nearby");
    assert_eq!(detail(&answer).1, "ORIGIN_UNAVAILABLE");
}

/// Reads that arrive while one read refreshes an expired head answer from the head held
/// instead of asking the origin too: one head fetch per lifetime, however busy the isolate.
#[test]
fn one_read_refreshes_an_expired_head() {
    let world = World::new(&[]);
    world
        .origin
        .publish(BOARD, "", &board(300, 5, 0), &ALL_TIME, PUBLISHED);
    assert_eq!(world.get(TOP).status, 200);
    world
        .origin
        .publish(BOARD, "", &board(300, 6, 1), &ALL_TIME, PUBLISHED + 1000);
    world.clock.advance(1_001);
    world.origin.slow_heads.set(true);
    let heads = world.origin.count("/head");
    let get = |target: &str| request("GET", target, None, b"");
    let (first, second) = block_on(futures_util::future::join(
        world.edge.serve(get(TOP)),
        world
            .edge
            .serve(get("/v1/leaderboards/g/m/s/global/players/p0001/rank")),
    ));
    let (first, second) = (Answer::from(first), Answer::from(second));
    assert_eq!(
        world.origin.count("/head"),
        heads + 1,
        "one head fetch for both reads"
    );
    assert_eq!(first.header("x-standings-board-version"), Some("6"));
    assert_eq!(
        second.header("x-standings-board-version"),
        Some("5"),
        "the second read used the head held"
    );
    assert_eq!(second.header("x-standings-stale"), None);
    assert_eq!(world.get(TOP).header("x-standings-board-version"), Some("6"));
}

/// A version published as a patch over the manifest before it reads byte for byte as the board
/// does at that version, and costs the isolate that held the manifest only the patch (and
/// the chunks a read needs): the base manifest is fetched once for both versions.
#[test]
fn a_patched_version_reads_as_the_board_and_costs_the_patch() {
    let world = World::new(&[]);
    let mut b = board(3000, 41, 0);
    let mut publisher = Publisher::patching(crate::fake::SMALL_CHUNKS, 64 * 1024);
    let first = world
        .origin
        .publish_with(BOARD, &mut publisher, &b, &ALL_TIME, PUBLISHED);
    assert!(first.patches.is_empty());
    let base = "/v1/leaderboards/g/m/s/global";
    assert_eq!(world.get(&format!("{base}/players/p0100/rank")).status, 200);
    for i in 0..40 {
        let player = format!("p{:04}", i * 71);
        let event = ScoreEvent::new(&format!("move-{i}"), &player, 2_000 + i as i64, NOW).unwrap();
        b.apply(&event).unwrap();
    }
    let second = world
        .origin
        .publish_with(BOARD, &mut publisher, &b, &ALL_TIME, PUBLISHED + 1_000);
    let patch = second.patch().expect("40 moves fit a patch");
    assert_eq!(patch.base, first.manifest_hash);
    world.clock.advance(1_001);
    let (expected, _) = expected_top(&b, &ALL_TIME, 100, None);
    assert_eq!(
        text(&world.get(&format!("{TOP}?limit=100"))),
        String::from_utf8(expected).unwrap()
    );
    for i in (0..3000).step_by(71).chain([1, 2999]) {
        let player = format!("p{i:04}");
        let mut expected = Vec::new();
        write_rank_answer(&mut expected, &ALL_TIME, &b.player_rank(&player).unwrap());
        let answer = world.get(&format!("{base}/players/{player}/rank"));
        assert_eq!(
            answer.header("x-standings-board-version"),
            Some(b.version().to_string().as_str())
        );
        assert_eq!(text(&answer), String::from_utf8(expected).unwrap(), "{player}");
        let window = b.nearby(&player, 5).unwrap();
        let mut expected = Vec::new();
        write_nearby_answer(&mut expected, &ALL_TIME, b.version(), window.iter().copied());
        let answer = world.get(&format!("{base}/players/{player}/nearby?radius=5"));
        assert_eq!(text(&answer), String::from_utf8(expected).unwrap(), "{player}");
    }
    let asked = ["p0071", "p0100", "ghost", "p2982"];
    let mut expected = Vec::new();
    write_friends_answer(&mut expected, &ALL_TIME, &b.rank_among(&asked));
    let body = serde_json::to_vec(&json!({ "player_ids": asked })).unwrap();
    let answer = world.send("POST", &format!("{base}/rank-players"), None, &body);
    assert_eq!(text(&answer), String::from_utf8(expected).unwrap());
    assert_eq!(
        world.origin.count(&first.manifest_hash.to_string()),
        1,
        "the base, once"
    );
    assert_eq!(
        world.origin.count(&second.manifest_hash.to_string()),
        1,
        "the patch, once"
    );
}

/// A refreshed head is used by the isolate's other reads only once its manifest is held: a
/// read arriving while the manifest is on its way answers from the head held, so the manifest
/// is fetched once.
#[test]
fn a_new_head_waits_for_its_manifest() {
    let world = World::new(&[]);
    world
        .origin
        .publish(BOARD, "", &board(300, 5, 0), &ALL_TIME, PUBLISHED);
    let rank = |p: &str| {
        request(
            "GET",
            &format!("/v1/leaderboards/g/m/s/global/players/{p}/rank"),
            None,
            b"",
        )
    };
    assert_eq!(block_on(world.edge.serve(rank("p0001"))).status(), 200);
    world
        .origin
        .publish(BOARD, "", &board(300, 6, 1), &ALL_TIME, PUBLISHED + 1000);
    world.clock.advance(1_001);
    world.origin.slow_heads.set(true);
    world.origin.slow_manifests.set(true);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    let mut refreshing = std::pin::pin!(world.edge.serve(rank("p0001")));
    assert!(
        refreshing.as_mut().poll(&mut context).is_pending(),
        "asking for the head"
    );
    assert!(
        refreshing.as_mut().poll(&mut context).is_pending(),
        "asking for the manifest"
    );
    let meanwhile = Answer::from(block_on(world.edge.serve(rank("p0001"))));
    assert_eq!(meanwhile.header("x-standings-board-version"), Some("5"));
    let std::task::Poll::Ready(refreshed) = refreshing.as_mut().poll(&mut context) else {
        panic!("the refresh did not finish");
    };
    let refreshed = Answer::from(refreshed);
    assert_eq!(refreshed.header("x-standings-board-version"), Some("6"));
    assert_eq!(
        world.origin.count("/v1/snapshots/manifests/"),
        2,
        "one fetch per version"
    );
}

const DAY_MS: i64 = 86_400_000;

/// `ms` as RFC 3339, as the core prints it.
fn rfc3339(ms: i64) -> String {
    let mut out = Vec::new();
    standings_core::json::write_rfc3339(&mut out, ms);
    String::from_utf8(out).unwrap()
}

/// The daily instance starting at `start_ms`: its key and range.
fn day_of(start_ms: i64) -> (String, i64, i64) {
    (rfc3339(start_ms)[..10].to_string(), start_ms, start_ms + DAY_MS)
}

fn daily_fields(day: &(String, i64, i64)) -> PeriodFields<'_> {
    PeriodFields {
        kind: "daily",
        key: &day.0,
        start_ms: Some(day.1),
        end_ms: Some(day.2),
    }
}

/// The URLs of the head requests the origin saw, in order.
fn head_urls(world: &World) -> Vec<String> {
    world
        .origin
        .sent
        .borrow()
        .iter()
        .filter(|r| r.url.contains("/head"))
        .map(|r| r.url.clone())
        .collect()
}

/// The head URL of the daily instance starting at `start_ms`, in its canonical form.
fn canonical_daily_head(start_ms: i64) -> String {
    format!(
        "{ORIGIN}/v1/snapshots/{BOARD}/head?period=daily&at={}",
        rfc3339(start_ms).replace(':', "%3A")
    )
}

/// 2,000 reads at distinct `at`s spread over five days (two with events in the past, the
/// current one, one without events and one in the future) answer each day's board, and ask
/// the origin for one head per day and head lifetime: the first `at` of a day as sent, every
/// later one in the day's canonical form; the isolate holds one head and one range per day.
#[test]
fn distinct_ats_share_one_head_per_day() {
    let world = World::new(&[]);
    let today = DAILY.start_ms.unwrap();
    let days: Vec<(String, i64, i64)> = [-3, -2, -1, 0, 7].map(|n| day_of(today + n * DAY_MS)).into();
    let boards: Vec<Board> = vec![
        Board::new(BoardRules::new(ScoreMode::Highest)),
        board(200, 4, 1),
        board(250, 6, 2),
        board(300, 9, 3),
        Board::new(BoardRules::new(ScoreMode::Highest)),
    ];
    for i in [1, 2] {
        world.origin.publish_instance(
            BOARD,
            "period=daily",
            &boards[i],
            &daily_fields(&days[i]),
            PUBLISHED,
        );
    }
    world
        .origin
        .publish(BOARD, "period=daily", &boards[3], &DAILY, PUBLISHED);
    let started = world.clock.0.get();
    for i in 0..2_000i64 {
        let d = (i % 5) as usize;
        let at_ms = days[d].1 + i * 43_201 % DAY_MS;
        // A third of the `at`s carry an offset, the same instant written another way.
        let at = if i % 3 == 0 {
            format!("{}%2B02:00", rfc3339(at_ms + 7_200_000).trim_end_matches('Z'))
        } else {
            rfc3339(at_ms)
        };
        let limit = 1 + (i % 20) as usize;
        let answer = world.get(&format!("{TOP}?period=daily&at={at}&limit={limit}"));
        let (expected, _) = expected_top(&boards[d], &daily_fields(&days[d]), limit, None);
        assert_eq!(text(&answer), String::from_utf8(expected).unwrap(), "at={at}");
        world.clock.advance(5);
    }
    let lifetimes = (world.clock.0.get() - started) / 1_000 + 1;
    let heads = head_urls(&world);
    for (d, day) in days.iter().enumerate() {
        let asked: Vec<&String> = heads
            .iter()
            .filter(|u| u.contains(&format!("at={}", &day.0)))
            .collect();
        assert!(
            !asked.is_empty() && asked.len() as i64 <= lifetimes + 1,
            "day {d}: {} head requests in {lifetimes} lifetimes",
            asked.len()
        );
        assert!(
            asked[1..].iter().all(|u| **u == canonical_daily_head(day.1)),
            "after the first, every head of day {d} is canonical: {asked:?}"
        );
    }
    assert_eq!(
        heads.len(),
        heads.iter().filter(|u| u.contains("at=")).count(),
        "no read asked for the current instance"
    );
    let stats = world.edge.stats();
    assert_eq!(stats.origin_fetches.head as usize, heads.len());
    assert_eq!(
        (stats.held_heads, stats.known_instances),
        (5, 5),
        "a head and a range per day, not per `at`"
    );
}

/// A read with no `at` asks for the current instance and teaches its range; a read at any
/// `at` inside it then asks for the instance's canonical head. For all time, any `at` the
/// origin reads is its one instance, with no head request of its own; an `at` the core reads
/// but the origin does not is sent as it came, and refused in the origin's words.
#[test]
fn an_at_in_a_learned_instance_asks_for_the_canonical_head() {
    let world = World::new(&[]);
    let daily = board(300, 9, 3);
    world
        .origin
        .publish(BOARD, "period=daily", &daily, &DAILY, PUBLISHED);
    let (expected, _) = expected_top(&daily, &DAILY, 10, None);
    assert_eq!(world.get(&format!("{TOP}?period=daily")).body, expected);
    assert_eq!(
        head_urls(&world),
        [format!("{ORIGIN}/v1/snapshots/{BOARD}/head?period=daily")]
    );
    let today = DAILY.start_ms.unwrap();
    for (at, asks) in [
        (rfc3339(today + 63_000_500), true),
        (rfc3339(today + DAY_MS - 1), false),
        ("2026-10-13T20:59:59.999-03:00".to_string(), false),
        ("2026-10-13T21:00:00%2B03:00".to_string(), false),
    ] {
        let before = head_urls(&world).len();
        let answer = world.get(&format!("{TOP}?period=daily&at={at}"));
        assert_eq!(answer.body, expected, "at={at}");
        let heads = head_urls(&world);
        assert_eq!(heads.len(), before + usize::from(asks), "at={at}");
        assert_eq!(heads.last(), Some(&canonical_daily_head(today)));
    }
    world.clock.advance(1_001);
    world.get(&format!("{TOP}?period=daily&at={}", rfc3339(today + 5)));
    assert_eq!(head_urls(&world).last(), Some(&canonical_daily_head(today)));

    let all_time = board(100, 3, 0);
    world.origin.publish(BOARD, "", &all_time, &ALL_TIME, PUBLISHED);
    let (expected, _) = expected_top(&all_time, &ALL_TIME, 10, None);
    assert_eq!(world.get(TOP).body, expected);
    let before = head_urls(&world).len();
    assert_eq!(
        world.get(&format!("{TOP}?at=2020-02-29T12:00:00Z")).body,
        expected
    );
    assert_eq!(
        head_urls(&world).len(),
        before,
        "all time's head is held under its path without `at`"
    );
    let past_the_origin = world.get(&format!("{TOP}?at=9999-12-31T00:00:00Z"));
    assert_eq!(detail(&past_the_origin).0, 400);
    assert_eq!(
        head_urls(&world).last().unwrap(),
        &format!("{ORIGIN}/v1/snapshots/{BOARD}/head?at=9999-12-31T00%3A00%3A00Z")
    );
}

/// A head refused 503 `SNAPSHOT_INSTANCES_FULL` hands the read, as the reader sent it, to the
/// origin's read API, marked and counted; for an instance the edge can name, the head is not
/// asked again within the `Retry-After`, and once the origin has room the edge answers from the
/// snapshot again. Reads of the current instance are not concerned.
#[test]
fn a_full_origin_hands_the_read_to_its_read_api() {
    let world = World::new(&[]);
    let today = DAILY.start_ms.unwrap();
    let yesterday = day_of(today - DAY_MS);
    let closed = board(200, 4, 1);
    world.origin.publish_instance(
        BOARD,
        "period=daily",
        &closed,
        &daily_fields(&yesterday),
        PUBLISHED,
    );
    world
        .origin
        .publish(BOARD, "period=daily", &board(300, 9, 3), &DAILY, PUBLISHED);
    world.origin.instances_full.set(true);
    let target = format!("{TOP}?period=daily&at={}&limit=5", rfc3339(yesterday.1 + 1_000));
    let answer = world.get(&target);
    assert!(text(&answer).contains("\"echo\":\"GET\""), "{}", text(&answer));
    assert_eq!(answer.header("x-standings-fallback"), Some("instances-full"));
    assert_eq!(answer.header("x-standings-board-version"), Some("99"));
    assert_eq!(
        world.origin.sent.borrow().last().unwrap().url,
        format!("{ORIGIN}{target}")
    );
    assert_eq!(world.edge.stats().fallbacks.instances_full, 1);

    world.origin.instances_full.set(false);
    let (expected, _) = expected_top(&closed, &daily_fields(&yesterday), 5, None);
    assert_eq!(world.get(&target).body, expected);
    world.clock.advance(1_001);
    world.origin.instances_full.set(true);
    let heads = head_urls(&world).len();
    for n in 0..3 {
        let at = rfc3339(yesterday.1 + 3_600_000 * (n + 1));
        let answer = world.get(&format!("{TOP}?period=daily&at={at}&limit=5"));
        assert_eq!(answer.header("x-standings-fallback"), Some("instances-full"));
    }
    assert_eq!(
        head_urls(&world).len(),
        heads + 1,
        "one refusal holds for its Retry-After"
    );
    assert_eq!(world.edge.stats().fallbacks.instances_full, 4);
    let current = world.get(&format!("{TOP}?period=daily"));
    assert_eq!(
        (current.status, current.header("x-standings-fallback")),
        (200, None)
    );

    world.clock.advance(10_001);
    world.origin.instances_full.set(false);
    let answer = world.get(&target);
    assert_eq!(answer.body, expected);
    assert_eq!(answer.header("x-standings-fallback"), None);
    assert_eq!(head_urls(&world).last(), Some(&canonical_daily_head(yesterday.1)));
    assert_eq!(world.edge.stats().fallbacks.instances_full, 4);
}

/// An `at` that is not a time is sent to the origin as it came and its 400 passed on byte for
/// byte; nothing is held or learned for it.
#[test]
fn a_bad_at_is_the_origins_400() {
    let world = World::new(&[]);
    world
        .origin
        .publish(BOARD, "period=daily", &board(300, 9, 3), &DAILY, PUBLISHED);
    for at in ["yesterday", "2026-10-13T10%3A05Z", "2026-02-30T00:00:00Z"] {
        let answer = world.get(&format!("{TOP}?period=daily&at={at}"));
        assert_eq!(
            (answer.status, text(&answer)),
            (
                400,
                r#"{"type":"about:blank","title":"x","status":400,"code":"INVALID_REQUEST","detail":"at is not an RFC 3339 timestamp"}"#
                    .to_string()
            ),
            "at={at}"
        );
        assert_eq!(answer.header("content-type"), Some("application/problem+json"));
        assert_eq!(
            head_urls(&world).last().unwrap(),
            &format!(
                "{ORIGIN}/v1/snapshots/{BOARD}/head?period=daily&at={}",
                at.replace(':', "%3A")
            )
        );
    }
    let stats = world.edge.stats();
    assert_eq!((stats.held_heads, stats.known_instances), (0, 0));
}

/// When the instance the origin answers for a learned range's canonical `at` does not hold the
/// reader's `at` (the origin's calendar moved under the edge), the range is forgotten and the
/// read asks with its own `at`, and answers the instance the origin resolves that to.
#[test]
fn a_range_the_origin_no_longer_resolves_to_is_forgotten() {
    let world = World::new(&[]);
    let today = DAILY.start_ms.unwrap();
    let day = day_of(today);
    world.origin.publish_instance(
        BOARD,
        "period=daily",
        &board(100, 3, 0),
        &daily_fields(&day),
        PUBLISHED,
    );
    world
        .origin
        .publish(BOARD, "period=daily", &board(300, 9, 3), &DAILY, PUBLISHED);
    assert_eq!(
        world
            .get(&format!("{TOP}?period=daily&at={}", rfc3339(today)))
            .status,
        200
    );
    // Days now run from noon to noon.
    world.origin.forget_instances();
    let (before_noon, after_noon) = (
        (
            "2026-10-12-13".to_string(),
            today - DAY_MS / 2,
            today + DAY_MS / 2,
        ),
        (
            "2026-10-13-14".to_string(),
            today + DAY_MS / 2,
            today + 3 * DAY_MS / 2,
        ),
    );
    let evening = board(200, 4, 1);
    for (b, d) in [(&board(50, 2, 2), &before_noon), (&evening, &after_noon)] {
        world
            .origin
            .publish_instance(BOARD, "period=daily", b, &daily_fields(d), PUBLISHED);
    }
    world.clock.advance(1_001);
    let at = rfc3339(today + 18 * 3_600_000);
    let answer = world.get(&format!("{TOP}?period=daily&at={at}"));
    let (expected, _) = expected_top(&evening, &daily_fields(&after_noon), 10, None);
    assert_eq!(text(&answer), String::from_utf8(expected).unwrap());
    let heads = head_urls(&world);
    assert_eq!(
        heads[heads.len() - 2..],
        [
            canonical_daily_head(today),
            format!(
                "{ORIGIN}/v1/snapshots/{BOARD}/head?period=daily&at={}",
                at.replace(':', "%3A")
            ),
        ]
    );
    let stats = world.edge.stats();
    assert_eq!(
        (stats.held_heads, stats.known_instances),
        (1, 2),
        "the noon-to-noon days are known, only the evening's head is held"
    );
}

/// A WebSocket subscription the edge can read goes to its view's live object, once the caller
/// may read the board; a refused caller is answered here, as for reads; SSE, a malformed view,
/// a static token in the URL and a trusted caller go to the origin.
#[test]
fn subscriptions_go_to_their_live_object_or_to_the_origin() {
    let world = World::new(&[("PUBLIC_READS", "false")]);
    let target = format!("/v1/leaderboards/{BOARD}/subscribe?view=top:10&period=daily");
    let upgrade = |target: &str, token: Option<&str>| {
        let mut request = http::Request::builder()
            .method("GET")
            .uri(target)
            .header("upgrade", "websocket")
            .header("connection", "Upgrade");
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        block_on(world.edge.handle(request.body(Vec::new()).unwrap()))
    };
    let player = jwt("p-1", &["g"], NOW / 1000 + 600);
    match upgrade(&target, Some(&player)) {
        Outcome::Live { route, .. } => {
            assert_eq!(route.object, format!("{BOARD}|top:10|daily|"));
            assert_eq!(
                route.upstream,
                format!("/v1/leaderboards/{BOARD}/subscribe?view=top%3A10&period=daily")
            );
        }
        other => panic!("not to a live object: {other:?}"),
    }
    let in_query = format!("{target}&access_token={player}&since_version=2026-10-13:4");
    match upgrade(&in_query, None) {
        Outcome::Live { route, .. } => assert_eq!(route.since, Some("2026-10-13:4".parse().unwrap())),
        other => panic!("not to a live object: {other:?}"),
    }
    let refusal = |outcome: Outcome| match outcome {
        Outcome::Answer(answer) => detail(&Answer::from(answer)).0,
        other => panic!("not answered here: {other:?}"),
    };
    assert_eq!(refusal(upgrade(&target, None)), 401);
    assert_eq!(
        refusal(upgrade(&target, Some(&jwt("p-1", &["other"], NOW / 1000 + 600)))),
        403
    );
    assert_eq!(refusal(upgrade(&target, Some("e30.e30.forged"))), 401);
    let forwarded = |outcome: Outcome| matches!(outcome, Outcome::Forward(_));
    assert!(forwarded(upgrade(
        &format!("/v1/leaderboards/{BOARD}/subscribe?view=top:999"),
        Some(&player)
    )));
    assert!(forwarded(upgrade(
        &format!("{target}&access_token=static-token"),
        None
    )));
    let sse = http::Request::builder()
        .uri(&target)
        .header("authorization", format!("Bearer {player}"))
        .body(Vec::new())
        .unwrap();
    assert!(forwarded(block_on(world.edge.handle(sse))));
    assert_eq!(world.edge.stats().requests.live, 2);
}
