//! The order of a friend list: the positions the core's comparator gives a set of standings,
//! which are the ranks the origin's `rank-players` gives the same players among themselves.
//!
//! A list crosses from JavaScript whole, in the caller's order, players with no score yet
//! included: the service's `rank-players` refuses a list for any one invalid id, scored or
//! not, so every id is checked here in the same call that ranks, and an error names the entry
//! as the caller listed it (`entries[3]`).

use core::cmp::Ordering;

use standings_core::{BoardRules, IdError, ScoreMode, Standing, check_id};

/// Why a list cannot be ranked, or two standings compared.
#[derive(Debug, PartialEq, Eq)]
pub enum OrderError {
    /// Not `highest`, `cumulative`, `fastest` or `latest`.
    UnknownMode(String),
    /// The columns are not of one length.
    Lengths {
        /// Entries given (the scored marks).
        entries: usize,
        /// Values given.
        values: usize,
        /// Times given.
        achieved: usize,
        /// Player ids given.
        players: usize,
    },
    /// An entry's player id, which the service would refuse.
    BadPlayer {
        /// The entry's index in the caller's list.
        at: usize,
        /// Why the id is refused.
        why: IdError,
    },
    /// The player id of one side of a comparison, which the service would refuse.
    BadComparand {
        /// `a` or `b`, as the caller named the side.
        side: &'static str,
        /// Why the id is refused.
        why: IdError,
    },
    /// An entry's time, which is not one the service reads.
    BadTime {
        /// The entry's index in the caller's list.
        at: usize,
        /// The time as given.
        text: String,
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
                entries,
                values,
                achieved,
                players,
            } => write!(
                f,
                "{entries} entries, {values} values, {achieved} achieved_at times and {players} player ids: one of each per entry"
            ),
            OrderError::BadPlayer { at, why } => write!(f, "entries[{at}]: {why}"),
            OrderError::BadComparand { side, why } => write!(f, "{side}: {why}"),
            OrderError::BadTime { at, text } => write!(
                f,
                "entries[{at}].achieved_at: {text:?} is not an RFC 3339 time with an offset (years 0000 to 9999)"
            ),
            OrderError::Duplicate(p) => write!(f, "player {p:?} is listed twice; list each player once"),
        }
    }
}

impl core::error::Error for OrderError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            OrderError::BadPlayer { why, .. } | OrderError::BadComparand { why, .. } => Some(why),
            _ => None,
        }
    }
}

/// The rules of a score mode's wire name.
pub fn rules_of(mode: &str) -> Result<BoardRules, OrderError> {
    ScoreMode::parse(mode)
        .map(BoardRules::new)
        .ok_or_else(|| OrderError::UnknownMode(mode.into()))
}

/// How `a` compares with `b` in the total order of `rules` (`Less`: `a` ranks first), both
/// player ids checked as the service checks them. O(length of the ids).
pub fn compare(
    rules: &BoardRules,
    a: (&Standing, &str),
    b: (&Standing, &str),
) -> Result<Ordering, OrderError> {
    for (side, player) in [("a", a.1), ("b", b.1)] {
        check_id("player_id", player).map_err(|why| OrderError::BadComparand { side, why })?;
    }
    Ok(rules.compare(a, b))
}

/// The standings of a list that crossed as columns, one row per entry: entry `i` has one when
/// `scored[i]` is not 0, of `values[i]` and the time `time_of` reads from `times[i]` (asked of
/// scored entries only, so the others may hold anything). O(k) for k entries.
pub fn standings_of<T>(
    scored: &[u8],
    values: &[i64],
    times: &[T],
    players: usize,
    time_of: impl Fn(usize, &T) -> Result<i64, OrderError>,
) -> Result<Vec<Option<Standing>>, OrderError> {
    let entries = scored.len();
    if values.len() != entries || times.len() != entries || players != entries {
        return Err(OrderError::Lengths {
            entries,
            values: values.len(),
            achieved: times.len(),
            players,
        });
    }
    let mut standings = Vec::with_capacity(entries);
    for at in 0..entries {
        let standing = if scored[at] == 0 {
            None
        } else {
            Some(Standing {
                value: values[at],
                achieved_at: time_of(at, &times[at])?,
            })
        };
        standings.push(standing);
    }
    Ok(standings)
}

