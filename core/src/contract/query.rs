//! A read's query parameters, parsed once for every tier with the one set of limits and words:
//! `limit`, `radius`, `include_self`, `cursor`, and the player ids a read names. Each parser
//! answers the value or the [`Problem`] the read is refused with.

use alloc::borrow::Cow;
use alloc::format;
use alloc::string::ToString;
use alloc::vec::Vec;
use core::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::{DEFAULT_LIMIT, DEFAULT_RADIUS, MAX_LIMIT, MAX_RADIUS, Problem};
use crate::cursor::Cursor;
use crate::cursor::CursorBinding;
use crate::error::DecodeError;
use crate::event::check_id;
use crate::segments::{COUNTRY, SegmentSpec};

/// The query string of a read (`None` when the URL has none), looked up where its parameters
/// stand: a read has at most a few, so a scan per lookup is cheaper than building a map.
#[derive(Clone, Copy, Debug, Default)]
pub struct Query<'a>(pub Option<&'a str>);

impl<'a> Query<'a> {
    /// The value of `name`, percent-decoded as a form; the last one when it is given twice.
    /// O(length of the query string).
    pub fn get(&self, name: &str) -> Option<Cow<'a, str>> {
        let query = self.0?;
        form_urlencoded::parse(query.as_bytes())
            .filter(|(key, _)| key == name)
            .last()
            .map(|(_, value)| value)
    }

    /// `name` parsed as `T`, `default` when absent; 400 `INVALID_REQUEST` naming the parameter,
    /// its value and what is `expected` when it does not parse or is not `valid`.
    /// O(length of the query string).
    pub fn parse<T: FromStr>(
        &self,
        name: &str,
        default: T,
        valid: impl Fn(&T) -> bool,
        expected: &str,
    ) -> Result<T, Problem> {
        parse_value(name, self.get(name).as_deref(), default, valid, expected)
    }

    /// `limit` of a top page: see [`limit`].
    pub fn limit(&self) -> Result<usize, Problem> {
        limit(self.get("limit").as_deref())
    }

    /// `radius` of a nearby read: see [`radius`].
    pub fn radius(&self) -> Result<u64, Problem> {
        radius(self.get("radius").as_deref())
    }

    /// `include_self` of friends-of: `true` or `false`, false when absent.
    pub fn include_self(&self) -> Result<bool, Problem> {
        self.parse("include_self", false, |_| true, "true or false")
    }

    /// `approximate` of a rank read: absent for the exact rank, `interval` for a guaranteed
    /// rank interval ([`crate::interval`]); any other value is refused, since an approximation
    /// is only ever asked for by name.
    pub fn precision(&self) -> Result<Precision, Problem> {
        match self.get("approximate").as_deref() {
            None => Ok(Precision::Exact),
            Some("interval") => Ok(Precision::Interval),
            Some(other) => Err(Problem::invalid_request(format!(
                "approximate={other:?} is not valid; expected interval (or no approximate, for the exact rank)"
            ))),
        }
    }

    /// The `cursor` of a top page, decoded for the board instance `binding` (`board` and
    /// `period_key` name it in the refusal): `None` without one, and with one its bytes (the
    /// page's cache key) and the cursor. 400 `INVALID_CURSOR` for text this service did not
    /// make, or a cursor of another board or period. O(length of the cursor).
    pub fn cursor(
        &self,
        binding: CursorBinding,
        board: &dyn core::fmt::Display,
        period_key: &str,
    ) -> Result<Option<(Vec<u8>, Cursor)>, Problem> {
        let Some(raw) = self.get("cursor") else {
            return Ok(None);
        };
        cursor(&raw, binding, board, period_key).map(Some)
    }
}

/// A read's `segment=dimension:value`, owned, for a board that declares `spec`: the segment a
/// live view is within too.
pub type SegmentParam = crate::live::Segment;

