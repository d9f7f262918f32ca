//! The HTTP API: one `router()` per plane, all sharing [`AppState`], whose fields are private.
//!
//! `app()` is what `run` serves and what the tests call with `oneshot`: the routers behind the body
//! limit and the rejection count, each wrapped once around the whole rather than per route.
//! Handlers never hold a board lock across an `.await`, and which connection thread serves a
//! request changes nothing but balance: state is shared through `Arc`s and locks, never thread
//! locals.

pub mod api;
pub mod auth;
pub mod error;
mod feed;
mod introspect;
mod live;
pub mod ops;
mod players;
mod position;
mod read;
pub mod serve;
mod snapshots;
mod time_and_trust;
mod viewer;
pub(crate) mod write;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use standings_core::BoardId;
use tower::{Layer, Service};

use crate::boards::{BoardSlot, Registry, Resolved};
use crate::clock::Clock;
use crate::domain::Moderation;
use crate::domain::periods::PeriodKind;
use crate::http::auth::Auth;
use crate::http::error::{AppError, Code, ErrorCode};
use crate::metrics::Metrics;
use crate::store::Store;
use crate::writer::Ingest;

/// The largest request body accepted (a full batch of 1,000 events fits with room to spare).
pub(crate) use standings_core::contract::MAX_BODY_BYTES;

/// Everything a handler needs.
pub struct AppState {
    /// The database.
    pub(crate) store: Store,
    /// The live boards.
    pub(crate) registry: Arc<Registry>,
    /// The group-commit writer.
    pub(crate) ingest: Ingest,
    /// Who may do what.
    pub(crate) auth: Auth,
    /// The metrics.
    pub(crate) metrics: Arc<Metrics>,
    /// The live subscriptions.
    pub(crate) live: Arc<crate::live::Hub>,
    /// The snapshots published for the edge.
    pub(crate) snapshots: Arc<crate::snapshots::Snapshots>,
    /// Seasons and moderation state.
    pub(crate) domain: Arc<Moderation>,
    /// The service's clock.
    pub(crate) clock: Clock,
    /// False until start-up finished, and again while shutting down.
    pub(crate) ready: AtomicBool,
    /// How start-up restored the live state.
    pub(crate) restored: crate::writer::checkpoint::Restored,
    /// How long a read waits for its `min_position` (`position.rs`).
    pub(crate) min_position_wait: std::time::Duration,
}

impl AppState {
    /// The database.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The live boards.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The group-commit writer.
    pub fn ingest(&self) -> &Ingest {
        &self.ingest
    }

    /// The snapshots published for the edge.
    pub fn snapshots(&self) -> &crate::snapshots::Snapshots {
        &self.snapshots
    }

    /// Seasons and moderation state.
    pub fn domain(&self) -> &Moderation {
        &self.domain
    }

    /// How start-up restored the live state.
    pub fn restored(&self) -> &crate::writer::checkpoint::Restored {
        &self.restored
    }
}

/// The state as handlers receive it.
pub type Shared = Arc<AppState>;

/// The whole API as one router, without the body limit and the rejection count that [`app`]
/// wraps around it.
pub(crate) fn router(state: Shared) -> Router {
    Router::new()
        .merge(write::router())
        .merge(feed::router())
        .merge(read::router())
        .merge(live::router())
        .merge(ops::router())
        .merge(time_and_trust::router())
        .merge(players::router())
        .merge(introspect::router())
        .merge(snapshots::router())
        .merge(viewer::router())
        // Read-your-writes on every route that names a game (`position.rs`).
        .route_layer(position::Positions(state.clone()))
        .fallback(|| async { AppError::new(Code::NOT_FOUND, "no such route") })
        // axum answers an empty 405 by default; ours is a problem document like every refusal
        // (axum still adds the `Allow` header).
        .method_not_allowed_fallback(|method: axum::http::Method, uri: axum::http::Uri| async move {
            AppError::new(
                Code::METHOD_NOT_ALLOWED,
                format!(
                    "{method} is not allowed on {}; the Allow header lists the methods that are",
                    uri.path()
                ),
            )
        })
        .with_state(state)
}

/// The routes whose `GET`s [`serve::serve`] answers on a connection of their own, outside hyper:
/// the live subscription's, for the memory an idle SSE subscriber costs (see `serve::stream`).
/// Named here, from the route the live router defines, so that the router alone decides.
pub fn stream_routes() -> serve::StreamRoutes {
    serve::StreamRoutes::new([live::SUBSCRIBE])
}

/// The whole API, ready to serve or to call with `oneshot` in tests: the [`router`] behind the
/// body limit, counting every error answer by its code.
pub fn app(state: Shared) -> App {
    App {
        metrics: state.metrics.clone(),
        routes: DefaultBodyLimit::max(MAX_BODY_BYTES).layer(router(state)),
    }
}

