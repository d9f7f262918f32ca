//! Read-your-writes at the origin: a write's acknowledgement names the position of its game's
//! log (`x-standings-position`, and `position` in its body), and a read that hands it back
//! (`min_position`, or `x-standings-min-position`) is answered only once the boards show the log
//! through it: it waits up to `min_position_wait_ms`, then is refused 503
//! `POSITION_NOT_REACHED` with `Retry-After`, never answered older. The token is the core's
//! (`contract::position`), so every tier reads it alike.

use std::time::Instant;

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::extract::{FromRequestParts, RawPathParams, Request};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::future::{BoxFuture, Either};
use serde::Serialize;
use standings_core::contract::position::{MIN_POSITION_HEADER, POSITION_HEADER, Position};
use standings_core::contract::query::Query;
use tower::{Layer, Service};

use super::Shared;
use super::error::{AppError, Code};
use crate::boards::Registry;

/// How often a waiting read looks again: the applying thread makes a group visible every few
/// milliseconds under load, and a read that waits is rare.
const POLL: std::time::Duration = std::time::Duration::from_millis(2);

/// The position of `game`'s log as committed now: every write acknowledged before this call is
/// at or before it. O(length of the id).
pub(crate) fn position_of(registry: &Registry, game: &str) -> String {
    Position::new(game, u64::try_from(registry.positions.committed()).unwrap_or(0)).token()
}

/// `response` with the position header. O(1).
pub(crate) fn with_position(mut response: Response, token: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(token) {
        response.headers_mut().insert(POSITION_HEADER, value);
    }
    response
}

/// A write's answer: `answer` as JSON with `position` (the position of `game`'s log now, which
/// the write is at or before) added last, and the same in `x-standings-position`. O(answer).
pub(crate) fn positioned<T: Serialize>(
    registry: &Registry,
    game: &str,
    status: StatusCode,
    answer: &T,
) -> Response {
    /// The answer's fields, then the position.
    #[derive(Serialize)]
    struct Positioned<'a, T> {
        #[serde(flatten)]
        answer: &'a T,
        position: &'a str,
    }
    let position = position_of(registry, game);
    let body = Positioned {
        answer,
        position: &position,
    };
    with_position(super::json(status, &body), &position)
}

/// The layer, on every routed request: a `GET` of a route with a `{game}` that asks for a
/// position waits for it; any other request to a route with a `{game}` that succeeds names the
/// position of that game's log in `x-standings-position` (the event endpoints, whose game is in
/// the body, name it themselves). A read that asks for nothing goes straight to its handler,
/// with no future of the layer's own around it: reads are the hot path.
#[derive(Clone)]
pub(super) struct Positions(pub(super) Shared);

impl<S> Layer<S> for Positions {
    type Service = PositionsService<S>;

    fn layer(&self, inner: S) -> PositionsService<S> {
        PositionsService {
            state: self.0.clone(),
            inner,
        }
    }
}

/// The service of [`Positions`] around a route.
#[derive(Clone)]
pub(super) struct PositionsService<S> {
    state: Shared,
    inner: S,
}

impl<S> Service<Request> for PositionsService<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, BoxFuture<'static, Result<Response, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let asked = if request.method() == Method::GET {
            let header = request
                .headers()
                .get(MIN_POSITION_HEADER)
                .and_then(|value| value.to_str().ok());
            match Position::asked(Query(request.uri().query()), header) {
                Some(token) => Some(token.into_owned()),
                // A read that asks for nothing needs nothing here.
                None => return Either::Left(self.inner.call(request)),
            }
        } else {
            None
        };
        // The inner service was made ready for this call; a clone takes its place.
        let ready = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, ready);
        let state = self.state.clone();
        Either::Right(Box::pin(async move {
            Ok(positions(state, asked, request, inner).await)
        }))
    }
}

/// A request that asks for a position (`asked`), or a write: what the layer does around it.
async fn positions<S>(state: Shared, asked: Option<String>, request: Request, mut inner: S) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    // A route without captures has no path parameters to extract: nothing names a game there.
    let (mut parts, body) = request.into_parts();
    let game = RawPathParams::from_request_parts(&mut parts, &state)
        .await
        .ok()
        .and_then(|path| {
            path.iter().find(|(name, _)| *name == "game").map(|(_, game)| {
                percent_encoding::percent_decode_str(game)
                    .decode_utf8_lossy()
                    .into_owned()
            })
        });
    let request = Request::from_parts(parts, body);
    let Some(game) = game else {
        let Ok(response) = inner.call(request).await;
        return response;
    };
    if let Some(token) = asked {
        let wanted = match Position::parse(&token, &game) {
            Ok(position) => position,
            Err(problem) => return AppError::from(problem).into_response(),
        };
        if let Err(refused) = reached(&state.registry, wanted.seq, state.min_position_wait).await {
            return refused.into_response();
        }
        let Ok(response) = inner.call(request).await;
        return response;
    }
    let Ok(response) = inner.call(request).await;
    if response.status().is_success() {
        let token = position_of(&state.registry, &game);
        return with_position(response, &token);
    }
    response
}

/// Waits until the boards show the log through `seq`, at most `wait`.
async fn reached(registry: &Registry, seq: u64, wait: std::time::Duration) -> Result<(), AppError> {
    let seq = i64::try_from(seq).unwrap_or(i64::MAX);
    let deadline = Instant::now() + wait;
    loop {
        let visible = registry.positions.visible();
        if visible >= seq {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(AppError::new(
                Code::POSITION_NOT_REACHED,
                format!(
                    "the boards show this game's log through {visible}, not yet the position asked for ({seq}); retry shortly"
                ),
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}
