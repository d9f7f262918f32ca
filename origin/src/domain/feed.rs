//! The feed's records (`docs/feed.md`), as data: a record's JSON: its seq and kind, the board,
//! period instance and `board_version` it came from, and what happened.
//!
//! A record is written as text, the fields one change's records share written once for all of
//! them (a change can make a record per band and per friend passed, on the applying thread).

use core::fmt::Write as _;

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

/// A record not numbered yet: its kind and its own fields, as JSON object members (each
/// `,"name":value`).
pub(crate) type Made = (&'static str, String);

impl Record {
    /// The record of `kind` at `seq`: the change's `shared` fields and its `own`, both as
    /// JSON object members (each `,"name":value`). O(length).
    pub(crate) fn new(game: &str, seq: i64, (kind, own): &Made, shared: &str, created_at: i64) -> Record {
        let mut json = String::with_capacity(32 + shared.len() + own.len());
        let _ = write!(json, r#"{{"seq":{seq},"kind":"{kind}""#);
        json.push_str(shared);
        json.push_str(own);
        json.push('}');
        Record {
            game: game.to_string(),
            seq,
            kind,
            json,
            created_at,
        }
    }
}

/// A period instance whose close an action logged: its board and period, and its version
/// and ranked players then.
#[derive(Clone, Debug)]
pub(crate) struct Closed {
    pub(crate) board: BoardId,
    pub(crate) period: Period,
    pub(crate) board_version: u64,
    pub(crate) players: u64,
}

/// Where a change happened.
pub(crate) struct At<'a> {
    pub(crate) board: &'a BoardId,
    pub(crate) period: &'a Period,
    pub(crate) board_version: u64,
    pub(crate) at_ms: i64,
}

impl At<'_> {
    /// The fields every record of the change carries, as JSON object members. O(1).
    pub(crate) fn shared(&self) -> String {
        let mut out = String::with_capacity(192);
        push_member(&mut out, "game", &self.board.game);
        push_member(&mut out, "board", &board_name(self.board));
        push_member(&mut out, "period", self.period.kind.as_str());
        push_member(&mut out, "period_key", &self.period.key);
        let _ = write!(out, r#","board_version":{}"#, self.board_version);
        push_member(&mut out, "at", &crate::clock::format_rfc3339(self.at_ms));
        out
    }
}

/// Appends `,"name":"value"` with `value` escaped as JSON. O(length).
fn push_member(out: &mut String, name: &str, value: &str) {
    let _ = write!(out, r#","{name}":"#);
    out.push_str(&Value::from(value).to_string());
}

/// Appends `,"name":N` or `,"name":null`. O(1).
fn push_rank(out: &mut String, name: &str, rank: Option<u64>) {
    match rank {
        Some(rank) => {
            let _ = write!(out, r#","{name}":{rank}"#);
        }
        None => {
            let _ = write!(out, r#","{name}":null"#);
        }
    }
}

/// The members of a JSON object, as [`Made`] holds them. O(length).
fn members(body: Value) -> String {
    let text = body.to_string();
    match text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        Some("") | None => String::new(),
        Some(inner) => format!(",{inner}"),
    }
}

/// `band_entered` or `band_left`: who, which band, their ranks before and after.
pub(crate) fn crossing(bands: &[Band], c: &Crossing<'_>) -> Made {
    let mut own = String::with_capacity(96);
    push_member(&mut own, "player_id", c.player);
    match bands.get(c.band) {
        Some(band) => push_member(&mut own, "band", &band_name(band)),
        None => own.push_str(r#","band":null"#),
    }
    push_rank(&mut own, "rank_before", c.rank_before);
    push_rank(&mut own, "rank_after", c.rank_after);
    (if c.entered { "band_entered" } else { "band_left" }, own)
}

/// `overtaken`: who was passed, by whom, and both players' ranks before and after.
pub(crate) fn overtaken(by: &str, o: &Overtake<'_>) -> Made {
    let mut own = String::with_capacity(128);
    push_member(&mut own, "player_id", o.player);
    push_member(&mut own, "by", by);
    push_rank(&mut own, "rank_before", Some(o.rank_before));
    push_rank(&mut own, "rank_after", Some(o.rank_after));
    push_rank(&mut own, "by_rank_before", o.by_rank_before);
    push_rank(&mut own, "by_rank_after", Some(o.by_rank_after));
    ("overtaken", own)
}

/// `season_finalized` (correction 0) or `correction` (1, 2, ...): a board's result, its
/// digest, how many players it ranks and how many rewards it awarded or changed.
pub(crate) fn result(result: &ResultRow, rewards_changed: usize) -> Made {
    let own = members(json!({
        "season": result.board.season,
        "correction": result.correction,
        "digest": result.digest,
        "players": result.entries.len(),
        "rewards_changed": rewards_changed,
    }));
    let kind = if result.correction == 0 {
        "season_finalized"
    } else {
        "correction"
    };
    (kind, own)
}

/// `reward`: a player's reward as a result (`correction`) sets it: `reward` `null` when a
/// correction took it away, `previous_reward` `null` when they had none.
pub(crate) fn reward(season: &str, correction: i64, award: &Award) -> Made {
    let own = members(json!({
        "season": season,
        "correction": correction,
        "player_id": award.player,
        "rank": award.rank,
        "reward": award.reward,
        "previous_reward": award.previous,
    }));
    ("reward", own)
}

/// `period_closed`: a period instance stopped taking events, at its final version, with
/// how many players it ranks.
pub(crate) fn period_closed(players: u64) -> Made {
    ("period_closed", format!(r#","players":{players}"#))
}

/// The board part of a record, `game/mode/season/scope`. O(1).
pub(crate) fn board_name(id: &BoardId) -> String {
    format!("{}/{}/{}/{}", id.game, id.mode, id.season, id.scope)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record is one JSON object holding its seq, kind, the shared fields and its own.
    #[test]
    fn a_record_is_one_json_object() {
        let board = BoardId::new("g", "m", "s", "x").unwrap();
        let period = Period::all_time();
        let at = At {
            board: &board,
            period: &period,
            board_version: 7,
            at_ms: 0,
        };
        let crossing = Crossing {
            band: 0,
            player: "p\"1",
            entered: true,
            rank_before: None,
            rank_after: Some(1),
        };
        let made = super::crossing(&[Band::Top(10)], &crossing);
        let record = Record::new("g", 5, &made, &at.shared(), 0);
        let value: Value = serde_json::from_str(&record.json).unwrap();
        assert_eq!(
            value,
            json!({"seq": 5, "kind": "band_entered", "game": "g", "board": "g/m/s/x", "period": "all_time",
                   "period_key": "all_time", "board_version": 7, "at": "1970-01-01T00:00:00Z",
                   "player_id": "p\"1", "band": "top:10", "rank_before": null, "rank_after": 1})
        );
        let closed = Record::new("g", 6, &period_closed(3), &at.shared(), 0);
        assert_eq!(serde_json::from_str::<Value>(&closed.json).unwrap()["players"], 3);
    }
}
