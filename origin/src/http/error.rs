//! The one error type of the HTTP API: every case maps to a status and a stable, machine-readable
//! `code`, answered as RFC 9457 `application/problem+json`. Internal errors are logged with their
//! context (the whole chain of sources) and answered without it.
//!
//! Every other layer has an error of its own and knows no status; the `From` impls below are the
//! one place each of their cases becomes a status and a code: the domain's refusals of events and
//! actions, the intake's, the registry's, the log's, the snapshots', the live hub's, the writer's
//! and the store's.

use std::fmt;
use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::boards::{BoardBroken, SnapshotUnreadable};
use crate::chain::Chain;
use crate::domain::{ActionRefusal, Refusal};
use crate::intake::IntakeError;
use crate::live::SubscribeError;
use crate::log::LogError;
use crate::snapshots::SnapshotsError;
use crate::store::StoreError;
use crate::writer::WriterError;
use crate::writer::checkpoint::CheckpointError;

/// Every error the API answers with.
#[derive(Clone, Debug)]
pub enum AppError {
    /// A refusal of the read contract the tiers share (`standings_core::contract`), with its
    /// own status, code and words.
    Contract(Problem),
    /// 401: no credentials, or credentials that match nothing.
    Unauthenticated(String),
    /// 403: the credentials do not allow this (wrong role, or a game not in the token's list).
    Forbidden(String),
    /// 404: the board does not exist.
    UnknownBoard(String),
    /// 404: the player has no score on the board.
    PlayerNotRanked(String),
    /// 404: no such route or resource.
    NotFound(String),
    /// 400: the body is not JSON.
    InvalidJson(String),
    /// 400: a query parameter or path segment is malformed.
    InvalidRequest(String),
    /// 400: the cursor is not one this service made.
    InvalidCursor(String),
    /// 410: the cursor's version is no longer held.
    StaleCursor(String),
    /// 422: an event is malformed (missing or bad field, bad id, time too far in the future).
    InvalidEvent(String),
    /// 422: a board definition is malformed.
    InvalidBoard(String),
    /// 422: a value is outside the board's range (or would overflow a total).
    ValueOutOfRange(String),
    /// 409: the same event id was already used with a different payload.
    EventIdConflict(String),
    /// 409: the board exists with other rules; rules are fixed.
    BoardRulesConflict(String),
    /// 409: the event was invalidated by a moderator; resubmitting it changes nothing.
    EventInvalidated(String),
    /// 409: the season takes no events now.
    SeasonNotActive(String),
    /// 409: the player is disqualified from the board.
    PlayerDisqualified(String),
    /// 409: the season cannot move to that state now.
    InvalidTransition(String),
    /// 409: the moderation id was already used for another action.
    ModerationIdConflict(String),
    /// 409: the event is not waiting for a late decision.
    NotLate(String),
    /// 409: a moderator locked the player's name; the game's service cannot change it.
    NameLocked(String),
    /// A field broke one of its rules (a display name, a country, an event's metadata): the
    /// status, and a code that names the field and the rule.
    Rule(StatusCode, &'static str, String),
    /// 409: the season is archived; nothing about it changes any more.
    SeasonArchived(String),
    /// 404: no such event.
    UnknownEvent(String),
    /// 404: the season's results are not published.
    ResultsNotPublished(String),
    /// 404: no snapshot part (manifest or chunk) has this hash, or its retention is over.
    SnapshotPartNotFound(String),
    /// 413: the body or batch is too large.
    PayloadTooLarge(String),
    /// 429: the token's rate limit is exhausted.
    RateLimited(String),
    /// 429: the token, or the board, has as many live subscriptions open as allowed.
    TooManySubscriptions(String),
    /// 503: the service has as many live subscribers as it serves in all.
    SubscribersFull(String),
    /// 503: the live windows are busy; a subscription that adds a view is refused for now.
    LiveBusy(String),
    /// 503: as many board instances are followed for the edge as allowed; a new closed one is
    /// refused for now.
    SnapshotInstancesFull(String),
    /// 503: the service is not ready (still rebuilding, or shutting down).
    Unavailable(String),
    /// 503: the database cannot be reached or cannot serve now (stopped, restarting, locked
    /// past the wait); nothing of the request is known to have been stored, and a retry is
    /// safe.
    DatabaseUnavailable(String),
    /// 503: the board could not be rebuilt from the log at start; other boards are served.
    BoardBroken(String),
    /// 503: in a cluster, the game's partition is moving between nodes (its owner stopped or
    /// is handing it over) and no node answers for it yet; nothing was done, a retry is safe.
    PartitionMoving(String),
    /// 500: a bug or a failing dependency; the detail is logged, never answered.
    Internal(String),
    /// 500: what a lower layer failed with; logged with its whole chain of sources, never
    /// answered. Shared, so that every submitter of a failed group hears it.
    Failure(Arc<dyn std::error::Error + Send + Sync>),
    /// What the store met: 503 `DATABASE_UNAVAILABLE` when the database is away, 500
    /// `INTERNAL` otherwise. Shared, so that every submitter of a failed group hears it.
    Store(Arc<StoreError>),
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> AppError {
        AppError::Store(Arc::new(e))
    }
}

impl From<Refusal> for AppError {
    fn from(refusal: Refusal) -> AppError {
        let detail = refusal.to_string();
        match refusal {
            Refusal::SeasonNotActive { .. } => AppError::SeasonNotActive(detail),
            Refusal::PlayerDisqualified { .. } => AppError::PlayerDisqualified(detail),
            Refusal::UnknownBoard(_) => AppError::UnknownBoard(detail),
            Refusal::EventIdConflict(_) => AppError::EventIdConflict(detail),
            Refusal::EventInvalidated(_) => AppError::EventInvalidated(detail),
            Refusal::TotalOverflow { .. } => AppError::ValueOutOfRange(detail),
        }
    }
}

impl From<SubscribeError> for AppError {
    fn from(refusal: SubscribeError) -> AppError {
        let detail = refusal.to_string();
        match refusal {
            SubscribeError::PerToken { .. }
            | SubscribeError::PerBoard { .. }
            | SubscribeError::PerAddress { .. } => AppError::TooManySubscriptions(detail),
            SubscribeError::Busy { .. } => AppError::LiveBusy(detail),
            SubscribeError::Total { .. } => AppError::SubscribersFull(detail),
            SubscribeError::Stopping => AppError::Unavailable(detail),
        }
    }
}

impl From<ActionRefusal> for AppError {
    fn from(refusal: ActionRefusal) -> AppError {
        let detail = refusal.to_string();
        match refusal {
            ActionRefusal::ModerationIdConflict(_) => AppError::ModerationIdConflict(detail),
            ActionRefusal::AlreadyInState { .. } | ActionRefusal::InvalidTransition { .. } => {
                AppError::InvalidTransition(detail)
            }
            ActionRefusal::UnknownEvent { .. } => AppError::UnknownEvent(detail),
            ActionRefusal::UnknownBoard(_) => AppError::UnknownBoard(detail),
            ActionRefusal::SeasonArchived { .. } => AppError::SeasonArchived(detail),
            ActionRefusal::NotLate { .. } => AppError::NotLate(detail),
            ActionRefusal::NameLocked { .. } => AppError::NameLocked(detail),
            ActionRefusal::TotalOverflow { .. } => AppError::ValueOutOfRange(detail),
        }
    }
}

impl From<IntakeError> for AppError {
    fn from(refusal: IntakeError) -> AppError {
        let detail = refusal.to_string();
        match refusal {
            IntakeError::Shape(_)
            | IntakeError::NotAnObject(_)
            | IntakeError::Id(_)
            | IntakeError::NoScopes
            | IntakeError::TooManyScopes
            | IntakeError::RepeatedScope(_)
            | IntakeError::AchievedAt(_)
            | IntakeError::InFuture { .. } => AppError::InvalidEvent(detail),
            IntakeError::Forbidden { .. } => AppError::Forbidden(detail),
            IntakeError::UnknownBoard(_) => AppError::UnknownBoard(detail),
            IntakeError::NotServed(_) => AppError::BoardBroken(detail),
            IntakeError::OutOfRange { .. } => AppError::ValueOutOfRange(detail),
            IntakeError::Metadata { why, .. } => {
                AppError::Rule(StatusCode::UNPROCESSABLE_ENTITY, why.code(), detail)
            }
        }
    }
}

impl From<BoardBroken> for AppError {
    fn from(broken: BoardBroken) -> AppError {
        AppError::BoardBroken(broken.to_string())
    }
}

impl From<SnapshotUnreadable> for AppError {
    fn from(e: SnapshotUnreadable) -> AppError {
        AppError::Failure(Arc::new(e))
    }
}

impl From<LogError> for AppError {
    fn from(e: LogError) -> AppError {
        match e {
            LogError::Store(e) => e.into(),
            LogError::Refused(refusal) => (*refusal).into(),
            LogError::ActionRefused(refusal) => refusal.into(),
            LogError::NotServed(broken) => broken.into(),
            failed @ (LogError::Restore(_)
            | LogError::Apply { .. }
            | LogError::Recompute { .. }
            | LogError::InvalidStoredBoard { .. }
            | LogError::InvalidEvent(_)
            | LogError::UnreadableAction(_)
            | LogError::InvalidPlayer { .. }
            | LogError::ReadTask(_)) => AppError::Failure(Arc::new(failed)),
        }
    }
}

impl From<SnapshotsError> for AppError {
    fn from(e: SnapshotsError) -> AppError {
        match e {
            SnapshotsError::InstancesFull { .. } => AppError::SnapshotInstancesFull(e.to_string()),
            failed @ SnapshotsError::Publish { .. } => AppError::Failure(Arc::new(failed)),
        }
    }
}

impl From<CheckpointError> for AppError {
    fn from(e: CheckpointError) -> AppError {
        match e {
            CheckpointError::Store(e) => e.into(),
            failed @ CheckpointError::Manifest(_) => AppError::Failure(Arc::new(failed)),
        }
    }
}

/// What the writer met: its stop is 503 `UNAVAILABLE`; the database's absence, and a commit
/// that did not take, 503 `DATABASE_UNAVAILABLE` (nothing was stored, a retry is safe); an
/// action's refusal its own code; anything else a 500. Every submitter of a failed group hears
/// the same answer.
impl From<WriterError> for AppError {
    fn from(e: WriterError) -> AppError {
        match e {
            WriterError::Stopped => AppError::Unavailable(e.to_string()),
            WriterError::Store(e) => AppError::Store(e),
            WriterError::Group(failed) => match &*failed {
                WriterError::Store(e) => AppError::Store(e.clone()),
                WriterError::CommitDidNotTake => {
                    AppError::DatabaseUnavailable(Chain(&WriterError::Group(failed)).to_string())
                }
                _ => AppError::Failure(Arc::new(WriterError::Group(failed))),
            },
            WriterError::ActionRefused(refusal) => refusal.into(),
            WriterError::Action(e) => e.into(),
            WriterError::Checkpoint(e) => e.into(),
            WriterError::CommitDidNotTake => AppError::DatabaseUnavailable(e.to_string()),
            failed @ (WriterError::Dropped(_)
            | WriterError::CommitTask(_)
            | WriterError::StoredThoughNotFound(_)) => AppError::Failure(Arc::new(failed)),
        }
    }
}

impl From<crate::domain::profiles::ProfileError> for AppError {
    /// A profile's field is 400; an event's metadata is refused as the event is, 422.
    fn from(e: crate::domain::profiles::ProfileError) -> Self {
        let status = if e.field() == "metadata" {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::BAD_REQUEST
        };
        AppError::Rule(status, e.code(), e.to_string())
    }
}

impl AppError {
    /// The HTTP status and the stable code.
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        use AppError::*;
        match self {
            Unauthenticated(_) => (StatusCode::UNAUTHORIZED, "UNAUTHENTICATED"),
            Forbidden(_) => (StatusCode::FORBIDDEN, "FORBIDDEN"),
            UnknownBoard(_) => (StatusCode::NOT_FOUND, "UNKNOWN_BOARD"),
            PlayerNotRanked(_) => (StatusCode::NOT_FOUND, "PLAYER_NOT_RANKED"),
            NotFound(_) => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            InvalidJson(_) => (StatusCode::BAD_REQUEST, "INVALID_JSON"),
            InvalidRequest(_) => (StatusCode::BAD_REQUEST, "INVALID_REQUEST"),
            InvalidCursor(_) => (StatusCode::BAD_REQUEST, "INVALID_CURSOR"),
            StaleCursor(_) => (StatusCode::GONE, "STALE_CURSOR"),
            InvalidEvent(_) => (StatusCode::UNPROCESSABLE_ENTITY, "INVALID_EVENT"),
            InvalidBoard(_) => (StatusCode::UNPROCESSABLE_ENTITY, "INVALID_BOARD"),
            ValueOutOfRange(_) => (StatusCode::UNPROCESSABLE_ENTITY, "VALUE_OUT_OF_RANGE"),
            EventIdConflict(_) => (StatusCode::CONFLICT, "EVENT_ID_CONFLICT"),
            BoardRulesConflict(_) => (StatusCode::CONFLICT, "BOARD_RULES_CONFLICT"),
            EventInvalidated(_) => (StatusCode::CONFLICT, "EVENT_INVALIDATED"),
            SeasonNotActive(_) => (StatusCode::CONFLICT, "SEASON_NOT_ACTIVE"),
            PlayerDisqualified(_) => (StatusCode::CONFLICT, "PLAYER_DISQUALIFIED"),
            InvalidTransition(_) => (StatusCode::CONFLICT, "INVALID_TRANSITION"),
            ModerationIdConflict(_) => (StatusCode::CONFLICT, "MODERATION_ID_CONFLICT"),
            NotLate(_) => (StatusCode::CONFLICT, "NOT_LATE"),
            NameLocked(_) => (StatusCode::CONFLICT, "NAME_LOCKED"),
            Rule(status, code, _) => (*status, code),
            SeasonArchived(_) => (StatusCode::CONFLICT, "SEASON_ARCHIVED"),
            UnknownEvent(_) => (StatusCode::NOT_FOUND, "UNKNOWN_EVENT"),
            ResultsNotPublished(_) => (StatusCode::NOT_FOUND, "RESULTS_NOT_PUBLISHED"),
            SnapshotPartNotFound(_) => (StatusCode::NOT_FOUND, "SNAPSHOT_PART_NOT_FOUND"),
            PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE"),
            RateLimited(_) => (StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED"),
            TooManySubscriptions(_) => (StatusCode::TOO_MANY_REQUESTS, "TOO_MANY_SUBSCRIPTIONS"),
            SubscribersFull(_) => (StatusCode::SERVICE_UNAVAILABLE, "SUBSCRIBERS_FULL"),
            LiveBusy(_) => (StatusCode::SERVICE_UNAVAILABLE, "LIVE_BUSY"),
            SnapshotInstancesFull(_) => (StatusCode::SERVICE_UNAVAILABLE, "SNAPSHOT_INSTANCES_FULL"),
            Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE"),
            DatabaseUnavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "DATABASE_UNAVAILABLE"),
            BoardBroken(_) => (StatusCode::SERVICE_UNAVAILABLE, "BOARD_BROKEN"),
            PartitionMoving(_) => (StatusCode::SERVICE_UNAVAILABLE, "PARTITION_MOVING"),
            Internal(_) | Failure(_) => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
            Contract(problem) => (
                StatusCode::from_u16(problem.status).unwrap_or(StatusCode::BAD_REQUEST),
                problem.code,
            ),
            Store(e) if e.is_fenced() => (StatusCode::SERVICE_UNAVAILABLE, "PARTITION_MOVING"),
            Store(e) if e.is_unavailable() => (StatusCode::SERVICE_UNAVAILABLE, "DATABASE_UNAVAILABLE"),
            Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
        }
    }

