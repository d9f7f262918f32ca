//! The read plane. Every answer comes from one `board_version`, read under one lock.
//!
//! Every read answer (top, rank, nearby, friends) is written straight into one buffer by the core's
//! shared encoder, the same code the edge worker answers with, so the answer costs one allocation
//! and no intermediate tree, and the two tiers cannot drift; a unit test pins those bytes to the
//! derived views below, which stay the contract. The hot reads (rank, nearby) also borrow the
//! request. Top pages are cached per version in the board slot.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawPathParams, Request, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use standings_core::Audience;
use standings_core::QueryError;
use standings_core::contract::query::SegmentParam;
use standings_core::contract::query::{self, Precision, cursor_text};
use standings_core::json::{
    write_friends_answer, write_interval_answer, write_nearby_answer, write_rank_answer,
    write_segment_friends_answer, write_segment_nearby_answer, write_segment_rank_answer,
    write_segment_top_answer, write_top_answer,
};
use standings_core::{Board, SegmentEntry};

use super::write::BoardView;
use super::{JsonBody, PeriodView, QueryTimer, ReadQuery, Shared, board_of, json, json_bytes};
use crate::http::error::{AppError, AppResult, Code};

/// The four board parts of a `/v1/leaderboards/{game}/{mode}/{season}/{scope}/...` path.
pub(super) type BoardPath = (String, String, String, String);

/// The four board parts of a path extracted as [`BoardPath`].
pub(super) fn board_parts(path: &BoardPath) -> [&str; 4] {
    [&path.0, &path.1, &path.2, &path.3]
}

/// The board parts and the player of a `.../players/{player_id}/...` path, borrowed from the
/// parameters the router matched (in route order), instead of five owned strings.
fn player_path(params: &RawPathParams) -> AppResult<([&str; 4], &str)> {
    let mut values = params.iter().map(|(_, value)| value);
    match [(); 5].map(|()| values.next()) {
        [Some(game), Some(mode), Some(season), Some(scope), Some(player)] => {
            Ok(([game, mode, season, scope], player))
        }
        _ => Err(AppError::new(
            Code::INTERNAL,
            "a player route lost its path parameters",
        )),
    }
}

pub(super) fn router() -> Router<Shared> {
    let board = "/v1/leaderboards/{game}/{mode}/{season}/{scope}";
    Router::new()
        .route(&format!("{board}/top"), get(top))
        .route(&format!("{board}/players/{{player_id}}/rank"), get(rank))
        .route(&format!("{board}/players/{{player_id}}/nearby"), get(nearby))
        .route(&format!("{board}/friends-of/{{player_id}}"), get(friends_of))
        .route(&format!("{board}/rank-players"), post(rank_players))
        .route(&format!("{board}/digest"), get(digest))
        .route("/v1/games/{game}/boards", get(game_boards))
}

/// One ranked entry on the wire: the contract the core's `write_entry` is pinned to.
#[cfg(test)]
#[derive(Debug, Serialize)]
pub(super) struct EntryView {
    /// Unique rank in the total order.
    pub rank: u64,
    /// The player.
    pub player_id: String,
    /// The aggregate value.
    pub value: i64,
    /// When it was achieved (RFC 3339).
    pub achieved_at: String,
}

#[cfg(test)]
impl From<&standings_core::RankedEntry<'_>> for EntryView {
    fn from(e: &standings_core::RankedEntry<'_>) -> Self {
        EntryView {
            rank: e.rank,
            player_id: e.player.to_string(),
            value: e.value,
            achieved_at: crate::clock::format_rfc3339(e.achieved_at),
        }
    }
}

/// The header every read of one board instance carries, as the edge's do: the answer's
/// `board_version`, so a cache or a client can compare answers without parsing them.
const BOARD_VERSION: axum::http::HeaderName =
    axum::http::HeaderName::from_static("x-standings-board-version");

