//! A board's whole state as bytes, for restart checkpoints.
//!
//! A [`Snapshot`](crate::Snapshot) ships a board to readers; a checkpoint keeps everything a
//! board needs to go on *applying* events exactly as before: the rules, the `board_version`,
//! every player seen (ranked or not), and for `latest` boards the event id behind each
//! aggregate, which breaks equal times. A board read back from its checkpoint has the same
//! entries, version and digest, and applies the next events to the same results. Only the delta
//! history is not kept: cursors of versions before the checkpoint answer `StaleCursor`.
//!
//! Layout (integers little-endian), format 4:
//!
//! ```text
//! magic "SCKP" | format u16 | mode u8 | value_min i64 | value_max i64 | board_version u64
//! | members u64 | ranked u64 | name_bytes u64
//! | members x end u32            (where each member's id ends in the id bytes that follow)
//! | name_bytes id bytes          (every member's id, back to back, in member order)
//! | ranked x (member u32 | value i64 | achieved_at i64), in rank order
//! | [latest only: members x (event_len u8 (0 = none) | event id bytes)]
//! | extras u64 | extras x (member u32 | flags u8 | [name_len u8 | name bytes] | [country 2 bytes]
//!                         | [event_len u8 | event id bytes | json_len u16 | json bytes]
//!                         | [segments_len u16 | segments bytes])
//! ```
//!
//! The extras are the ranked members with a profile or metadata (flags: 1 name, 2 country,
//! 4 anonymous, 8 metadata, 16 the metadata's event dimension values), in member order.
//! Format 3 is format 4 without flag 16; format 2 is format 3 without extras.
//!
//! This is the interner's own layout and the tree's own order, so writing is two copies and one
//! walk of the leaves: it never looks an id up by member, which on a board built by live
//! writes (members in arrival order, ranks in any order) missed the cache once or twice per
//! member. A checkpoint is written while writes wait, so that walk is the stall. Read back,
//! members keep their ids and the ranked list meets the index's sort already sorted.
//!
//! Format 1 (still read, no longer written) listed each member's id inline, ranked members
//! first in rank order: `members x (id_len u8 | id bytes | [ranked only: value i64 |
//! achieved_at i64] | [latest only: event_len u8 | event id bytes])` after the same header.
//! Ids are at most [`MAX_ID_BYTES`](crate::MAX_ID_BYTES) (128) bytes, so one length byte
//! suffices.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::board::Board;
use crate::codec::{country, text};
use crate::error::DecodeError;
use crate::event::{MAX_ID_BYTES, check_id};
use crate::index::RankedIndex;
use crate::interner::{Interner, MemberId};
use crate::join::{Join, OneThread};
use crate::profile::{
    Extras, MAX_DISPLAY_NAME_BYTES, MAX_EVENT_SEGMENTS_BYTES, MAX_METADATA_BYTES, Metadata, Profile,
};
use crate::rules::{BoardRules, ScoreMode, Standing};

/// The checkpoint format version this build writes.
pub const CHECKPOINT_FORMAT_VERSION: u16 = 4;

/// Whether this build reads checkpoints of format `format` (it writes only
/// [`CHECKPOINT_FORMAT_VERSION`]).
pub fn reads_checkpoint_format(format: u16) -> bool {
    (1..=CHECKPOINT_FORMAT_VERSION).contains(&format)
}

const MAGIC: &[u8; 4] = b"SCKP";

