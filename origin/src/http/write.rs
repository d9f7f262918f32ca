//! The write plane: board definitions, score events (single and batch) and friend lists.
//!
//! Submissions are read typed straight from the body, which is the fast path. A body the typed read
//! does not take (not JSON, another shape, a repeated key) goes through the general path over
//! `serde_json::Value` read by [`parse_json`], whose answers are the contract; tests pin both paths
//! to the same answers. Both check an event with `crate::intake`, as `standings import` does. No typed body uses `#[serde(flatten)]` or a map field, because
//! both keep the last of two equal keys, which the API refuses.

use std::collections::BTreeMap;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{post, put};
use serde::{Deserialize, Serialize};
use standings_core::{BoardId, check_id};

use serde_json::value::RawValue;

use super::position::{position_of, positioned, with_position};
use super::{AppState, JsonBody, RawBody, Shared, json, parse_json};
use crate::domain::{BoardDef, NewEvent, Proposed};
use crate::http::error::{AppError, AppResult, Code};
use crate::intake::{Checked, EventBody, MAX_BATCH, check_value, validate_body, validate_event};
use crate::store::Defined;
use crate::writer::Outcome;

/// The most friends one list may hold.
pub(crate) const MAX_FRIENDS: usize = 1_000;

pub(super) fn router() -> Router<Shared> {
    Router::new()
        .route("/v1/boards/{game}/{mode}/{season}/{scope}", put(define_board))
        .route("/v1/score-events", post(submit_event))
        .route("/v1/score-events/batch", post(submit_batch))
        .route("/v1/games/{game}/players/{player_id}/friends", put(set_friends))
}

/// The body of `PUT /v1/boards/...`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BoardBody {
    score_mode: String,
    #[serde(default = "min_value")]
    value_min: i64,
    #[serde(default = "max_value")]
    value_max: i64,
    #[serde(default = "all_time_only")]
    periods: Vec<String>,
    #[serde(default = "default_grace")]
    grace_seconds: i64,
    #[serde(default = "utc")]
    timezone: String,
    #[serde(default = "crate::domain::profiles::default_metadata_cap")]
    metadata_max_bytes: i64,
    #[serde(default = "whole")]
    shards: i64,
    #[serde(default)]
    segments: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    feed: Option<serde_json::Value>,
}

fn whole() -> i64 {
    1
}

fn all_time_only() -> Vec<String> {
    vec!["all_time".into()]
}

fn default_grace() -> i64 {
    300
}

fn utc() -> String {
    "UTC".into()
}

fn min_value() -> i64 {
    i64::MIN
}

fn max_value() -> i64 {
    i64::MAX
}

/// A board as the API shows it.
#[derive(Debug, Serialize)]
pub(crate) struct BoardView {
    /// The game.
    pub game: String,
    /// The mode.
    pub mode: String,
    /// The season.
    pub season: String,
    /// The scope.
    pub scope: String,
    /// `highest`, `cumulative`, `fastest` or `latest`.
    pub score_mode: &'static str,
    /// The least value an event may carry.
    pub value_min: i64,
    /// The greatest value an event may carry.
    pub value_max: i64,
    /// The periods it keeps.
    pub periods: Vec<String>,
    /// How long after a period's end it still takes events.
    pub grace_seconds: i64,
    /// The IANA time zone of its periods.
    pub timezone: String,
    /// The largest metadata its events may carry, 0 (none) to 256 bytes.
    pub metadata_max_bytes: i64,
    /// The score-range shards each instance is split into (1: whole).
    pub shards: i64,
    /// The segment dimensions and where each value comes from (`{}`: none).
    pub segments: BTreeMap<String, serde_json::Value>,
    /// What its changes put in the game's feed (`{}`: nothing).
    pub feed: serde_json::Value,
}

impl BoardView {
    /// The view of a board definition.
    pub(crate) fn of(def: &BoardDef) -> BoardView {
        BoardView {
            game: def.id.game.clone(),
            mode: def.id.mode.clone(),
            season: def.id.season.clone(),
            scope: def.id.scope.clone(),
            score_mode: def.rules.score_mode.as_str(),
            value_min: def.rules.value_min,
            value_max: def.rules.value_max,
            periods: def.periods.clone(),
            grace_seconds: def.grace_seconds,
            timezone: def.timezone.clone(),
            metadata_max_bytes: def.metadata_max_bytes,
            shards: def.shards,
            segments: def.segments_view(),
            feed: def.feed.view(),
        }
    }
}

