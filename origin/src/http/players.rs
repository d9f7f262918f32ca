//! Players by name: `PUT`/`GET .../players/{player_id}/profile` and the erasure,
//! `POST .../players/{player_id}/erase`.
//!
//! A profile change is an action in the log (`PROFILE`), decided by the writer on the profile the
//! log holds when its turn comes (`ProfilePatch`), so it is durable before it is answered,
//! replays identically and reaches the boards and live subscribers as one change each. The
//! handler only reads and checks the body; the rules of a name and a country are
//! `domain::profiles`'.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{post, put};
use serde::Serialize;
use serde_json::Value;
use standings_core::{Audience, check_id};

use super::position::positioned;
use super::time_and_trust::check_part;
use super::{JsonBody, RawBody, Shared, json, parse_json};
use crate::config::Role;
use crate::domain::Action;
use crate::domain::profile_book::{Held, Patch, ProfilePatch};
use crate::domain::profiles::{Country, DisplayName, rule};
use crate::http::error::{AppError, AppResult, Code};
use crate::writer::ActionRequest;

pub(super) fn router() -> Router<Shared> {
    Router::new()
        .route(
            "/v1/games/{game}/players/{player_id}/profile",
            put(set_profile).get(profile),
        )
        .route("/v1/games/{game}/players/{player_id}/erase", post(erase))
}

/// A profile as the API answers it. Fields in name order.
#[derive(Serialize)]
struct ProfileView<'a> {
    anonymous: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    changed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    country: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<&'a str>,
    game: &'a str,
    name_locked: bool,
    player_id: &'a str,
}

