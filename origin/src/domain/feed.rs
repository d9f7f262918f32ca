//! The feed's records (`docs/feed.md`), as data: a record's JSON: its seq and kind, the board, period instance and `board_version` it
//! came from, and what happened.

use serde_json::{Value, json};
use standings_core::{Band, BoardId, Crossing, Overtake};

use super::ResultRow;
use super::band_name;
use super::periods::Period;
use super::rewards::Award;

/// One record, ready to store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) game: String,
    pub(crate) seq: i64,
    pub(crate) kind: &'static str,
    /// The whole record as JSON text, `seq` and `kind` included.
    pub(crate) json: String,
    pub(crate) created_at: i64,
}

impl Record {
    /// The record of `kind` at `seq`, its fields `body` (an object). O(length).
    pub(crate) fn new(game: &str, seq: i64, kind: &'static str, mut body: Value, created_at: i64) -> Record {
        body["seq"] = json!(seq);
        body["kind"] = json!(kind);
        Record {
            game: game.to_string(),
            seq,
            kind,
            json: body.to_string(),
            created_at,
        }
    }
}

/// Where a change happened.
pub(crate) struct At<'a> {
    pub(crate) board: &'a BoardId,
    pub(crate) period: &'a Period,
    pub(crate) board_version: u64,
    pub(crate) at_ms: i64,
}

impl At<'_> {
    /// The fields every record carries. O(1).
    fn fields(&self) -> Value {
        json!({
            "game": self.board.game,
            "board": board_name(self.board),
            "period": self.period.kind.as_str(),
            "period_key": self.period.key,
            "board_version": self.board_version,
            "at": crate::clock::format_rfc3339(self.at_ms),
        })
    }
}

/// `band_entered` or `band_left`: who, which band, their ranks before and after.
pub(crate) fn crossing(at: &At<'_>, bands: &[Band], c: &Crossing<'_>) -> (&'static str, Value) {
    let mut body = at.fields();
    body["player_id"] = json!(c.player);
    body["band"] = json!(bands.get(c.band).map(band_name));
    body["rank_before"] = json!(c.rank_before);
    body["rank_after"] = json!(c.rank_after);
    (if c.entered { "band_entered" } else { "band_left" }, body)
}

/// `overtaken`: who was passed, by whom, and both players' ranks before and after.
pub(crate) fn overtaken(at: &At<'_>, by: &str, o: &Overtake<'_>) -> (&'static str, Value) {
    let mut body = at.fields();
    body["player_id"] = json!(o.player);
    body["by"] = json!(by);
    body["rank_before"] = json!(o.rank_before);
    body["rank_after"] = json!(o.rank_after);
    body["by_rank_before"] = json!(o.by_rank_before);
    body["by_rank_after"] = json!(o.by_rank_after);
    ("overtaken", body)
}

/// `season_finalized` (correction 0) or `correction` (1, 2, ...): a board's result, its
/// digest, how many players it ranks and how many rewards it awarded or changed.
pub(crate) fn result(at: &At<'_>, result: &ResultRow, rewards_changed: usize) -> (&'static str, Value) {
    let mut body = at.fields();
    body["season"] = json!(result.board.season);
    body["correction"] = json!(result.correction);
    body["digest"] = json!(result.digest);
    body["players"] = json!(result.entries.len());
    body["rewards_changed"] = json!(rewards_changed);
    (
        if result.correction == 0 {
            "season_finalized"
        } else {
            "correction"
        },
        body,
    )
}

/// `reward`: a player's reward as a result (`correction`) sets it: `reward` `null` when a
/// correction took it away, `previous_reward` `null` when they had none.
pub(crate) fn reward(at: &At<'_>, correction: i64, award: &Award) -> (&'static str, Value) {
    let mut body = at.fields();
    body["season"] = json!(at.board.season);
    body["correction"] = json!(correction);
    body["player_id"] = json!(award.player);
    body["rank"] = json!(award.rank);
    body["reward"] = json!(award.reward);
    body["previous_reward"] = json!(award.previous);
    ("reward", body)
}

/// `period_closed`: a period instance stopped taking events, at its final version, with
/// how many players it ranks.
pub(crate) fn period_closed(at: &At<'_>, players: u64) -> (&'static str, Value) {
    let mut body = at.fields();
    body["players"] = json!(players);
    ("period_closed", body)
}

/// The board part of a record, `game/mode/season/scope`. O(1).
pub(crate) fn board_name(id: &BoardId) -> String {
    format!("{}/{}/{}/{}", id.game, id.mode, id.season, id.scope)
}
