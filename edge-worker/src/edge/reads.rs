//! The read endpoints the edge answers: each checks its caller with the contract's access rule,
//! takes its instance's head, parses its parameters with the contract's parsers (in the order
//! the origin checks them, so both tiers refuse a bad read alike), and answers with the
//! contract's answer over the parts it asks for.

use std::rc::Rc;

use http::HeaderValue;
use http::header::CONTENT_TYPE;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use standings_core::contract::head::Head;
use standings_core::contract::query::{self, Precision, Query, SegmentParam};
use standings_core::contract::{MAX_BODY_BYTES, answer};
use standings_core::snapshot::read::{SnapshotReader, Step};
use standings_core::{BoardDigest, BoardId, CursorBinding};

use super::heads::HeadRead;
use super::{BOARD_VERSION, CACHE_STATUS, Edge, Fallback, JSON, SNAPSHOT_AGE, STALE, Spend, Stop};
use crate::decoded::Decoded;
use crate::platform::{Cache, Clock, Origin, Request, Response};
use crate::problem::{self, Problem};
use crate::route::BoardPath;

/// How long the Cache API keeps a top page; a page is immutable for its version, and a new
/// version misses by itself, so this only bounds how long a dead version's pages stay.
const TOP_PAGE_SECONDS: u64 = 86_400;

/// Which of a player's reads.
#[derive(Clone, Copy, Debug)]
pub(super) enum PlayerRead {
    /// `players/{player}/rank`.
    Rank,
    /// `players/{player}/nearby`.
    Nearby,
}

/// A body the origin reads for rank-players.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RankPlayersBody {
    player_ids: Vec<String>,
}