impl Query<'_> {
    /// `segment` of a read (`country:DE`): `None` when absent; otherwise as [`check_segment`].
    /// O(length of the value).
    pub fn segment(
        &self,
        spec: &SegmentSpec,
        board: &dyn core::fmt::Display,
    ) -> Result<Option<SegmentParam>, Problem> {
        match self.get("segment") {
            Some(raw) => check_segment(&raw, spec, board).map(Some),
            None => Ok(None),
        }
    }
}

/// A segment as written (`country:DE`) checked against the dimensions `spec` declares on
/// `board`: 400 `INVALID_REQUEST` for a value without its `:`, a dimension `spec` does not
/// declare, a country that is not two capital letters (ISO 3166-1 alpha-2, as profiles hold
/// it), or an event dimension's value the board does not declare. O(length of the value).
pub fn check_segment(
    raw: &str,
    spec: &SegmentSpec,
    board: &dyn core::fmt::Display,
) -> Result<SegmentParam, Problem> {
    let Some((dimension, value)) = raw.split_once(':') else {
        return Err(Problem::invalid_request(format!(
            "segment={raw:?} is not valid; expected dimension:value, as in country:DE"
        )));
    };
    if !spec.declares(dimension) {
        let declared: Vec<&str> = spec.names().collect();
        let declared = if declared.is_empty() {
            "none".into()
        } else {
            declared.join(", ")
        };
        return Err(Problem::invalid_request(format!(
            "segment={raw:?}: board {board} ranks no segments by {dimension:?}; its dimensions: {declared}"
        )));
    }
    if let Some(declared) = spec.event_dimension(dimension)
        && !declared.values.iter().any(|v| &**v == value)
    {
        let values: Vec<&str> = declared.values.iter().map(|v| &**v).collect();
        return Err(Problem::invalid_request(format!(
            "segment={raw:?}: {dimension} is one of {} on board {board}",
            values.join(", ")
        )));
    }
    if dimension == COUNTRY && !(value.len() == 2 && value.bytes().all(|b| b.is_ascii_uppercase())) {
        return Err(Problem::invalid_request(format!(
            "segment={raw:?}: a country is two capital letters (ISO 3166-1 alpha-2), as in country:DE"
        )));
    }
    Ok(SegmentParam {
        dimension: dimension.into(),
        value: value.into(),
    })
}

/// 400 `INVALID_REQUEST` for a rank interval asked within a segment, which no tier answers.
pub fn interval_within_segment() -> Problem {
    Problem::invalid_request("approximate=interval is not answered within a segment; ask for the exact rank")
}

/// 404 `PLAYER_NOT_RANKED` for a player with no score in the segment asked. O(length).
pub fn not_in_segment(player: &str, segment: &SegmentParam, board: &dyn core::fmt::Display) -> Problem {
    Problem::player_not_ranked(format!(
        "player {player:?} has no score in segment {}:{} of board {board}",
        segment.dimension, segment.value
    ))
}

/// How exact a rank read's answer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// The exact rank: the default everywhere.
    Exact,
    /// `approximate=interval`: ranks that always hold the exact one, answered without the
    /// player's rank chunk.
    Interval,
}

/// The value `raw` of the parameter `name` parsed as `T`, `default` when absent; 400
/// `INVALID_REQUEST` naming the parameter, its value and what is `expected` when it does not
/// parse or is not `valid`. O(length of the value).
pub fn parse_value<T: FromStr>(
    name: &str,
    raw: Option<&str>,
    default: T,
    valid: impl Fn(&T) -> bool,
    expected: &str,
) -> Result<T, Problem> {
    match raw {
        None => Ok(default),
        Some(raw) => raw.parse::<T>().ok().filter(|v| valid(v)).ok_or_else(|| {
            Problem::invalid_request(format!("{name}={raw:?} is not valid; expected {expected}"))
        }),
    }
}

/// A top page's `limit` (its text, when given): 1 to [`MAX_LIMIT`], [`DEFAULT_LIMIT`] when
/// absent.
pub fn limit(raw: Option<&str>) -> Result<usize, Problem> {
    parse_value(
        "limit",
        raw,
        DEFAULT_LIMIT,
        |l| (1..=MAX_LIMIT).contains(l),
        "1 to 1000",
    )
}

