//! A board's whole state as bytes, for restart checkpoints.
//!
//! A [`Snapshot`](crate::Snapshot) ships a board to readers; a checkpoint keeps everything a
//! board needs to go on *applying* events exactly as before: the rules, the `board_version`,
//! every player seen (ranked or not), and for `latest` boards the event id behind each
//! aggregate, which breaks equal times. A board read back from its checkpoint has the same
//! entries, version and digest, and applies the next events to the same results. Only the delta
//! history is not kept: cursors of versions before the checkpoint answer `StaleCursor`.
//!
//! Layout (integers little-endian):
//!
//! ```text
//! magic "SCKP" | format u16 | mode u8 | value_min i64 | value_max i64 | board_version u64
//! | members u64 | ranked u64 | name_bytes u64
//! | members x (id_len u8 | id bytes | [ranked only: value i64 | achieved_at i64]
//!              | [latest only: event_len u8 (0 = none) | event id bytes])
//! ```
//!
//! Ranked members come first, in rank order, then the unranked ones. Read back, members are
//! interned in that order, so the index's sort meets already-sorted keys and the load is linear
//! apart from hashing the ids. Ids are at most [`MAX_ID_BYTES`](crate::MAX_ID_BYTES) (128)
//! bytes, so one length byte suffices.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::board::Board;
use crate::error::DecodeError;
use crate::event::{MAX_ID_BYTES, check_id};
use crate::index::RankedIndex;
use crate::interner::Interner;
use crate::rules::{BoardRules, ScoreMode, Standing};

/// The checkpoint format version this build writes and reads.
pub const CHECKPOINT_FORMAT_VERSION: u16 = 1;

const MAGIC: &[u8; 4] = b"SCKP";

