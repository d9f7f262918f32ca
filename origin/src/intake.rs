//! Turning a submitted score event into a [`NewEvent`]: its shape, its ids, its scopes, its time,
//! whether the submitter may write its game, the boards it names and the value's range, checked in
//! that order. `POST /v1/score-events`, its batch and `standings import` take events through here
//! alike, so an event is refused with the same words whichever way it came.
//!
//! It sits beside `domain/` rather than in it because it reads the registry (whether a board is
//! defined, broken, and its range); it knows no HTTP. Who submits comes in as a [`Submitter`]: a
//! name and whether it may write a game. A refusal is an [`IntakeError`], which `http/error.rs`
//! maps to its status and code.
//!
//! The typed read ([`validate_body`]) is the submissions' fast path: it allocates nothing beyond
//! the event's own fields and its source's name. An event read as a `serde_json::Value` (the
//! general path, whose answers are the contract) is read into the same body first.

use std::collections::BTreeMap;

use serde::Deserialize;
use standings_core::{ApplyError, BoardId, IdError, check_id};

use crate::boards::{BoardBroken, Registry};
use crate::clock::{format_rfc3339, parse_rfc3339};
use crate::domain::NewEvent;

/// The most events one batch may carry.
pub(crate) const MAX_BATCH: usize = 1_000;
/// How far in the future `achieved_at` may lie (clock skew between game servers and us).
pub(crate) const MAX_FUTURE_MS: i64 = 5 * 60 * 1000;
/// The most scopes one event may feed.
pub(crate) const MAX_SCOPES: usize = 32;

/// Who submits events: the name recorded as their source, and which games it may write.
pub(crate) trait Submitter {
    /// The name recorded as the source of its events.
    fn name(&self) -> &str;
    /// Whether it may submit events of `game`.
    fn may_write(&self, game: &str) -> bool;
}

/// One score event as submitted.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventBody {
    event_id: String,
    player_id: String,
    game: String,
    mode: String,
    season: String,
    #[serde(default)]
    scopes: Option<Vec<String>>,
    value: i64,
    achieved_at: String,
    /// A JSON object as sent, at most the boards' `metadata_max_bytes`.
    #[serde(default)]
    metadata: Option<Box<serde_json::value::RawValue>>,
    /// The event's values of its boards' event dimensions (`{"platform": "ios"}`).
    #[serde(default)]
    segments: BTreeMap<String, String>,
}

