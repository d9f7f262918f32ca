//! Read-your-writes: the position a write's acknowledgement names (`x-standings-position`, and
//! `position` in its body) and a read hands back (`min_position`, or the header
//! `x-standings-min-position`) to be answered at or after it. A position is a place in the log of
//! the game's partition, tagged with the game so that one game's position is never taken for
//! another's; clients treat it as opaque.

use alloc::borrow::Cow;
use alloc::format;
use alloc::string::String;

use super::Problem;
use super::query::Query;
use crate::digest::fnv1a;

/// The header of a write's acknowledgement that names its position.
pub const POSITION_HEADER: &str = "x-standings-position";
/// The header a read may carry instead of the `min_position` parameter.
pub const MIN_POSITION_HEADER: &str = "x-standings-min-position";
/// The read parameter.
pub const MIN_POSITION: &str = "min_position";

/// A place in a game's partition log: everything logged up to `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    tag: u32,
    /// The last log entry the position covers.
    pub seq: u64,
}

/// The tag of a game's positions: the low 32 bits of its FNV-1a. O(length of the id).
fn tag_of(game: &str) -> u32 {
    fnv1a(game.as_bytes()) as u32
}

impl Position {
    /// The position of `game`'s log through `seq`. O(length of the id).
    pub fn new(game: &str, seq: u64) -> Position {
        Position {
            tag: tag_of(game),
            seq,
        }
    }

    /// The opaque token: `p1-` then the game's tag in 8 hex digits, then the seq. O(1).
    pub fn token(&self) -> String {
        format!("p1-{:08x}-{}", self.tag, self.seq)
    }

    /// Reads a token a client handed back for a read of `game`: 400 `INVALID_REQUEST` naming it
    /// when it is not a token this service gave, or one of another game. O(length of the token).
    pub fn parse(token: &str, game: &str) -> Result<Position, Problem> {
        let malformed = || {
            Problem::invalid_request(format!(
                "{MIN_POSITION} {token:?} is not a position this service gave; hand back the x-standings-position of a write as it came"
            ))
        };
        let rest = token.strip_prefix("p1-").ok_or_else(malformed)?;
        let (tag, seq) = rest.split_once('-').ok_or_else(malformed)?;
        let tag_ok = tag.len() == 8
            && tag
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        let seq_ok = !seq.is_empty() && seq.len() <= 19 && seq.bytes().all(|b| b.is_ascii_digit());
        if !tag_ok || !seq_ok || (seq.len() > 1 && seq.starts_with('0')) {
            return Err(malformed());
        }
        let tag = u32::from_str_radix(tag, 16).map_err(|_| malformed())?;
        let seq = seq.parse::<u64>().map_err(|_| malformed())?;
        if tag != tag_of(game) {
            return Err(Problem::invalid_request(format!(
                "{MIN_POSITION} {token:?} is a position of another game than {game:?}; a position is read only in its own game"
            )));
        }
        Ok(Position { tag, seq })
    }

    /// The position a read asks for: the `min_position` parameter, else the header's value;
    /// `None` when neither is given. O(length of the query).
    pub fn asked<'a>(query: Query<'a>, header: Option<&'a str>) -> Option<Cow<'a, str>> {
        query.get(MIN_POSITION).or(header.map(Cow::Borrowed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token reads back in its game, and is refused, naming it, when malformed or of another
    /// game.
    #[test]
    fn a_token_reads_back_only_in_its_game() {
        let at = Position::new("arena-clash", 42);
        let token = at.token();
        assert_eq!(
            token,
            alloc::format!("p1-{:08x}-42", fnv1a(b"arena-clash") as u32)
        );
        assert_eq!(Position::parse(&token, "arena-clash"), Ok(at));
        let other = Position::parse(&token, "other-game").unwrap_err();
        assert_eq!(other.code, "INVALID_REQUEST");
        assert!(other.detail.contains("another game"), "{}", other.detail);
        for bad in [
            "",
            "42",
            "p1-",
            "p1-zzzzzzzz-1",
            "p1-0000000-1",
            "p2-00000000-1",
            "p1-00000000-",
            "p1-00000000-01",
            "p1-00000000-99999999999999999999",
        ] {
            let refused = Position::parse(bad, "arena-clash").unwrap_err();
            assert!(
                refused.detail.contains("is not a position"),
                "{bad:?}: {}",
                refused.detail
            );
        }
        assert_eq!(
            Position::asked(Query(Some("min_position=p1-1-2")), Some("h")).as_deref(),
            Some("p1-1-2")
        );
        assert_eq!(
            Position::asked(Query(Some("limit=1")), Some("h")).as_deref(),
            Some("h")
        );
        assert_eq!(Position::asked(Query(None), None), None);
    }
}
