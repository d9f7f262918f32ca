//! The action log (season transitions, moderation, late decisions) and season results.
//!
//! Actions share the events' `seq`, so a rebuild interleaves them exactly. They are stored typed
//! (the domain's action and result types, encoded here), and `season_results` holds the result
//! snapshots a season transition wrote: a cache the rebuild reproduces and compares.

use sqlx::Row;
use sqlx::any::AnyRow;
use standings_core::BoardId;

use super::StoreError;
use super::{Store, Transaction, db_err};
use crate::domain::{Action, ActionResult, ActionRow, RankedEntry, ResultRow, UnreadableAction};

const ACTION_COLUMNS: &str = "seq, game, kind, action_id, body, result, actor, reason, created_at";

impl Store {
    /// Appends an action inside a transaction.
    /// One indexed insert.
    pub async fn insert_action(tx: &mut Transaction, a: &ActionRow) -> Result<(), StoreError> {
        let tx = &mut tx.0;
        sqlx::query(
            "INSERT INTO actions (seq, game, kind, action_id, body, result, actor, reason, created_at, \
             target_player_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(a.seq)
        .bind(a.game.as_str())
        .bind(a.kind())
        .bind(a.action_id.as_deref())
        .bind(body_text(a)?)
        .bind(result_text(a.result.as_ref())?)
        .bind(a.actor.as_str())
        .bind(a.reason.as_str())
        .bind(a.created_at)
        .bind(a.action.as_ref().ok().and_then(Action::profile_target))
        .execute(&mut **tx)
        .await
        .map_err(db_err("cannot append an action"))?;
        Ok(())
    }

    /// Records what an action changed, once it was applied.
    /// One update by primary key, O(size of the result).
    pub async fn set_action_result(&self, seq: i64, result: &ActionResult) -> Result<(), StoreError> {
        self.write_one(
            sqlx::query("UPDATE actions SET result = $1 WHERE seq = $2")
                .bind(result_text(Some(result))?)
                .bind(seq),
        )
        .await
        .map_err(db_err("cannot record an action's result"))?;
        Ok(())
    }

    /// The action a game's client id names, if any.
    /// One index look-up.
    pub async fn find_action(&self, game: &str, action_id: &str) -> Result<Option<ActionRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM actions WHERE game = $1 AND action_id = $2"
        ))
        .bind(game)
        .bind(action_id)
        .fetch_optional(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot read an action"))?;
        row.as_ref().map(action_from_row).transpose()
    }

    /// The actions that change profiles (`PROFILE`, `RENAME`, `CLEAR_NAME`, `LOCK_NAME`,
    /// `UNLOCK_NAME`, `ERASE`) up to `seq`, in commit order: what a restart from a checkpoint
    /// at `seq` reads the profiles from. O(those actions).
    pub async fn profile_actions_until(&self, seq: i64) -> Result<Vec<ActionRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM actions WHERE seq <= $1 AND kind IN ('PROFILE', 'RENAME', \
             'CLEAR_NAME', 'LOCK_NAME', 'UNLOCK_NAME', 'ERASE') ORDER BY seq"
        ))
        .bind(seq)
        .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot read the profile actions"))?;
        rows.iter().map(action_from_row).collect()
    }

    /// Every action of one game, in commit order.
    /// O(the game's actions), read in one statement.
    pub async fn actions(&self, game: &str) -> Result<Vec<ActionRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM actions WHERE game = $1 ORDER BY seq"
        ))
        .bind(game)
        .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot read the action log"))?;
        rows.iter().map(action_from_row).collect()
    }

    /// Every action with `seq > after`, in `seq` order.
    /// O(actions after `after`), read in one statement.
    pub async fn actions_after(&self, after: i64) -> Result<Vec<ActionRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM actions WHERE seq > $1 ORDER BY seq"
        ))
        .bind(after)
        .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot read the action log"))?;
        rows.iter().map(action_from_row).collect()
    }

    /// Stores a result snapshot inside a transaction.
    /// One insert, O(entries).
    pub async fn insert_result(tx: &mut Transaction, r: &ResultRow) -> Result<(), StoreError> {
        let tx = &mut tx.0;
        sqlx::query(
            "INSERT INTO season_results (game, mode, season, scope, correction, board_version, digest, \
             finalized_at, action_seq, entries) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(r.board.game.as_str())
        .bind(r.board.mode.as_str())
        .bind(r.board.season.as_str())
        .bind(r.board.scope.as_str())
        .bind(r.correction)
        .bind(r.board_version)
        .bind(r.digest.as_str())
        .bind(r.finalized_at)
        .bind(r.action_seq)
        .bind(entries_text(&r.entries)?)
        .execute(&mut **tx)
        .await
        .map_err(db_err("cannot store a result"))?;
        Ok(())
    }

    /// The results of a board: every correction, in order.
    /// O(the board's results and their entries).
    pub async fn results(&self, board: &BoardId) -> Result<Vec<ResultRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT correction, board_version, digest, finalized_at, action_seq, entries FROM season_results \
             WHERE game = $1 AND mode = $2 AND season = $3 AND scope = $4 ORDER BY correction",
        )
        .bind(&board.game)
        .bind(&board.mode)
        .bind(&board.season)
        .bind(&board.scope)
        .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot read results"))?;
        let bad = db_err("bad result row");
        rows.iter()
            .map(|row| {
                Ok(ResultRow {
                    board: board.clone(),
                    correction: row.try_get("correction").map_err(&bad)?,
                    board_version: row.try_get("board_version").map_err(&bad)?,
                    digest: row.try_get("digest").map_err(&bad)?,
                    finalized_at: row.try_get("finalized_at").map_err(&bad)?,
                    action_seq: row.try_get("action_seq").map_err(&bad)?,
                    entries: entries_from_text(&row.try_get::<String, _>("entries").map_err(&bad)?)?,
                })
            })
            .collect()
    }
}