/// The router behind the body limit.
type Limited = <DefaultBodyLimit as Layer<Router>>::Service;

/// The service [`app`] builds. The body limit and the count wrap the router once, instead of
/// being `Router::layer`s: a route layer wraps every route, and costs a boxed clone of the
/// route and a boxed future on every request.
#[derive(Clone)]
pub struct App {
    routes: Limited,
    metrics: Arc<Metrics>,
}

impl Service<Request> for App {
    type Response = Response;
    type Error = Infallible;
    type Future = CountRejections<<Limited as Service<Request>>::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Service::<Request>::poll_ready(&mut self.routes, cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        CountRejections {
            response: self.routes.call(request),
            metrics: self.metrics.clone(),
        }
    }
}

/// A response on its way out, counted by its code when it is an error answer.
pub struct CountRejections<F> {
    response: F,
    metrics: Arc<Metrics>,
}

impl<F: Future<Output = Result<Response, Infallible>> + Unpin> Future for CountRejections<F> {
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Ok(response) = ready!(Pin::new(&mut self.response).poll(cx));
        if let Some(ErrorCode(code)) = response.extensions().get::<ErrorCode>() {
            self.metrics.rejection(code);
        }
        Poll::Ready(Ok(response))
    }
}

/// A JSON request body: the bytes are read with the size limit (413 past it) and parsed as
/// JSON (400 `INVALID_JSON` when they are not, or when they repeat a key); each handler then
/// reads its fields, with its own 422 for a wrong shape.
pub(crate) struct JsonBody(pub serde_json::Value);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let RawBody(bytes) = RawBody::from_request(req, state).await?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// A query string of named parameters, each given at most once: a repeated one (`?game=a&game=b`)
/// is refused, so no layer can read one value where another reads the other (the cluster routes
/// on the game the handler answers for).
pub(crate) struct UniqueQuery(pub std::collections::HashMap<String, String>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for UniqueQuery {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, AppError> {
        unique_query(parts.uri.query()).map(UniqueQuery)
    }
}

/// The parameters of `query`, or a 400 naming the first one given twice. O(query length).
pub(crate) fn unique_query(
    query: Option<&str>,
) -> Result<std::collections::HashMap<String, String>, AppError> {
    let mut params = std::collections::HashMap::new();
    for (name, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if params.insert(name.to_string(), value.into_owned()).is_some() {
            return Err(AppError::new(
                Code::INVALID_REQUEST,
                format!("the query parameter {name:?} is given more than once; give it once"),
            ));
        }
    }
    Ok(params)
}

/// A request body read with the size limit (413 past it), not yet parsed: for a handler with a
/// typed fast path that falls back to [`parse_json`] and [`JsonBody`]'s answers.
pub(crate) struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        Bytes::from_request(req, state).await.map(RawBody).map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                AppError::new(
                    Code::PAYLOAD_TOO_LARGE,
                    format!("the body is larger than {MAX_BODY_BYTES} bytes"),
                )
            } else {
                AppError::new(Code::INVALID_JSON, format!("the body cannot be read: {e}"))
            }
        })
    }
}

/// Parses a body as JSON, 400 `INVALID_JSON` when it is not or when an object in it repeats a
/// key (the answer names the key and where it is). Every `Value` read from a request comes from
/// here; see `crate::json_value`.
pub fn parse_json(bytes: &[u8]) -> Result<serde_json::Value, AppError> {
    crate::json_value::read_value(bytes).map_err(|e| AppError::new(Code::INVALID_JSON, e.to_string()))
}

/// A JSON answer with a status.
pub(crate) fn json<T: Serialize>(status: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => json_bytes(status, Bytes::from(bytes)),
        Err(e) => AppError::new(Code::INTERNAL, format!("cannot serialize an answer: {e}")).into_response(),
    }
}

/// Pre-serialized JSON bytes with a status.
pub(crate) fn json_bytes(status: StatusCode, bytes: Bytes) -> Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        bytes,
    )
        .into_response()
}

/// The query parameters of a read, parsed with the read contract the tiers share
/// (`ReadQuery(uri.query())`).
pub(crate) use standings_core::contract::query::Query as ReadQuery;

/// The board instance a read names: the board from the path, the period from `?period=`
/// (default `all_time`) and `?at=` (RFC 3339, default now). See [`resolve`].
pub(crate) async fn board_of(
    state: &AppState,
    parts: [&str; 4],
    params: &ReadQuery<'_>,
) -> Result<Arc<BoardSlot>, AppError> {
    resolve(state, parts, params).await.map(Resolved::into_slot)
}