async fn define_board(
    State(state): State<Shared>,
    Path((game, mode, season, scope)): Path<(String, String, String, String)>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> AppResult<Response> {
    state.auth.admin(&headers, &game)?;
    let id = BoardId::new(&game, &mode, &season, &scope)
        .map_err(|e| AppError::new(Code::INVALID_BOARD, e.to_string()))?;
    let body: BoardBody = serde_json::from_value(body)
        .map_err(|e| AppError::new(Code::INVALID_BOARD, format!("bad board definition: {e}")))?;
    // Checked (and its period names put in canonical order) before anything is stored.
    let def = BoardDef::checked(
        id,
        Proposed {
            score_mode: &body.score_mode,
            value_min: body.value_min,
            value_max: body.value_max,
            periods: &body.periods,
            timezone: &body.timezone,
            grace_seconds: body.grace_seconds,
            metadata_max_bytes: body.metadata_max_bytes,
            shards: body.shards,
            segments: &body.segments,
            feed: body.feed.as_ref(),
        },
    )
    .map_err(|e| AppError::new(Code::INVALID_BOARD, e))?;
    let status = match state.store.define_board(&def).await? {
        Defined::Created => StatusCode::CREATED,
        Defined::Identical => StatusCode::OK,
        Defined::Conflict(existing) => {
            return Err(AppError::new(
                Code::BOARD_RULES_CONFLICT,
                format!(
                    "board {} exists with score_mode {}, range {}..={}, periods {}, grace {} s, timezone {}, \
                 metadata_max_bytes {}, shards {}, segments {}, feed {}; a board's definition is fixed",
                    existing.id,
                    existing.rules.score_mode,
                    existing.rules.value_min,
                    existing.rules.value_max,
                    existing.periods.join(","),
                    existing.grace_seconds,
                    existing.timezone,
                    existing.metadata_max_bytes,
                    existing.shards,
                    serde_json::Value::from(serde_json::Map::from_iter(existing.segments_view())),
                    existing.feed.view()
                ),
            ));
        }
    };
    state
        .registry
        .add(&def)
        .map_err(|e| AppError::new(Code::INVALID_BOARD, e))?;
    Ok(json(status, &BoardView::of(&def)))
}

/// The answer for one event.
#[derive(Debug, Serialize)]
pub(crate) struct EventAnswer {
    /// The event's id (empty when the submission had none).
    pub event_id: String,
    /// `ACCEPTED`, `DUPLICATE` or `REJECTED`.
    pub status: &'static str,
    /// For a rejection, the error code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
    /// For a rejection, what was wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For a single event stored or found stored, the position a read hands back to see it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<String>,
}

async fn submit_event(
    State(state): State<Shared>,
    headers: HeaderMap,
    RawBody(bytes): RawBody,
) -> AppResult<Response> {
    // The fast path reads a body of the expected shape straight into an [`EventBody`], with no
    // `serde_json::Value` map in between, which would be most of a submission's allocations. Whatever it
    // does not take (not JSON, another shape, a repeated key, which `parse_json` refuses) goes
    // through the general path, whose answers are the contract; both then validate the same
    // body in the same order.
    // Text that is not JSON is refused before the token is checked, on both paths.
    let body = match serde_json::from_slice::<EventBody>(&bytes) {
        Ok(typed) => Ok(typed),
        Err(_) => Err(parse_json(&bytes)?),
    };
    let principal = state.auth.writer(&headers, None)?;
    let now = state.clock.now_ms();
    let event = match body {
        Ok(typed) => validate_body(&state.registry, &principal, typed, now)?,
        Err(value) => validate_event(&state.registry, &principal, value, now)?,
    };
    let event_id = event.event_id.clone();
    let game = event.game.clone();
    let outcome = state.ingest.submit(vec![event]).await?.pop();
    let (status, answered) = match outcome {
        Some(Outcome::Accepted) => (StatusCode::ACCEPTED, "ACCEPTED"),
        Some(Outcome::Duplicate) => (StatusCode::OK, "DUPLICATE"),
        Some(Outcome::Late) => (StatusCode::ACCEPTED, "LATE"),
        Some(Outcome::Refused(refusal)) => return Err(refusal.into()),
        None => return Err(AppError::new(Code::INTERNAL, "the writer answered no outcome")),
    };
    let position = position_of(&state.registry, &game);
    let answer = json(
        status,
        &EventAnswer {
            event_id,
            status: answered,
            code: None,
            detail: None,
            position: Some(position.clone()),
        },
    );
    Ok(with_position(answer, &position))
}

/// A batch body as the fast path reads it: each event stays raw JSON text until it is parsed
/// straight into [`EventBody`], with no `serde_json::Value` tree in between.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBatch<'a> {
    #[serde(borrow)]
    events: Vec<&'a RawValue>,
}

