//! Who may read the snapshots published for the edge: they hold every player's score.

use axum::http::HeaderMap;

use super::Auth;
use crate::config::Role;
use crate::http::error::{AppError, Code};

impl Auth {
    /// Who may read snapshots, checked before the board or part is looked up: with
    /// `public_reads`, anyone (a token is still held to its games, a bad one still fails);
    /// otherwise an edge or admin token. A snapshot holds every player's score, so a player
    /// token is refused with a reason, as is a service or moderator token. O(the caller's games).
    pub(crate) fn snapshot_reader(&self, headers: &HeaderMap) -> Result<SnapshotReader, AppError> {
        let caller = match self.caller(headers)? {
            None if self.public_reads => return Ok(SnapshotReader::Anyone),
            None => {
                return Err(AppError::new(
                    Code::UNAUTHENTICATED,
                    "snapshots need an edge or admin token",
                ));
            }
            Some(caller) => caller,
        };
        if !self.public_reads && !caller.role.can_read_snapshots() {
            let detail = if caller.role == Role::Player {
                "a player token cannot read snapshots: they hold every player's score; read the board through the read API or the edge".to_string()
            } else {
                format!(
                    "{} cannot read snapshots; they need an edge or admin token",
                    caller.role.a_token()
                )
            };
            return Err(AppError::new(Code::FORBIDDEN, detail));
        }
        Ok(SnapshotReader::Games {
            name: caller.name.clone(),
            games: caller.games.clone(),
        })
    }
}

/// A caller [`Auth::snapshot_reader`] admitted, to be checked against the game of what it reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SnapshotReader {
    /// Anyone may read every game's snapshots (`public_reads`, no token).
    Anyone,
    /// A token that may read these games' snapshots.
    Games {
        /// The token's name, for the refusal.
        name: String,
        /// Its games (`*` for all).
        games: Vec<String>,
    },
}

impl SnapshotReader {
    /// Checks that the caller may read what `published_by` (a board's game, or every game
    /// that published a part) published: 403 when it may read none of them. O(games x the
    /// caller's games).
    pub(crate) fn check<'a>(
        &self,
        published_by: impl IntoIterator<Item = &'a str>,
        what: &str,
    ) -> Result<(), AppError> {
        let SnapshotReader::Games { name, games } = self else {
            return Ok(());
        };
        let mut published_by = published_by.into_iter().peekable();
        let first = published_by.peek().copied();
        if published_by.any(|game| games.iter().any(|g| g == "*" || g == game)) {
            return Ok(());
        }
        Err(AppError::new(
            Code::FORBIDDEN,
            match first {
                Some(game) => format!("token {name:?} may not read {what} of game {game:?}"),
                None => format!("token {name:?} may not read {what}"),
            },
        ))
    }
}
