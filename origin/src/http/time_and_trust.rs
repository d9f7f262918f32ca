//! Seasons, moderation, the late-event queue, the audit log and season results.

use std::collections::HashMap;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post, put};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use standings_core::{BoardId, check_id};

use super::position::positioned;
use super::{JsonBody, Shared, UniqueQuery, json};
use crate::clock::format_rfc3339;
use crate::domain::Action;
use crate::domain::seasons::SeasonState;
use crate::domain::{ActionResult, Change, Correction, EventStatus, RankedEntry};
use crate::http::error::{AppError, AppResult, Code};
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
        .map_err(|e| AppError::new(Code::INVALID_REQUEST, e.to_string().replace("game", what)))
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
        &SeasonStateView {
            game: &game,
            left_active_at: record.left_active_at.map(format_rfc3339),
            rewards: state.domain.rewards(&game, &season),
            season: &season,
            state: record.state.as_str(),
        },
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
    // An object only: a struct would also read from an array.
    let asked = Some(&body)
        .filter(|body| body.is_object())
        .and_then(|body| SeasonStateBody::deserialize(body).ok())
        .ok_or_else(|| {
            AppError::new(
                Code::INVALID_REQUEST,
                "the body must be {\"state\": \"open|active|frozen|finalized|published|archived\"}, \
                 and with finalized optionally \"rewards\": [{\"ranks\": [1, 10], \"reward\": \"id\"}, ...]",
            )
        })?;
    let to = SeasonState::parse(&asked.state).ok_or_else(|| {
        AppError::new(
            Code::INVALID_REQUEST,
            format!(
                "state {:?} is none of open, active, frozen, finalized, published, archived",
                asked.state
            ),
        )
    })?;
    let rewards = match asked.rewards {
        Some(_) if to != SeasonState::Finalized => {
            return Err(AppError::new(
                Code::INVALID_REQUEST,
                format!("rewards are declared as the season is finalized, not when it becomes {to}"),
            ));
        }
        Some(bands) => {
            crate::domain::rewards::checked(bands).map_err(|why| AppError::new(Code::INVALID_REQUEST, why))?
        }
        None => Vec::new(),
    };
    let from = state.domain.seasons.get(&game, &season).state;
    let answer = state
        .ingest
        .act(ActionRequest {
            game: game.clone(),
            action: Action::SeasonState {
                season: season.clone(),
                to,
                rewards: rewards.clone(),
            },
            action_id: None,
            request: body,
            actor: principal.name,
            reason: format!("season moved from {from} to {to}"),
            profile_patch: None,
        })
        .await?;
    Ok(json(
        StatusCode::OK,
        &SeasonMoved {
            game: &game,
            previous: from.as_str(),
            results: answer.result.as_ref().map(|r| &r.results),
            rewards,
            season: &season,
            state: to.as_str(),
        },
    ))
}

/// The body of a season transition (other fields are ignored).
#[derive(Deserialize)]
struct SeasonStateBody {
    state: String,
    #[serde(default)]
    rewards: Option<Vec<crate::domain::rewards::RewardBand>>,
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
    #[serde(default)]
    display_name: Option<String>,
}