impl Board {
    /// Appends the board's whole state to `out` (see the module docs for the layout). O(n)
    /// with sequential memory access: about 24 bytes per ranked player plus 4 per player seen
    /// and the id bytes.
    pub fn write_checkpoint(&self, out: &mut Vec<u8>) {
        let index = self.index();
        let rules = self.rules();
        let latest = rules.score_mode == ScoreMode::Latest;
        let (names, ends) = index.names_laid_out();
        let latest_bytes = if latest { ends.len() * 8 } else { 0 };
        out.reserve(64 + ends.len() * 4 + names.len() + index.len() * 20 + latest_bytes);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&CHECKPOINT_FORMAT_VERSION.to_le_bytes());
        out.push(mode_code(rules.score_mode));
        out.extend_from_slice(&rules.value_min.to_le_bytes());
        out.extend_from_slice(&rules.value_max.to_le_bytes());
        out.extend_from_slice(&self.version().to_le_bytes());
        out.extend_from_slice(&(ends.len() as u64).to_le_bytes());
        out.extend_from_slice(&(index.len() as u64).to_le_bytes());
        out.extend_from_slice(&(names.len() as u64).to_le_bytes());
        for end in ends {
            out.extend_from_slice(&end.to_le_bytes());
        }
        out.extend_from_slice(names);
        index.for_each_ranked(|member, standing| {
            out.extend_from_slice(&member.to_le_bytes());
            out.extend_from_slice(&standing.value.to_le_bytes());
            out.extend_from_slice(&standing.achieved_at.to_le_bytes());
        });
        if latest {
            for member in 0..ends.len() as MemberId {
                match self.latest_event_of(member) {
                    Some(event) => {
                        out.push(event.len() as u8);
                        out.extend_from_slice(event.as_bytes());
                    }
                    None => out.push(0),
                }
            }
        }
        out.extend_from_slice(&(self.players_with_extras() as u64).to_le_bytes());
        self.for_each_member_extras(|member, extras| write_extras(out, member, extras));
    }

    /// Reads a board written by [`Board::write_checkpoint`] (format 2, or format 1 of earlier
    /// builds), which must fill `bytes` exactly. Never panics: malformed, truncated or
    /// inconsistent bytes are a [`DecodeError`]. O(n) apart from hashing the ids, when the
    /// ranked members come in rank order as written (any order is accepted, at O(n log n)).
    pub fn read_checkpoint(bytes: &[u8]) -> Result<Board, DecodeError> {
        Board::read_checkpoint_with(bytes, &OneThread, 1)
    }

    /// [`Board::read_checkpoint`] with its two long halves, the id table and the ranked tree,
    /// handed to `join`, which may run them on two threads (the core has none), the tree split
    /// into `shards` score ranges as it is built ([`Board::split`]).
    pub fn read_checkpoint_with(bytes: &[u8], join: &dyn Join, shards: usize) -> Result<Board, DecodeError> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(4)? != MAGIC {
            return Err(DecodeError::UnsupportedFormat { found: None });
        }
        let format = u16::from_le_bytes(r.array()?);
        if !reads_checkpoint_format(format) {
            return Err(DecodeError::UnsupportedFormat { found: Some(format) });
        }
        let mode = mode_of(r.byte()?).ok_or(DecodeError::Inconsistent("unknown score mode"))?;
        let value_min = r.i64()?;
        let value_max = r.i64()?;
        let rules = BoardRules::with_range(mode, value_min, value_max)
            .ok_or(DecodeError::Inconsistent("value_min is above value_max"))?;
        let header = Header {
            rules,
            version: r.u64()?,
            members: r.len()?,
            ranked: r.len()?,
            name_bytes: r.len()?,
        };
        // Every member takes at least two bytes, so counts beyond the input are lies that must
        // not size an allocation.
        if header.ranked > header.members
            || header.members > bytes.len() / 2
            || header.name_bytes > bytes.len()
        {
            return Err(DecodeError::Inconsistent("counts exceed the input"));
        }
        if header.members >= u32::MAX as usize {
            return Err(DecodeError::Inconsistent("more members than ids"));
        }
        let (arena, ends, ranked, latest_event) = if format == 1 {
            read_members_v1(&mut r, &header)?
        } else {
            read_members(&mut r, &header)?
        };
        let extras = if format >= 3 {
            read_extras(&mut r, &ranked, header.members, format)?
        } else {
            BTreeMap::new()
        };
        if r.at != bytes.len() {
            return Err(DecodeError::TrailingBytes);
        }
        let (mut table, mut tree, mut ranked) = (None, None, Some(ranked));
        join.join(
            &mut || {
                table = Some(check_ids(&arena, &ends).and_then(|()| {
                    Interner::table_of(&arena, &ends)
                        .map_err(|_| DecodeError::Inconsistent("a player is listed twice"))
                }))
            },
            &mut || {
                let ranked = ranked.take().unwrap_or_default();
                tree = Some(RankedIndex::tree_of(mode, ranked, &arena, &ends, shards));
            },
        );
        let table = table.ok_or(DecodeError::Inconsistent("the id table was not built"))??;
        let tree = tree.ok_or(DecodeError::Inconsistent("the ranked tree was not built"))?;
        let index = RankedIndex::from_parts(mode, Interner::from_parts(arena, ends, table), tree);
        Ok(Board::from_index(
            rules,
            header.version,
            index,
            latest_event,
            extras,
        ))
    }
}