fn action_from_row(row: &AnyRow) -> Result<ActionRow, StoreError> {
    let bad = db_err("bad action row");
    let seq = row.try_get("seq").map_err(&bad)?;
    let kind: String = row.try_get("kind").map_err(&bad)?;
    let body: String = row.try_get("body").map_err(&bad)?;
    let (action, request) = action_from_body(seq, kind, &body);
    Ok(ActionRow {
        seq,
        game: row.try_get("game").map_err(&bad)?,
        action,
        action_id: row.try_get("action_id").map_err(&bad)?,
        request,
        result: result_from_text(&row.try_get::<String, _>("result").map_err(&bad)?)?,
        actor: row.try_get("actor").map_err(&bad)?,
        reason: row.try_get("reason").map_err(&bad)?,
        created_at: row.try_get("created_at").map_err(&bad)?,
    })
}

/// The stored body of an action: `{"action": <the typed action>, "request": <as sent>}`.
#[derive(serde::Serialize, serde::Deserialize)]
struct Body<'a, A> {
    action: A,
    #[serde(default)]
    request: std::borrow::Cow<'a, serde_json::Value>,
}

fn body_text(a: &ActionRow) -> Result<String, StoreError> {
    let action = a
        .action
        .as_ref()
        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
    serde_json::to_string(&Body {
        action,
        request: std::borrow::Cow::Borrowed(&a.request),
    })
    .map_err(|source| StoreError::Undecodable {
        context: "an action cannot be written",
        source,
    })
}

/// The stored body of a profile action of `player` with the name and country emptied, and the
/// request as sent replaced by what was done (the audit keeps that, not to what). O(body).
pub(super) fn erased_body(seq: i64, kind: String, body: &str, player: &str) -> Result<String, StoreError> {
    let (action, _) = action_from_body(seq, kind.clone(), body);
    let action = match action.map_err(|e| StoreError::Corrupt(e.to_string()))? {
        Action::Profile {
            target_player_id,
            anonymous,
            ..
        } => Action::Profile {
            target_player_id,
            display_name: None,
            country: None,
            anonymous,
        },
        Action::Rename { target_player_id, .. } => Action::Rename {
            target_player_id,
            display_name: None,
        },
        other => other,
    };
    let request = crate::domain::erased_request(&kind, player);
    serde_json::to_string(&Body {
        action: &action,
        request: std::borrow::Cow::Borrowed(&request),
    })
    .map_err(|source| StoreError::Undecodable {
        context: "an erased action cannot be written",
        source,
    })
}

