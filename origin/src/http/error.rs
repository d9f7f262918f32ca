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
    /// A refusal: its code and its words. The words of `INTERNAL` and `DATABASE_UNAVAILABLE`
    /// are logged and never answered.
    Refused(Code, String),
    /// 500: what a lower layer failed with; logged with its whole chain of sources, never
    /// answered. Shared, so that every submitter of a failed group hears it.
    Failure(Arc<dyn std::error::Error + Send + Sync>),
    /// What the store met: 503 `DATABASE_UNAVAILABLE` when the database is away, 503
    /// `PARTITION_MOVING` when this node no longer owns the partition, 500 `INTERNAL` otherwise.
    /// Shared, so that every submitter of a failed group hears it.
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
            Refusal::SeasonNotActive { .. } => AppError::new(Code::SEASON_NOT_ACTIVE, detail),
            Refusal::PlayerDisqualified { .. } => AppError::new(Code::PLAYER_DISQUALIFIED, detail),
            Refusal::UnknownBoard(_) => AppError::new(Code::UNKNOWN_BOARD, detail),
            Refusal::EventIdConflict(_) => AppError::new(Code::EVENT_ID_CONFLICT, detail),
            Refusal::EventInvalidated(_) => AppError::new(Code::EVENT_INVALIDATED, detail),
            Refusal::TotalOverflow { .. } => AppError::new(Code::VALUE_OUT_OF_RANGE, detail),
        }
    }
}

impl From<SubscribeError> for AppError {
    fn from(refusal: SubscribeError) -> AppError {
        let detail = refusal.to_string();
        match refusal {
            SubscribeError::PerToken { .. }
            | SubscribeError::PerBoard { .. }
            | SubscribeError::PerAddress { .. } => AppError::new(Code::TOO_MANY_SUBSCRIPTIONS, detail),
            SubscribeError::Busy { .. } => AppError::new(Code::LIVE_BUSY, detail),
            SubscribeError::Total { .. } => AppError::new(Code::SUBSCRIBERS_FULL, detail),
            SubscribeError::Stopping => AppError::new(Code::UNAVAILABLE, detail),
        }
    }
}

impl From<ActionRefusal> for AppError {
    fn from(refusal: ActionRefusal) -> AppError {
        let detail = refusal.to_string();
        match refusal {
            ActionRefusal::ModerationIdConflict(_) => AppError::new(Code::MODERATION_ID_CONFLICT, detail),
            ActionRefusal::AlreadyInState { .. } | ActionRefusal::InvalidTransition { .. } => {
                AppError::new(Code::INVALID_TRANSITION, detail)
            }
            ActionRefusal::UnknownEvent { .. } => AppError::new(Code::UNKNOWN_EVENT, detail),
            ActionRefusal::UnknownBoard(_) => AppError::new(Code::UNKNOWN_BOARD, detail),
            ActionRefusal::SeasonArchived { .. } => AppError::new(Code::SEASON_ARCHIVED, detail),
            ActionRefusal::NotLate { .. } => AppError::new(Code::NOT_LATE, detail),
            ActionRefusal::NameLocked { .. } => AppError::new(Code::NAME_LOCKED, detail),
            ActionRefusal::TotalOverflow { .. } => AppError::new(Code::VALUE_OUT_OF_RANGE, detail),
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
            | IntakeError::InFuture { .. }
            | IntakeError::Segments(_) => AppError::new(Code::INVALID_EVENT, detail),
            IntakeError::Forbidden { .. } => AppError::new(Code::FORBIDDEN, detail),
            IntakeError::UnknownBoard(_) => AppError::new(Code::UNKNOWN_BOARD, detail),
            IntakeError::NotServed(_) => AppError::new(Code::BOARD_BROKEN, detail),
            IntakeError::OutOfRange { .. } => AppError::new(Code::VALUE_OUT_OF_RANGE, detail),
            IntakeError::Metadata { why, .. } => AppError::new(why.code(), detail),
        }
    }
}