/// The counts and rules every format starts with.
struct Header {
    rules: BoardRules,
    version: u64,
    members: usize,
    ranked: usize,
    name_bytes: usize,
}

/// What a checkpoint's members read back as: the interner's arena and ends, the ranked members'
/// aggregates, and for `latest` boards each member's tie-break event id.
type Members = (
    Vec<u8>,
    Vec<u32>,
    Vec<(MemberId, Standing)>,
    Vec<Option<Box<str>>>,
);

/// Format 2's members (the module docs give the layout).
fn read_members(r: &mut Reader<'_>, header: &Header) -> Result<Members, DecodeError> {
    let (rules, members, ranked, name_bytes) =
        (header.rules, header.members, header.ranked, header.name_bytes);
    let mut ends: Vec<u32> = Vec::with_capacity(members);
    let mut start = 0usize;
    for _ in 0..members {
        let end = u32::from_le_bytes(r.array()?) as usize;
        if end <= start || end - start > MAX_ID_BYTES || end > name_bytes {
            return Err(DecodeError::Inconsistent("an id's end is out of place"));
        }
        ends.push(end as u32);
        start = end;
    }
    if start != name_bytes {
        return Err(DecodeError::Inconsistent("the id bytes do not add up"));
    }
    // The ids are checked beside the table's build (`check_ids`).
    let arena = r.take(name_bytes)?;
    // Each ranked entry takes 20 bytes: a count beyond the input must not size an allocation.
    if ranked > r.remaining() / 20 {
        return Err(DecodeError::Inconsistent("counts exceed the input"));
    }
    let mut seen = alloc::vec![false; members];
    let mut standings = Vec::with_capacity(ranked);
    for _ in 0..ranked {
        let member = u32::from_le_bytes(r.array()?);
        let standing = r.standing(&rules)?;
        match seen.get_mut(member as usize) {
            None => return Err(DecodeError::Inconsistent("a ranked member that is not listed")),
            Some(true) => return Err(DecodeError::Inconsistent("a player is ranked twice")),
            Some(listed) => *listed = true,
        }
        standings.push((member, standing));
    }
    let mut latest_event = Vec::new();
    if rules.score_mode == ScoreMode::Latest {
        latest_event.reserve(members);
        for _ in 0..members {
            latest_event.push(r.id()?.map(Box::from));
        }
    }
    Ok((arena.to_vec(), ends, standings, latest_event))
}

/// Checks that every id laid out in `arena` is one a player may have. O(id bytes).
fn check_ids(arena: &[u8], ends: &[u32]) -> Result<(), DecodeError> {
    let mut start = 0usize;
    for &end in ends {
        let bytes = arena.get(start..end as usize).ok_or(DecodeError::Malformed)?;
        let id = core::str::from_utf8(bytes).map_err(|_| DecodeError::Malformed)?;
        check_id("id", id).map_err(|_| DecodeError::Inconsistent("an id with control characters"))?;
        start = end as usize;
    }
    Ok(())
}