/// A nearby read's `radius` (its text, when given): 0 to [`MAX_RADIUS`], [`DEFAULT_RADIUS`]
/// when absent.
pub fn radius(raw: Option<&str>) -> Result<u64, Problem> {
    parse_value("radius", raw, DEFAULT_RADIUS, |r| *r <= MAX_RADIUS, "0 to 100")
}

/// A cursor's text decoded for the board instance `binding` (see [`Query::cursor`]).
pub fn cursor(
    raw: &str,
    binding: CursorBinding,
    board: &dyn core::fmt::Display,
    period_key: &str,
) -> Result<(Vec<u8>, Cursor), Problem> {
    {
        let not_ours = || Problem::invalid_cursor("the cursor is not one this service made");
        let bytes = URL_SAFE_NO_PAD.decode(raw.as_bytes()).map_err(|_| not_ours())?;
        let cursor = Cursor::decode(&bytes, binding).map_err(|e| match e {
            DecodeError::OtherBoard => Problem::invalid_cursor(format!(
                "the cursor was made for another board or period, not {board} in {period_key}; page this one from its first page"
            )),
            _ => not_ours(),
        })?;
        Ok((bytes, cursor))
    }
}

/// The text of a cursor as a page's `next_cursor` prints it. O(its length).
pub fn cursor_text(cursor: &Cursor, binding: CursorBinding) -> alloc::string::String {
    URL_SAFE_NO_PAD.encode(cursor.encode(binding))
}

/// A player id a read names (in its path or its body): 400 `INVALID_REQUEST` with the core's
/// words for one the service would never store. O(its length).
pub fn player_id(id: &str) -> Result<(), Problem> {
    check_id("player_id", id).map_err(|e| Problem::invalid_request(e.to_string()))
}

/// The players of one `rank-players` call: at most [`MAX_LIMIT`], each a valid id; 413
/// `PAYLOAD_TOO_LARGE` or 400 otherwise. O(players).
pub fn rank_players<S: AsRef<str>>(players: &[S]) -> Result<(), Problem> {
    if players.len() > MAX_LIMIT {
        return Err(Problem::payload_too_large(format!(
            "at most {MAX_LIMIT} players per call; this one has {}",
            players.len()
        )));
    }
    players.iter().try_for_each(|p| player_id(p.as_ref()))
}