/// The standing entries with none sort under, which only orders them by id.
const NO_STANDING: Standing = Standing {
    value: 0,
    achieved_at: 0,
};

/// The indices of the entries with a standing, in rank order (`order[0]` is the index of the
/// first). Every player id, with a standing or not, is checked as the service checks it, and
/// the first invalid one is named. A player with a standing must be listed once; one with none
/// may be listed again with none, but not also with a standing. O(k log k) for k entries.
pub fn rank_order(
    rules: &BoardRules,
    standings: &[Option<Standing>],
    players: &[&str],
) -> Result<Vec<u32>, OrderError> {
    if standings.len() != players.len() {
        return Err(OrderError::Lengths {
            entries: standings.len(),
            values: standings.len(),
            achieved: standings.len(),
            players: players.len(),
        });
    }
    for (at, player) in players.iter().enumerate() {
        check_id("player_id", player).map_err(|why| OrderError::BadPlayer { at, why })?;
    }
    // Sorting the standings themselves, not indices into two slices, keeps each comparison on
    // one contiguous element.
    let mut keyed: Vec<(Standing, &str, u32)> = Vec::with_capacity(players.len());
    let mut unscored: Vec<(Standing, &str, u32)> = Vec::new();
    for (i, (standing, &player)) in standings.iter().zip(players).enumerate() {
        match standing {
            Some(standing) => keyed.push((*standing, player, i as u32)),
            None => unscored.push((NO_STANDING, player, i as u32)),
        }
    }
    let by_rank =
        |a: &(Standing, &str, u32), b: &(Standing, &str, u32)| rules.compare((&a.0, a.1), (&b.0, b.1));
    keyed.sort_unstable_by(by_rank);
    // The total order ends with the player id, so only the same id can sit next to itself.
    if let Some(pair) = keyed.windows(2).find(|w| w[0].1 == w[1].1) {
        return Err(OrderError::Duplicate(pair[0].1.into()));
    }
    if !unscored.is_empty() {
        // Under one standing the total order is the ids' bytes, so the same sort (one copy of
        // its code in the module, where a sort of bare ids would add another) orders these by id.
        unscored.sort_unstable_by(by_rank);
        let listed = |player: &str| {
            unscored
                .binary_search_by(|u| u.1.as_bytes().cmp(player.as_bytes()))
                .is_ok()
        };
        if let Some(&(_, player, _)) = keyed.iter().find(|k| listed(k.1)) {
            return Err(OrderError::Duplicate(player.into()));
        }
    }
    let order = keyed.iter().map(|&(_, _, i)| i).collect();
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use standings_core::{Board, ScoreEvent};

    fn standing(value: i64, achieved_at: i64) -> Option<Standing> {
        Some(Standing { value, achieved_at })
    }

    /// The order equals the ranks a board gives the same players among themselves, in every
    /// mode, and names the entries as listed, players with no score left out.
    #[test]
    fn order_is_the_boards_rank_among() {
        let players = ["p-a", "p-b", "p-c", "none", "p-d", "p-e", "é", "z"];
        let values = [5, i64::MAX, 5, 0, i64::MIN, -1, 5, i64::MAX];
        let achieved = [10, 3, 10, 0, 7, 1, 9, 3];
        let standings: Vec<Option<Standing>> = (0..players.len())
            .map(|i| {
                if players[i] == "none" {
                    None
                } else {
                    standing(values[i], achieved[i])
                }
            })
            .collect();
        for mode in ["highest", "cumulative", "fastest", "latest"] {
            let rules = rules_of(mode).unwrap();
            let mut board = Board::new(rules);
            for i in (0..players.len()).filter(|&i| standings[i].is_some()) {
                let event = ScoreEvent::new(&format!("e{i}"), players[i], values[i], achieved[i]).unwrap();
                board.apply(&event).unwrap();
            }
            let ranked = board.rank_among(&players);
            let expected: Vec<&str> = ranked.entries.iter().map(|e| e.player).collect();
            let order = rank_order(&rules, &standings, &players).unwrap();
            let got: Vec<&str> = order.iter().map(|&i| players[i as usize]).collect();
            assert_eq!(got, expected, "{mode}");
        }
    }

    /// Every id is checked, with a score or without, as the service checks it, and the first
    /// invalid one is named by its place in the list; a duplicate, unequal lengths and an
    /// unknown mode are refused by name.
    #[test]
    fn bad_lists_are_refused() {
        let rules = rules_of("highest").unwrap();
        let refused = |standings: &[Option<Standing>], players: &[&str]| {
            rank_order(&rules, standings, players).unwrap_err().to_string()
        };
        assert_eq!(
            refused(&[standing(1, 0), None, None], &["a", "b", ""]),
            "entries[2]: player_id must not be empty"
        );
        assert_eq!(
            refused(&[standing(1, 0), None], &["a", "b\u{7}"]),
            "entries[1]: player_id holds a control character at byte 1"
        );
        assert_eq!(
            refused(&[None], &["x".repeat(129).as_str()]),
            "entries[0]: player_id is 129 bytes long; at most 128 are allowed"
        );
        assert_eq!(
            refused(&[standing(1, 0), standing(2, 0)], &["a", "a"]),
            "player \"a\" is listed twice; list each player once"
        );
        assert_eq!(
            refused(&[None, standing(1, 0), None], &["a", "a", "a"]),
            "player \"a\" is listed twice; list each player once"
        );
        // A player with no score, listed twice with none, is one player with no score.
        assert_eq!(
            rank_order(&rules, &[None, standing(1, 0), None], &["a", "b", "a"]),
            Ok(vec![1])
        );
        assert!(matches!(
            rank_order(&rules, &[standing(1, 0)], &["a", "b"]),
            Err(OrderError::Lengths { .. })
        ));
        assert!(matches!(
            standings_of(&[1], &[1], &[0, 1], 1, |_, &t| Ok(t)),
            Err(OrderError::Lengths { .. })
        ));
        assert!(matches!(rules_of("best"), Err(OrderError::UnknownMode(_))));
    }

    /// Columns become standings for the scored entries only; a time is read for those alone.
    #[test]
    fn columns_read_times_of_scored_entries_only() {
        let read = |at: usize, text: &&str| {
            text.parse::<i64>().map_err(|_| OrderError::BadTime {
                at,
                text: (*text).into(),
            })
        };
        assert_eq!(
            standings_of(&[1, 0, 1], &[7, 0, 9], &["5", "not read", "6"], 3, read),
            Ok(vec![standing(7, 5), None, standing(9, 6)])
        );
        assert_eq!(
            standings_of(&[0, 1], &[0, 9], &["", "noon"], 2, read)
                .unwrap_err()
                .to_string(),
            "entries[1].achieved_at: \"noon\" is not an RFC 3339 time with an offset (years 0000 to 9999)"
        );
    }

    /// A comparison checks both ids and names the side of a refused one.
    #[test]
    fn compare_checks_both_ids() {
        let rules = rules_of("highest").unwrap();
        let one = Standing {
            value: 1,
            achieved_at: 0,
        };
        assert_eq!(compare(&rules, (&one, "a"), (&one, "b")), Ok(Ordering::Less));
        assert_eq!(
            compare(&rules, (&one, ""), (&one, "b")).unwrap_err().to_string(),
            "a: player_id must not be empty"
        );
        assert_eq!(
            compare(&rules, (&one, "a"), (&one, "b\n"))
                .unwrap_err()
                .to_string(),
            "b: player_id holds a control character at byte 1"
        );
    }
}
