//! Seasons, moderation, the late-event queue, the audit log and season results.

use std::collections::HashMap;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post, put};
use serde::Deserialize;
use serde_json::{Value, json};
use standings_core::{BoardId, check_id};

use super::{JsonBody, Shared, json};
use crate::clock::format_rfc3339;
use crate::domain::seasons::SeasonState;
use crate::http::error::{AppError, AppResult};
use crate::log::Action;
use crate::writer::ActionRequest;

pub(super) fn router() -> Router<Shared> {
    Router::new()
        .route(
            "/v1/seasons/{game}/{season}/state",
            put(set_season_state).get(season_state),
        )
        .route("/v1/moderation-actions", post(moderate))
        .route("/v1/late-events", get(late_events))
        .route("/v1/late-events/{event_id}/decision", post(decide_late))
        .route("/v1/audit", get(audit))
        .route("/v1/leaderboards/{game}/{mode}/{season}/results", get(results))
}

/// Checks one part of a board id (a game, a season) named on its own.
pub(super) fn check_part(what: &'static str, value: &str) -> AppResult<()> {
    BoardId::new(value, "m", "s", "x")
        .map(|_| ())
        .map_err(|e| AppError::InvalidRequest(e.to_string().replace("game", what)))
}

async fn season_state(
    State(state): State<Shared>,
    Path((game, season)): Path<(String, String)>,
    headers: HeaderMap,
) -> AppResult<Response> {
    state.auth.reader(&headers, &game)?;
    let record = state.domain.seasons.get(&game, &season);
    Ok(json(
        StatusCode::OK,
        &json!({
            "game": game, "season": season, "state": record.state.as_str(),
            "left_active_at": record.left_active_at.map(format_rfc3339),
        }),
    ))
}