    /// What went wrong, for the log; a store error shows its whole chain of sources.
    fn detail(&self) -> std::borrow::Cow<'_, str> {
        use AppError::*;
        std::borrow::Cow::Borrowed(match self {
            Store(e) => return std::borrow::Cow::Owned(Chain(e.as_ref()).to_string()),
            Failure(e) => return std::borrow::Cow::Owned(Chain(e.as_ref()).to_string()),
            Unauthenticated(d)
            | Forbidden(d)
            | UnknownBoard(d)
            | PlayerNotRanked(d)
            | NotFound(d)
            | InvalidJson(d)
            | InvalidRequest(d)
            | InvalidCursor(d)
            | StaleCursor(d)
            | InvalidEvent(d)
            | EventInvalidated(d)
            | SeasonNotActive(d)
            | PlayerDisqualified(d)
            | InvalidTransition(d)
            | ModerationIdConflict(d)
            | NotLate(d)
            | NameLocked(d)
            | Rule(_, _, d)
            | SeasonArchived(d)
            | UnknownEvent(d)
            | ResultsNotPublished(d)
            | SnapshotPartNotFound(d)
            | InvalidBoard(d)
            | ValueOutOfRange(d)
            | EventIdConflict(d)
            | BoardRulesConflict(d)
            | PayloadTooLarge(d)
            | RateLimited(d)
            | TooManySubscriptions(d)
            | SubscribersFull(d)
            | LiveBusy(d)
            | SnapshotInstancesFull(d)
            | Unavailable(d)
            | DatabaseUnavailable(d)
            | BoardBroken(d)
            | PartitionMoving(d)
            | Internal(d) => d,
            Contract(problem) => &problem.detail,
        })
    }

    /// The `Retry-After` of an answer that a client should retry later, in seconds: the
    /// refusals that pass once load or caps have room again. O(1).
    pub fn retry_after_seconds(&self) -> Option<u32> {
        match self {
            AppError::SubscribersFull(_) | AppError::LiveBusy(_) => Some(5),
            AppError::SnapshotInstancesFull(_) => Some(10),
            AppError::PartitionMoving(_) => Some(1),
            AppError::Store(e) if e.is_fenced() => Some(1),
            _ => None,
        }
    }

    /// The problem document this error is answered with.
    pub fn problem(&self) -> Problem {
        let (status, code) = self.status_and_code();
        let detail = match (self, code) {
            (_, "INTERNAL") => "an internal error occurred; it has been logged".to_string(),
            (_, "DATABASE_UNAVAILABLE") => "the database is unavailable; retry shortly".to_string(),
            (AppError::Store(_), "PARTITION_MOVING") => {
                "the game's partition is moving to another node; retry shortly".to_string()
            }
            (other, _) => other.detail().into_owned(),
        };
        Problem::new(status.as_u16(), code, detail)
    }
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (_, code) = self.status_and_code();
        write!(f, "{code}: {}", self.detail())
    }
}