async fn moderate(
    State(state): State<Shared>,
    headers: HeaderMap,
    JsonBody(raw): JsonBody,
) -> AppResult<Response> {
    // The role is checked before the body is read, the game once it is known.
    state.auth.moderator(&headers, None)?;
    let body: ModerationBody = serde_json::from_value(raw.clone())
        .map_err(|e| AppError::new(Code::INVALID_REQUEST, format!("bad moderation action: {e}")))?;
    let principal = state.auth.moderator(&headers, Some(&body.game))?;
    check_id("moderation_id", &body.moderation_id)
        .map_err(|e| AppError::new(Code::INVALID_REQUEST, e.to_string()))?;
    if body.reason.trim().is_empty() {
        return Err(AppError::new(
            Code::INVALID_REQUEST,
            "reason is required and must not be empty",
        ));
    }
    let need = |field: &Option<String>, name: &str| {
        field.clone().ok_or_else(|| {
            AppError::new(
                Code::INVALID_REQUEST,
                format!("{} needs {name}", body.action_type),
            )
        })
    };
    let action = match body.action_type.as_str() {
        "INVALIDATE" | "RESTORE" => {
            let target_event_id = need(&body.target_event_id, "target_event_id")?;
            if body.target_player_id.is_some() || body.scope.is_some() {
                return Err(AppError::new(
                    Code::INVALID_REQUEST,
                    format!("{} names an event: give target_event_id only", body.action_type),
                ));
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
            .map_err(|e| AppError::new(Code::INVALID_REQUEST, e.to_string()))?;
            let target_player_id = need(&body.target_player_id, "target_player_id")?;
            check_id("target_player_id", &target_player_id)
                .map_err(|e| AppError::new(Code::INVALID_REQUEST, e.to_string()))?;
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
        "RENAME" | "CLEAR_NAME" | "LOCK_NAME" | "UNLOCK_NAME" => {
            let target_player_id = need(&body.target_player_id, "target_player_id")?;
            check_id("target_player_id", &target_player_id)
                .map_err(|e| AppError::new(Code::INVALID_REQUEST, e.to_string()))?;
            if body.target_event_id.is_some() || body.scope.is_some() || body.mode.is_some() {
                return Err(AppError::new(
                    Code::INVALID_REQUEST,
                    format!(
                        "{} names a player of the game: give target_player_id (and display_name for RENAME)",
                        body.action_type
                    ),
                ));
            }
            if body.action_type != "RENAME" && body.display_name.is_some() {
                return Err(AppError::new(
                    Code::INVALID_REQUEST,
                    format!("{} takes no display_name", body.action_type),
                ));
            }
            match body.action_type.as_str() {
                "RENAME" => {
                    let name = need(&body.display_name, "display_name")?;
                    let name = crate::domain::profiles::DisplayName::parse(&name)?;
                    Action::Rename {
                        target_player_id,
                        display_name: Some(name.as_str().to_owned()),
                    }
                }
                "CLEAR_NAME" => Action::ClearName { target_player_id },
                "LOCK_NAME" => Action::LockName { target_player_id },
                _ => Action::UnlockName { target_player_id },
            }
        }
        other => {
            return Err(AppError::new(
                Code::INVALID_REQUEST,
                format!(
                    "action_type {other:?} is not one of INVALIDATE, RESTORE, DISQUALIFY, REINSTATE, \
                 RENAME, CLEAR_NAME, LOCK_NAME, UNLOCK_NAME"
                ),
            ));
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
            profile_patch: None,
        })
        .await?;
    Ok(positioned(
        &state.registry,
        &body.game,
        if answer.replayed {
            StatusCode::OK
        } else {
            StatusCode::CREATED
        },
        &Moderated {
            action_type: &body.action_type,
            boards: answer.result.as_ref().map(|r| &r.boards),
            corrections: answer.result.as_ref().map(|r| &r.results),
            moderation_id: &body.moderation_id,
            replayed: answer.replayed,
            seq: answer.seq,
        },
    ))
}

fn game_param(params: &HashMap<String, String>) -> AppResult<String> {
    let game = params
        .get("game")
        .ok_or_else(|| AppError::new(Code::INVALID_REQUEST, "the game query parameter is required"))?;
    check_part("game", game)?;
    Ok(game.clone())
}

async fn late_events(
    State(state): State<Shared>,
    UniqueQuery(params): UniqueQuery,
    headers: HeaderMap,
) -> AppResult<Response> {
    let game = game_param(&params)?;
    state.auth.moderator(&headers, Some(&game))?;
    let events = state.store.late_events(&game).await?;
    let late_events = events
        .iter()
        .map(|e| LateEventView {
            achieved_at: format_rfc3339(e.achieved_at),
            event_id: &e.event_id,
            game: &e.game,
            mode: &e.mode,
            player_id: &e.player_id,
            received_at: format_rfc3339(e.received_at),
            scopes: &e.scopes,
            season: &e.season,
            source: &e.source,
            status: e.status.as_str(),
            value: e.value,
        })
        .collect();
    Ok(json(
        StatusCode::OK,
        &LateEvents {
            game: &game,
            late_events,
        },
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
    UniqueQuery(params): UniqueQuery,
    headers: HeaderMap,
    JsonBody(raw): JsonBody,
) -> AppResult<Response> {
    state.auth.moderator(&headers, None)?;
    let body: DecisionBody = serde_json::from_value(raw.clone())
        .map_err(|e| AppError::new(Code::INVALID_REQUEST, format!("bad decision: {e}")))?;
    let game = body
        .game
        .clone()
        .or_else(|| params.get("game").cloned())
        .ok_or_else(|| AppError::new(Code::INVALID_REQUEST, "name the event's game (body or ?game=)"))?;
    let principal = state.auth.moderator(&headers, Some(&game))?;
    let apply = match body.decision.as_str() {
        "apply" => true,
        "reject" => false,
        other => {
            return Err(AppError::new(
                Code::INVALID_REQUEST,
                format!("decision {other:?} is not apply or reject"),
            ));
        }
    };
    if body.reason.trim().is_empty() {
        return Err(AppError::new(
            Code::INVALID_REQUEST,
            "reason is required and must not be empty",
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
            profile_patch: None,
        })
        .await?;
    Ok(positioned(
        &state.registry,
        &game,
        StatusCode::OK,
        &Decided {
            boards: answer.result.as_ref().map(|r| &r.boards),
            corrections: answer.result.as_ref().map(|r| &r.results),
            decision: &body.decision,
            event_id: &event_id,
            game: &game,
            status: if apply {
                EventStatus::LateApplied
            } else {
                EventStatus::LateRejected
            }
            .as_str(),
        },
    ))
}

async fn audit(
    State(state): State<Shared>,
    UniqueQuery(params): UniqueQuery,
    headers: HeaderMap,
) -> AppResult<Response> {
    let game = game_param(&params)?;
    state.auth.moderator(&headers, Some(&game))?;
    let actions = state.store.actions(&game).await?;
    let audit = actions
        .iter()
        .map(|a| AuditRecord {
            actor: &a.actor,
            at: format_rfc3339(a.created_at),
            kind: a.kind(),
            moderation_id: a.action_id.as_deref(),
            reason: &a.reason,
            request: &a.request,
            result: RecordedResult(a.result.as_ref()),
            seq: a.seq,
        })
        .collect();
    Ok(json(StatusCode::OK, &Audit { audit, game: &game }))
}

async fn results(
    State(state): State<Shared>,
    Path((game, mode, season)): Path<(String, String, String)>,
    UniqueQuery(params): UniqueQuery,
    headers: HeaderMap,
) -> AppResult<Response> {
    let audience = state.auth.reader(&headers, &game)?;
    let scope = params.get("scope").map(String::as_str).unwrap_or("global");
    let board = BoardId::new(&game, &mode, &season, scope)
        .map_err(|e| AppError::new(Code::INVALID_REQUEST, e.to_string()))?;
    if state.registry.entry(&board).is_none() {
        return Err(AppError::new(Code::UNKNOWN_BOARD, format!("no board {board}")));
    }
    let record = state.domain.seasons.get(&game, &season);
    if !matches!(record.state, SeasonState::Published | SeasonState::Archived) {
        return Err(AppError::new(
            Code::RESULTS_NOT_PUBLISHED,
            format!(
                "season {game}/{season} is {}; results are readable once it is published",
                record.state
            ),
        ));
    }
    let all = state.store.results(&board).await?;
    let wanted = match params.get("correction") {
        None => all.last(),
        Some(raw) => {
            let n: i64 = raw.parse().map_err(|_| {
                AppError::new(
                    Code::INVALID_REQUEST,
                    format!("correction={raw:?} is not a number"),
                )
            })?;
            all.iter().find(|r| r.correction == n)
        }
    }
    .ok_or_else(|| {
        AppError::new(
            Code::RESULTS_NOT_PUBLISHED,
            format!("board {board} has no such result"),
        )
    })?;
    let entries: Vec<_> = wanted.entries.iter().map(|e| e.for_audience(audience)).collect();
    Ok(json(
        StatusCode::OK,
        &SeasonResult {
            board_version: wanted.board_version,
            correction: wanted.correction,
            digest: &wanted.digest,
            entries: &entries,
            finalized_at: format_rfc3339(wanted.finalized_at),
            game: &game,
            latest_correction: all.last().map(|r| r.correction),
            mode: &mode,
            scope,
            season: &season,
        },
    ))
}

// The answers. Their fields are declared in the order of their names, the order the answers
// have always had them in (they were JSON maps, which sort their keys); a test checks it.

#[derive(Serialize)]
struct SeasonStateView<'a> {
    game: &'a str,
    left_active_at: Option<String>,
    /// The reward bands declared when the season was finalized.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    rewards: Vec<crate::domain::rewards::RewardBand>,
    season: &'a str,
    state: &'static str,
}

#[derive(Serialize)]
struct SeasonMoved<'a> {
    game: &'a str,
    previous: &'static str,
    results: Option<&'a Vec<Correction>>,
    /// The reward bands the move declared (to `finalized` only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    rewards: Vec<crate::domain::rewards::RewardBand>,
    season: &'a str,
    state: &'static str,
}

#[derive(Serialize)]
struct Moderated<'a> {
    action_type: &'a str,
    boards: Option<&'a Vec<Change>>,
    corrections: Option<&'a Vec<Correction>>,
    moderation_id: &'a str,
    replayed: bool,
    seq: i64,
}

#[derive(Serialize)]
struct LateEvents<'a> {
    game: &'a str,
    late_events: Vec<LateEventView<'a>>,
}

#[derive(Serialize)]
struct LateEventView<'a> {
    achieved_at: String,
    event_id: &'a str,
    game: &'a str,
    mode: &'a str,
    player_id: &'a str,
    received_at: String,
    scopes: &'a [String],
    season: &'a str,
    source: &'a str,
    status: &'static str,
    value: i64,
}