/// Format 1's members: each id inline, ranked members first in rank order.
fn read_members_v1(r: &mut Reader<'_>, header: &Header) -> Result<Members, DecodeError> {
    let latest = header.rules.score_mode == ScoreMode::Latest;
    let mut arena: Vec<u8> = Vec::with_capacity(header.name_bytes);
    let mut ends: Vec<u32> = Vec::with_capacity(header.members);
    let mut standings = Vec::with_capacity(header.ranked);
    let mut latest_event: Vec<Option<Box<str>>> = Vec::new();
    for position in 0..header.members {
        let id = r.id()?.ok_or(DecodeError::Inconsistent("an empty player id"))?;
        arena.extend_from_slice(id.as_bytes());
        let end =
            u32::try_from(arena.len()).map_err(|_| DecodeError::Inconsistent("player ids beyond 4 GiB"))?;
        ends.push(end);
        if position < header.ranked {
            standings.push((position as MemberId, r.standing(&header.rules)?));
        }
        if latest {
            latest_event.push(r.id()?.map(Box::from));
        }
    }
    if arena.len() != header.name_bytes {
        return Err(DecodeError::Inconsistent("the id bytes do not add up"));
    }
    Ok((arena, ends, standings, latest_event))
}

const HAS_NAME: u8 = 1;
const HAS_COUNTRY: u8 = 2;
const ANONYMOUS: u8 = 4;
const HAS_METADATA: u8 = 8;
const HAS_SEGMENTS: u8 = 16;

/// One member's extras (the module docs give the layout). O(their bytes).
fn write_extras(out: &mut Vec<u8>, member: MemberId, extras: &Extras) {
    let profile = extras.profile.as_deref();
    let name = profile.and_then(|p| p.display_name.as_deref());
    let country = profile.and_then(|p| p.country.as_deref());
    let mut flags = 0;
    if name.is_some() {
        flags |= HAS_NAME;
    }
    if country.is_some() {
        flags |= HAS_COUNTRY;
    }
    if profile.is_some_and(|p| p.anonymous) {
        flags |= ANONYMOUS;
    }
    if let Some(metadata) = extras.metadata.as_deref() {
        flags |= HAS_METADATA;
        if metadata.segments.is_some() {
            flags |= HAS_SEGMENTS;
        }
    }
    out.extend_from_slice(&member.to_le_bytes());
    out.push(flags);
    if let Some(name) = name {
        // Names are at most 128 bytes and metadata 256: the lengths fit their fields.
        out.push(name.len() as u8);
        out.extend_from_slice(name.as_bytes());
    }
    if let Some(country) = country {
        out.extend_from_slice(country.as_bytes());
    }
    if let Some(metadata) = extras.metadata.as_deref() {
        out.push(metadata.event_id.len() as u8);
        out.extend_from_slice(metadata.event_id.as_bytes());
        out.extend_from_slice(&(metadata.json.len() as u16).to_le_bytes());
        out.extend_from_slice(metadata.json.as_bytes());
        if let Some(segments) = metadata.segments.as_deref() {
            out.extend_from_slice(&(segments.len() as u16).to_le_bytes());
            out.extend_from_slice(segments.as_bytes());
        }
    }
}

