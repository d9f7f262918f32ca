//! The read answers a snapshot gives: each read asked of a [`SnapshotReader`] over the parts a
//! tier holds, and printed with the read API's JSON, so the edge worker and the browser package
//! (which fetch their parts each their own way) answer with the same bytes as the origin.
//! Each answers [`Step::Need`] with the parts to fetch first, or [`Step::Done`].

use alloc::vec::Vec;

use super::query::cursor_text;
use crate::cursor::Cursor;
use crate::cursor::CursorBinding;
use crate::error::QueryError;
use crate::json::{
    PeriodFields, write_friends_answer, write_interval_answer, write_nearby_answer, write_rank_answer,
    write_segment_friends_answer, write_segment_nearby_answer, write_segment_rank_answer,
    write_segment_top_answer, write_top_answer,
};
use crate::segments::SegmentKey;
use crate::snapshot::read::{Parts, SegmentReader, SnapshotReader, Step};

/// `top?limit=&cursor=`: the page, its next cursor bound to `binding`. A cursor of another
/// version than the snapshot's is [`QueryError::StaleCursor`] (the origin, which holds several
/// versions, can still page it). O(log chunks + limit) once the parts are held.
pub fn top(
    reader: &SnapshotReader<'_>,
    parts: &impl Parts,
    period: &PeriodFields<'_>,
    binding: CursorBinding,
    limit: usize,
    cursor: Option<&Cursor>,
) -> Result<Step<Vec<u8>>, QueryError> {
    Ok(match reader.top(parts, limit, cursor)? {
        Step::Done(page) => {
            let next = page.next_cursor.as_ref().map(|c| cursor_text(c, binding));
            let mut out = Vec::with_capacity(256 + 112 * page.entries.len());
            write_top_answer(&mut out, period, &page, next.as_deref());
            Step::Done(out)
        }
        Step::Need(need) => Step::Need(need),
    })
}

/// `players/{player}/rank`: `None` when the player has no score. O(log chunks) once held.
pub fn rank(
    reader: &SnapshotReader<'_>,
    parts: &impl Parts,
    period: &PeriodFields<'_>,
    player: &str,
) -> Step<Option<Vec<u8>>> {
    written(reader.player_rank(parts, player), |found| {
        let mut out = Vec::with_capacity(384);
        write_rank_answer(&mut out, period, &found);
        out
    })
}

/// `players/{player}/rank?approximate=interval`: `None` when the player has no score. Needs
/// no rank chunk. O(log bounds) once held.
pub fn rank_interval(
    reader: &SnapshotReader<'_>,
    parts: &impl Parts,
    period: &PeriodFields<'_>,
    player: &str,
) -> Step<Option<Vec<u8>>> {
    written(reader.player_interval(parts, player), |found| {
        let mut out = Vec::with_capacity(384);
        write_interval_answer(&mut out, period, &found);
        out
    })
}

/// `players/{player}/nearby?radius=`: `None` when the player has no score. O(log chunks +
/// radius) once held.
pub fn nearby(
    reader: &SnapshotReader<'_>,
    parts: &impl Parts,
    period: &PeriodFields<'_>,
    player: &str,
    radius: u64,
) -> Step<Option<Vec<u8>>> {
    let version = reader.board_version();
    written(reader.nearby(parts, player, radius), |window| {
        let mut out = Vec::with_capacity(256 + 112 * window.len());
        write_nearby_answer(&mut out, period, version, window.iter().copied());
        out
    })
}

/// A player's answer written by `write`, `None` for a player with no score, or the parts it
/// needs first.
fn written<T>(step: Step<Option<T>>, write: impl FnOnce(T) -> Vec<u8>) -> Step<Option<Vec<u8>>> {
    match step {
        Step::Done(found) => Step::Done(found.map(write)),
        Step::Need(need) => Step::Need(need),
    }
}

/// `friends-of` and `rank-players`: `players` ranked among themselves. O(k log chunks) once
/// held.
pub fn rank_among(
    reader: &SnapshotReader<'_>,
    parts: &impl Parts,
    period: &PeriodFields<'_>,
    players: &[&str],
) -> Step<Vec<u8>> {
    match reader.rank_among(parts, players) {
        Step::Done(ranked) => {
            let mut out = Vec::with_capacity(256 + 128 * players.len());
            write_friends_answer(&mut out, period, &ranked);
            Step::Done(out)
        }
        Step::Need(need) => Step::Need(need),
    }
}

/// `top?segment=`: a page of the segment's members, ranked within it, each with its
/// board-wide rank; as [`top`] otherwise. O(log chunks + chunks read) once held.
pub fn segment_top(
    reader: &SegmentReader<'_, '_>,
    parts: &impl Parts,
    period: &PeriodFields<'_>,
    segment: &SegmentKey<'_>,
    binding: CursorBinding,
    limit: usize,
    cursor: Option<&Cursor>,
) -> Result<Step<Vec<u8>>, QueryError> {
    Ok(match reader.top(parts, limit, cursor)? {
        Step::Done(page) => {
            let next = page.next_cursor.as_ref().map(|c| cursor_text(c, binding));
            let mut out = Vec::with_capacity(256 + 128 * page.entries.len());
            write_segment_top_answer(&mut out, period, segment, &page, next.as_deref());
            Step::Done(out)
        }
        Step::Need(need) => Step::Need(need),
    })
}

/// `players/{player}/rank?segment=`: `None` when the player has no score in the segment.
pub fn segment_rank(
    reader: &SegmentReader<'_, '_>,
    parts: &impl Parts,
    period: &PeriodFields<'_>,
    segment: &SegmentKey<'_>,
    player: &str,
) -> Step<Option<Vec<u8>>> {
    written(reader.rank(parts, player), |found| {
        let mut out = Vec::with_capacity(384);
        write_segment_rank_answer(&mut out, period, segment, &found);
        out
    })
}

/// `players/{player}/nearby?segment=`: `None` when the player has no score in the segment.
pub fn segment_nearby(
    reader: &SegmentReader<'_, '_>,
    parts: &impl Parts,
    period: &PeriodFields<'_>,
    segment: &SegmentKey<'_>,
    player: &str,
    radius: u64,
    board_version: u64,
) -> Step<Option<Vec<u8>>> {
    written(reader.nearby(parts, player, radius), |window| {
        let mut out = Vec::with_capacity(256 + 128 * window.len());
        write_segment_nearby_answer(&mut out, period, segment, board_version, &window);
        out
    })
}

/// `friends-of` and `rank-players` with `segment=`: the asked players in the segment ranked
/// among themselves.
pub fn segment_among(
    reader: &SegmentReader<'_, '_>,
    parts: &impl Parts,
    period: &PeriodFields<'_>,
    segment: &SegmentKey<'_>,
    players: &[&str],
) -> Step<Vec<u8>> {
    match reader.among(parts, players) {
        Step::Done(friends) => {
            let mut out = Vec::with_capacity(256 + 128 * players.len());
            write_segment_friends_answer(&mut out, period, segment, &friends);
            Step::Done(out)
        }
        Step::Need(need) => Step::Need(need),
    }
}