/// One event of a batch as the fast path read it: typed, or (when it is not an [`EventBody`])
/// as a `Value`, for the general path to give its exact answer.
enum ReadEvent<'a> {
    Typed(EventBody, &'a RawValue),
    Value(serde_json::Value),
}

async fn submit_batch(
    State(state): State<Shared>,
    headers: HeaderMap,
    RawBody(bytes): RawBody,
) -> AppResult<Response> {
    // The fast path takes a body of the expected shape. Whatever it does not take (not JSON,
    // another shape, a repeated key, an event nested past the JSON depth limit) goes through
    // the general path below, whose answers are the contract; the fast path answers the same
    // for everything it takes. The typed reads refuse a repeated field themselves, and an
    // event they do not take is read by `parse_json`, so a repeated key anywhere ends on the
    // general path's 400, which names it with its place in the whole body.
    if let Ok(batch) = serde_json::from_slice::<RawBatch>(&bytes) {
        let read: Option<Vec<ReadEvent>> = batch
            .events
            .iter()
            .map(|raw| match serde_json::from_str::<EventBody>(raw.get()) {
                Ok(body) => Some(ReadEvent::Typed(body, raw)),
                Err(_) => parse_json(raw.get().as_bytes()).ok().map(ReadEvent::Value),
            })
            .collect();
        if let Some(read) = read {
            let principal = state.auth.writer(&headers, None)?;
            check_batch_size(read.len())?;
            let now = state.clock.now_ms();
            let checked = read
                .into_iter()
                .map(|event| match event {
                    ReadEvent::Typed(body, raw) => {
                        validate_body(&state.registry, &principal, body, now).or_else(|_| {
                            // The general path words the refusal and finds the id.
                            let value = parse_json(raw.get().as_bytes()).map_err(|e| (String::new(), e))?;
                            refused_as_answered(check_value(&state.registry, &principal, value, now))
                        })
                    }
                    ReadEvent::Value(value) => {
                        refused_as_answered(check_value(&state.registry, &principal, value, now))
                    }
                })
                .collect::<Vec<_>>();
            let games = games_of(&checked);
            let results = submit_checked(&state, checked).await?;
            return Ok(BatchAnswer::with_positions(&state, results, games));
        }
    }
    let body = parse_json(&bytes)?;
    let principal = state.auth.writer(&headers, None)?;
    let serde_json::Value::Object(mut object) = body else {
        return Err(AppError::new(
            Code::INVALID_EVENT,
            "the body must be {\"events\": [...]}",
        ));
    };
    let Some(serde_json::Value::Array(events)) = object.remove("events") else {
        return Err(AppError::new(
            Code::INVALID_EVENT,
            "the body must be {\"events\": [...]}",
        ));
    };
    if let Some(other) = object.keys().next() {
        return Err(AppError::new(
            Code::INVALID_EVENT,
            format!("unknown field {other:?}; the body is {{\"events\": [...]}}"),
        ));
    }
    check_batch_size(events.len())?;
    let now = state.clock.now_ms();
    let checked: Vec<_> = events
        .into_iter()
        .map(|raw| check_value(&state.registry, &principal, raw, now))
        .collect();
    let games = games_of(&checked);
    let results = submit_checked(&state, checked).await?;
    Ok(BatchAnswer::with_positions(&state, results, games))
}

/// The games of a batch's valid events, each once, in order of name.
fn games_of<E>(checked: &[Result<NewEvent, E>]) -> std::collections::BTreeSet<String> {
    checked.iter().flatten().map(|e| e.game.clone()).collect()
}

/// A batch's answer, serialized straight from the per-event answers (through a
/// `serde_json::Value` it was five allocations per event), with the position of each game it
/// wrote to: `position` (and `x-standings-position`) when it is one game, `positions` by game
/// when several.
#[derive(Serialize)]
struct BatchAnswer {
    results: Vec<EventAnswer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    position: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    positions: Option<std::collections::BTreeMap<String, String>>,
}

impl BatchAnswer {
    fn with_positions(
        state: &AppState,
        results: Vec<EventAnswer>,
        games: std::collections::BTreeSet<String>,
    ) -> Response {
        let mut tokens: std::collections::BTreeMap<String, String> = games
            .into_iter()
            .map(|game| {
                let token = position_of(&state.registry, &game);
                (game, token)
            })
            .collect();
        let (position, positions) = match tokens.len() {
            0 => (None, None),
            1 => (tokens.pop_first().map(|(_, token)| token), None),
            _ => (None, Some(tokens)),
        };
        let answer = json(
            StatusCode::OK,
            &BatchAnswer {
                results,
                position: position.clone(),
                positions,
            },
        );
        match position {
            Some(token) => with_position(answer, &token),
            None => answer,
        }
    }
}