/// A read answer of one board instance: its JSON and its `board_version` header. O(1).
/// Hides anonymous players' extras from a public reader. O(entries).
fn for_audience(entries: &mut [standings_core::RankedEntry<'_>], audience: Audience) {
    for entry in entries {
        entry.info = entry.info.for_audience(audience);
    }
}

fn read_answer(bytes: Bytes, board_version: u64) -> Response {
    let mut response = json_bytes(StatusCode::OK, bytes);
    response
        .headers_mut()
        .insert(BOARD_VERSION, axum::http::HeaderValue::from(board_version));
    response
}

/// The read's `segment`, checked against the dimensions the board declares. O(1).
fn segment_of(
    params: &ReadQuery<'_>,
    board: &Board,
    slot: &crate::boards::BoardSlot,
) -> AppResult<Option<SegmentParam>> {
    Ok(params.segment(&board.segment_spec(), &slot.id)?)
}

/// Hides anonymous players' extras in segment entries from a public reader. O(entries).
fn segment_for_audience(entries: &mut [SegmentEntry<'_>], audience: Audience) {
    for e in entries {
        e.entry.info = e.entry.info.for_audience(audience);
    }
}

fn not_in_segment(player_id: &str, segment: &SegmentParam, slot: &crate::boards::BoardSlot) -> AppError {
    query::not_in_segment(player_id, segment, &slot.id).into()
}

fn stale(e: QueryError) -> AppError {
    AppError::new(
        Code::STALE_CURSOR,
        format!("{e}; start again from the first page"),
    )
}

/// The top answer on the wire: the contract the core's `write_top_answer` is pinned to.
#[cfg(test)]
#[derive(Serialize)]
struct TopView {
    #[serde(flatten)]
    period: PeriodView,
    board_version: u64,
    total_players: u64,
    entries: Vec<EntryView>,
    next_cursor: Option<String>,
}

async fn top(
    State(state): State<Shared>,
    Path(path): Path<BoardPath>,
    uri: Uri,
    headers: HeaderMap,
) -> AppResult<Response> {
    let audience = state.auth.reader(&headers, &path.0)?;
    let _timer = QueryTimer::start(&state.metrics, "top");
    let params = ReadQuery(uri.query());
    let slot = board_of(&state, board_parts(&path), &params).await?;
    let limit = params.limit()?;
    let (cursor_bytes, cursor) = match params.cursor(slot.cursor_binding, &slot.id, &slot.period.key)? {
        Some((bytes, cursor)) => (Some(bytes), Some(cursor)),
        None => (None, None),
    };
    let board = slot.read();
    let version = board.version();
    if let Some(segment) = segment_of(&params, &board, &slot)? {
        let mut page = board
            .segment_top(&segment.key(), limit, cursor.as_ref())
            .map_err(stale)?;
        // A cursor pages the version it was made at, which the answer names.
        let version = page.board_version;
        segment_for_audience(&mut page.entries, audience);
        let next_cursor = page
            .next_cursor
            .as_ref()
            .map(|c| cursor_text(c, slot.cursor_binding));
        let mut out = Vec::with_capacity(256 + 128 * page.entries.len());
        write_segment_top_answer(
            &mut out,
            &slot.period.fields(),
            &segment.key(),
            &page,
            next_cursor.as_deref(),
        );
        return Ok(read_answer(Bytes::from(out), version));
    }
    // A cursor pages the version it was made at, which its page's answer names.
    let page_version = cursor.as_ref().map_or(version, |c| c.board_version);
    let key = (limit, cursor_bytes, audience == Audience::Trusted);
    if let Some(bytes) = slot.cached_page(version, &key) {
        return Ok(read_answer(bytes, page_version));
    }
    let mut page = board.top(limit, cursor.as_ref()).map_err(stale)?;
    for_audience(&mut page.entries, audience);
    let next_cursor = page
        .next_cursor
        .as_ref()
        .map(|c| cursor_text(c, slot.cursor_binding));
    let mut out = Vec::with_capacity(256 + 112 * page.entries.len());
    write_top_answer(&mut out, &slot.period.fields(), &page, next_cursor.as_deref());
    drop(page);
    drop(board);
    let bytes = Bytes::from(out);
    slot.cache_page(version, key, bytes.clone());
    Ok(read_answer(bytes, page_version))
}

/// `GET .../players/{player_id}/rank`: the player's rank, competition and dense rank and
/// percentile. The answer is written straight into one buffer (the fields of the API's rank
/// view, in its order): this is the hottest read, so it extracts nothing it does not need and
/// owns no strings. O(log n).
async fn rank(State(state): State<Shared>, path: RawPathParams, request: Request) -> AppResult<Response> {
    let (board_path, player_id) = player_path(&path)?;
    let audience = state.auth.reader(request.headers(), board_path[0])?;
    let _timer = QueryTimer::start(&state.metrics, "rank");
    let slot = board_of(&state, board_path, &ReadQuery(request.uri().query())).await?;
    query::player_id(player_id)?;
    let precision = ReadQuery(request.uri().query()).precision()?;
    let not_ranked = || {
        AppError::new(
            Code::PLAYER_NOT_RANKED,
            format!("player {player_id:?} has no score on board {}", slot.id),
        )
    };
    let board = slot.read();
    let mut out = Vec::with_capacity(384);
    if let Some(segment) = segment_of(&ReadQuery(request.uri().query()), &board, &slot)? {
        if precision == Precision::Interval {
            return Err(query::interval_within_segment().into());
        }
        let mut found = board
            .segment_rank(&segment.key(), player_id)
            .ok_or_else(|| not_in_segment(player_id, &segment, &slot))?;
        found.within.entry.info = found.within.entry.info.for_audience(audience);
        write_segment_rank_answer(&mut out, &slot.period.fields(), &segment.key(), &found);
        let version = board.version();
        drop(board);
        return Ok(read_answer(Bytes::from(out), version));
    }
    match precision {
        Precision::Exact => {
            let mut found = board.player_rank(player_id).ok_or_else(not_ranked)?;
            found.entry.info = found.entry.info.for_audience(audience);
            write_rank_answer(&mut out, &slot.period.fields(), &found);
        }
        Precision::Interval => {
            let mut found = board.rank_interval(player_id).ok_or_else(not_ranked)?;
            found.info = found.info.for_audience(audience);
            write_interval_answer(&mut out, &slot.period.fields(), &found);
        }
    }
    let version = board.version();
    drop(board);
    Ok(read_answer(Bytes::from(out), version))
}

/// `GET .../players/{player_id}/nearby?radius=`: the entries around the player, written
/// straight into one buffer as `{period fields, board_version, entries}` (see [`rank`]).
/// O(log n + radius).
async fn nearby(State(state): State<Shared>, path: RawPathParams, request: Request) -> AppResult<Response> {
    let (board_path, player_id) = player_path(&path)?;
    let audience = state.auth.reader(request.headers(), board_path[0])?;
    let _timer = QueryTimer::start(&state.metrics, "nearby");
    let params = ReadQuery(request.uri().query());
    let slot = board_of(&state, board_path, &params).await?;
    query::player_id(player_id)?;
    let radius = params.radius()?;
    let board = slot.read();
    if let Some(segment) = segment_of(&params, &board, &slot)? {
        let mut window = board
            .segment_nearby(&segment.key(), player_id, radius)
            .ok_or_else(|| not_in_segment(player_id, &segment, &slot))?;
        segment_for_audience(&mut window, audience);
        let mut out = Vec::with_capacity(256 + 128 * window.len());
        let version = board.version();
        write_segment_nearby_answer(&mut out, &slot.period.fields(), &segment.key(), version, &window);
        drop(window);
        drop(board);
        return Ok(read_answer(Bytes::from(out), version));
    }
    let mut window = board.nearby(player_id, radius).ok_or_else(|| {
        AppError::new(
            Code::PLAYER_NOT_RANKED,
            format!("player {player_id:?} has no score on board {}", slot.id),
        )
    })?;
    for_audience(&mut window, audience);
    let mut out = Vec::with_capacity(256 + 112 * window.len());
    let version = board.version();
    write_nearby_answer(&mut out, &slot.period.fields(), version, window.iter().copied());
    drop(window);
    drop(board);
    Ok(read_answer(Bytes::from(out), version))
}

/// One entry of a friends answer on the wire (see [`FriendsView`]).
#[cfg(test)]
#[derive(Serialize)]
struct FriendEntryView {
    rank: u64,
    global_rank: u64,
    player_id: String,
    value: i64,
    achieved_at: String,
}

/// The friends-of and rank-players answer on the wire: the contract the core's
/// `write_friends_answer` is pinned to.
#[cfg(test)]
#[derive(Serialize)]
struct FriendsView {
    #[serde(flatten)]
    period: PeriodView,
    board_version: u64,
    entries: Vec<FriendEntryView>,
    unranked: Vec<String>,
}

#[cfg(test)]
impl FriendsView {
    /// The view of a friends board.
    fn of(slot: &crate::boards::BoardSlot, ranked: &standings_core::FriendsBoard<'_>) -> FriendsView {
        FriendsView {
            period: PeriodView::of(slot),
            board_version: ranked.board_version,
            entries: ranked
                .entries
                .iter()
                .map(|e| FriendEntryView {
                    rank: e.rank,
                    global_rank: e.global_rank,
                    player_id: e.player.to_string(),
                    value: e.value,
                    achieved_at: crate::clock::format_rfc3339(e.achieved_at),
                })
                .collect(),
            unranked: ranked.unranked.iter().map(|p| p.to_string()).collect(),
        }
    }
}

/// The players ranked among themselves, written as the friends answer. The board's lock is held
/// only for the ranking: the answer borrows the asked ids, not the board. O(k log n + k log k)
/// for k players.
fn rank_among(
    slot: &crate::boards::BoardSlot,
    players: &[String],
    audience: Audience,
    params: &ReadQuery<'_>,
) -> AppResult<Response> {
    let refs: Vec<&str> = players.iter().map(String::as_str).collect();
    let board = slot.read();
    if let Some(segment) = segment_of(params, &board, slot)? {
        let mut ranked = board.segment_among(&segment.key(), &refs);
        for entry in &mut ranked.board.entries {
            entry.info = entry.info.for_audience(audience);
        }
        let mut out =
            Vec::with_capacity(256 + 144 * (ranked.board.entries.len() + ranked.board.unranked.len()));
        write_segment_friends_answer(&mut out, &slot.period.fields(), &segment.key(), &ranked);
        let version = ranked.board.board_version;
        drop(ranked);
        drop(board);
        return Ok(read_answer(Bytes::from(out), version));
    }
    let mut ranked = board.rank_among(&refs);
    for entry in &mut ranked.entries {
        entry.info = entry.info.for_audience(audience);
    }
    let mut out = Vec::with_capacity(256 + 128 * (ranked.entries.len() + ranked.unranked.len()));
    write_friends_answer(&mut out, &slot.period.fields(), &ranked);
    // The answer borrows the extras from the board, so it is written under the lock.
    let version = ranked.board_version;
    drop(ranked);
    drop(board);
    Ok(read_answer(Bytes::from(out), version))
}

async fn friends_of(
    State(state): State<Shared>,
    Path((game, mode, season, scope, player_id)): Path<(String, String, String, String, String)>,
    uri: Uri,
    headers: HeaderMap,
) -> AppResult<Response> {
    let audience = state.auth.friends_reader(&headers, &game, &player_id)?;
    let _timer = QueryTimer::start(&state.metrics, "friends");
    let params = ReadQuery(uri.query());
    let slot = board_of(&state, [&game, &mode, &season, &scope], &params).await?;
    query::player_id(&player_id)?;
    let include_self = params.include_self()?;
    let mut players = state.store.friends(&game, &player_id).await?;
    if include_self {
        players.insert(0, player_id);
    }
    rank_among(&slot, &players, audience, &params)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RankPlayersBody {
    player_ids: Vec<String>,
}

async fn rank_players(
    State(state): State<Shared>,
    Path(path): Path<BoardPath>,
    uri: Uri,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> AppResult<Response> {
    let audience = state.auth.reader(&headers, &path.0)?;
    let _timer = QueryTimer::start(&state.metrics, "friends");
    let params = ReadQuery(uri.query());
    let slot = board_of(&state, board_parts(&path), &params).await?;
    let body: RankPlayersBody = serde_json::from_value(body).map_err(|e| {
        AppError::new(
            Code::INVALID_REQUEST,
            format!("the body must be {{\"player_ids\": [...]}}: {e}"),
        )
    })?;
    query::rank_players(&body.player_ids)?;
    rank_among(&slot, &body.player_ids, audience, &params)
}

async fn game_boards(
    State(state): State<Shared>,
    Path(game): Path<String>,
    headers: HeaderMap,
) -> AppResult<Response> {
    state.auth.reader(&headers, &game)?;
    let _timer = QueryTimer::start(&state.metrics, "boards");
    let boards = state
        .registry
        .of_game(&game)
        .iter()
        .map(|entry| {
            let season = state.domain.seasons.get(&entry.def.id.game, &entry.def.id.season);
            let live = (!entry.is_archived() && entry.broken().is_none()).then(|| {
                let slot = entry.all_time();
                let board = slot.read();
                let shards = board.index().shards().iter().map(|s| s.entries).collect();
                (board.version(), board.total_players(), shards)
            });
            GameBoardView::of(BoardView::of(&entry.def), season.state.as_str(), live)
        })
        .collect();
    Ok(json(StatusCode::OK, &GameBoards { boards, game: &game }))
}

/// The board digest, for checking that two boards (or a rebuild and the live board) are the
/// same. O(n) in the board's size once per version, then O(1).
async fn digest(
    State(state): State<Shared>,
    Path(path): Path<BoardPath>,
    uri: Uri,
    headers: HeaderMap,
) -> AppResult<Response> {
    state.auth.reader(&headers, &path.0)?;
    let slot = board_of(&state, board_parts(&path), &ReadQuery(uri.query())).await?;
    // O(n): on the blocking pool, so the connection's thread keeps serving its other requests.
    let computing = slot.clone();
    let (digest, board_version, total_players) = tokio::task::spawn_blocking(move || computing.digest())
        .await
        .map_err(|e| AppError::new(Code::INTERNAL, format!("computing the digest failed: {e}")))?;
    let period = PeriodView::of(&slot);
    let view = DigestView {
        board_version,
        digest: digest.to_string(),
        period: period.period,
        period_end: period.period_end,
        period_key: period.period_key,
        period_start: period.period_start,
        total_players,
    };
    let mut response = json(StatusCode::OK, &view);
    response
        .headers_mut()
        .insert(BOARD_VERSION, axum::http::HeaderValue::from(view.board_version));
    Ok(response)
}

// The answers below declare their fields in the order of their names, the order these answers
// have always had (they were JSON maps, which sort their keys).

#[derive(Serialize)]
struct GameBoards<'a> {
    boards: Vec<GameBoardView>,
    game: &'a str,
}

/// A board of a game's list: its definition, its season's state and, while it is served, its
/// all-time version and size.
#[derive(Serialize)]
struct GameBoardView {
    #[serde(skip_serializing_if = "Option::is_none")]
    board_version: Option<u64>,
    /// What its changes put in the game's feed, when anything.
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    feed: serde_json::Value,
    game: String,
    grace_seconds: i64,
    mode: String,
    periods: Vec<String>,
    scope: String,
    score_mode: &'static str,
    season: String,
    season_state: &'static str,
    /// The dimensions whose segments the board ranks, when it declares any.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    segments: std::collections::BTreeMap<String, serde_json::Value>,
    /// A split board's ranked players per shard, best range first, while it is served.
    #[serde(skip_serializing_if = "Option::is_none")]
    shard_members: Option<Vec<u64>>,
    shards: i64,
    timezone: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_players: Option<u64>,
    value_max: i64,
    value_min: i64,
}

impl GameBoardView {
    fn of(def: BoardView, season_state: &'static str, live: Option<(u64, u64, Vec<u64>)>) -> GameBoardView {
        let (board_version, total_players, shard_members) = match live {
            Some((version, players, shards)) => (Some(version), Some(players), Some(shards)),
            None => (None, None, None),
        };
        GameBoardView {
            board_version,
            feed: Some(def.feed)
                .filter(|f| f.as_object().is_some_and(|o| !o.is_empty()))
                .unwrap_or_default(),
            game: def.game,
            grace_seconds: def.grace_seconds,
            mode: def.mode,
            periods: def.periods,
            scope: def.scope,
            score_mode: def.score_mode,
            season: def.season,
            season_state,
            segments: def.segments,
            shard_members: shard_members.filter(|s: &Vec<u64>| s.len() > 1),
            shards: def.shards,
            timezone: def.timezone,
            total_players,
            value_max: def.value_max,
            value_min: def.value_min,
        }
    }
}

#[derive(Serialize)]
struct DigestView {
    board_version: u64,
    digest: String,
    period: &'static str,
    period_end: Option<String>,
    period_key: String,
    period_start: Option<String>,
    total_players: u64,
}

#[cfg(test)]
mod tests {
    /// The list of a game's boards and the digest print their fields in the order a JSON map
    /// sorts them, as when they were built as maps.
    #[test]
    fn the_board_list_and_the_digest_keep_the_order_of_their_keys() {
        let check = |typed: String, as_map: serde_json::Value| assert_eq!(typed, as_map.to_string());
        let view = |live| GameBoardView {
            board_version: live,
            feed: serde_json::json!({"bands": ["top:10"], "overtakes": true}),
            game: "g".into(),
            grace_seconds: 300,
            mode: "m".into(),
            periods: vec!["all_time".into()],
            scope: "global".into(),
            score_mode: "highest",
            season: "s".into(),
            season_state: "active",
            segments: [("country".to_string(), serde_json::Value::from("profile"))].into(),
            shard_members: live.map(|n| vec![n, 0]),
            shards: 2,
            timezone: "UTC".into(),
            total_players: live,
            value_max: 10,
            value_min: 0,
        };
        let list = super::GameBoards {
            boards: vec![view(Some(3)), view(None)],
            game: "g",
        };
        check(
            serde_json::to_string(&list).unwrap(),
            serde_json::to_value(&list).unwrap(),
        );
        let digest = DigestView {
            board_version: 3,
            digest: "d".into(),
            period: "daily",
            period_end: Some("e".into()),
            period_key: "2026-10-13".into(),
            period_start: None,
            total_players: 2,
        };
        check(
            serde_json::to_string(&digest).unwrap(),
            serde_json::to_value(&digest).unwrap(),
        );
    }

    use standings_core::{Board, BoardId, BoardRules, ScoreMode, Standing};

    use super::*;
    use crate::boards::BoardSlot;
    use crate::domain::periods::{Period, PeriodKind};

    /// The hand-written answers print byte for byte what the derived views print, escapes,
    /// fractions and `null` ends included: the period fields and entries of the rank and nearby
    /// answers, and whole top pages (with a next cursor and without) and friends answers (ranked,
    /// duplicated, unknown and no players) against `TopView` and `FriendsView`.
    #[test]
    fn written_fields_equal_the_derived_views() {
        let players = ["p-ava", "quote\"d", "back\\slash", "ünï-cödé", "tab\u{7f}"];
        let board = Board::from_aggregates(
            BoardRules::new(ScoreMode::Highest),
            7,
            players.iter().enumerate().map(|(i, p)| {
                let standing = Standing {
                    value: 1_000 - 300 * i as i64,
                    achieved_at: 1_760_313_600_000 + 125 * i as i64,
                };
                (*p, standing, "")
            }),
        )
        .unwrap();
        for entry in board.top(10, None).unwrap().entries.iter() {
            let mut written = Vec::new();
            standings_core::json::write_entry(&mut written, entry);
            assert_eq!(written, serde_json::to_vec(&EntryView::from(entry)).unwrap());
        }
        let id = BoardId::new("arena-clash", "solo", "S7", "global").unwrap();
        let daily = Period {
            kind: PeriodKind::Daily,
            key: "2026-10-13".into(),
            start_ms: Some(1_792_800_000_000),
            end_ms: Some(1_792_886_400_000),
        };
        for period in [Period::all_time(), daily] {
            let slot = BoardSlot::new(
                id.clone(),
                period,
                Board::new(BoardRules::new(ScoreMode::Highest)),
            );
            let mut written = b"{".to_vec();
            slot.period.fields().write(&mut written);
            let derived = serde_json::to_vec(&PeriodView::of(&slot)).unwrap();
            assert_eq!(written[..written.len() - 1], derived[..derived.len() - 1]);
            assert_eq!(written.last(), Some(&b','));

            let mut cursor = None;
            loop {
                let page = board.top(2, cursor.as_ref()).unwrap();
                let next = page
                    .next_cursor
                    .as_ref()
                    .map(|c| cursor_text(c, slot.cursor_binding));
                let mut written = Vec::new();
                write_top_answer(&mut written, &slot.period.fields(), &page, next.as_deref());
                let view = TopView {
                    period: PeriodView::of(&slot),
                    board_version: page.board_version,
                    total_players: page.total_players,
                    entries: page.entries.iter().map(EntryView::from).collect(),
                    next_cursor: next,
                };
                assert_eq!(written, serde_json::to_vec(&view).unwrap());
                match page.next_cursor {
                    Some(c) => cursor = Some(c),
                    None => break,
                }
            }
            let asked: [&[&str]; 3] = [
                &["ünï-cödé", "nobody", "p-ava", "ünï-cödé", "new\"one", "nobody"],
                &["ghost"],
                &[],
            ];
            for players in asked {
                let ranked = board.rank_among(players);
                let mut written = Vec::new();
                write_friends_answer(&mut written, &slot.period.fields(), &ranked);
                assert_eq!(
                    written,
                    serde_json::to_vec(&FriendsView::of(&slot, &ranked)).unwrap()
                );
            }
        }
    }
}
