//! A request routed: to the read that answers it, or forwarded to the origin; a read's stop
//! turned into its answer; the origin's answers passed on.

use http::header::{CACHE_CONTROL, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST, TE, TRANSFER_ENCODING};
use http::{HeaderName, HeaderValue, StatusCode};
use serde::Deserialize;

use super::reads::PlayerRead;
use super::{BOARD_VERSION, CACHE_STATUS, Edge, FALLBACK, Fallback, JSON, SNAPSHOT_AGE, Spend, Stop};
use crate::live::key::LiveRoute;
use crate::platform::{Cache, Clock, Origin, Request, Response, Unavailable, pass_through};
use crate::problem;
use crate::route::Route;
use standings_core::contract::position::{MIN_POSITION_HEADER, Position};
use standings_core::contract::query::Query;

/// `keep-alive`, which the `http` crate does not name: a hop's header.
const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");

/// What the edge does with a request.
#[derive(Debug)]
pub enum Outcome {
    /// Answer this.
    Answer(Response),
    /// Send this to the origin and answer with what it says (streamed as it comes); when it
    /// is unreachable, answer [`Edge::unreachable`].
    Forward(Request),
    /// A read the edge serves but hands to the origin this time (`fallback` says why): send
    /// it, read the answer whole and answer [`Edge::forwarded_read`] of it, which adds the read
    /// headers; when the origin is unreachable, answer [`Edge::unreachable`].
    ForwardRead {
        /// The request to send.
        request: Request,
        /// Why: `stale-cursor`, `too-many-parts`, `auth`, `body` or `instances-full`.
        fallback: &'static str,
    },
    /// A WebSocket subscription for the board view's live object (`crate::live`): hand it
    /// there, or, where the platform has no live objects, forward `fallback` as it came.
    Live {
        /// The object and what it subscribes to.
        route: LiveRoute,
        /// The subscription as it came.
        fallback: Request,
    },
}