/// Format 3's and 4's extras, each of a ranked member, in member order. O(extras) when there
/// are none, O(members) otherwise: a start reads every checkpoint through here.
fn read_extras(
    r: &mut Reader<'_>,
    ranked: &[(MemberId, Standing)],
    members: usize,
    format: u16,
) -> Result<BTreeMap<MemberId, Extras>, DecodeError> {
    let count = r.len()?;
    // Each takes at least 5 bytes.
    if count > r.remaining() / 5 || count > ranked.len() {
        return Err(DecodeError::Inconsistent("counts exceed the input"));
    }
    if count == 0 {
        return Ok(BTreeMap::new());
    }
    // One bit a member: a map of the ranked ones cost most of a start at ten million.
    let mut is_ranked = alloc::vec![0u64; members.div_ceil(64)];
    for &(member, _) in ranked {
        is_ranked[member as usize / 64] |= 1 << (member % 64);
    }
    let ranked_member = |member: MemberId| {
        is_ranked
            .get(member as usize / 64)
            .is_some_and(|word| word & (1 << (member % 64)) != 0)
    };
    let mut extras = BTreeMap::new();
    let mut last: Option<MemberId> = None;
    for _ in 0..count {
        let member = u32::from_le_bytes(r.array()?);
        if last.is_some_and(|l| l >= member) || !ranked_member(member) {
            return Err(DecodeError::Inconsistent(
                "extras of an unranked or repeated member",
            ));
        }
        last = Some(member);
        let flags = r.byte()?;
        let known = if format >= 4 {
            HAS_NAME | HAS_COUNTRY | ANONYMOUS | HAS_METADATA | HAS_SEGMENTS
        } else {
            HAS_NAME | HAS_COUNTRY | ANONYMOUS | HAS_METADATA
        };
        if flags & !known != 0 || flags == 0 || (flags & HAS_SEGMENTS != 0 && flags & HAS_METADATA == 0) {
            return Err(DecodeError::Inconsistent("unknown extras flags"));
        }
        let display_name = if flags & HAS_NAME != 0 {
            let len = r.byte()? as usize;
            if len == 0 || len > MAX_DISPLAY_NAME_BYTES {
                return Err(DecodeError::Inconsistent("a display name of a bad length"));
            }
            Some(Box::from(text(r.take(len)?)?))
        } else {
            None
        };
        let country = if flags & HAS_COUNTRY != 0 {
            Some(Box::from(country(r.take(2)?)?))
        } else {
            None
        };
        let anonymous = flags & ANONYMOUS != 0;
        let profile = (display_name.is_some() || country.is_some() || anonymous).then(|| {
            Arc::new(Profile {
                display_name,
                country,
                anonymous,
            })
        });
        let metadata = if flags & HAS_METADATA != 0 {
            let event_id = r.id()?.ok_or(DecodeError::Inconsistent("metadata of no event"))?;
            let len = u16::from_le_bytes(r.array()?) as usize;
            if len > MAX_METADATA_BYTES {
                return Err(DecodeError::Inconsistent("metadata over 256 bytes"));
            }
            let json = text(r.take(len)?)?.into();
            let segments = if flags & HAS_SEGMENTS != 0 {
                let len = u16::from_le_bytes(r.array()?) as usize;
                if len == 0 || len > MAX_EVENT_SEGMENTS_BYTES {
                    return Err(DecodeError::Inconsistent(
                        "event dimension values of a bad length",
                    ));
                }
                Some(text(r.take(len)?)?.into())
            } else {
                None
            };
            Some(Arc::new(Metadata {
                event_id: event_id.into(),
                json,
                segments,
            }))
        } else {
            None
        };
        extras.insert(member, Extras { profile, metadata });
    }
    Ok(extras)
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

    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// A ranked member's aggregate, which must lie in the board's range.
    fn standing(&mut self, rules: &BoardRules) -> Result<Standing, DecodeError> {
        let standing = Standing {
            value: self.i64()?,
            achieved_at: self.i64()?,
        };
        if standing.value < rules.value_min || standing.value > rules.value_max {
            return Err(DecodeError::Inconsistent("a value outside the board's range"));
        }
        Ok(standing)
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

    /// A checkpoint an earlier build wrote (format 1: ids inline, ranked members first) still
    /// loads, so an upgrade starts from it instead of replaying the log.
    #[test]
    fn a_format_1_checkpoint_still_loads() {
        // Written by format 1's `write_checkpoint` for the board built below: p-chloe unranked by
        // a recompute, p-dev below zero, p-ava and p-ben tied on time (the event id decides).
        const FORMAT_1: &str = "53434b5001000318fcffffffffffff40420f00000000000500000000000000\
            04000000000000000300000000000000160000000000000005702d62656e1400000000000000f401000000\
            00000003652d6105702d6176610a00000000000000f40100000000000003652d6205702d646576f9ffffff\
            ffffffffc20100000000000003652d6407702d63686c6f6500";
        let bytes: Vec<u8> = (0..FORMAT_1.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&FORMAT_1[i..i + 2], 16).unwrap())
            .collect();
        let mut live = board(
            ScoreMode::Latest,
            &[
                ("e-b", "p-ava", 10, 500),
                ("e-a", "p-ben", 20, 500),
                ("e-c", "p-chloe", 5, 400),
                ("e-d", "p-dev", -7, 450),
            ],
        );
        live.recompute_player(&crate::PlayerId::new("p-chloe").unwrap(), &[])
            .unwrap();
        let mut back = Board::read_checkpoint(&bytes).unwrap();
        assert_eq!(back.version(), live.version());
        assert_eq!(back.digest(), live.digest());
        assert_eq!(back.index().players_seen(), 4);
        assert_eq!(back.index().range(1, 10), live.index().range(1, 10));
        let next = ScoreEvent::new("e-a0", "p-ava", 30, 500).unwrap();
        live.apply(&next).unwrap();
        back.apply(&next).unwrap();
        assert_eq!(back.digest(), live.digest());
        // Written again, it is format 2 and reads back the same.
        assert_eq!(round_trip(&back).digest(), live.digest());
    }

    /// Format 2 lists ranked members by member id: one listed twice or never interned is
    /// refused; the same entries in another order load the same board.
    #[test]
    fn ranked_members_must_be_listed_once() {
        let live = board(ScoreMode::Highest, &[("e1", "p-a", 3, 9), ("e2", "p-b", 4, 9)]);
        let mut bytes = Vec::new();
        live.write_checkpoint(&mut bytes);
        // The 55-byte header, two ends, the ids "p-ap-b", then (member, value, time) by rank.
        let first = 55 + 2 * 4 + 6;
        assert_eq!(&bytes[first..first + 4], &1u32.to_le_bytes(), "p-b leads");
        let second = first + 20;
        let with_member = |member: u32| {
            let mut b = bytes.clone();
            b[second..second + 4].copy_from_slice(&member.to_le_bytes());
            Board::read_checkpoint(&b).err()
        };
        assert_eq!(
            with_member(1),
            Some(DecodeError::Inconsistent("a player is ranked twice"))
        );
        assert_eq!(
            with_member(2),
            Some(DecodeError::Inconsistent("a ranked member that is not listed"))
        );
        let mut swapped = bytes.clone();
        swapped[first..second].copy_from_slice(&bytes[second..second + 20]);
        swapped[second..second + 20].copy_from_slice(&bytes[first..second]);
        assert_eq!(Board::read_checkpoint(&swapped).unwrap().digest(), live.digest());
    }

    /// A [`Join`] that runs the second half first, as a second thread may.
    struct SecondFirst;

    impl Join for SecondFirst {
        fn join(&self, a: &mut (dyn FnMut() + Send), b: &mut (dyn FnMut() + Send)) {
            b();
            a();
        }
    }

    /// The two halves a start may run at once give the same board in either order, and the same
    /// refusal of an id that is no player's (checked in one half while the other builds the tree).
    #[test]
    fn the_halves_read_the_same_in_either_order() {
        let live = board(
            ScoreMode::Highest,
            &[("e1", "p-a", 3, 9), ("e2", "p-b", 4, 9), ("e3", "p-c", 4, 9)],
        );
        let mut bytes = Vec::new();
        live.write_checkpoint(&mut bytes);
        let back = Board::read_checkpoint_with(&bytes, &SecondFirst, 1).unwrap();
        assert_eq!(back.digest(), live.digest());
        assert_eq!(back.index().range(1, 3), live.index().range(1, 3));
        // The ids "p-ap-bp-c" follow the 55-byte header and three ends.
        let mut damaged = bytes.clone();
        damaged[55 + 3 * 4] = b'\n';
        let refusal = Some(DecodeError::Inconsistent("an id with control characters"));
        assert_eq!(Board::read_checkpoint(&damaged).err(), refusal);
        assert_eq!(
            Board::read_checkpoint_with(&damaged, &SecondFirst, 1).err(),
            refusal
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