/// The typed action and the request from a stored body. An action this version cannot read
/// is kept as such: replaying it breaks the boards of its game, not the whole log.
fn action_from_body(
    seq: i64,
    kind: String,
    body: &str,
) -> (Result<Action, UnreadableAction>, serde_json::Value) {
    let unreadable = |kind: String, why: String| UnreadableAction { seq, kind, why };
    match serde_json::from_str::<Body<'_, Box<serde_json::value::RawValue>>>(body) {
        Err(e) => (
            Err(unreadable(kind, format!("not JSON: {e}"))),
            serde_json::Value::Null,
        ),
        Ok(Body { action, request }) => {
            let action = serde_json::from_str(action.get()).map_err(|e| unreadable(kind, e.to_string()));
            (action, request.into_owned())
        }
    }
}

/// The stored text of an action's result: `{}` until it is recorded.
fn result_text(result: Option<&ActionResult>) -> Result<String, StoreError> {
    match result {
        None => Ok("{}".into()),
        Some(result) => serde_json::to_string(result).map_err(|source| StoreError::Undecodable {
            context: "an action's result cannot be written",
            source,
        }),
    }
}

/// An action's result from its stored text (`{}`: not recorded yet).
fn result_from_text(text: &str) -> Result<Option<ActionResult>, StoreError> {
    if text.trim() == "{}" {
        return Ok(None);
    }
    serde_json::from_str(text)
        .map(Some)
        .map_err(|source| StoreError::Undecodable {
            context: "an action's result cannot be read",
            source,
        })
}

/// The stored text of ranked entries (a result's, a period snapshot's): a JSON array.
pub(super) fn entries_text(entries: &[RankedEntry]) -> Result<String, StoreError> {
    serde_json::to_string(entries).map_err(|source| StoreError::Undecodable {
        context: "ranked entries cannot be written",
        source,
    })
}

/// Ranked entries from their stored text.
pub(super) fn entries_from_text(text: &str) -> Result<Vec<RankedEntry>, StoreError> {
    serde_json::from_str(text).map_err(|source| StoreError::Undecodable {
        context: "stored ranked entries cannot be read",
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body reads back as the typed action and request it was written from; one this
    /// version cannot read keeps its kind and request and says why, naming its seq.
    #[test]
    fn an_action_body_reads_back_typed_and_an_unreadable_one_says_why() {
        let row = ActionRow {
            seq: 7,
            game: "g".into(),
            action: Ok(Action::Invalidate {
                target_event_id: "e1".into(),
            }),
            action_id: Some("m1".into()),
            request: serde_json::json!({"action_type": "INVALIDATE", "target_event_id": "e1"}),
            result: None,
            actor: "admin".into(),
            reason: "r".into(),
            created_at: 1,
        };
        let body = body_text(&row).unwrap();
        assert_eq!(
            action_from_body(7, "INVALIDATE".into(), &body),
            (row.action.clone(), row.request.clone())
        );
        let future = r#"{"action": {"kind": "SPLIT"}, "request": {"a": 1}}"#;
        let (action, request) = action_from_body(8, "SPLIT".into(), future);
        let unreadable = action.unwrap_err();
        assert_eq!((unreadable.seq, unreadable.kind.as_str()), (8, "SPLIT"));
        assert_eq!(request, serde_json::json!({"a": 1}));
        let (action, request) = action_from_body(9, "INVALIDATE".into(), "not json");
        assert!(
            action
                .unwrap_err()
                .to_string()
                .starts_with("action 9 cannot be read: not JSON")
        );
        assert_eq!(request, serde_json::Value::Null);
    }
}