async fn set_season_state(
    State(state): State<Shared>,
    Path((game, season)): Path<(String, String)>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> AppResult<Response> {
    let principal = state.auth.admin(&headers, &game)?;
    check_part("game", &game)?;
    check_part("season", &season)?;
    let to = body
        .get("state")
        .and_then(Value::as_str)
        .and_then(SeasonState::parse)
        .ok_or_else(|| {
            AppError::InvalidRequest(
                "the body must be {\"state\": \"open|active|frozen|finalized|published|archived\"}".into(),
            )
        })?;
    let from = state.domain.seasons.get(&game, &season).state;
    let answer = state
        .ingest
        .act(ActionRequest {
            game: game.clone(),
            action: Action::SeasonState {
                season: season.clone(),
                to,
            },
            action_id: None,
            request: body,
            actor: principal.name,
            reason: format!("season moved from {from} to {to}"),
        })
        .await?;
    Ok(json(
        StatusCode::OK,
        &json!({"game": game, "season": season, "state": to.as_str(), "previous": from.as_str(), "results": answer.result["results"]}),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModerationBody {
    moderation_id: String,
    action_type: String,
    reason: String,
    game: String,
    #[serde(default)]
    target_event_id: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    season: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    target_player_id: Option<String>,
}

async fn moderate(
    State(state): State<Shared>,
    headers: HeaderMap,
    JsonBody(raw): JsonBody,
) -> AppResult<Response> {
    // The role is checked before the body is read, the game once it is known.
    state.auth.moderator(&headers, None)?;
    let body: ModerationBody = serde_json::from_value(raw.clone())
        .map_err(|e| AppError::InvalidRequest(format!("bad moderation action: {e}")))?;
    let principal = state.auth.moderator(&headers, Some(&body.game))?;
    check_id("moderation_id", &body.moderation_id).map_err(|e| AppError::InvalidRequest(e.to_string()))?;
    if body.reason.trim().is_empty() {
        return Err(AppError::InvalidRequest(
            "reason is required and must not be empty".into(),
        ));
    }
    let need = |field: &Option<String>, name: &str| {
        field
            .clone()
            .ok_or_else(|| AppError::InvalidRequest(format!("{} needs {name}", body.action_type)))
    };
    let action = match body.action_type.as_str() {
        "INVALIDATE" | "RESTORE" => {
            let target_event_id = need(&body.target_event_id, "target_event_id")?;
            if body.target_player_id.is_some() || body.scope.is_some() {
                return Err(AppError::InvalidRequest(format!(
                    "{} names an event: give target_event_id only",
                    body.action_type
                )));
            }
            if body.action_type == "INVALIDATE" {
                Action::Invalidate { target_event_id }
            } else {
                Action::Restore { target_event_id }
            }
        }
        "DISQUALIFY" | "REINSTATE" => {
            let board = BoardId::new(
                &body.game,
                &need(&body.mode, "mode")?,
                &need(&body.season, "season")?,
                &need(&body.scope, "scope")?,
            )
            .map_err(|e| AppError::InvalidRequest(e.to_string()))?;
            let target_player_id = need(&body.target_player_id, "target_player_id")?;
            check_id("target_player_id", &target_player_id)
                .map_err(|e| AppError::InvalidRequest(e.to_string()))?;
            if body.action_type == "DISQUALIFY" {
                Action::Disqualify {
                    board,
                    target_player_id,
                }
            } else {
                Action::Reinstate {
                    board,
                    target_player_id,
                }
            }
        }
        other => {
            return Err(AppError::InvalidRequest(format!(
                "action_type {other:?} is not one of INVALIDATE, RESTORE, DISQUALIFY, REINSTATE"
            )));
        }
    };
    let answer = state
        .ingest
        .act(ActionRequest {
            game: body.game.clone(),
            action,
            action_id: Some(body.moderation_id.clone()),
            request: raw,
            actor: principal.name,
            reason: body.reason,
        })
        .await?;
    Ok(json(
        if answer.replayed {
            StatusCode::OK
        } else {
            StatusCode::CREATED
        },
        &json!({
            "moderation_id": body.moderation_id,
            "action_type": body.action_type,
            "seq": answer.seq,
            "replayed": answer.replayed,
            "boards": answer.result["boards"],
            "corrections": answer.result["results"],
        }),
    ))
}

fn game_param(params: &HashMap<String, String>) -> AppResult<String> {
    let game = params
        .get("game")
        .ok_or_else(|| AppError::InvalidRequest("the game query parameter is required".into()))?;
    check_part("game", game)?;
    Ok(game.clone())
}

async fn late_events(
    State(state): State<Shared>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> AppResult<Response> {
    let game = game_param(&params)?;
    state.auth.moderator(&headers, Some(&game))?;
    let events: Vec<Value> = state
        .store
        .late_events(&game)
        .await?
        .iter()
        .map(|e| {
            json!({
                "event_id": e.event_id, "player_id": e.player_id, "game": e.game, "mode": e.mode,
                "season": e.season, "scopes": e.scopes, "value": e.value,
                "achieved_at": format_rfc3339(e.achieved_at), "received_at": format_rfc3339(e.received_at),
                "source": e.source, "status": e.status,
            })
        })
        .collect();
    Ok(json(
        StatusCode::OK,
        &json!({"game": game, "late_events": events}),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionBody {
    decision: String,
    reason: String,
    #[serde(default)]
    game: Option<String>,
}

async fn decide_late(
    State(state): State<Shared>,
    Path(event_id): Path<String>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
    JsonBody(raw): JsonBody,
) -> AppResult<Response> {
    state.auth.moderator(&headers, None)?;
    let body: DecisionBody = serde_json::from_value(raw.clone())
        .map_err(|e| AppError::InvalidRequest(format!("bad decision: {e}")))?;
    let game = body
        .game
        .clone()
        .or_else(|| params.get("game").cloned())
        .ok_or_else(|| AppError::InvalidRequest("name the event's game (body or ?game=)".into()))?;
    let principal = state.auth.moderator(&headers, Some(&game))?;
    let apply = match body.decision.as_str() {
        "apply" => true,
        "reject" => false,
        other => {
            return Err(AppError::InvalidRequest(format!(
                "decision {other:?} is not apply or reject"
            )));
        }
    };
    if body.reason.trim().is_empty() {
        return Err(AppError::InvalidRequest(
            "reason is required and must not be empty".into(),
        ));
    }
    let answer = state
        .ingest
        .act(ActionRequest {
            game: game.clone(),
            action: Action::LateDecision {
                event_id: event_id.clone(),
                apply,
            },
            action_id: None,
            request: raw,
            actor: principal.name,
            reason: body.reason,
        })
        .await?;
    Ok(json(
        StatusCode::OK,
        &json!({
            "event_id": event_id, "game": game, "decision": body.decision,
            "status": if apply { "LATE_APPLIED" } else { "LATE_REJECTED" },
            "boards": answer.result["boards"], "corrections": answer.result["results"],
        }),
    ))
}

async fn audit(
    State(state): State<Shared>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> AppResult<Response> {
    let game = game_param(&params)?;
    state.auth.moderator(&headers, Some(&game))?;
    let records: Vec<Value> = state
        .store
        .actions(&game)
        .await?
        .iter()
        .map(|a| {
            let logged: Value = serde_json::from_str(&a.body).unwrap_or(Value::Null);
            json!({
                "seq": a.seq, "kind": a.kind, "moderation_id": a.action_id, "actor": a.actor,
                "reason": a.reason, "at": format_rfc3339(a.created_at), "request": logged["request"],
                "result": serde_json::from_str::<Value>(&a.result).unwrap_or(Value::Null),
            })
        })
        .collect();
    Ok(json(StatusCode::OK, &json!({"game": game, "audit": records})))
}

async fn results(
    State(state): State<Shared>,
    Path((game, mode, season)): Path<(String, String, String)>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> AppResult<Response> {
    state.auth.reader(&headers, &game)?;
    let scope = params.get("scope").map(String::as_str).unwrap_or("global");
    let board =
        BoardId::new(&game, &mode, &season, scope).map_err(|e| AppError::InvalidRequest(e.to_string()))?;
    if state.registry.entry(&board).is_none() {
        return Err(AppError::UnknownBoard(format!("no board {board}")));
    }
    let record = state.domain.seasons.get(&game, &season);
    if !matches!(record.state, SeasonState::Published | SeasonState::Archived) {
        return Err(AppError::ResultsNotPublished(format!(
            "season {game}/{season} is {}; results are readable once it is published",
            record.state
        )));
    }
    let all = state.store.results(&board).await?;
    let wanted = match params.get("correction") {
        None => all.last(),
        Some(raw) => {
            let n: i64 = raw
                .parse()
                .map_err(|_| AppError::InvalidRequest(format!("correction={raw:?} is not a number")))?;
            all.iter().find(|r| r.correction == n)
        }
    }
    .ok_or_else(|| AppError::ResultsNotPublished(format!("board {board} has no such result")))?;
    let entries: Value = serde_json::from_str(&wanted.entries).unwrap_or(Value::Array(Vec::new()));
    Ok(json(
        StatusCode::OK,
        &json!({
            "game": game, "mode": mode, "season": season, "scope": scope,
            "correction": wanted.correction,
            "latest_correction": all.last().map(|r| r.correction),
            "board_version": wanted.board_version,
            "digest": wanted.digest,
            "finalized_at": format_rfc3339(wanted.finalized_at),
            "entries": entries,
        }),
    ))
}