/// Every refusal of the read parameters, with the query that meets it: the table each tier's
/// own test feeds through its whole read path and compares with these answers, so that a tier
/// that drifts from the contract fails its tests. `(read, query, status, code, detail)`, where
/// `read` is `top`, `nearby` or `friends` and the detail is the whole expected text.
pub const BAD_PARAMETERS: &[(&str, &str, u16, &str, &str)] = &[
    (
        "top",
        "limit=0",
        400,
        "INVALID_REQUEST",
        "limit=\"0\" is not valid; expected 1 to 1000",
    ),
    (
        "top",
        "limit=1001",
        400,
        "INVALID_REQUEST",
        "limit=\"1001\" is not valid; expected 1 to 1000",
    ),
    (
        "top",
        "limit=ten",
        400,
        "INVALID_REQUEST",
        "limit=\"ten\" is not valid; expected 1 to 1000",
    ),
    (
        "top",
        "limit=-1",
        400,
        "INVALID_REQUEST",
        "limit=\"-1\" is not valid; expected 1 to 1000",
    ),
    (
        "top",
        "cursor=!!!",
        400,
        "INVALID_CURSOR",
        "the cursor is not one this service made",
    ),
    (
        "top",
        "cursor=AAAA",
        400,
        "INVALID_CURSOR",
        "the cursor is not one this service made",
    ),
    (
        "nearby",
        "radius=101",
        400,
        "INVALID_REQUEST",
        "radius=\"101\" is not valid; expected 0 to 100",
    ),
    (
        "nearby",
        "radius=x",
        400,
        "INVALID_REQUEST",
        "radius=\"x\" is not valid; expected 0 to 100",
    ),
    (
        "rank",
        "approximate=yes",
        400,
        "INVALID_REQUEST",
        "approximate=\"yes\" is not valid; expected interval (or no approximate, for the exact rank)",
    ),
    (
        "friends",
        "include_self=yes",
        400,
        "INVALID_REQUEST",
        "include_self=\"yes\" is not valid; expected true or false",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BoardId;
    use crate::board::Board;
    use crate::event::ScoreEvent;
    use crate::rules::{BoardRules, ScoreMode};

    /// Every row of the table is what the parsers answer (the tiers compare their read paths
    /// with the same rows).
    #[test]
    fn the_table_is_what_the_parsers_answer() {
        let binding = CursorBinding::of(&BoardId::new("g", "m", "s", "global").unwrap(), "all_time");
        for (read, query, status, code, detail) in BAD_PARAMETERS {
            let query = Query(Some(query));
            let refused = match *read {
                "top" => query
                    .limit()
                    .err()
                    .or_else(|| query.cursor(binding, &"g/m/s/global", "all_time").err()),
                "nearby" => query.radius().err(),
                "rank" => query.precision().err(),
                "friends" => query.include_self().err(),
                other => panic!("no read {other}"),
            }
            .unwrap_or_else(|| panic!("{read}?{:?} is taken", query.0));
            assert_eq!(
                (refused.status, refused.code, refused.detail.as_str()),
                (*status, *code, *detail)
            );
        }
    }

    /// Defaults apply when a parameter is absent; the last of a repeated one counts; values
    /// are percent-decoded.
    #[test]
    fn defaults_repeats_and_decoding() {
        let none = Query(None);
        assert_eq!(
            (none.limit(), none.radius(), none.include_self()),
            (Ok(10), Ok(5), Ok(false))
        );
        let query = Query(Some("limit=3&limit=7&radius=%32&include_self=true"));
        assert_eq!(
            (query.limit(), query.radius(), query.include_self()),
            (Ok(7), Ok(2), Ok(true))
        );
    }

    /// A cursor reads back on its own board instance, and on another is refused naming the
    /// instance asked for.
    #[test]
    fn a_cursor_pages_only_its_instance() {
        let board_id = BoardId::new("g", "m", "s", "global").unwrap();
        let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
        for i in 0..5 {
            let id = alloc::format!("e{i}");
            let player = alloc::format!("p{i}");
            board
                .apply(&ScoreEvent::new(&id, &player, i, 0).unwrap())
                .unwrap();
        }
        let binding = CursorBinding::of(&board_id, "all_time");
        let next = board.top(2, None).unwrap().next_cursor.unwrap();
        let text = cursor_text(&next, binding);
        let query = alloc::format!("cursor={text}");
        let (bytes, cursor) = Query(Some(&query))
            .cursor(binding, &board_id, "all_time")
            .unwrap()
            .unwrap();
        assert_eq!(cursor, next);
        assert_eq!(bytes, next.encode(binding));
        let day = CursorBinding::of(&board_id, "2026-10-13");
        let refused = Query(Some(&query))
            .cursor(day, &board_id, "2026-10-13")
            .unwrap_err();
        assert_eq!(
            refused.detail,
            "the cursor was made for another board or period, not g/m/s/global in 2026-10-13; page this one from its first page"
        );
    }

    /// Player ids and rank-players lists are checked with the core's words.
    #[test]
    fn players_are_checked() {
        assert!(player_id("p-ava").is_ok());
        assert_eq!(player_id("").unwrap_err().code, "INVALID_REQUEST");
        let many: Vec<&str> = core::iter::repeat_n("p", MAX_LIMIT + 1).collect();
        let refused = rank_players(&many).unwrap_err();
        assert_eq!((refused.status, refused.code), (413, "PAYLOAD_TOO_LARGE"));
        assert_eq!(refused.detail, "at most 1000 players per call; this one has 1001");
        assert_eq!(rank_players(&["ok", "bad\u{7}"]).unwrap_err().status, 400);
    }
}