/// The board instance a read names, and where it was found: the registry's, a closed period
/// that left memory restored once from storage (same answers, same `board_version`, then read
/// from memory by every request until the cache gives it up), or for a period with no events
/// an empty board at version 0. 404 `UNKNOWN_BOARD` for an undefined or archived board.
pub(crate) async fn resolve(
    state: &AppState,
    [game, mode, season, scope]: [&str; 4],
    params: &ReadQuery<'_>,
) -> Result<Resolved, AppError> {
    let id = BoardId::new(game, mode, season, scope).map_err(|e| {
        AppError::new(
            Code::UNKNOWN_BOARD,
            format!("no board {game}/{mode}/{season}/{scope}: {e}"),
        )
    })?;
    let entry = state.registry.entry(&id).ok_or_else(|| {
        AppError::new(
            Code::UNKNOWN_BOARD,
            format!("no board {id}; define it with PUT /v1/boards/{id}"),
        )
    })?;
    if entry.is_archived() {
        return Err(AppError::new(
            Code::UNKNOWN_BOARD,
            format!(
                "board {id} belongs to an archived season; its results stay readable at /v1/leaderboards/{game}/{mode}/{season}/results"
            ),
        ));
    }
    entry.check_not_broken()?;
    let kind = match params.get("period") {
        None => PeriodKind::AllTime,
        Some(name) => PeriodKind::parse(&name)
            .filter(|k| entry.keeps(*k))
            .ok_or_else(|| {
                AppError::new(
                    Code::INVALID_REQUEST,
                    format!(
                        "period={name:?} is not kept by board {id}; it keeps {}",
                        entry.def.periods.join(", ")
                    ),
                )
            })?,
    };
    let at = match params.get("at") {
        None => state.clock.now_ms(),
        Some(raw) => {
            crate::clock::parse_rfc3339(&raw).map_err(|e| AppError::new(Code::INVALID_REQUEST, e))?
        }
    };
    let period = entry
        .calendar
        .period_of(kind, at)
        .map_err(|e| AppError::new(Code::INVALID_REQUEST, e.to_string()))?;
    if let Some(slot) = entry.instance(&period.key) {
        return Ok(Resolved::Held(slot));
    }
    if entry.calendar.is_closed(&period, state.clock.now_ms()) {
        let cell = state.registry.closed.cell(&id, &period.key);
        let restored = cell
            .get_or_try_init(|| async {
                let Some(snapshot) = state.store.period_snapshot(&id, &period.key).await? else {
                    return Ok::<_, AppError>(None);
                };
                let slot = entry.restored(&period, snapshot.board_version, &snapshot.entries)?;
                state.metrics.closed_restores.add(1);
                Ok(Some(Arc::new(slot)))
            })
            .await?;
        // The writer may have brought it back meanwhile (a late change): its copy is current.
        if let Some(slot) = entry.instance(&period.key) {
            return Ok(Resolved::Held(slot));
        }
        if let Some(slot) = restored {
            return Ok(Resolved::Restored(slot.clone()));
        }
    }
    let mut empty = standings_core::Board::new(entry.def.rules);
    empty.declare_segments(entry.def.segments.clone());
    Ok(Resolved::Empty(Arc::new(BoardSlot::new(id, period, empty))))
}

/// The period fields every read answers with.
#[derive(Debug, Serialize)]
pub(crate) struct PeriodView {
    /// `all_time`, `daily`, `weekly` or `monthly`.
    pub period: &'static str,
    /// `all_time`, `2026-10-13`, `2026-W42` or `2026-10`.
    pub period_key: String,
    /// When the period starts (RFC 3339), `null` for all time.
    pub period_start: Option<String>,
    /// When it ends (exclusive), `null` for all time.
    pub period_end: Option<String>,
}

impl PeriodView {
    /// The view of a slot's period.
    pub(crate) fn of(slot: &BoardSlot) -> PeriodView {
        PeriodView {
            period: slot.period.kind.as_str(),
            period_key: slot.period.key.clone(),
            period_start: slot.period.start_ms.map(crate::clock::format_rfc3339),
            period_end: slot.period.end_ms.map(crate::clock::format_rfc3339),
        }
    }
}

/// Times a read for the query-latency metric.
pub(crate) struct QueryTimer<'a> {
    metrics: &'a Metrics,
    kind: &'static str,
    started: Instant,
}

impl<'a> QueryTimer<'a> {
    /// Starts timing a read of `kind`.
    pub(crate) fn start(metrics: &'a Metrics, kind: &'static str) -> QueryTimer<'a> {
        QueryTimer {
            metrics,
            kind,
            started: Instant::now(),
        }
    }
}

impl Drop for QueryTimer<'_> {
    fn drop(&mut self) {
        self.metrics.query(self.kind, self.started.elapsed());
    }
}