/// Why a submitted event is refused. Nothing of it is stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum IntakeError {
    /// The body is not an event: a field missing, unknown or of another type (422
    /// `INVALID_EVENT`).
    #[error(transparent)]
    Shape(#[from] serde_json::Error),
    /// The event is JSON but not an object (422 `INVALID_EVENT`); the text names what it is
    /// and, for an array, where several events go.
    #[error("{0}")]
    NotAnObject(&'static str),
    /// An id is empty, too long or holds a control character (422 `INVALID_EVENT`).
    #[error(transparent)]
    Id(#[from] IdError),
    /// `scopes` is empty (422 `INVALID_EVENT`).
    #[error("scopes must name at least one scope")]
    NoScopes,
    /// `scopes` names more than [`MAX_SCOPES`] (422 `INVALID_EVENT`).
    #[error("scopes may name at most {MAX_SCOPES} scopes")]
    TooManyScopes,
    /// `scopes` names one scope twice (422 `INVALID_EVENT`).
    #[error("scope {0:?} is listed twice")]
    RepeatedScope(String),
    /// `achieved_at` is not an RFC 3339 time (422 `INVALID_EVENT`).
    #[error("{0}")]
    AchievedAt(String),
    /// `achieved_at` lies more than [`MAX_FUTURE_MS`] ahead (422 `INVALID_EVENT`).
    #[error("achieved_at {achieved_at} is more than 5 minutes in the future (now is {now})")]
    InFuture {
        /// The time as submitted.
        achieved_at: String,
        /// The service's time, RFC 3339.
        now: String,
    },
    /// The submitter may not write the event's game (403 `FORBIDDEN`).
    #[error("token {submitter:?} may not write to game {game:?}")]
    Forbidden {
        /// The submitter's name.
        submitter: String,
        /// The game.
        game: String,
    },
    /// The event names a board that is not defined (404 `UNKNOWN_BOARD`).
    #[error("no board {0}; define it before submitting to it")]
    UnknownBoard(Box<BoardId>),
    /// The event names a broken board (503 `BOARD_BROKEN`).
    #[error(transparent)]
    NotServed(#[from] BoardBroken),
    /// The metadata breaks a rule: not an object, too large for a board, or refused by one
    /// (422, with the rule's code).
    #[error("on board {board}: {why}")]
    Metadata {
        /// The board whose cap it breaks (the first, in the order of the scopes).
        board: Box<BoardId>,
        /// The rule.
        why: crate::domain::profiles::ProfileError,
    },
    /// `segments` names a dimension none of the event's boards declares, or a value one of them
    /// does not (422 `INVALID_EVENT`).
    #[error("{0}")]
    Segments(String),
    /// The value is outside a board's range (422 `VALUE_OUT_OF_RANGE`).
    #[error("on board {board}: {why}")]
    OutOfRange {
        /// The board.
        board: Box<BoardId>,
        /// The board's refusal, in its words.
        why: ApplyError,
    },
}

/// One event of a batch after its checks: ready to submit, or refused with its id (empty when
/// it had none).
pub(crate) type Checked = Result<NewEvent, (String, IntakeError)>;

/// Checks one event read as a `Value` completely (see [`validate_body`]).
pub(crate) fn validate_event(
    registry: &Registry,
    submitter: &(impl Submitter + ?Sized),
    raw: serde_json::Value,
    now: i64,
) -> Result<NewEvent, IntakeError> {
    let not_an_object = match &raw {
        serde_json::Value::Object(_) => None,
        serde_json::Value::Array(_) => Some(
            "an event is one JSON object, not an array; send several events as {\"events\": [...]} to POST /v1/score-events/batch",
        ),
        serde_json::Value::String(_) => Some("an event is one JSON object, not a string"),
        serde_json::Value::Number(_) => Some("an event is one JSON object, not a number"),
        serde_json::Value::Bool(_) => Some("an event is one JSON object, not a boolean"),
        serde_json::Value::Null => Some("an event is one JSON object, not null"),
    };
    if let Some(why) = not_an_object {
        return Err(IntakeError::NotAnObject(why));
    }
    let body: EventBody = serde_json::from_value(raw)?;
    validate_body(registry, submitter, body, now)
}

/// Checks one event read typed: ids, scopes, time, the submitter's game, the boards and the
/// range, in that order; the first failing check is the refusal. O(scopes²) for the repeated
/// scopes (at most [`MAX_SCOPES`]) plus a board look-up per scope.
pub(crate) fn validate_body(
    registry: &Registry,
    submitter: &(impl Submitter + ?Sized),
    body: EventBody,
    now: i64,
) -> Result<NewEvent, IntakeError> {
    check_id("event_id", &body.event_id)?;
    check_id("player_id", &body.player_id)?;
    let scopes = body.scopes.unwrap_or_else(|| vec!["global".into()]);
    if scopes.is_empty() {
        return Err(IntakeError::NoScopes);
    }
    if scopes.len() > MAX_SCOPES {
        return Err(IntakeError::TooManyScopes);
    }
    for (i, scope) in scopes.iter().enumerate() {
        if scopes[..i].contains(scope) {
            return Err(IntakeError::RepeatedScope(scope.clone()));
        }
    }
    let achieved_at = parse_rfc3339(&body.achieved_at).map_err(IntakeError::AchievedAt)?;
    if achieved_at > now + MAX_FUTURE_MS {
        return Err(IntakeError::InFuture {
            achieved_at: body.achieved_at,
            now: format_rfc3339(now),
        });
    }
    if !submitter.may_write(&body.game) {
        return Err(IntakeError::Forbidden {
            submitter: submitter.name().to_owned(),
            game: body.game,
        });
    }
    for scope in &scopes {
        let id = BoardId::new(&body.game, &body.mode, &body.season, scope)?;
        let Some(entry) = registry.entry(&id) else {
            return Err(IntakeError::UnknownBoard(Box::new(id)));
        };
        entry.check_not_broken()?;
        if let Err(why) = entry.def.rules.check_value(body.value) {
            return Err(IntakeError::OutOfRange {
                board: Box::new(id),
                why,
            });
        }
        if let Some(metadata) = &body.metadata {
            let cap = usize::try_from(entry.def.metadata_max_bytes).unwrap_or(0);
            if let Err(why) = crate::domain::profiles::check_metadata(metadata.get(), cap) {
                return Err(IntakeError::Metadata {
                    board: Box::new(id),
                    why,
                });
            }
        }
    }
    let segments = if body.segments.is_empty() {
        None
    } else {
        let boards = scopes
            .iter()
            .map(|scope| BoardId::new(&body.game, &body.mode, &body.season, scope))
            .collect::<Result<Vec<_>, _>>()?;
        let specs: Vec<_> = boards
            .iter()
            .filter_map(|id| Some((id, registry.entry(id)?.def.segments.clone())))
            .collect();
        crate::domain::event_segments(&body.segments, specs.iter().map(|(id, spec)| (*id, spec)))
            .map_err(IntakeError::Segments)?
    };
    Ok(NewEvent {
        game: body.game,
        event_id: body.event_id,
        player_id: body.player_id,
        mode: body.mode,
        season: body.season,
        scopes,
        value: body.value,
        achieved_at,
        source: submitter.name().to_owned(),
        metadata: body.metadata.map(|m| Box::<str>::from(m.get())),
        segments,
    })
}

/// Checks one event read as a `Value`, keeping its id (empty when it has none) with a refusal.
pub(crate) fn check_value(
    registry: &Registry,
    submitter: &(impl Submitter + ?Sized),
    raw: serde_json::Value,
    now: i64,
) -> Checked {
    let event_id = raw
        .get("event_id")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    validate_event(registry, submitter, raw, now).map_err(|e| (event_id, e))
}