impl<'a> ProfileView<'a> {
    fn of(game: &'a str, player_id: &'a str, held: &'a Held, changed: Option<bool>) -> ProfileView<'a> {
        ProfileView {
            anonymous: held.anonymous(),
            changed,
            country: held.country(),
            display_name: held.display_name(),
            game,
            name_locked: held.name_locked,
            player_id,
        }
    }
}

fn check_path(game: &str, player_id: &str) -> AppResult<()> {
    check_part("game", game)?;
    check_id("player_id", player_id).map_err(|e| AppError::new(Code::INVALID_REQUEST, e.to_string()))
}

/// `GET .../profile`: the player's profile as the log holds it (an empty one when never set).
/// A player token reads only its own, as with friend lists; an anonymous profile's name and
/// country show only to the game's service, moderator and admin tokens, as on every read.
async fn profile(
    State(state): State<Shared>,
    Path((game, player_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> AppResult<Response> {
    check_path(&game, &player_id)?;
    let audience = state.auth.profile_reader(&headers, &game, &player_id)?;
    let held = state.domain.profiles.get(&game, &player_id);
    let mut view = ProfileView::of(&game, &player_id, &held, None);
    if view.anonymous && audience == Audience::Public {
        view.display_name = None;
        view.country = None;
    }
    Ok(json(StatusCode::OK, &view))
}

/// One field of the body: absent keeps it, `null` clears it, a string sets it.
fn field(body: &serde_json::Map<String, Value>, name: &str) -> AppResult<Patch<String>> {
    match body.get(name) {
        None => Ok(Patch::Keep),
        Some(Value::Null) => Ok(Patch::Clear),
        Some(Value::String(text)) => Ok(Patch::Set(text.clone())),
        Some(other) => Err(AppError::new(
            if name == "country" {
                rule::COUNTRY_NOT_ISO_3166
            } else {
                rule::DISPLAY_NAME_NOT_TEXT
            },
            format!("{name} must be a string or null, not {other}"),
        )),
    }
}

/// `PUT .../profile` with `{"display_name", "country", "anonymous"}`, each optional (`null`
/// clears): 200 with the profile after, and `changed: false` when it already was that.
async fn set_profile(
    State(state): State<Shared>,
    Path((game, player_id)): Path<(String, String)>,
    headers: HeaderMap,
    JsonBody(raw): JsonBody,
) -> AppResult<Response> {
    check_path(&game, &player_id)?;
    let principal = state.auth.writer(&headers, Some(&game))?;
    let Value::Object(body) = &raw else {
        return Err(AppError::new(
            Code::INVALID_REQUEST,
            "the body must be an object: {\"display_name\", \"country\", \"anonymous\"}",
        ));
    };
    if let Some(unknown) = body
        .keys()
        .find(|k| !matches!(k.as_str(), "display_name" | "country" | "anonymous"))
    {
        return Err(AppError::new(
            Code::INVALID_REQUEST,
            format!("unknown field {unknown:?}: a profile has display_name, country and anonymous"),
        ));
    }
    let display_name = match field(body, "display_name")? {
        Patch::Set(name) => Patch::Set(DisplayName::parse(&name)?.as_str().to_owned()),
        other => other,
    };
    let country = match field(body, "country")? {
        Patch::Set(code) => Patch::Set(Country::parse(&code)?.as_str().to_owned()),
        other => other,
    };
    let anonymous = match body.get("anonymous") {
        None => None,
        Some(Value::Bool(flag)) => Some(*flag),
        Some(other) => {
            return Err(AppError::new(
                rule::ANONYMOUS_NOT_BOOLEAN,
                format!("anonymous must be true or false, not {other}"),
            ));
        }
    };
    let overrides_lock = matches!(principal.role, Role::Moderator | Role::Admin);
    let answer = state
        .ingest
        .act(ActionRequest {
            game: game.clone(),
            // Replaced by the writer's decision on the held profile (see `profile_patch`).
            action: Action::Profile {
                target_player_id: player_id.clone(),
                display_name: None,
                country: None,
                anonymous: false,
            },
            action_id: None,
            request: raw,
            actor: principal.name,
            reason: String::new(),
            profile_patch: Some(ProfilePatch {
                player: player_id.clone(),
                display_name,
                country,
                anonymous,
                overrides_lock,
            }),
        })
        .await?;
    let held = state.domain.profiles.get(&game, &player_id);
    Ok(positioned(
        &state.registry,
        &game,
        StatusCode::OK,
        &ProfileView::of(&game, &player_id, &held, Some(!answer.replayed)),
    ))
}

/// What an erasure answered. Fields in name order.
#[derive(Serialize)]
struct Erased<'a> {
    game: &'a str,
    player_id: &'a str,
    seq: i64,
}

/// `POST .../erase` (admin): from now on nothing the service answers, publishes or stores holds
/// the player's name, country or entry metadata; their scores and ranks stay. The body may give
/// a `reason` for the audit log.
async fn erase(
    State(state): State<Shared>,
    Path((game, player_id)): Path<(String, String)>,
    headers: HeaderMap,
    RawBody(bytes): RawBody,
) -> AppResult<Response> {
    check_path(&game, &player_id)?;
    let principal = state.auth.admin(&headers, &game)?;
    let body = if bytes.is_empty() {
        None
    } else {
        Some(parse_json(&bytes)?)
    };
    let reason = match body {
        None | Some(Value::Null) => String::new(),
        Some(Value::Object(body)) => match (body.get("reason"), body.len()) {
            (Some(Value::String(reason)), 1) => reason.clone(),
            (None, 0) => String::new(),
            _ => {
                return Err(AppError::new(
                    Code::INVALID_REQUEST,
                    "the body is optional and may only give {\"reason\": \"...\"}",
                ));
            }
        },
        Some(_) => {
            return Err(AppError::new(
                Code::INVALID_REQUEST,
                "the body is optional and may only give {\"reason\": \"...\"}",
            ));
        }
    };
    let answer = state
        .ingest
        .act(ActionRequest {
            game: game.clone(),
            action: Action::Erase {
                target_player_id: player_id.clone(),
            },
            action_id: None,
            // The audit keeps who erased whom and why, never what was erased.
            request: serde_json::json!({"action_type": "ERASE", "target_player_id": player_id}),
            actor: principal.name,
            reason,
            profile_patch: None,
        })
        .await?;
    state.snapshots.forget_parts_of(&game);
    Ok(json(
        StatusCode::OK,
        &Erased {
            game: &game,
            player_id: &player_id,
            seq: answer.seq,
        },
    ))
}
