//! Token introspection for the edge: `POST /v1/auth/introspect` tells an `edge` (or admin) token
//! what another bearer token is, so the Cloudflare Worker takes static tokens without holding the
//! origin's secrets. What a token is, and for how long, is decided in `auth`; this only reads the
//! body and writes the answer. The token asked about is never logged.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use serde::Deserialize;

use super::{JsonBody, Shared, json};
use crate::http::error::{AppError, AppResult, Code};

pub(super) fn router() -> Router<Shared> {
    Router::new().route("/v1/auth/introspect", post(introspect))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IntrospectBody {
    /// The bearer token asked about, as it follows `Bearer ` in a request's header.
    token: String,
}

/// `POST /v1/auth/introspect`: `{"token": "..."}` -> what the token is, narrowed to the caller's
/// games. An inactive token is answered 200 `{"active": false, ...}`, not 401: the question was
/// answered, and 401 is about the caller's own token, which an edge must be able to tell apart
/// from a bad token it asks about.
async fn introspect(
    State(state): State<Shared>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> AppResult<Response> {
    let caller = state.auth.introspector(&headers)?;
    // serde's messages name the field, never a string's content, so no token reaches an answer.
    let body: IntrospectBody = serde_json::from_value(body).map_err(|e| {
        AppError::new(
            Code::INVALID_REQUEST,
            format!("bad introspection request: {e}; send {{\"token\": \"<bearer token>\"}}"),
        )
    })?;
    if body.token.trim().is_empty() {
        return Err(AppError::new(
            Code::INVALID_REQUEST,
            "token is empty; send the bearer token to ask about",
        ));
    }
    // The clock JWTs are checked against when they authenticate, so an answer agrees with what
    // the origin would do with the token now.
    let now_secs = crate::clock::now_ms() / 1000;
    let answer = state
        .auth
        .introspect(&body.token, now_secs)
        .seen_by(&caller.games);
    Ok(json(StatusCode::OK, &answer.to_json()))
}