impl Board {
    /// Appends the board's whole state to `out` (see the module docs for the layout). O(n);
    /// about 17 bytes per ranked player plus the id bytes.
    pub fn write_checkpoint(&self, out: &mut Vec<u8>) {
        let index = self.index();
        let rules = self.rules();
        let latest = rules.score_mode == ScoreMode::Latest;
        let name_bytes = index.name_bytes();
        out.reserve(32 + name_bytes + index.players_seen() * 2 + index.len() * 16);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&CHECKPOINT_FORMAT_VERSION.to_le_bytes());
        out.push(mode_code(rules.score_mode));
        out.extend_from_slice(&rules.value_min.to_le_bytes());
        out.extend_from_slice(&rules.value_max.to_le_bytes());
        out.extend_from_slice(&self.version().to_le_bytes());
        out.extend_from_slice(&(index.players_seen() as u64).to_le_bytes());
        out.extend_from_slice(&(index.len() as u64).to_le_bytes());
        out.extend_from_slice(&(name_bytes as u64).to_le_bytes());
        let mut ranked = alloc::vec![false; index.players_seen()];
        let put_member = |out: &mut Vec<u8>, member: u32| {
            let id = index.player(member).as_bytes();
            out.push(id.len() as u8);
            out.extend_from_slice(id);
        };
        let put_latest = |out: &mut Vec<u8>, member: u32| {
            if latest {
                match self.latest_event_of(member) {
                    Some(event) => {
                        out.push(event.len() as u8);
                        out.extend_from_slice(event.as_bytes());
                    }
                    None => out.push(0),
                }
            }
        };
        index.for_each_ranked(|member, standing| {
            ranked[member as usize] = true;
            put_member(out, member);
            out.extend_from_slice(&standing.value.to_le_bytes());
            out.extend_from_slice(&standing.achieved_at.to_le_bytes());
            put_latest(out, member);
        });
        for (member, _) in ranked.iter().enumerate().filter(|(_, r)| !**r) {
            put_member(out, member as u32);
            put_latest(out, member as u32);
        }
    }

    /// Reads a board written by [`Board::write_checkpoint`], which must fill `bytes` exactly.
    /// Never panics: malformed, truncated or inconsistent bytes are a [`DecodeError`]. O(n) for
    /// the ids and a linear check of the order (any order is accepted, at O(n log n)).
    pub fn read_checkpoint(bytes: &[u8]) -> Result<Board, DecodeError> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(4)? != MAGIC {
            return Err(DecodeError::UnsupportedFormat { found: None });
        }
        let format = u16::from_le_bytes(r.array()?);
        if format != CHECKPOINT_FORMAT_VERSION {
            return Err(DecodeError::UnsupportedFormat { found: Some(format) });
        }
        let mode = mode_of(r.byte()?).ok_or(DecodeError::Inconsistent("unknown score mode"))?;
        let value_min = r.i64()?;
        let value_max = r.i64()?;
        let rules = BoardRules::with_range(mode, value_min, value_max)
            .ok_or(DecodeError::Inconsistent("value_min is above value_max"))?;
        let version = r.u64()?;
        let members = r.len()?;
        let ranked = r.len()?;
        let name_bytes = r.len()?;
        // Every member takes at least two bytes, so counts beyond the input are lies that must
        // not size an allocation.
        if ranked > members || members > bytes.len() / 2 || name_bytes > bytes.len() {
            return Err(DecodeError::Inconsistent("counts exceed the input"));
        }
        let latest = mode == ScoreMode::Latest;
        let mut arena: Vec<u8> = Vec::with_capacity(name_bytes);
        let mut ends: Vec<u32> = Vec::with_capacity(members);
        let mut aggregates: Vec<Option<Standing>> = Vec::with_capacity(members);
        let mut latest_event: Vec<Option<Box<str>>> = Vec::new();
        for position in 0..members {
            let id = r.id()?.ok_or(DecodeError::Inconsistent("an empty player id"))?;
            arena.extend_from_slice(id.as_bytes());
            let end = u32::try_from(arena.len())
                .map_err(|_| DecodeError::Inconsistent("player ids beyond 4 GiB"))?;
            ends.push(end);
            let standing = if position < ranked {
                let standing = Standing {
                    value: r.i64()?,
                    achieved_at: r.i64()?,
                };
                if standing.value < value_min || standing.value > value_max {
                    return Err(DecodeError::Inconsistent("a value outside the board's range"));
                }
                Some(standing)
            } else {
                None
            };
            aggregates.push(standing);
            if latest {
                latest_event.push(r.id()?.map(Box::from));
            }
        }
        if r.at != bytes.len() {
            return Err(DecodeError::TrailingBytes);
        }
        if arena.len() != name_bytes || members >= u32::MAX as usize {
            return Err(DecodeError::Inconsistent("the id bytes do not add up"));
        }
        let names = Interner::from_laid_out(arena, ends)
            .map_err(|_| DecodeError::Inconsistent("a player is listed twice"))?;
        let mut index = RankedIndex::with_names(mode, names);
        index.load_members(&aggregates);
        Ok(Board::from_index(rules, version, index, latest_event))
    }
}

fn mode_code(mode: ScoreMode) -> u8 {
    match mode {
        ScoreMode::Highest => 0,
        ScoreMode::Cumulative => 1,
        ScoreMode::Fastest => 2,
        ScoreMode::Latest => 3,
    }
}

fn mode_of(code: u8) -> Option<ScoreMode> {
    Some(match code {
        0 => ScoreMode::Highest,
        1 => ScoreMode::Cumulative,
        2 => ScoreMode::Fastest,
        3 => ScoreMode::Latest,
        _ => return None,
    })
}

/// A bounds-checked cursor over the input.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.at.checked_add(n).ok_or(DecodeError::Malformed)?;
        let taken = self.bytes.get(self.at..end).ok_or(DecodeError::Malformed)?;
        self.at = end;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn byte(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn len(&mut self) -> Result<usize, DecodeError> {
        usize::try_from(self.u64()?).map_err(|_| DecodeError::Inconsistent("a count beyond memory"))
    }

    /// A length-prefixed id (player or event); `None` for length 0. Checked as ids are checked
    /// on the way in: UTF-8, at most 128 bytes, no control characters.
    fn id(&mut self) -> Result<Option<&'a str>, DecodeError> {
        let len = self.byte()? as usize;
        if len == 0 {
            return Ok(None);
        }
        if len > MAX_ID_BYTES {
            return Err(DecodeError::Inconsistent("an id longer than 128 bytes"));
        }
        let id = core::str::from_utf8(self.take(len)?).map_err(|_| DecodeError::Malformed)?;
        check_id("id", id).map_err(|_| DecodeError::Inconsistent("an id with control characters"))?;
        Ok(Some(id))
    }
}

