//! Operations: health, readiness, metrics and the OpenAPI document (described in
//! [`super::api`]).

use std::sync::atomic::Ordering;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use super::Shared;
use crate::http::error::{AppError, Code};

pub(super) fn router() -> Router<Shared> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
}

/// Alive: the process answers (a cluster node's too).
pub(crate) async fn healthz() -> Response {
    super::json(StatusCode::OK, &json!({ "status": "ok" }))
}

/// Ready: start-up is done and the database answers. With broken boards (a log entry could
/// not be carried out on them at start) it is still 200, `"status": "degraded"`, listing them:
/// every other board is served, and the log is the same for every replica and every restart,
/// so a balancer that took the service out of rotation would only take those boards down too.
/// `standings_broken_boards` in `/metrics` is the alert.
async fn readyz(State(state): State<Shared>) -> Result<Response, AppError> {
    readiness(state.ready.load(Ordering::Acquire), state.store.ping()).await?;
    let broken = state.registry.broken();
    if broken.is_empty() {
        return Ok(super::json(StatusCode::OK, &json!({ "status": "ready" })));
    }
    let boards: Vec<Value> = broken
        .iter()
        .map(|(id, why)| {
            json!({"game": id.game, "mode": id.mode, "season": id.season, "scope": id.scope,
                   "code": "BOARD_BROKEN", "seq": why.seq})
        })
        .collect();
    Ok(super::json(
        StatusCode::OK,
        &json!({ "status": "degraded", "broken_boards": boards }),
    ))
}

/// The readiness rule a single origin and a cluster node share, in `/readyz`'s words: `serving`
/// (started, and not stopping or handing partitions over), then the database answers (asked
/// only then).
pub(crate) async fn readiness(
    serving: bool,
    database_answers: impl std::future::Future<Output = bool>,
) -> Result<(), AppError> {
    if !serving {
        return Err(AppError::new(Code::UNAVAILABLE, "starting up or shutting down"));
    }
    if !database_answers.await {
        return Err(AppError::new(Code::UNAVAILABLE, "the database does not answer"));
    }
    Ok(())
}

async fn metrics(State(state): State<Shared>) -> Response {
    exposition(state.metrics.render(&state.registry))
}

/// The Prometheus text exposition as an answer, a single origin's or a cluster node's.
pub(crate) fn exposition(text: String) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

async fn openapi() -> Response {
    super::json(StatusCode::OK, &super::api::openapi_document())
}
