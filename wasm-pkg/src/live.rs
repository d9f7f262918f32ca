//! A live view in the browser, followed with the core's [`ViewState`]: a delta is applied with
//! [`ViewState::apply`], its checks included (of another period instance, not starting at the
//! version held, or not fitting the entries held, it is refused and changes nothing), so the
//! browser's view follows exactly the rule the origin's own tests hold it to.
//!
//! Entries cross as columns (ranks, ids and times joined by `\n`, which no id holds, values
//! as `i64`s), as friend lists do, and times as RFC 3339 text read and printed by the core, so
//! an entry reads back with the server's very bytes.

use standings_core::json::{parse_rfc3339, write_rfc3339};
use standings_core::{PlayerId, ViewDelta, ViewEntry, ViewState};

/// Entries given as columns that do not make entries: the columns differ in length, or an id
/// or a time is not one the service prints.
#[derive(Debug, PartialEq, Eq)]
pub struct BadEntries(pub String);

impl core::fmt::Display for BadEntries {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The columns of a view's entries, one row per entry. O(entries).
pub fn entries_of(
    ranks: &[f64],
    players: &[&str],
    values: &[i64],
    achieved_at: &[&str],
) -> Result<Vec<ViewEntry>, BadEntries> {
    if players.len() != ranks.len() || values.len() != ranks.len() || achieved_at.len() != ranks.len() {
        return Err(BadEntries(format!(
            "{} ranks, {} players, {} values and {} times: one of each per entry",
            ranks.len(),
            players.len(),
            values.len(),
            achieved_at.len()
        )));
    }
    (0..ranks.len())
        .map(|i| {
            let rank = ranks[i];
            // Printed without the float's text: formatting floats would cost the module more
            // than all of this.
            if !(rank >= 1.0 && rank.fract() == 0.0 && rank <= 9_007_199_254_740_991.0) {
                return Err(BadEntries(format!("entries[{i}].rank is not a rank")));
            }
            Ok(ViewEntry {
                rank: rank as u64,
                player_id: PlayerId::new(players[i])
                    .map_err(|e| BadEntries(format!("entries[{i}].player_id: {e}")))?,
                value: values[i],
                achieved_at: parse_rfc3339(achieved_at[i])
                    .ok_or_else(|| BadEntries(format!("entries[{i}].achieved_at is not an RFC 3339 time")))?,
                display_name: None,
                country: None,
                metadata: None,
            })
        })
        .collect()
}

/// The view's entries as columns: ranks, ids and times joined by `\n`, values. O(entries).
pub fn columns(state: &ViewState) -> (Vec<f64>, String, Vec<i64>, String) {
    let mut players = String::new();
    let mut times = String::new();
    for (i, entry) in state.entries.iter().enumerate() {
        if i > 0 {
            players.push('\n');
            times.push('\n');
        }
        players.push_str(entry.player_id.as_str());
        let mut text = Vec::with_capacity(24);
        write_rfc3339(&mut text, entry.achieved_at);
        times.push_str(core::str::from_utf8(&text).unwrap_or_default());
    }
    (
        state.entries.iter().map(|e| e.rank as f64).collect(),
        players,
        state.entries.iter().map(|e| e.value).collect(),
        times,
    )
}

/// A delta of the instance `period_key`, its changed entries as columns and the players who
/// left. O(entries).
pub fn delta_of(
    period_key: String,
    base_version: u64,
    board_version: u64,
    changed: Vec<ViewEntry>,
    left: &[&str],
) -> Result<ViewDelta, BadEntries> {
    let left = left
        .iter()
        .enumerate()
        .map(|(i, p)| PlayerId::new(p).map_err(|e| BadEntries(format!("left[{i}]: {e}"))))
        .collect::<Result<_, _>>()?;
    Ok(ViewDelta {
        period_key,
        base_version,
        board_version,
        changed,
        left,
    })
}

#[cfg(test)]
mod tests {
    use standings_core::{Board, BoardRules, ScoreEvent, ScoreMode, View, ViewDeltaError};

    use super::*;

    /// A view read from a board crosses as columns and back to the same state, and a delta
    /// built from columns applies with the core's checks.
    #[test]
    fn a_view_crosses_as_columns_and_follows_deltas() {
        let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
        for (i, value) in [30, 20, 10].into_iter().enumerate() {
            let event = ScoreEvent::new(&format!("e{i}"), &format!("p{i}"), value, 1_000 * i as i64).unwrap();
            board.apply(&event).unwrap();
        }
        let view: View = "top:3".parse().unwrap();
        let base = ViewState::read(&board, &view, "all_time");
        let (ranks, players, values, times) = columns(&base);
        let split = |text: &str| text.split('\n').map(str::to_owned).collect::<Vec<_>>();
        let (players, times) = (split(&players), split(&times));
        let players: Vec<&str> = players.iter().map(String::as_str).collect();
        let times: Vec<&str> = times.iter().map(String::as_str).collect();
        let entries = entries_of(&ranks, &players, &values, &times).unwrap();
        let mut held = ViewState {
            period_key: "all_time".into(),
            board_version: base.board_version,
            entries,
        };
        assert_eq!(held, base);
        board
            .apply(&ScoreEvent::new("e9", "p9", 25, 9_000).unwrap())
            .unwrap();
        let next = ViewState::read(&board, &view, "all_time");
        let delta = ViewDelta::between(&base, &next).unwrap();
        let left: Vec<&str> = delta.left.iter().map(PlayerId::as_str).collect();
        let crossed = delta_of(
            delta.period_key.clone(),
            delta.base_version,
            delta.board_version,
            delta.changed.clone(),
            &left,
        )
        .unwrap();
        held.apply(&crossed).unwrap();
        assert_eq!(held, next);
        let other_day = delta_of(
            "2026-10-13".into(),
            next.board_version,
            next.board_version + 1,
            vec![],
            &[],
        )
        .unwrap();
        assert_eq!(held.apply(&other_day), Err(ViewDeltaError::OtherInstance));
        assert!(entries_of(&[0.0], &["p"], &[1], &["2026-01-01T00:00:00Z"]).is_err());
        assert!(entries_of(&[1.0], &[""], &[1], &["2026-01-01T00:00:00Z"]).is_err());
        assert!(entries_of(&[1.0], &["p"], &[1], &["yesterday"]).is_err());
        assert!(entries_of(&[1.0, 2.0], &["p"], &[1], &["2026-01-01T00:00:00Z"]).is_err());
    }
}
