//! The live wire's messages (`docs/live.md`), printed once for every tier that sends them: the
//! origin to its subscribers, the edge's live objects to theirs. Entries and period fields are
//! written by the read API's encoder ([`crate::json`]), so a snapshot's entries are byte for
//! byte what a fresh read of the view prints, whoever sends it.

use alloc::format;
use alloc::string::ToString;
use alloc::vec::Vec;

use crate::index::RankedEntry;
use crate::json::{self, PeriodFields, write_str, write_u64};
use crate::live::{View, ViewDelta, ViewEntry, ViewState};
use crate::segments::SegmentEntry;

/// `heartbeat`.
pub const HEARTBEAT: &[u8] = b"{\"type\":\"heartbeat\"}";

/// `going_away`.
pub const GOING_AWAY: &[u8] = b"{\"type\":\"going_away\"}";

/// Appends entries as the read API prints them: a segment's (each with its `global_rank`)
/// as its segment reads do. O(entries).
fn write_entries(out: &mut Vec<u8>, entries: &[ViewEntry]) {
    fn ranked(e: &ViewEntry) -> RankedEntry<'_> {
        RankedEntry {
            rank: e.rank,
            player: e.player_id.as_str(),
            value: e.value,
            achieved_at: e.achieved_at,
            info: e.info(),
        }
    }
    if entries.iter().any(|e| e.global_rank.is_some()) {
        let within: Vec<SegmentEntry<'_>> = entries
            .iter()
            .map(|e| SegmentEntry {
                entry: ranked(e),
                global_rank: e.global_rank.unwrap_or_default(),
            })
            .collect();
        json::write_segment_entries(out, &within);
    } else {
        json::write_entries(out, entries.iter().map(ranked));
    }
}

/// `snapshot`: the whole view at `state.board_version`. O(entries).
pub fn snapshot(view: &View, period: &PeriodFields<'_>, state: &ViewState) -> Vec<u8> {
    let mut out = Vec::with_capacity(192 + 96 * state.entries.len());
    out.extend_from_slice(b"{\"type\":\"snapshot\",\"view\":");
    write_str(&mut out, &view.to_string());
    out.push(b',');
    period.write(&mut out);
    out.extend_from_slice(b"\"board_version\":");
    write_u64(&mut out, state.board_version);
    out.extend_from_slice(b",\"entries\":");
    write_entries(&mut out, &state.entries);
    out.push(b'}');
    out
}

/// `delta`: the net change of the instance `period_key` from `base_version` to
/// `board_version`. O(entries sent).
pub fn delta(delta: &ViewDelta) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + 96 * delta.changed.len() + 24 * delta.left.len());
    out.extend_from_slice(b"{\"type\":\"delta\",\"period_key\":");
    write_str(&mut out, &delta.period_key);
    out.extend_from_slice(b",\"base_version\":");
    write_u64(&mut out, delta.base_version);
    out.extend_from_slice(b",\"board_version\":");
    write_u64(&mut out, delta.board_version);
    out.extend_from_slice(b",\"changed\":");
    write_entries(&mut out, &delta.changed);
    out.extend_from_slice(b",\"left\":[");
    for (i, player) in delta.left.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(&mut out, player.as_str());
    }
    out.extend_from_slice(b"]}");
    out
}

/// `resync` for a subscriber whose queue of `queue_messages` filled up.
pub fn slow_consumer(queue_messages: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(160);
    out.extend_from_slice(b"{\"type\":\"resync\",\"reason\":\"slow_consumer\",\"detail\":");
    write_str(
        &mut out,
        &format!(
            "this subscriber fell {queue_messages} messages behind; subscribe again without since_version"
        ),
    );
    out.push(b'}');
    out
}

/// `closed`, with its reason's wire name (`period_closed`, `season_archived`), the instance and
/// the last version the subscriber was sent.
pub fn closed(reason: &str, period_key: &str, board_version: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(b"{\"type\":\"closed\",\"reason\":");
    write_str(&mut out, reason);
    out.extend_from_slice(b",\"period_key\":");
    write_str(&mut out, period_key);
    out.extend_from_slice(b",\"board_version\":");
    write_u64(&mut out, board_version);
    out.push(b'}');
    out
}