fn check_batch_size(events: usize) -> Result<(), AppError> {
    if events > MAX_BATCH {
        return Err(AppError::new(
            Code::PAYLOAD_TOO_LARGE,
            format!("a batch holds at most {MAX_BATCH} events; this one has {events}"),
        ));
    }
    Ok(())
}

/// An intake refusal with its event id, as the batch answers it.
fn refused_as_answered(checked: Checked) -> Result<NewEvent, (String, AppError)> {
    checked.map_err(|(event_id, e)| (event_id, e.into()))
}

/// Submits the valid events of a batch as one group commit and answers every event in order,
/// a refused one with the code and detail its error is answered with: what the batch endpoint
/// and `standings import` share.
pub(crate) async fn submit_checked<E: Into<AppError>>(
    state: &Shared,
    checked: Vec<Result<NewEvent, (String, E)>>,
) -> AppResult<Vec<EventAnswer>> {
    let mut answers: Vec<Option<EventAnswer>> = Vec::with_capacity(checked.len());
    let mut valid = Vec::with_capacity(checked.len());
    let mut valid_at = Vec::with_capacity(checked.len());
    for (i, event) in checked.into_iter().enumerate() {
        match event {
            Ok(event) => {
                valid.push(event);
                valid_at.push(i);
                answers.push(None);
            }
            Err((event_id, e)) => {
                let e: AppError = e.into();
                let code = e.code().name;
                answers.push(Some(EventAnswer {
                    event_id,
                    status: "REJECTED",
                    code: Some(code),
                    detail: Some(e.problem().detail),
                    position: None,
                }));
            }
        }
    }
    let ids: Vec<String> = valid.iter().map(|e| e.event_id.clone()).collect();
    let outcomes = if valid.is_empty() {
        Vec::new()
    } else {
        state.ingest.submit(valid).await?
    };
    for ((i, outcome), event_id) in valid_at.into_iter().zip(outcomes).zip(ids) {
        let (status, code, detail) = match outcome {
            Outcome::Accepted => ("ACCEPTED", None, None),
            Outcome::Duplicate => ("DUPLICATE", None, None),
            Outcome::Late => ("LATE", None, None),
            Outcome::Refused(refusal) => {
                let e = AppError::from(refusal);
                let code = e.code().name;
                ("REJECTED", Some(code), Some(e.problem().detail))
            }
        };
        answers[i] = Some(EventAnswer {
            event_id,
            status,
            code,
            detail,
            position: None,
        });
    }
    Ok(answers.into_iter().flatten().collect())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FriendsBody {
    friends: Vec<String>,
}

/// `PUT /v1/games/{game}/players/{player_id}/friends`: replaces the player's friend list in
/// `game`, which only that game's friends-of reads. A service of the game may set it, and so
/// may its moderators and admins, whose roles include the service's.
async fn set_friends(
    State(state): State<Shared>,
    Path((game, player_id)): Path<(String, String)>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> AppResult<Response> {
    state.auth.writer(&headers, Some(&game))?;
    super::time_and_trust::check_part("game", &game)?;
    check_id("player_id", &player_id).map_err(|e| AppError::new(Code::INVALID_REQUEST, e.to_string()))?;
    let body: FriendsBody = serde_json::from_value(body)
        .map_err(|e| AppError::new(Code::INVALID_REQUEST, format!("bad friend list: {e}")))?;
    if body.friends.len() > MAX_FRIENDS {
        return Err(AppError::new(
            Code::PAYLOAD_TOO_LARGE,
            format!(
                "a friend list holds at most {MAX_FRIENDS} players; this one has {}",
                body.friends.len()
            ),
        ));
    }
    let mut friends: Vec<String> = Vec::with_capacity(body.friends.len());
    let mut seen = std::collections::HashSet::new();
    for friend in body.friends {
        check_id("friend", &friend).map_err(|e| AppError::new(Code::INVALID_REQUEST, e.to_string()))?;
        if friend != player_id && seen.insert(friend.clone()) {
            friends.push(friend);
        }
    }
    state.store.set_friends(&game, &player_id, &friends).await?;
    state.registry.feed.set_friends(&game, &player_id, &friends);
    Ok(positioned(
        &state.registry,
        &game,
        StatusCode::OK,
        &serde_json::json!({ "game": game, "player_id": player_id, "friends": friends }),
    ))
}
