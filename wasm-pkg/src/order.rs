//! The order of a friend list: the positions the core's comparator gives a set of standings,
//! which are the ranks the origin's `rank-players` gives the same players among themselves.

use standings_core::{BoardRules, ScoreMode, Standing, check_id};

/// Why a list cannot be ranked.
#[derive(Debug, PartialEq, Eq)]
pub enum OrderError {
    /// Not `highest`, `cumulative`, `fastest` or `latest`.
    UnknownMode(String),
    /// The arrays are not of one length.
    Lengths {
        /// Values given.
        values: usize,
        /// Times given.
        achieved: usize,
        /// Player ids given.
        players: usize,
    },
    /// A player id the service would refuse.
    BadPlayer {
        /// The entry's index.
        at: usize,
        /// Why the id is refused.
        why: String,
    },
    /// The same player twice, which the list cannot rank twice with different standings.
    Duplicate(String),
}

impl core::fmt::Display for OrderError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            OrderError::UnknownMode(m) => write!(
                f,
                "unknown score mode {m:?}: expected highest, cumulative, fastest or latest"
            ),
            OrderError::Lengths {
                values,
                achieved,
                players,
            } => write!(
                f,
                "{values} values, {achieved} achieved_at times and {players} player ids: one of each per entry"
            ),
            OrderError::BadPlayer { at, why } => write!(f, "entry {at}: {why}"),
            OrderError::Duplicate(p) => write!(f, "player {p:?} is listed twice; list each player once"),
        }
    }
}

/// The rules of a score mode's wire name.
pub fn rules_of(mode: &str) -> Result<BoardRules, OrderError> {
    ScoreMode::parse(mode)
        .map(BoardRules::new)
        .ok_or_else(|| OrderError::UnknownMode(mode.into()))
}

/// The indices of the entries in rank order: `order[0]` is the index of rank 1. Player ids are
/// checked as the service checks them, and must be distinct. O(k log k) for k entries.
pub fn rank_order(
    rules: &BoardRules,
    values: &[i64],
    achieved: &[i64],
    players: &[&str],
) -> Result<Vec<u32>, OrderError> {
    if values.len() != players.len() || achieved.len() != players.len() {
        return Err(OrderError::Lengths {
            values: values.len(),
            achieved: achieved.len(),
            players: players.len(),
        });
    }
    for (at, player) in players.iter().enumerate() {
        check_id("player_id", player).map_err(|e| OrderError::BadPlayer {
            at,
            why: e.to_string(),
        })?;
    }
    // Sorting the standings themselves, not indices into three slices, keeps each comparison
    // on one contiguous element.
    let mut keyed: Vec<(Standing, &str, u32)> = (0..players.len())
        .map(|i| {
            let standing = Standing {
                value: values[i],
                achieved_at: achieved[i],
            };
            (standing, players[i], i as u32)
        })
        .collect();
    keyed.sort_unstable_by(|a, b| rules.compare((&a.0, a.1), (&b.0, b.1)));
    // The total order ends with the player id, so only the same id can sit next to itself.
    if let Some(pair) = keyed.windows(2).find(|w| w[0].1 == w[1].1) {
        return Err(OrderError::Duplicate(pair[0].1.into()));
    }
    let order = keyed.iter().map(|&(_, _, i)| i).collect();
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use standings_core::{Board, ScoreEvent};

    /// The order equals the ranks a board gives the same players among themselves, in every mode.
    #[test]
    fn order_is_the_boards_rank_among() {
        let players = ["p-a", "p-b", "p-c", "p-d", "p-e", "é", "z"];
        let values = [5, i64::MAX, 5, i64::MIN, -1, 5, i64::MAX];
        let achieved = [10, 3, 10, 7, 1, 9, 3];
        for mode in ["highest", "cumulative", "fastest", "latest"] {
            let rules = rules_of(mode).unwrap();
            let mut board = Board::new(rules);
            for i in 0..players.len() {
                let event = ScoreEvent::new(&format!("e{i}"), players[i], values[i], achieved[i]).unwrap();
                board.apply(&event).unwrap();
            }
            let ranked = board.rank_among(&players);
            let expected: Vec<&str> = ranked.entries.iter().map(|e| e.player).collect();
            let order = rank_order(&rules, &values, &achieved, &players).unwrap();
            let got: Vec<&str> = order.iter().map(|&i| players[i as usize]).collect();
            assert_eq!(got, expected, "{mode}");
        }
    }

    /// A duplicate, a bad id, unequal lengths and an unknown mode are refused by name.
    #[test]
    fn bad_lists_are_refused() {
        let rules = rules_of("highest").unwrap();
        assert_eq!(
            rank_order(&rules, &[1, 2], &[0, 0], &["a", "a"]),
            Err(OrderError::Duplicate("a".into()))
        );
        assert!(matches!(
            rank_order(&rules, &[1], &[0], &["a\nb"]),
            Err(OrderError::BadPlayer { at: 0, .. })
        ));
        assert!(matches!(
            rank_order(&rules, &[1], &[0, 1], &["a"]),
            Err(OrderError::Lengths { .. })
        ));
        assert!(matches!(rules_of("best"), Err(OrderError::UnknownMode(_))));
    }
}