impl From<BoardBroken> for AppError {
    fn from(broken: BoardBroken) -> AppError {
        AppError::new(Code::BOARD_BROKEN, broken.to_string())
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
            SnapshotsError::InstancesFull { .. } => {
                AppError::new(Code::SNAPSHOT_INSTANCES_FULL, e.to_string())
            }
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
            WriterError::Stopped => AppError::new(Code::UNAVAILABLE, e.to_string()),
            WriterError::Store(e) => AppError::Store(e),
            WriterError::Group(failed) => match &*failed {
                WriterError::Store(e) => AppError::Store(e.clone()),
                WriterError::CommitDidNotTake => AppError::new(
                    Code::DATABASE_UNAVAILABLE,
                    Chain(&WriterError::Group(failed)).to_string(),
                ),
                _ => AppError::Failure(Arc::new(WriterError::Group(failed))),
            },
            WriterError::ActionRefused(refusal) => refusal.into(),
            WriterError::Action(e) => e.into(),
            WriterError::Checkpoint(e) => e.into(),
            WriterError::CommitDidNotTake => AppError::new(Code::DATABASE_UNAVAILABLE, e.to_string()),
            failed @ (WriterError::Dropped(_)
            | WriterError::CommitTask(_)
            | WriterError::StoredThoughNotFound(_)) => AppError::Failure(Arc::new(failed)),
        }
    }
}

impl From<crate::domain::profiles::ProfileError> for AppError {
    /// A profile's field is 400; an event's metadata is refused as the event is, 422 (the
    /// rule's code says which).
    fn from(e: crate::domain::profiles::ProfileError) -> Self {
        AppError::new(e.code(), e.to_string())
    }
}

impl AppError {
    /// A refusal of `code` in these words. O(1).
    pub fn new(code: Code, detail: impl Into<String>) -> AppError {
        AppError::Refused(code, detail.into())
    }

    /// The code it is answered with. O(1).
    pub fn code(&self) -> Code {
        match self {
            AppError::Refused(code, _) => *code,
            AppError::Failure(_) => Code::INTERNAL,
            AppError::Store(e) if e.is_fenced() => Code::PARTITION_MOVING,
            AppError::Store(e) if e.is_unavailable() => Code::DATABASE_UNAVAILABLE,
            AppError::Store(_) => Code::INTERNAL,
        }
    }

    /// What went wrong, for the log; a failure shows its whole chain of sources.
    fn detail(&self) -> std::borrow::Cow<'_, str> {
        match self {
            AppError::Refused(_, detail) => std::borrow::Cow::Borrowed(detail),
            AppError::Store(e) => std::borrow::Cow::Owned(Chain(e.as_ref()).to_string()),
            AppError::Failure(e) => std::borrow::Cow::Owned(Chain(e.as_ref()).to_string()),
        }
    }

    /// The `Retry-After` of an answer that a client should retry later, in seconds: the
    /// refusals that pass once load or caps have room again. O(1).
    pub fn retry_after_seconds(&self) -> Option<u32> {
        match self.code() {
            Code::SUBSCRIBERS_FULL | Code::LIVE_BUSY => Some(5),
            Code::SNAPSHOT_INSTANCES_FULL => Some(10),
            Code::PARTITION_MOVING | Code::POSITION_NOT_REACHED => Some(1),
            _ => None,
        }
    }

    /// The problem document this error is answered with.
    pub fn problem(&self) -> Problem {
        let code = self.code();
        let detail = match (self, code) {
            (_, Code::INTERNAL) => "an internal error occurred; it has been logged".to_string(),
            (_, Code::DATABASE_UNAVAILABLE) => "the database is unavailable; retry shortly".to_string(),
            (AppError::Store(_), Code::PARTITION_MOVING) => {
                "the game's partition is moving to another node; retry shortly".to_string()
            }
            (other, _) => other.detail().into_owned(),
        };
        Problem::new(code, detail)
    }
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code().name, self.detail())
    }
}

impl std::error::Error for AppError {}

/// The problem document of every refusal, printed by the core for every tier alike.
pub use standings_core::contract::{Code, Problem};