impl<O: Origin, C: Cache, K: Clock> Edge<O, C, K> {
    /// Decides what to do with `request`: the edge's answer, or the request to forward.
    /// With the head and the parts held, a read costs the reader's work and the JSON (tens of
    /// microseconds natively, O(answer) plus O(log parts) per part); a cold one adds a fetch,
    /// hash check and decode per part (O(part bytes)), and the manifest's once per version.
    pub async fn handle(&self, request: Request) -> Outcome {
        let Some(route) = self.routes.route(request.method(), request.uri().path()) else {
            return self.forward(request);
        };
        if let Route::Subscribe(board) = &route {
            return self.subscribe(request, board).await;
        }
        self.count(|s| match &route {
            Route::Top(_) => s.requests.top += 1,
            Route::Rank(..) => s.requests.rank += 1,
            Route::Nearby(..) => s.requests.nearby += 1,
            Route::FriendsOf(..) => s.requests.friends_of += 1,
            Route::RankPlayers(_) => s.requests.rank_players += 1,
            Route::Boards(_) => s.requests.boards += 1,
            Route::Subscribe(_) => {}
            Route::Stats => s.requests.stats += 1,
        });
        let mut spend = Spend::default();
        let asks_position = Position::asked(
            Query(request.uri().query()),
            request
                .headers()
                .get(MIN_POSITION_HEADER)
                .and_then(|value| value.to_str().ok()),
        )
        .is_some();
        let read = match &route {
            Route::Stats => return Outcome::Answer(self.stats_answer()),
            _ if asks_position => Err(Stop::Forward(Fallback::MinPosition)),
            Route::Top(board) => self.top(&request, board, &mut spend).await,
            Route::Rank(board, player) => {
                self.player_read(&request, board, player, PlayerRead::Rank, &mut spend)
                    .await
            }
            Route::Nearby(board, player) => {
                self.player_read(&request, board, player, PlayerRead::Nearby, &mut spend)
                    .await
            }
            Route::FriendsOf(board, player) => self.friends_of(&request, board, player, &mut spend).await,
            Route::RankPlayers(board) => self.rank_players(&request, board, &mut spend).await,
            Route::Boards(game) => self.boards_read(&request, game, &mut spend).await,
            Route::Subscribe(_) => unreachable!("subscriptions are routed above"),
        };
        match read {
            Ok(answer) => Outcome::Answer(answer),
            Err(Stop::Problem(p)) => Outcome::Answer(problem::response(&p)),
            Err(Stop::Origin(answer)) => Outcome::Answer(*answer),
            Err(Stop::Forward(why)) => {
                let fallback = self.count_fallback(why);
                match self.forward_request(request) {
                    Ok(request) => Outcome::ForwardRead { request, fallback },
                    Err(_) => Outcome::Answer(self.unreachable()),
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
            Fallback::Trusted => {
                fallbacks.trusted += 1;
                "trusted-caller"
            }
            Fallback::MinPosition => {
                fallbacks.min_position += 1;
                "min-position"
            }
            Fallback::Segment => {
                fallbacks.segment += 1;
                "segment"
            }
        }
    }

    /// The origin's answer to a read the edge handed it, with the read headers: the
    /// `board_version` of the answer, age 0 (the origin answers live), `MISS`, and
    /// `x-standings-fallback` naming why. These replace any the origin sent under the same
    /// names: its `x-standings-board-version` is its board's version, which a page read at an
    /// older cursor's version does not hold, and a header read first must be the answer's. An
    /// error answer passes as it is. O(answer length).
    pub fn forwarded_read(&self, fallback: &'static str, answer: Response) -> Response {
        #[derive(Deserialize)]
        struct Versioned {
            board_version: u64,
        }
        let mut answer = pass_through(answer);
        if answer.status() == StatusCode::OK {
            let read = serde_json::from_slice::<Versioned>(answer.body()).ok();
            let headers = answer.headers_mut();
            for name in [SNAPSHOT_AGE, CACHE_STATUS, FALLBACK] {
                headers.remove(name);
            }
            if let Some(read) = read {
                headers.remove(BOARD_VERSION);
                headers.append(BOARD_VERSION, HeaderValue::from(read.board_version));
            }
            headers.append(SNAPSHOT_AGE, HeaderValue::from_static("0"));
            headers.append(CACHE_STATUS, HeaderValue::from_static("MISS"));
            headers.append(FALLBACK, HeaderValue::from_static(fallback));
        }
        answer
    }

    /// [`Edge::handle`], with forwards sent through the [`Origin`] and read whole, and the
    /// Cache API puts run before it returns: what a driver without streaming (and the tests)
    /// answers.
    pub async fn serve(&self, request: Request) -> Response {
        let outcome = self.handle(request).await;
        for put in self.take_deferred() {
            put.await;
        }
        match outcome {
            Outcome::Answer(answer) => answer,
            // The tests' platform has no live objects: a subscription is the origin's.
            Outcome::Live { fallback, .. } => match self.forwarded(fallback) {
                Ok(forward) => match self.origin.send(forward).await {
                    Ok(answer) => pass_through(answer),
                    Err(_) => self.unreachable(),
                },
                Err(answer) => *answer,
            },
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
    pub fn unreachable(&self) -> Response {
        self.count(|s| s.origin_fetches.unreachable += 1);
        problem::response(&problem::origin_unavailable(
            "the origin is unreachable; writes, and reads the edge holds no snapshot for, need it; retry shortly",
        ))
    }

    fn stats_answer(&self) -> Response {
        let mut answer = Response::new(serde_json::to_vec(&self.stats()).unwrap_or_default());
        answer.headers_mut().insert(CONTENT_TYPE, JSON);
        answer
            .headers_mut()
            .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        answer
    }

    /// The request as the origin gets it: method, path, query, body, and the caller's headers
    /// but those that describe this hop. Counted.
    pub(super) fn forward_request(&self, request: Request) -> Result<Request, Unavailable> {
        self.count(|s| s.origin_fetches.forwarded += 1);
        let (parts, body) = request.into_parts();
        let mut headers = parts.headers;
        for hop in [
            HOST,
            CONTENT_LENGTH,
            CONNECTION,
            KEEP_ALIVE,
            TRANSFER_ENCODING,
            TE,
        ] {
            headers.remove(hop);
        }
        let path_and_query = parts
            .uri
            .path_and_query()
            .map_or(parts.uri.path(), |p| p.as_str());
        self.origin_request(parts.method, path_and_query, headers, body)
    }
}