#[cfg(test)]
mod tests {
    use alloc::format;

    use super::*;
    use crate::event::ScoreEvent;

    fn board(mode: ScoreMode, events: &[(&str, &str, i64, i64)]) -> Board {
        let mut board = Board::new(BoardRules::with_range(mode, -1_000, 1_000_000).unwrap());
        for (event, player, value, at) in events {
            board
                .apply(&ScoreEvent::new(event, player, *value, *at).unwrap())
                .unwrap();
        }
        board
    }

    fn round_trip(board: &Board) -> Board {
        let mut bytes = Vec::new();
        board.write_checkpoint(&mut bytes);
        Board::read_checkpoint(&bytes).unwrap()
    }

    /// A board read back has the same entries, version and digest, in every mode.
    #[test]
    fn round_trip_keeps_entries_version_and_digest() {
        for mode in [
            ScoreMode::Highest,
            ScoreMode::Cumulative,
            ScoreMode::Fastest,
            ScoreMode::Latest,
        ] {
            let events: Vec<(alloc::string::String, alloc::string::String, i64, i64)> = (0..500)
                .map(|i| {
                    (
                        format!("e{i}"),
                        format!("p{}", i % 37),
                        (i * 7919) % 1000,
                        1_000 + i % 13,
                    )
                })
                .collect();
            let events: Vec<(&str, &str, i64, i64)> = events
                .iter()
                .map(|(e, p, v, t)| (e.as_str(), p.as_str(), *v, *t))
                .collect();
            let live = board(mode, &events);
            let back = round_trip(&live);
            assert_eq!(back.version(), live.version(), "{mode}");
            assert_eq!(back.digest(), live.digest(), "{mode}");
            assert_eq!(back.index().range(1, 100), live.index().range(1, 100), "{mode}");
            assert_eq!(back.rules(), live.rules());
        }
    }

    /// Unranked players and `latest` tie-break ids survive, so the next events land the same.
    #[test]
    fn a_read_back_board_applies_the_next_events_like_the_live_one() {
        let mut live = board(
            ScoreMode::Latest,
            &[
                ("e-b", "p-ava", 10, 500),
                ("e-a", "p-ben", 20, 500),
                ("e-c", "p-chloe", 5, 400),
            ],
        );
        live.recompute_player(&crate::PlayerId::new("p-chloe").unwrap(), &[])
            .unwrap();
        let mut back = round_trip(&live);
        assert_eq!(back.index().players_seen(), 3);
        assert_eq!(back.total_players(), 2);
        // Same time as p-ava's aggregate: the event id decides, so the kept id matters.
        let next = ScoreEvent::new("e-a0", "p-ava", 30, 500).unwrap();
        live.apply(&next).unwrap();
        back.apply(&next).unwrap();
        assert_eq!(back.digest(), live.digest());
        assert_eq!(back.version(), live.version());
        assert_eq!(
            back.index().standing_of_player("p-ava"),
            live.index().standing_of_player("p-ava")
        );
    }

    /// Every truncation and every single-byte change is an error or a valid board, never a panic.
    #[test]
    fn damaged_bytes_are_refused_without_panicking() {
        let live = board(ScoreMode::Latest, &[("e1", "p-a", 3, 9), ("e2", "p-b", 4, 9)]);
        let mut bytes = Vec::new();
        live.write_checkpoint(&mut bytes);
        for cut in 0..bytes.len() {
            assert!(Board::read_checkpoint(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut damaged = bytes.clone();
                damaged[at] ^= flip;
                let _ = Board::read_checkpoint(&damaged);
            }
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            Board::read_checkpoint(&longer).err(),
            Some(DecodeError::TrailingBytes)
        );
        let mut other = bytes.clone();
        other[4] = 9;
        assert_eq!(
            Board::read_checkpoint(&other).err(),
            Some(DecodeError::UnsupportedFormat { found: Some(9) })
        );
    }
}