#[derive(Serialize)]
struct Decided<'a> {
    boards: Option<&'a Vec<Change>>,
    corrections: Option<&'a Vec<Correction>>,
    decision: &'a str,
    event_id: &'a str,
    game: &'a str,
    status: &'static str,
}

#[derive(Serialize)]
struct Audit<'a> {
    audit: Vec<AuditRecord<'a>>,
    game: &'a str,
}

#[derive(Serialize)]
struct AuditRecord<'a> {
    actor: &'a str,
    at: String,
    kind: &'a str,
    moderation_id: Option<&'a str>,
    reason: &'a str,
    request: &'a Value,
    result: RecordedResult<'a>,
    seq: i64,
}

/// An action's recorded result, `{}` while none is recorded.
struct RecordedResult<'a>(Option<&'a ActionResult>);

impl Serialize for RecordedResult<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.0 {
            Some(result) => result.serialize(serializer),
            None => serializer.serialize_map(Some(0))?.end(),
        }
    }
}

#[derive(Serialize)]
struct SeasonResult<'a> {
    board_version: i64,
    correction: i64,
    digest: &'a str,
    entries: &'a [std::borrow::Cow<'a, RankedEntry>],
    finalized_at: String,
    game: &'a str,
    latest_correction: Option<i64>,
    mode: &'a str,
    scope: &'a str,
    season: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a JSON map of the same fields would print: its keys sorted, at every depth.
    pub(crate) fn assert_in_name_order<T: Serialize>(answer: &T) {
        let typed = serde_json::to_string(answer).unwrap();
        let as_map = serde_json::to_value(answer).unwrap().to_string();
        assert_eq!(typed, as_map);
    }

    /// Every answer prints its fields in the order a JSON map sorts them, as the answers built
    /// from maps did, so their bytes are unchanged.
    #[test]
    fn the_answers_keep_the_order_of_their_keys() {
        let change = Change {
            board_version: 3,
            game: "g".into(),
            mode: "m".into(),
            period_key: "all_time".into(),
            player_id: "p".into(),
            rank: Some(1),
            scope: "global".into(),
            season: "s".into(),
        };
        let correction = Correction {
            board_version: 3,
            correction: 1,
            digest: "d".into(),
            game: "g".into(),
            mode: "m".into(),
            scope: "global".into(),
            season: "s".into(),
        };
        let result = ActionResult {
            boards: vec![change],
            results: vec![correction],
        };
        assert_in_name_order(&result);
        assert_in_name_order(&SeasonStateView {
            game: "g",
            left_active_at: Some("2026-10-13T00:00:00.000Z".into()),
            rewards: vec![crate::domain::rewards::RewardBand {
                ranks: [1, 1],
                reward: "crown".into(),
            }],
            season: "s",
            state: "frozen",
        });
        assert_in_name_order(&SeasonMoved {
            game: "g",
            previous: "active",
            results: Some(&result.results),
            rewards: vec![crate::domain::rewards::RewardBand {
                ranks: [1, 10],
                reward: "silver".into(),
            }],
            season: "s",
            state: "frozen",
        });
        assert_in_name_order(&Moderated {
            action_type: "INVALIDATE",
            boards: Some(&result.boards),
            corrections: None,
            moderation_id: "m1",
            replayed: false,
            seq: 9,
        });
        assert_in_name_order(&Decided {
            boards: Some(&result.boards),
            corrections: Some(&result.results),
            decision: "apply",
            event_id: "e",
            game: "g",
            status: "LATE_APPLIED",
        });
        let scopes = vec!["global".to_string()];
        assert_in_name_order(&LateEvents {
            game: "g",
            late_events: vec![LateEventView {
                achieved_at: "a".into(),
                event_id: "e",
                game: "g",
                mode: "m",
                player_id: "p",
                received_at: "r".into(),
                scopes: &scopes,
                season: "s",
                source: "t",
                status: "LATE",
                value: 5,
            }],
        });
        let request = serde_json::json!({"game": "g", "action_type": "INVALIDATE"});
        assert_in_name_order(&Audit {
            audit: vec![
                AuditRecord {
                    actor: "admin",
                    at: "a".into(),
                    kind: "INVALIDATE",
                    moderation_id: Some("m1"),
                    reason: "r",
                    request: &request,
                    result: RecordedResult(Some(&result)),
                    seq: 9,
                },
                AuditRecord {
                    actor: "admin",
                    at: "a".into(),
                    kind: "SEASON_STATE",
                    moderation_id: None,
                    reason: "r",
                    request: &Value::Null,
                    result: RecordedResult(None),
                    seq: 10,
                },
            ],
            game: "g",
        });
        let entries = [std::borrow::Cow::Owned(RankedEntry {
            anonymous: true,
            country: Some("DE".into()),
            display_name: Some("Ava".into()),
            metadata: Some("{\"car\":\"R8\"}".into()),
            achieved_at: 1_000,
            player_id: "p".into(),
            rank: 1,
            segments: Some("platform:ios".into()),
            value: 5,
        })];
        assert_in_name_order(&SeasonResult {
            board_version: 3,
            correction: 0,
            digest: "d",
            entries: &entries,
            finalized_at: "f".into(),
            game: "g",
            latest_correction: Some(1),
            mode: "m",
            scope: "global",
            season: "s",
        });
        assert_eq!(
            serde_json::to_string(&RecordedResult(None)).unwrap(),
            "{}",
            "a result not recorded yet is an empty object"
        );
    }
}