impl std::error::Error for AppError {}

/// The problem document of every refusal, printed by the core for every tier alike.
pub use standings_core::contract::Problem;

/// The problem document `error` is answered with: for a report in the API's words, as
/// `standings import` gives of what it refused.
pub fn problem_of(error: impl Into<AppError>) -> Problem {
    error.into().problem()
}

/// A refusal of the read contract (a read parameter, a player id) keeps its status, code and
/// words, the ones every tier answers with.
impl From<Problem> for AppError {
    fn from(problem: Problem) -> AppError {
        AppError::Contract(problem)
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        match &self {
            AppError::Internal(context) => tracing::error!("internal error: {context}"),
            // The database's own error stays in the log; the answer names only the code.
            AppError::DatabaseUnavailable(context) => {
                tracing::error!("the database is unavailable: {context}")
            }
            AppError::Store(e) if e.is_unavailable() => {
                tracing::error!("the database is unavailable: {}", Chain(e.as_ref()))
            }
            AppError::Store(e) => tracing::error!("internal error: {}", Chain(e.as_ref())),
            AppError::Failure(e) => tracing::error!("internal error: {}", Chain(e.as_ref())),
            _ => {}
        }
        let problem = self.problem();
        let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = problem.body();
        let mut response = (status, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(seconds) = self.retry_after_seconds() {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        // The metrics layer counts rejections by this code.
        response.extensions_mut().insert(ErrorCode(problem.code));
        response
    }
}

/// The code of an error response, left in its extensions for the metrics layer.
#[derive(Clone, Copy, Debug)]
pub struct ErrorCode(pub &'static str);

/// The result type of handlers.
pub type AppResult<T> = Result<T, AppError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A store error is answered with today's status, code and detail (the database's absence
    /// 503, anything else 500, neither with internals), while the log sees its whole chain.
    #[test]
    fn a_store_error_keeps_its_code_and_shows_its_source_in_the_log() {
        let away: AppError = StoreError::unavailable_for_tests("cannot append events").into();
        assert_eq!(
            away.status_and_code(),
            (StatusCode::SERVICE_UNAVAILABLE, "DATABASE_UNAVAILABLE")
        );
        assert_eq!(
            away.problem().detail,
            "the database is unavailable; retry shortly"
        );
        let logged = away.to_string();
        assert!(
            logged.starts_with("DATABASE_UNAVAILABLE: cannot append events: ")
                && logged.contains("pool timed out"),
            "{logged}"
        );
        let failed: AppError =
            StoreError::Corrupt("the board g/m/s/x has an unknown score mode".into()).into();
        assert_eq!(
            failed.status_and_code(),
            (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL")
        );
        assert_eq!(
            failed.problem().detail,
            "an internal error occurred; it has been logged"
        );
        assert_eq!(
            failed.to_string(),
            "INTERNAL: the board g/m/s/x has an unknown score mode"
        );
    }

    /// Each subscription limit is answered with the status and code docs/live.md promises,
    /// and the hub's words.
    #[test]
    fn a_refused_subscription_has_its_code() {
        for (refusal, status, code) in [
            (
                SubscribeError::PerToken { limit: 3 },
                StatusCode::TOO_MANY_REQUESTS,
                "TOO_MANY_SUBSCRIPTIONS",
            ),
            (
                SubscribeError::PerBoard { limit: 3 },
                StatusCode::TOO_MANY_REQUESTS,
                "TOO_MANY_SUBSCRIPTIONS",
            ),
            (
                SubscribeError::Total { limit: 3 },
                StatusCode::SERVICE_UNAVAILABLE,
                "SUBSCRIBERS_FULL",
            ),
            (
                SubscribeError::Stopping,
                StatusCode::SERVICE_UNAVAILABLE,
                "UNAVAILABLE",
            ),
            (
                SubscribeError::PerAddress { limit: 3 },
                StatusCode::TOO_MANY_REQUESTS,
                "TOO_MANY_SUBSCRIPTIONS",
            ),
            (
                SubscribeError::Busy {
                    work_ms: 140,
                    window_ms: 250,
                },
                StatusCode::SERVICE_UNAVAILABLE,
                "LIVE_BUSY",
            ),
        ] {
            let detail = refusal.to_string();
            let error = AppError::from(refusal);
            assert_eq!(error.status_and_code(), (status, code));
            assert_eq!(error.problem().detail, detail);
        }
    }

    /// The refusals that pass once there is room again say when to retry; others do not.
    #[test]
    fn busy_refusals_carry_retry_after() {
        let busy = AppError::LiveBusy("busy".into()).into_response();
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(busy.headers()[header::RETRY_AFTER], "5");
        let full = AppError::SnapshotInstancesFull("full".into()).into_response();
        assert_eq!(full.headers()[header::RETRY_AFTER], "10");
        let bad = AppError::InvalidRequest("bad".into()).into_response();
        assert!(bad.headers().get(header::RETRY_AFTER).is_none());
    }

    /// A domain refusal is answered with the code and the words it had as an AppError.
    #[test]
    fn a_refusal_keeps_its_code_and_detail() {
        let refused: AppError = Refusal::SeasonNotActive {
            game: "g".into(),
            season: "s".into(),
            state: crate::domain::seasons::SeasonState::Frozen,
        }
        .into();
        assert_eq!(
            refused.status_and_code(),
            (StatusCode::CONFLICT, "SEASON_NOT_ACTIVE")
        );
        assert_eq!(
            refused.problem().detail,
            "season g/s is frozen; it takes no events achieved at this time"
        );
    }

    fn board(scope: &str) -> Box<standings_core::BoardId> {
        Box::new(standings_core::BoardId::new("g", "m", "s", scope).unwrap())
    }

    /// Each refusal of an action is answered with the status, code and words it had when the
    /// writer named `AppError` itself.
    #[test]
    fn an_action_refusal_keeps_its_code_and_detail() {
        use crate::domain::EventStatus;
        use crate::domain::seasons::SeasonState;
        for (refusal, status, code, detail) in [
            (
                ActionRefusal::ModerationIdConflict("m1".into()),
                StatusCode::CONFLICT,
                "MODERATION_ID_CONFLICT",
                "moderation_id \"m1\" was already used for another action",
            ),
            (
                ActionRefusal::AlreadyInState {
                    game: "g".into(),
                    season: "s".into(),
                    to: SeasonState::Frozen,
                },
                StatusCode::CONFLICT,
                "INVALID_TRANSITION",
                "season g/s is already frozen",
            ),
            (
                ActionRefusal::InvalidTransition {
                    game: "g".into(),
                    season: "s".into(),
                    why: "an archived season is final; it cannot become active".into(),
                },
                StatusCode::CONFLICT,
                "INVALID_TRANSITION",
                "season g/s: an archived season is final; it cannot become active",
            ),
            (
                ActionRefusal::UnknownEvent {
                    game: "g".into(),
                    event_id: "e1".into(),
                },
                StatusCode::NOT_FOUND,
                "UNKNOWN_EVENT",
                "no event \"e1\" in game \"g\"",
            ),
            (
                ActionRefusal::UnknownBoard(board("x")),
                StatusCode::NOT_FOUND,
                "UNKNOWN_BOARD",
                "no board g/m/s/x",
            ),
            (
                ActionRefusal::SeasonArchived {
                    game: "g".into(),
                    season: "s".into(),
                },
                StatusCode::CONFLICT,
                "SEASON_ARCHIVED",
                "season g/s is archived; its results and events are final",
            ),
            (
                ActionRefusal::NotLate {
                    event_id: "e1".into(),
                    status: EventStatus::Applied,
                },
                StatusCode::CONFLICT,
                "NOT_LATE",
                "event \"e1\" is not waiting for a late decision (status APPLIED)",
            ),
            (
                ActionRefusal::TotalOverflow {
                    player: "p1".into(),
                    board: board("global"),
                    period_key: "all_time".into(),
                },
                StatusCode::UNPROCESSABLE_ENTITY,
                "VALUE_OUT_OF_RANGE",
                "the total of \"p1\" on g/m/s/global (all_time) would overflow a 64-bit integer",
            ),
        ] {
            // Through the writer and the log, as the handlers meet it.
            let through_writer = AppError::from(WriterError::ActionRefused(refusal.clone()));
            let through_log = AppError::from(WriterError::Action(LogError::ActionRefused(refusal.clone())));
            for error in [AppError::from(refusal), through_writer, through_log] {
                assert_eq!(error.status_and_code(), (status, code));
                assert_eq!(error.problem().detail, detail);
            }
        }
    }

    /// Each refusal of a submitted event is answered with its status and code, in its words.
    #[test]
    fn an_intake_refusal_keeps_its_code_and_detail() {
        let broken = BoardBroken {
            board: board("global"),
            seq: 4,
        };
        for (refusal, status, code, detail) in [
            (
                IntakeError::NoScopes,
                StatusCode::UNPROCESSABLE_ENTITY,
                "INVALID_EVENT",
                "scopes must name at least one scope",
            ),
            (
                IntakeError::TooManyScopes,
                StatusCode::UNPROCESSABLE_ENTITY,
                "INVALID_EVENT",
                "scopes may name at most 32 scopes",
            ),
            (
                IntakeError::RepeatedScope("eu".into()),
                StatusCode::UNPROCESSABLE_ENTITY,
                "INVALID_EVENT",
                "scope \"eu\" is listed twice",
            ),
            (
                IntakeError::InFuture {
                    achieved_at: "2026-10-13T10:10:00Z".into(),
                    now: "2026-10-13T10:00:00.000Z".into(),
                },
                StatusCode::UNPROCESSABLE_ENTITY,
                "INVALID_EVENT",
                "achieved_at 2026-10-13T10:10:00Z is more than 5 minutes in the future (now is 2026-10-13T10:00:00.000Z)",
            ),
            (
                IntakeError::Forbidden {
                    submitter: "game-server".into(),
                    game: "other".into(),
                },
                StatusCode::FORBIDDEN,
                "FORBIDDEN",
                "token \"game-server\" may not write to game \"other\"",
            ),
            (
                IntakeError::UnknownBoard(board("mars")),
                StatusCode::NOT_FOUND,
                "UNKNOWN_BOARD",
                "no board g/m/s/mars; define it before submitting to it",
            ),
            (
                IntakeError::NotServed(broken),
                StatusCode::SERVICE_UNAVAILABLE,
                "BOARD_BROKEN",
                "board g/m/s/global is not served: the log entry at seq 4 cannot be carried out on it (see /readyz)",
            ),
            (
                IntakeError::OutOfRange {
                    board: board("global"),
                    why: standings_core::ApplyError::ValueOutOfRange {
                        value: 5_000,
                        min: 0,
                        max: 1_000,
                    },
                },
                StatusCode::UNPROCESSABLE_ENTITY,
                "VALUE_OUT_OF_RANGE",
                "on board g/m/s/global: value 5000 is outside the board's range 0..=1000",
            ),
        ] {
            let error = AppError::from(refusal);
            assert_eq!(error.status_and_code(), (status, code));
            assert_eq!(error.problem().detail, detail);
        }
    }

    /// The writer's errors keep today's answers: its stop is 503 `UNAVAILABLE`; a group that
    /// failed on the database's absence, or whose commit did not take, 503
    /// `DATABASE_UNAVAILABLE` for every submitter; anything else a 500 whose log shows the
    /// whole chain and whose answer shows none of it.
    #[test]
    fn a_writer_error_keeps_its_status_and_its_chain() {
        let stopped = AppError::from(WriterError::Stopped);
        assert_eq!(
            stopped.status_and_code(),
            (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE")
        );
        assert_eq!(
            stopped.problem().detail,
            "the writer has stopped; the service is shutting down"
        );

        let away = Arc::new(WriterError::from(StoreError::unavailable_for_tests(
            "cannot append events",
        )));
        let not_taken = Arc::new(WriterError::CommitDidNotTake);
        for shared in [away, not_taken] {
            let error = AppError::from(WriterError::Group(shared));
            assert_eq!(
                error.status_and_code(),
                (StatusCode::SERVICE_UNAVAILABLE, "DATABASE_UNAVAILABLE")
            );
            assert_eq!(
                error.problem().detail,
                "the database is unavailable; retry shortly"
            );
        }
        assert_eq!(
            AppError::from(WriterError::Group(Arc::new(WriterError::CommitDidNotTake))).to_string(),
            "DATABASE_UNAVAILABLE: group commit failed: the database went away during the commit, which did not take; nothing was stored"
        );

        let bug = AppError::from(WriterError::Group(Arc::new(WriterError::StoredThoughNotFound(3))));
        assert_eq!(
            bug.status_and_code(),
            (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL")
        );
        assert_eq!(
            bug.problem().detail,
            "an internal error occurred; it has been logged"
        );
        assert_eq!(
            bug.to_string(),
            "INTERNAL: group commit failed: 3 of a group's events were stored already, though not found"
        );
        let dropped = AppError::from(WriterError::Dropped("a submission"));
        assert_eq!(
            dropped.status_and_code(),
            (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL")
        );
        assert_eq!(dropped.to_string(), "INTERNAL: the writer dropped a submission");
    }

    /// The log's refusals keep their codes; its failures are 500s that log their source.
    #[test]
    fn a_log_error_keeps_its_code_or_logs_its_source() {
        let unknown = AppError::from(LogError::from(Refusal::UnknownBoard(*board("x"))));
        assert_eq!(
            unknown.status_and_code(),
            (StatusCode::NOT_FOUND, "UNKNOWN_BOARD")
        );
        assert_eq!(unknown.problem().detail, "no board g/m/s/x");
        let broken = AppError::from(LogError::NotServed(BoardBroken {
            board: board("global"),
            seq: 9,
        }));
        assert_eq!(
            broken.status_and_code(),
            (StatusCode::SERVICE_UNAVAILABLE, "BOARD_BROKEN")
        );
        let failed = AppError::from(LogError::Recompute {
            player: "p1".into(),
            board: board("global"),
            period_key: "all_time".into(),
            source: standings_core::ApplyError::ValueOverflow,
        });
        assert_eq!(
            failed.status_and_code(),
            (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL")
        );
        assert_eq!(
            failed.to_string(),
            "INTERNAL: a recompute of \"p1\" on g/m/s/global (all_time) fails: the cumulative total would overflow a 64-bit integer"
        );
        let away = AppError::from(LogError::Store(StoreError::unavailable_for_tests("cannot read")));
        assert_eq!(
            away.status_and_code(),
            (StatusCode::SERVICE_UNAVAILABLE, "DATABASE_UNAVAILABLE")
        );
    }

    /// A head refused under the snapshot caps is a 503 with its words and a `Retry-After`.
    #[test]
    fn a_full_snapshot_cap_is_a_503_to_retry() {
        let full = SnapshotsError::InstancesFull {
            total: 64,
            per_board: 2,
            board: board("global"),
            period_key: "2025-10-11".into(),
        };
        let detail = full.to_string();
        let error = AppError::from(full);
        assert_eq!(
            error.status_and_code(),
            (StatusCode::SERVICE_UNAVAILABLE, "SNAPSHOT_INSTANCES_FULL")
        );
        assert_eq!(
            error.problem().detail,
            "the origin follows as many board instances for the edge as it may (64 in all, 2 per board) and g/m/s/global 2025-10-11 is a closed period; read it from the origin's API, or retry once fewer are read"
        );
        assert_eq!(error.problem().detail, detail);
        assert_eq!(error.into_response().headers()[header::RETRY_AFTER], "10");
    }
}