/// The problem document `error` is answered with: for a report in the API's words, as
/// `standings import` gives of what it refused.
pub fn problem_of(error: impl Into<AppError>) -> Problem {
    error.into().problem()
}

/// A refusal of the read contract (a read parameter, a player id) keeps its status, code and
/// words, the ones every tier answers with.
impl From<Problem> for AppError {
    fn from(problem: Problem) -> AppError {
        AppError::Refused(problem.code(), problem.detail)
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        match (&self, self.code()) {
            // The database's own error stays in the log; the answer names only the code.
            (_, Code::DATABASE_UNAVAILABLE) => {
                tracing::error!("the database is unavailable: {}", self.detail())
            }
            (_, Code::INTERNAL) => tracing::error!("internal error: {}", self.detail()),
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

    /// The status and the name an error is answered with, to compare with the literals the
    /// docs promise.
    fn status_and_code(error: &AppError) -> (StatusCode, &'static str) {
        let code = error.code();
        (StatusCode::from_u16(code.status).unwrap(), code.name)
    }

    /// A store error is answered with today's status, code and detail (the database's absence
    /// 503, anything else 500, neither with internals), while the log sees its whole chain.
    #[test]
    fn a_store_error_keeps_its_code_and_shows_its_source_in_the_log() {
        let away: AppError = StoreError::unavailable_for_tests("cannot append events").into();
        assert_eq!(
            status_and_code(&away),
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
            status_and_code(&failed),
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
            assert_eq!(status_and_code(&error), (status, code));
            assert_eq!(error.problem().detail, detail);
        }
    }

    /// The refusals that pass once there is room again say when to retry; others do not.
    #[test]
    fn busy_refusals_carry_retry_after() {
        let busy = AppError::new(Code::LIVE_BUSY, "busy").into_response();
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(busy.headers()[header::RETRY_AFTER], "5");
        let full = AppError::new(Code::SNAPSHOT_INSTANCES_FULL, "full").into_response();
        assert_eq!(full.headers()[header::RETRY_AFTER], "10");
        let bad = AppError::new(Code::INVALID_REQUEST, "bad").into_response();
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
            status_and_code(&refused),
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
                assert_eq!(status_and_code(&error), (status, code));
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
            assert_eq!(status_and_code(&error), (status, code));
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
            status_and_code(&stopped),
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
                status_and_code(&error),
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
            status_and_code(&bug),
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
            status_and_code(&dropped),
            (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL")
        );
        assert_eq!(dropped.to_string(), "INTERNAL: the writer dropped a submission");
    }

    /// The log's refusals keep their codes; its failures are 500s that log their source.
    #[test]
    fn a_log_error_keeps_its_code_or_logs_its_source() {
        let unknown = AppError::from(LogError::from(Refusal::UnknownBoard(*board("x"))));
        assert_eq!(
            status_and_code(&unknown),
            (StatusCode::NOT_FOUND, "UNKNOWN_BOARD")
        );
        assert_eq!(unknown.problem().detail, "no board g/m/s/x");
        let broken = AppError::from(LogError::NotServed(BoardBroken {
            board: board("global"),
            seq: 9,
        }));
        assert_eq!(
            status_and_code(&broken),
            (StatusCode::SERVICE_UNAVAILABLE, "BOARD_BROKEN")
        );
        let failed = AppError::from(LogError::Recompute {
            player: "p1".into(),
            board: board("global"),
            period_key: "all_time".into(),
            source: standings_core::ApplyError::ValueOverflow,
        });
        assert_eq!(
            status_and_code(&failed),
            (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL")
        );
        assert_eq!(
            failed.to_string(),
            "INTERNAL: a recompute of \"p1\" on g/m/s/global (all_time) fails: the cumulative total would overflow a 64-bit integer"
        );
        let away = AppError::from(LogError::Store(StoreError::unavailable_for_tests("cannot read")));
        assert_eq!(
            status_and_code(&away),
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
            status_and_code(&error),
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
