//! `GET /v1/games/{game}/feed`: the game's feed records after a seq, in seq order
//! (`docs/feed.md`). Records are stored in seq order, a flush at a time, so a page never
//! skips one that a later page would show.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use axum::routing::get;

use super::{ReadQuery, Shared, json_bytes};
use crate::http::error::{AppError, AppResult, Code};

/// Records a page holds by default and at most.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1_000;

pub(super) fn router() -> Router<Shared> {
    Router::new().route("/v1/games/{game}/feed", get(feed))
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
    let next = records.last().map_or(since, |(seq, _)| *seq);
    // The records are stored as JSON text, so the page is written around them as they are.
    let mut out = String::with_capacity(64 + records.iter().map(|(_, r)| r.len() + 1).sum::<usize>());
    out.push_str("{\"records\":[");
    for (i, (_, record)) in records.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(record);
    }
    out.push_str(&format!("],\"next_seq\":{next}}}"));
    Ok(json_bytes(StatusCode::OK, Bytes::from(out)))
}
