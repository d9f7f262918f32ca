//! `GET /v1/games/{game}/feed`: the game's feed records after a seq, in seq order
//! (`docs/feed.md`). Records are stored in seq order, a flush at a time, so a page never
//! skips one that a later page would show.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post, put};
use standings_core::check_id;

use super::{JsonBody, ReadQuery, Shared, json_bytes};
use crate::domain::webhooks::{self, Endpoint};
use crate::http::error::{AppError, AppResult, Code};

/// Records a page holds by default and at most.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1_000;

pub(super) fn router() -> Router<Shared> {
    Router::new()
        .route("/v1/games/{game}/feed", get(feed))
        .route(
            "/v1/games/{game}/webhooks/{endpoint_id}",
            put(put_webhook).get(get_webhook).delete(delete_webhook),
        )
        .route(
            "/v1/games/{game}/webhooks/{endpoint_id}/resume",
            post(resume_webhook),
        )
}

/// An endpoint's state as the API shows it, with its status.
fn endpoint_answer(state: &Shared, status: StatusCode, e: &Endpoint) -> Response {
    super::json(status, &webhooks::view(e, state.clock.now_ms()))
}

fn no_endpoint(game: &str, id: &str) -> AppError {
    AppError::new(
        Code::UNKNOWN_WEBHOOK,
        format!(
            "game {game:?} has no webhook endpoint {id:?}; define it with PUT /v1/games/{game}/webhooks/{id}"
        ),
    )
}

/// `PUT .../webhooks/{endpoint_id}`: defines an endpoint (201), delivering from the feed's next
/// record, or changes one (200), keeping how far it is; a new secret rotates.
async fn put_webhook(
    State(state): State<Shared>,
    Path((game, id)): Path<(String, String)>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> AppResult<Response> {
    state.auth.admin(&headers, &game)?;
    super::time_and_trust::check_part("game", &game)?;
    check_id("endpoint_id", &id).map_err(|e| AppError::new(Code::INVALID_REQUEST, e.to_string()))?;
    let def: webhooks::Definition = serde_json::from_value(body).map_err(|e| {
        AppError::new(
            Code::INVALID_REQUEST,
            format!("the body must be {{\"url\", \"secret\", \"kinds\"}}: {e}"),
        )
    })?;
    let existing = state.store.webhook(&game, &id).await?;
    let created = existing.is_none();
    let feed_end = state.store.feed_end(&game).await?;
    let endpoint = webhooks::defined(&game, &id, def, existing, feed_end, state.clock.now_ms())
        .map_err(|e| AppError::new(Code::INVALID_REQUEST, e))?;
    state.store.put_webhook(&endpoint).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(endpoint_answer(&state, status, &endpoint))
}

/// `GET .../webhooks/{endpoint_id}`: the endpoint's state: how far it is delivered, its
/// attempts and last error, and whether and why it is parked.
async fn get_webhook(
    State(state): State<Shared>,
    Path((game, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> AppResult<Response> {
    let endpoint = endpoint_of(&state, &headers, &game, &id).await?;
    Ok(endpoint_answer(&state, StatusCode::OK, &endpoint))
}

/// The endpoint an admin of `game` names, or 404 `UNKNOWN_WEBHOOK`. One look-up.
async fn endpoint_of(state: &Shared, headers: &HeaderMap, game: &str, id: &str) -> AppResult<Endpoint> {
    state.auth.admin(headers, game)?;
    state
        .store
        .webhook(game, id)
        .await?
        .ok_or_else(|| no_endpoint(game, id))
}

/// `POST .../webhooks/{endpoint_id}/resume`: a parked endpoint tries again from the record it
/// stopped at.
async fn resume_webhook(
    State(state): State<Shared>,
    Path((game, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> AppResult<Response> {
    let endpoint = webhooks::resumed(endpoint_of(&state, &headers, &game, &id).await?);
    state.store.set_webhook_delivery(&endpoint).await?;
    Ok(endpoint_answer(&state, StatusCode::OK, &endpoint))
}

/// `DELETE .../webhooks/{endpoint_id}`: no more deliveries to it.
async fn delete_webhook(
    State(state): State<Shared>,
    Path((game, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> AppResult<Response> {
    state.auth.admin(&headers, &game)?;
    if !state.store.delete_webhook(&game, &id).await? {
        return Err(no_endpoint(&game, &id));
    }
    Ok(super::json(
        StatusCode::OK,
        &serde_json::json!({"game": game, "endpoint_id": id, "deleted": true}),
    ))
}

async fn feed(
    State(state): State<Shared>,
    Path(game): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> AppResult<Response> {
    state.auth.writer(&headers, Some(&game))?;
    super::time_and_trust::check_part("game", &game)?;
    let params = ReadQuery(uri.query());
    let since = params.parse(
        "since_seq",
        0i64,
        |n| *n >= 0,
        "a seq from a record or next_seq, 0 or more",
    )?;
    let limit = params.parse(
        "limit",
        DEFAULT_LIMIT,
        |n| (1..=MAX_LIMIT).contains(n),
        &format!("a number of records from 1 to {MAX_LIMIT}"),
    )?;
    let horizon = state.store.feed_horizon(&game).await?;
    if since < horizon {
        return Err(AppError::new(
            Code::FEED_SEQ_EXPIRED,
            format!(
                "since_seq={since} is older than the feed keeps: records through seq {horizon} were removed \
                 (feed_retention_seconds); read on from since_seq={horizon}"
            ),
        ));
    }
    let records = state.store.feed_after(&game, since, limit).await?;
    let next = records.last().map_or(since, |(seq, _, _)| *seq);
    // The records are stored as JSON text, so the page is written around them as they are.
    let mut out = String::with_capacity(64 + records.iter().map(|(_, _, r)| r.len() + 1).sum::<usize>());
    out.push_str("{\"records\":[");
    for (i, (_, _, record)) in records.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(record);
    }
    out.push_str(&format!("],\"next_seq\":{next}}}"));
    Ok(json_bytes(StatusCode::OK, Bytes::from(out)))
}