impl<O: Origin, C: Cache, K: Clock> Edge<O, C, K> {
    /// `GET .../top?limit=&cursor=`: a page from the isolate's memory or the Cache API when
    /// this version's page was made before, else from the rank chunks that hold it.
    pub(super) async fn top(
        &self,
        request: &Request,
        board: &BoardPath,
        spend: &mut Spend,
    ) -> Result<Response, Stop> {
        self.reader(request.headers(), board.game(), spend).await?;
        let query = Query(request.uri().query());
        let HeadRead { head, stale } = self.head(board, query, spend).await?;
        let limit = query.limit()?;
        let id = board_id(board)?;
        let binding = CursorBinding::of(&id, &head.period_key);
        let cursor = query.cursor(binding, &id, &head.period_key)?.map(|(_, c)| c);
        if cursor
            .as_ref()
            .is_some_and(|c| c.board_version != head.board_version)
        {
            return Err(Stop::Forward(Fallback::StaleCursor));
        }
        // Only an answer is kept, so a segment in the key was one the board declares.
        let page_key = format!(
            "/top/{}/{}/{}/{limit}/{}/{}",
            board.raw,
            head.period_key,
            head.board_version,
            query.get("cursor").as_deref().unwrap_or("-"),
            query.get("segment").as_deref().unwrap_or("-")
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
        let version = self.version(&head, spend).await?;
        let reader = version.reader()?;
        let period = head.period_fields();
        // A snapshot holds one version; the origin holds a history of them, and its words for
        // a cursor it no longer holds either.
        let older = |_| Stop::Forward(Fallback::StaleCursor);
        let body = match segment_of(query, &reader, &id)? {
            Some(segment) => {
                let key = segment.key();
                let counts = self.segment_counts(&version, &key)?;
                let within = reader.within(&counts).ok_or(Stop::Forward(Fallback::Segment))?;
                self.answer_from_parts(&reader, spend, |parts| {
                    answer::segment_top(&within, parts, &period, &key, binding, limit, cursor.as_ref())
                        .map_err(older)
                })
                .await?
            }
            None => {
                self.answer_from_parts(&reader, spend, |parts| {
                    answer::top(&reader, parts, &period, binding, limit, cursor.as_ref()).map_err(older)
                })
                .await?
            }
        };
        self.state
            .borrow_mut()
            .decoded
            .insert(&page_id, Decoded::Page(Rc::new(body.clone())));
        self.defer_put(&page_key, &body, TOP_PAGE_SECONDS);
        Ok(self.read_answer(&head, stale, false, body))
    }

    /// `GET .../players/{player}/rank`, and `.../nearby?radius=` when `read` says so: one
    /// lookup chunk finds the player, the rank chunks around them (plus the manifest's counts)
    /// rank them and their window. With `approximate=interval`, the sketch in place of the
    /// rank chunks gives the rank interval.
    pub(super) async fn player_read(
        &self,
        request: &Request,
        board: &BoardPath,
        player: &str,
        read: PlayerRead,
        spend: &mut Spend,
    ) -> Result<Response, Stop> {
        self.reader(request.headers(), board.game(), spend).await?;
        let query = Query(request.uri().query());
        let HeadRead { head, stale } = self.head(board, query, spend).await?;
        query::player_id(player)?;
        let asked = match read {
            PlayerRead::Rank => match query.precision()? {
                Precision::Exact => Asked::Rank,
                Precision::Interval => Asked::Interval,
            },
            PlayerRead::Nearby => Asked::Nearby(query.radius()?),
        };
        let version = self.version(&head, spend).await?;
        let reader = version.reader()?;
        let period = head.period_fields();
        let id = board_id(board)?;
        if let Some(segment) = segment_of(query, &reader, &id)? {
            if matches!(asked, Asked::Interval) {
                return Err(query::interval_within_segment().into());
            }
            let key = segment.key();
            let counts = self.segment_counts(&version, &key)?;
            let within = reader.within(&counts).ok_or(Stop::Forward(Fallback::Segment))?;
            let board_version = reader.board_version();
            let body = self
                .answer_from_parts(&reader, spend, |parts| {
                    let step = match asked {
                        Asked::Nearby(radius) => answer::segment_nearby(
                            &within,
                            parts,
                            &period,
                            &key,
                            player,
                            radius,
                            board_version,
                        ),
                        _ => answer::segment_rank(&within, parts, &period, &key, player),
                    };
                    match step {
                        Step::Done(Some(answer)) => Ok(Step::Done(answer)),
                        Step::Done(None) => Err(query::not_in_segment(player, &segment, &id).into()),
                        Step::Need(need) => Ok(Step::Need(need)),
                    }
                })
                .await?;
            return Ok(self.read_answer(&head, stale, !spend.fetched_part, body));
        }
        let body = self
            .answer_from_parts(&reader, spend, |parts| {
                let step = match asked {
                    Asked::Rank => answer::rank(&reader, parts, &period, player),
                    Asked::Interval => answer::rank_interval(&reader, parts, &period, player),
                    Asked::Nearby(radius) => answer::nearby(&reader, parts, &period, player, radius),
                };
                match step {
                    Step::Done(Some(answer)) => Ok(Step::Done(answer)),
                    Step::Done(None) => Err(not_ranked(player, board)),
                    Step::Need(need) => Ok(Step::Need(need)),
                }
            })
            .await?;
        Ok(self.read_answer(&head, stale, !spend.fetched_part, body))
    }

    /// `GET .../friends-of/{player}?include_self=`: the friend list from the origin (held
    /// for a head lifetime), ranked among itself from the snapshot.
    pub(super) async fn friends_of(
        &self,
        request: &Request,
        board: &BoardPath,
        player: &str,
        spend: &mut Spend,
    ) -> Result<Response, Stop> {
        self.friends_reader(request.headers(), board.game(), player, spend)
            .await?;
        let query = Query(request.uri().query());
        let HeadRead { head, stale } = self.head(board, query, spend).await?;
        query::player_id(player)?;
        let include_self = query.include_self()?;
        let friends = self.friends(board.game(), player, spend).await?;
        let mut players: Vec<&str> = Vec::with_capacity(friends.value.len() + 1);
        if include_self {
            players.push(player);
        }
        players.extend(friends.value.iter().map(String::as_str));
        self.rank_among(board, query, &head, stale || friends.stale, &players, spend)
            .await
    }

    /// `POST .../rank-players {"player_ids": [...]}`. A body the edge does not read as that
    /// shape goes to the origin, whose words for it (and whose order of checks) are the API's.
    pub(super) async fn rank_players(
        &self,
        request: &Request,
        board: &BoardPath,
        spend: &mut Spend,
    ) -> Result<Response, Stop> {
        if request.body().len() > MAX_BODY_BYTES {
            return Err(Stop::Forward(Fallback::Body));
        }
        let Ok(body) = serde_json::from_slice::<RankPlayersBody>(request.body()) else {
            return Err(Stop::Forward(Fallback::Body));
        };
        self.reader(request.headers(), board.game(), spend).await?;
        let query = Query(request.uri().query());
        let HeadRead { head, stale } = self.head(board, query, spend).await?;
        query::rank_players(&body.player_ids)?;
        let players: Vec<&str> = body.player_ids.iter().map(String::as_str).collect();
        self.rank_among(board, query, &head, stale, &players, spend).await
    }

    /// Friends-of and rank-players: the players ranked among themselves from the snapshot,
    /// within the segment the read asks for, if any.
    async fn rank_among(
        &self,
        board: &BoardPath,
        query: Query<'_>,
        head: &Head,
        stale: bool,
        players: &[&str],
        spend: &mut Spend,
    ) -> Result<Response, Stop> {
        let version = self.version(head, spend).await?;
        let reader = version.reader()?;
        let period = head.period_fields();
        let id = board_id(board)?;
        let body = match segment_of(query, &reader, &id)? {
            Some(segment) => {
                let key = segment.key();
                let counts = self.segment_counts(&version, &key)?;
                let within = reader.within(&counts).ok_or(Stop::Forward(Fallback::Segment))?;
                self.answer_from_parts(&reader, spend, |parts| {
                    Ok(answer::segment_among(&within, parts, &period, &key, players))
                })
                .await?
            }
            None => {
                self.answer_from_parts(&reader, spend, |parts| {
                    Ok(answer::rank_among(&reader, parts, &period, players))
                })
                .await?
            }
        };
        Ok(self.read_answer(head, stale, !spend.fetched_part, body))
    }

    /// `GET /v1/games/{game}/boards`: the origin's list, fetched with the edge token once the
    /// caller may read the game, and held for a head lifetime.
    pub(super) async fn boards_read(
        &self,
        request: &Request,
        game: &str,
        spend: &mut Spend,
    ) -> Result<Response, Stop> {
        self.reader(request.headers(), game, spend).await?;
        let list = self.boards(game, spend).await?;
        let mut answer = Response::new(list.value.to_vec());
        answer.headers_mut().insert(CONTENT_TYPE, JSON);
        answer.headers_mut().insert(CACHE_STATUS, hit_or_miss(list.hit));
        if list.stale {
            self.mark_stale(&mut answer);
        }
        Ok(answer)
    }

    /// A read answer: the JSON with the edge's headers (and the stale mark). Counted when stale.
    fn read_answer(&self, head: &Head, stale: bool, hit: bool, body: Vec<u8>) -> Response {
        let age_ms = self.now_ms().saturating_sub(head.published_at_ms).max(0);
        let mut answer = Response::new(body);
        let headers = answer.headers_mut();
        headers.insert(CONTENT_TYPE, JSON);
        headers.insert(BOARD_VERSION, HeaderValue::from(head.board_version));
        headers.insert(SNAPSHOT_AGE, HeaderValue::from(age_ms));
        headers.insert(CACHE_STATUS, hit_or_miss(hit));
        if stale {
            self.mark_stale(&mut answer);
        }
        answer
    }

    /// Marks an answer stale: `,"stale":true` before the JSON's final `}`, and the header.
    /// Counted.
    fn mark_stale(&self, answer: &mut Response) {
        let body = answer.body_mut();
        if body.last() == Some(&b'}') {
            let at = body.len() - 1;
            body.splice(at..at, b",\"stale\":true".iter().copied());
        }
        answer
            .headers_mut()
            .append(STALE, HeaderValue::from_static("true"));
        self.count(|s| s.stale_answers += 1);
    }
}

/// The segment a read asks for, checked as the origin checks it against the dimensions the
/// snapshot's board declares; a read over patches goes to the origin (a patch does not restate
/// the chunks' segment members, and a board that declares segments is published whole).
fn segment_of(
    query: Query<'_>,
    reader: &SnapshotReader<'_>,
    id: &BoardId,
) -> Result<Option<SegmentParam>, Stop> {
    if query.get("segment").is_none() {
        return Ok(None);
    }
    if reader.patched() {
        return Err(Stop::Forward(Fallback::Segment));
    }
    Ok(query.segment(&reader.base().segments.spec(), id)?)
}

/// `HIT` when the answer needed nothing from the origin, `MISS` otherwise.
fn hit_or_miss(hit: bool) -> HeaderValue {
    HeaderValue::from_static(if hit { "HIT" } else { "MISS" })
}

/// The origin's 404 for a player with no score on the board.
fn not_ranked(player: &str, board: &BoardPath) -> Stop {
    match board_id(board) {
        Ok(id) => Problem::player_not_ranked(format!("player {player:?} has no score on board {id}")).into(),
        Err(bad) => bad.into(),
    }
}

/// The board of a path whose head the origin answered (so its parts are valid ids).
fn board_id(board: &BoardPath) -> Result<BoardId, Problem> {
    let [g, m, s, c] = &board.parts;
    BoardId::new(g, m, s, c).map_err(|e| {
        problem::bad_origin_answer(format!("the origin answered a head for an invalid board: {e}"))
    })
}

/// What a player read answers: the exact rank, the rank interval, or the window of a radius.
#[derive(Clone, Copy)]
enum Asked {
    Rank,
    Interval,
    Nearby(u64),
}
