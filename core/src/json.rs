//! The JSON of the read views, written by hand into a `Vec<u8>`, shared by the origin and the
//! edge worker so that their answers cannot drift apart (behind the `json` feature).
//!
//! The format is fixed by the origin's derived `serde` views, which stay the contract: strings
//! are escaped exactly as `serde_json` escapes them, integers print as `serde_json` prints them,
//! floats as `zmij` prints them (what `serde_json` uses, `null` when not finite) and times as RFC
//! 3339 in UTC exactly as `jiff::Timestamp` prints them. Escaping a string and printing an
//! integer are a few lines each, so the only dependency is `zmij` (no_std, no dependencies of its
//! own): shortest round-trip float printing is not a few lines, and any other printer spells
//! some values differently (`1e21` against `1e+21`), which would break byte equality on a
//! percentile. It must stay the float printer of the `serde_json` the origin links.
//! A `serde_json` serializer in the core would pull `std`-leaning machinery into every wasm build
//! for the same bytes.
//!
//! Each writer appends to `out` and cannot fail; the answers are the views' fields in the API's
//! order, so a caller writes a whole answer into one buffer with one allocation.

use alloc::vec::Vec;

use crate::{
    EntryInfo, FriendEntry, FriendsBoard, Page, PlayerInterval, PlayerRank, RankedEntry, SegmentEntry,
    SegmentFriends, SegmentKey, SegmentPage, SegmentRank,
};

/// Appends `text` as a JSON string, escaped exactly as `serde_json` escapes it: `"` and `\`
/// with a backslash, `\b \f \n \r \t` by name, every other control character below U+0020 as
/// `\u00xx` (lowercase hex), and everything else, U+007F and non-ASCII included, as is.
/// O(length of `text`).
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut plain_from = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0c => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ],
            _ => continue,
        };
        // Runs of plain bytes are copied at once; a UTF-8 continuation byte is never below
        // 0x80, so slicing at an escaped ASCII byte never splits a character.
        out.extend_from_slice(&bytes[plain_from..i]);
        out.extend_from_slice(escape);
        plain_from = i + 1;
    }
    out.extend_from_slice(&bytes[plain_from..]);
    out.push(b'"');
}

/// Appends an unsigned integer in decimal, as `serde_json` prints it. O(digits).
pub fn write_u64(out: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends a signed integer in decimal, as `serde_json` prints it (`i64::MIN` included).
/// O(digits).
pub fn write_i64(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    write_u64(out, n.unsigned_abs());
}

/// Appends a float as `serde_json` prints it: the shortest text that reads back as the same
/// value (`zmij`), and `null` for NaN and the infinities. O(1).
pub fn write_f64(out: &mut Vec<u8>, x: f64) {
    if x.is_finite() {
        out.extend_from_slice(zmij::Buffer::new().format_finite(x).as_bytes());
    } else {
        out.extend_from_slice(b"null");
    }
}

/// The ms since the epoch that `jiff::Timestamp::from_millisecond` accepts: from
/// `-009999-01-02T01:59:59Z` to `9999-12-30T22:00:00Z`. A time outside prints as its raw number.
pub const RFC3339_RANGE_MS: core::ops::RangeInclusive<i64> = -377_705_023_201_000..=253_402_207_200_000;

/// Appends ms since the epoch as RFC 3339 in UTC, exactly as `jiff::Timestamp` prints it
/// (`2026-10-13T10:05:00Z`; fractional seconds only when non-zero, without trailing zeros; a
/// year before 0 as `-00YYYY`). A time outside [`RFC3339_RANGE_MS`] cannot come from a parsed
/// timestamp and prints as the decimal ms rather than failing a read. No quotes. O(1).
pub fn write_rfc3339(out: &mut Vec<u8>, ms: i64) {
    if !RFC3339_RANGE_MS.contains(&ms) {
        write_i64(out, ms);
        return;
    }
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    let (secs, millis) = (in_day / 1000, in_day % 1000);
    let digit = |n: i64| b'0' + n as u8;
    if year < 0 {
        out.extend_from_slice(b"-00");
    }
    let year = year.abs();
    out.extend_from_slice(&[
        digit(year / 1000),
        digit(year / 100 % 10),
        digit(year / 10 % 10),
        digit(year % 10),
        b'-',
        digit(month / 10),
        digit(month % 10),
        b'-',
        digit(day / 10),
        digit(day % 10),
        b'T',
        digit(secs / 36_000),
        digit(secs / 3600 % 10),
        b':',
        digit(secs / 600 % 6),
        digit(secs / 60 % 10),
        b':',
        digit(secs % 60 / 10),
        digit(secs % 10),
    ]);
    if millis != 0 {
        let fraction = [
            b'.',
            digit(millis / 100),
            digit(millis / 10 % 10),
            digit(millis % 10),
        ];
        let len = if millis % 10 != 0 {
            4
        } else if millis % 100 != 0 {
            3
        } else {
            2
        };
        out.extend_from_slice(&fraction[..len]);
    }
    out.push(b'Z');
}

/// The proleptic Gregorian `(year, month, day)` of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`). O(1).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Parses RFC 3339 as ms since the epoch: what [`write_rfc3339`] prints (`2026-10-13T10:05:00Z`,
/// `.25Z`), up to nanoseconds (truncated to ms, as the service keeps them), with `Z` or any
/// `+hh:mm`/`-hh:mm` offset, years 0000 to 9999. `None` for anything else. O(1).
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b'T' || b[10] == b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |range: core::ops::Range<usize>| -> Option<i64> {
        let digits = b.get(range)?;
        digits.iter().try_fold(0i64, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
        })
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let mut at = 19;
    let mut millis = 0;
    if b[at] == b'.' {
        let start = at + 1;
        at = start;
        while at < b.len() && b[at].is_ascii_digit() {
            at += 1;
        }
        let digits = at - start;
        if digits == 0 || digits > 9 {
            return None;
        }
        for i in 0..3 {
            millis = millis * 10
                + b.get(start + i)
                    .filter(|_| i < digits)
                    .map_or(0, |&d| i64::from(d - b'0'));
        }
    }
    let offset_minutes = match &b[at..] {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (hours, minutes) = (num(at + 1..at + 3)?, num(at + 4..at + 6)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            let offset = hours * 60 + minutes;
            if *sign == b'-' { -offset } else { offset }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    Some(((days * 24 + hour) * 60 + minute - offset_minutes) * 60_000 + second * 1000 + millis)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`,
/// the inverse of the core's `civil_from_days`). O(1).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let shifted_month = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Appends an RFC 3339 time as a JSON string (quoted). O(1).
fn write_time_str(out: &mut Vec<u8>, ms: i64) {
    out.push(b'"');
    write_rfc3339(out, ms);
    out.push(b'"');
}

/// Appends one ranked entry, `{"rank","player_id","value","achieved_at"}` and the extras that
/// are set, as the read API's entry view prints it. O(length of the id and extras).
pub fn write_entry(out: &mut Vec<u8>, entry: &RankedEntry<'_>) {
    write_ranked_entry(out, &[("rank", entry.rank)], entry);
}

/// Appends an entry whose ranks are `ranks` (name and value, in order) before its
/// `"player_id","value","achieved_at"` and extras. O(length of the id and extras).
fn write_ranked_entry(out: &mut Vec<u8>, ranks: &[(&str, u64)], entry: &RankedEntry<'_>) {
    out.push(b'{');
    for (i, (name, rank)) in ranks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, name);
        out.push(b':');
        write_u64(out, *rank);
    }
    out.extend_from_slice(b",\"player_id\":");
    write_str(out, entry.player);
    out.extend_from_slice(b",\"value\":");
    write_i64(out, entry.value);
    out.extend_from_slice(b",\"achieved_at\":");
    write_time_str(out, entry.achieved_at);
    write_info(out, &entry.info);
    out.push(b'}');
}

/// Appends an entry's extras that are set, each after a comma: `"display_name"`, `"country"`,
/// `"metadata"` (the object as sent) and, for a trusted audience only, `"anonymous": true`.
/// Nothing for an entry with none. O(their length).
pub fn write_info(out: &mut Vec<u8>, info: &EntryInfo<'_>) {
    if let Some(name) = info.display_name {
        out.extend_from_slice(b",\"display_name\":");
        write_str(out, name);
    }
    if let Some(country) = info.country {
        out.extend_from_slice(b",\"country\":");
        write_str(out, country);
    }
    if let Some(metadata) = info.metadata {
        // The origin let in only a JSON object (and snapshots are hash-checked), so it is
        // copied as it was sent.
        out.extend_from_slice(b",\"metadata\":");
        out.extend_from_slice(metadata.as_bytes());
    }
    if info.anonymous {
        out.extend_from_slice(b",\"anonymous\":true");
    }
}

/// Appends entries as a JSON array of [`write_entry`] objects. O(entries).
pub fn write_entries<'a>(out: &mut Vec<u8>, entries: impl IntoIterator<Item = RankedEntry<'a>>) {
    out.push(b'[');
    for (i, entry) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_entry(out, &entry);
    }
    out.push(b']');
}

/// The period instance an answer is about, as plain data, so the core needs no origin types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeriodFields<'a> {
    /// The period kind's wire name (`all_time`, `daily`, ...).
    pub kind: &'a str,
    /// The instance's key.
    pub key: &'a str,
    /// The instance's first ms, or `None` when unbounded.
    pub start_ms: Option<i64>,
    /// The instance's end (exclusive) in ms, or `None` when unbounded.
    pub end_ms: Option<i64>,
}

impl PeriodFields<'_> {
    /// Appends `"period","period_key","period_start","period_end"` as the read API's period
    /// view prints them (an unbounded end as `null`), followed by a comma, so that the
    /// answer's own fields come next. O(length of the key).
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"\"period\":");
        write_str(out, self.kind);
        out.extend_from_slice(b",\"period_key\":");
        write_str(out, self.key);
        for (name, ms) in [
            (&b",\"period_start\":"[..], self.start_ms),
            (&b",\"period_end\":"[..], self.end_ms),
        ] {
            out.extend_from_slice(name);
            match ms {
                None => out.extend_from_slice(b"null"),
                Some(ms) => write_time_str(out, ms),
            }
        }
        out.push(b',');
    }
}

/// Appends the whole rank answer, `{period fields, "board_version", "player_id", "rank",
/// "value", "achieved_at", "competition_rank", "dense_rank", "percentile", "total_players"}`.
/// O(length of the player id and the period key).
pub fn write_rank_answer(out: &mut Vec<u8>, period: &PeriodFields<'_>, found: &PlayerRank<'_>) {
    write_rank_fields(out, period, found, None);
}

/// A rank answer's fields, with `"segment"` after `"player_id"` and `"global_rank"` after
/// `"rank"` when it is counted within a segment. O(length of the ids).
fn write_rank_fields(
    out: &mut Vec<u8>,
    period: &PeriodFields<'_>,
    found: &PlayerRank<'_>,
    segment: Option<(&SegmentKey<'_>, u64)>,
) {
    let entry = &found.entry;
    open_player_answer(out, period, found.board_version, entry.player);
    if let Some((segment, _)) = segment {
        write_segment(out, segment);
    }
    out.extend_from_slice(b",\"rank\":");
    write_u64(out, entry.rank);
    if let Some((_, global_rank)) = segment {
        out.extend_from_slice(b",\"global_rank\":");
        write_u64(out, global_rank);
    }
    write_player_standing(out, entry.value, entry.achieved_at, &entry.info);
    out.extend_from_slice(b",\"competition_rank\":");
    write_u64(out, found.competition_rank);
    out.extend_from_slice(b",\"dense_rank\":");
    write_u64(out, found.dense_rank);
    out.extend_from_slice(b",\"percentile\":");
    write_f64(out, found.percentile);
    close_player_answer(out, found.total_players);
}

/// Appends the whole rank interval answer: the rank answer's fields in its order, with
/// `"rank"`, `"competition_rank"`, `"dense_rank"` and `"percentile"` null (the interval does not
/// know them) and `"rank_interval": {"low", "high"}` and `"approximate": true` after `"rank"`.
/// O(length of the player id and the period key).
pub fn write_interval_answer(out: &mut Vec<u8>, period: &PeriodFields<'_>, found: &PlayerInterval<'_>) {
    open_player_answer(out, period, found.board_version, found.player);
    out.extend_from_slice(b",\"rank\":null,\"rank_interval\":{\"low\":");
    write_u64(out, found.interval.low);
    out.extend_from_slice(b",\"high\":");
    write_u64(out, found.interval.high);
    out.extend_from_slice(b"},\"approximate\":true");
    write_player_standing(out, found.standing.value, found.standing.achieved_at, &found.info);
    out.extend_from_slice(b",\"competition_rank\":null,\"dense_rank\":null,\"percentile\":null");
    close_player_answer(out, found.total_players);
}

/// An answer's opening: `{period fields, "board_version"`.
fn open_answer(out: &mut Vec<u8>, period: &PeriodFields<'_>, board_version: u64) {
    out.push(b'{');
    period.write(out);
    out.extend_from_slice(b"\"board_version\":");
    write_u64(out, board_version);
}

/// A player answer's opening: `{period fields, "board_version", "player_id"`.
fn open_player_answer(out: &mut Vec<u8>, period: &PeriodFields<'_>, board_version: u64, player: &str) {
    open_answer(out, period, board_version);
    out.extend_from_slice(b",\"player_id\":");
    write_str(out, player);
}

/// A player answer's `, "value", "achieved_at"` and what the entry shows besides.
fn write_player_standing(out: &mut Vec<u8>, value: i64, achieved_at: i64, info: &EntryInfo<'_>) {
    out.extend_from_slice(b",\"value\":");
    write_i64(out, value);
    out.extend_from_slice(b",\"achieved_at\":");
    write_time_str(out, achieved_at);
    write_info(out, info);
}

/// A player answer's `, "total_players"}`.
fn close_player_answer(out: &mut Vec<u8>, total_players: u64) {
    out.extend_from_slice(b",\"total_players\":");
    write_u64(out, total_players);
    out.push(b'}');
}

/// Appends the whole nearby answer, `{period fields, "board_version", "entries": [...]}`.
/// O(entries).
pub fn write_nearby_answer<'a>(
    out: &mut Vec<u8>,
    period: &PeriodFields<'_>,
    board_version: u64,
    entries: impl IntoIterator<Item = RankedEntry<'a>>,
) {
    open_answer(out, period, board_version);
    out.extend_from_slice(b",\"entries\":");
    write_entries(out, entries);
    out.push(b'}');
}

/// Appends the whole top answer, `{period fields, "board_version", "total_players", "entries":
/// [...], "next_cursor"}`, `next_cursor` being the page's cursor as the wire carries it (encoded
/// and base64url'd by the caller, who knows the board instance) or `null` on the last page.
/// O(entries).
pub fn write_top_answer(
    out: &mut Vec<u8>,
    period: &PeriodFields<'_>,
    page: &Page<'_>,
    next_cursor: Option<&str>,
) {
    open_answer(out, period, page.board_version);
    out.extend_from_slice(b",\"total_players\":");
    write_u64(out, page.total_players);
    out.extend_from_slice(b",\"entries\":");
    write_entries(out, page.entries.iter().copied());
    out.extend_from_slice(b",\"next_cursor\":");
    match next_cursor {
        Some(cursor) => write_str(out, cursor),
        None => out.extend_from_slice(b"null"),
    }
    out.push(b'}');
}

/// Appends one friends-board entry, `{"rank","global_rank","player_id","value","achieved_at"}`.
/// O(length of the player id).
fn write_friend_entry(out: &mut Vec<u8>, entry: &FriendEntry<'_>, segment_rank: Option<u64>) {
    let ranked = RankedEntry {
        rank: entry.rank,
        player: entry.player,
        value: entry.value,
        achieved_at: entry.achieved_at,
        info: entry.info,
    };
    match segment_rank {
        None => write_ranked_entry(
            out,
            &[("rank", entry.rank), ("global_rank", entry.global_rank)],
            &ranked,
        ),
        Some(within) => write_ranked_entry(
            out,
            &[
                ("rank", entry.rank),
                ("segment_rank", within),
                ("global_rank", entry.global_rank),
            ],
            &ranked,
        ),
    }
}

/// Appends the whole friends answer (friends-of and rank-players), `{period fields,
/// "board_version", "entries": [...], "unranked": [...]}`. O(players).
pub fn write_friends_answer(out: &mut Vec<u8>, period: &PeriodFields<'_>, friends: &FriendsBoard<'_>) {
    open_answer(out, period, friends.board_version);
    write_friends_rest(out, friends, None);
}

/// Appends a friends answer's `,"entries": [...], "unranked": [...]}`, each entry with its
/// segment rank when `segment_ranks` has them. O(players).
fn write_friends_rest(out: &mut Vec<u8>, friends: &FriendsBoard<'_>, segment_ranks: Option<&[u64]>) {
    out.extend_from_slice(b",\"entries\":[");
    for (i, entry) in friends.entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_friend_entry(out, entry, segment_ranks.and_then(|r| r.get(i).copied()));
    }
    out.extend_from_slice(b"],\"unranked\":[");
    for (i, player) in friends.unranked.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, player);
    }
    out.extend_from_slice(b"]}");
}

/// Appends `,"segment":"dimension:value"`. O(their length).
fn write_segment(out: &mut Vec<u8>, segment: &SegmentKey<'_>) {
    out.extend_from_slice(b",\"segment\":");
    write_str(out, &alloc::format!("{}:{}", segment.dimension, segment.value));
}

/// Appends segment entries, each `{"rank","global_rank","player_id",...}`. O(entries).
pub fn write_segment_entries(out: &mut Vec<u8>, entries: &[SegmentEntry<'_>]) {
    out.push(b'[');
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_ranked_entry(
            out,
            &[("rank", e.entry.rank), ("global_rank", e.global_rank)],
            &e.entry,
        );
    }
    out.push(b']');
}

/// Appends the whole segment top answer: the top answer with `"segment"` after
/// `"board_version"`, `total_players` the segment's members and each entry's `"global_rank"`
/// after its `"rank"`. O(entries).
pub fn write_segment_top_answer(
    out: &mut Vec<u8>,
    period: &PeriodFields<'_>,
    segment: &SegmentKey<'_>,
    page: &SegmentPage<'_>,
    next_cursor: Option<&str>,
) {
    open_answer(out, period, page.board_version);
    write_segment(out, segment);
    out.extend_from_slice(b",\"total_players\":");
    write_u64(out, page.total_players);
    out.extend_from_slice(b",\"entries\":");
    write_segment_entries(out, &page.entries);
    out.extend_from_slice(b",\"next_cursor\":");
    match next_cursor {
        Some(cursor) => write_str(out, cursor),
        None => out.extend_from_slice(b"null"),
    }
    out.push(b'}');
}

/// Appends the whole segment rank answer: the rank answer counted within the segment, with
/// `"segment"` after `"player_id"` and `"global_rank"` after `"rank"`. O(length of the ids).
pub fn write_segment_rank_answer(
    out: &mut Vec<u8>,
    period: &PeriodFields<'_>,
    segment: &SegmentKey<'_>,
    found: &SegmentRank<'_>,
) {
    write_rank_fields(out, period, &found.within, Some((segment, found.global_rank)));
}

/// Appends the whole segment nearby answer, the nearby answer with `"segment"` and each
/// entry's `"global_rank"`. O(entries).
pub fn write_segment_nearby_answer(
    out: &mut Vec<u8>,
    period: &PeriodFields<'_>,
    segment: &SegmentKey<'_>,
    board_version: u64,
    entries: &[SegmentEntry<'_>],
) {
    open_answer(out, period, board_version);
    write_segment(out, segment);
    out.extend_from_slice(b",\"entries\":");
    write_segment_entries(out, entries);
    out.push(b'}');
}

/// Appends the whole segment friends answer: the friends answer with `"segment"` and each
/// entry's `"segment_rank"` between its `"rank"` (among the asked) and `"global_rank"`.
/// O(players).
pub fn write_segment_friends_answer(
    out: &mut Vec<u8>,
    period: &PeriodFields<'_>,
    segment: &SegmentKey<'_>,
    friends: &SegmentFriends<'_>,
) {
    open_answer(out, period, friends.board.board_version);
    write_segment(out, segment);
    write_friends_rest(out, &friends.board, Some(&friends.segment_ranks));
}

#[cfg(test)]
mod tests {
    use alloc::string::String;
    use alloc::vec;

    /// Every time the core prints, from year 0 to 9999 and at every fraction length, reads back
    /// to the same ms.
    #[test]
    fn reads_back_what_the_core_prints() {
        let mut ms: i64 = -62_167_219_200_000;
        let mut step: i64 = 1;
        while ms < 253_402_207_200_000 {
            let mut text = Vec::new();
            write_rfc3339(&mut text, ms);
            let text = alloc::string::String::from_utf8(text).unwrap();
            assert_eq!(parse_rfc3339(&text), Some(ms), "{text}");
            ms += step;
            step = step * 3 + 7;
        }
        assert_eq!(
            parse_rfc3339("2026-10-13T10:05:00.123456789Z"),
            Some(1_791_885_900_123)
        );
        assert_eq!(
            parse_rfc3339("2026-10-13T10:05:00+00:00"),
            Some(1_791_885_900_000)
        );
        assert_eq!(
            parse_rfc3339("2026-10-13T12:35:00.5+02:30"),
            Some(1_791_885_900_500)
        );
        assert_eq!(
            parse_rfc3339("2026-10-13T00:05:00-10:00"),
            Some(1_791_885_900_000)
        );
        for bad in [
            "2026-02-30T00:00:00Z",
            "2026-10-13 10:05:00Z",
            "2026-10-13T10:05:00",
            "2026-10-13T10:05:00.Z",
            "2026-10-13T10:05:00+24:00",
            "2026-10-13T10:05:00+0200",
            "x",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    use super::*;

    fn text(write: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        write(&mut out);
        String::from_utf8(out).unwrap()
    }

    /// Every control character, the quote, the backslash, DEL and non-ASCII text are escaped
    /// exactly as serde_json escapes them, alone and inside plain runs.
    #[test]
    fn strings_escape_as_serde_json_does() {
        let mut probes: Vec<String> = (0u32..=0x7f)
            .map(|c| String::from(char::from_u32(c).unwrap()))
            .collect();
        probes.extend(
            [
                "",
                "plain",
                "quote\"d",
                "back\\slash",
                "ünï-cödé",
                "日本語\u{1}x",
                "emoji 🏆 and \u{2028}\u{2029}",
                "a\u{0}b\u{1f}c\u{7f}d\u{80}e\u{ffff}",
                "\"\\\n\r\t\u{8}\u{c}",
            ]
            .map(String::from),
        );
        for probe in probes {
            assert_eq!(
                text(|out| write_str(out, &probe)),
                serde_json::to_string(&probe).unwrap(),
                "{probe:?}"
            );
        }
    }

    /// Integers at their edges and floats (including non-finite ones) print as serde_json
    /// prints them.
    #[test]
    fn numbers_print_as_serde_json_does() {
        for n in [
            0,
            1,
            9,
            10,
            99,
            100,
            12_345,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            assert_eq!(text(|out| write_u64(out, n)), serde_json::to_string(&n).unwrap());
        }
        for n in [0, 1, -1, -9, -10, 1_000, i64::MIN, i64::MIN + 1, i64::MAX] {
            assert_eq!(text(|out| write_i64(out, n)), serde_json::to_string(&n).unwrap());
        }
        let floats = [
            0.0,
            -0.0,
            100.0,
            50.0,
            33.333_333_333_333_336,
            1e-7,
            1e21,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for x in floats {
            assert_eq!(
                text(|out| write_f64(out, x)),
                serde_json::to_string(&x).unwrap(),
                "{x}"
            );
        }
    }

    /// RFC 3339 at the edges: the epoch, negative times, leap days, century rules, year ends,
    /// fractions without trailing zeros, years before 0 and times outside jiff's range. The
    /// origin's test compares this writer with jiff itself over a wide random sample.
    #[test]
    fn rfc3339_at_the_edges() {
        let cases = [
            (0, "1970-01-01T00:00:00Z"),
            (1, "1970-01-01T00:00:00.001Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
            (-1_000, "1969-12-31T23:59:59Z"),
            (-86_400_000, "1969-12-31T00:00:00Z"),
            (250, "1970-01-01T00:00:00.25Z"),
            (100, "1970-01-01T00:00:00.1Z"),
            (951_782_400_000, "2000-02-29T00:00:00Z"),
            (1_709_251_199_990, "2024-02-29T23:59:59.99Z"),
            (1_709_251_200_000, "2024-03-01T00:00:00Z"),
            (-2_203_977_600_000, "1900-02-28T00:00:00Z"),
            (-2_203_891_200_000, "1900-03-01T00:00:00Z"),
            (1_767_225_599_999, "2025-12-31T23:59:59.999Z"),
            (1_767_225_600_000, "2026-01-01T00:00:00Z"),
            (-62_167_219_200_000, "0000-01-01T00:00:00Z"),
            (-62_167_219_200_001, "-000001-12-31T23:59:59.999Z"),
            (*RFC3339_RANGE_MS.start(), "-009999-01-02T01:59:59Z"),
            (*RFC3339_RANGE_MS.end(), "9999-12-30T22:00:00Z"),
            (RFC3339_RANGE_MS.start() - 1, "-377705023201001"),
            (RFC3339_RANGE_MS.end() + 1, "253402207200001"),
            (i64::MIN, "-9223372036854775808"),
            (i64::MAX, "9223372036854775807"),
        ];
        for (ms, expected) in cases {
            assert_eq!(text(|out| write_rfc3339(out, ms)), expected, "{ms}");
        }
    }

    /// An entry, the period fields and the rank and nearby answers, against bytes written by
    /// hand from the API's documented shapes.
    #[test]
    fn answers_match_hand_written_bytes() {
        let entry = RankedEntry {
            info: Default::default(),
            rank: 3,
            player: "p-\"ava\"",
            value: -42,
            achieved_at: 1_760_313_600_125,
        };
        assert_eq!(
            text(|out| write_entry(out, &entry)),
            r#"{"rank":3,"player_id":"p-\"ava\"","value":-42,"achieved_at":"2025-10-13T00:00:00.125Z"}"#
        );
        let daily = PeriodFields {
            kind: "daily",
            key: "2026-10-13",
            start_ms: Some(1_792_800_000_000),
            end_ms: Some(1_792_886_400_000),
        };
        let all_time = PeriodFields {
            kind: "all_time",
            key: "all",
            start_ms: None,
            end_ms: None,
        };
        assert_eq!(
            text(|out| all_time.write(out)),
            r#""period":"all_time","period_key":"all","period_start":null,"period_end":null,"#
        );
        let found = PlayerRank {
            board_version: 17,
            entry,
            competition_rank: 2,
            dense_rank: 2,
            percentile: 62.5,
            total_players: 8,
        };
        assert_eq!(
            text(|out| write_rank_answer(out, &daily, &found)),
            concat!(
                r#"{"period":"daily","period_key":"2026-10-13","#,
                r#""period_start":"2026-10-24T00:00:00Z","period_end":"2026-10-25T00:00:00Z","#,
                r#""board_version":17,"player_id":"p-\"ava\"","rank":3,"value":-42,"#,
                r#""achieved_at":"2025-10-13T00:00:00.125Z","competition_rank":2,"dense_rank":2,"#,
                r#""percentile":62.5,"total_players":8}"#
            )
        );
        let next = RankedEntry {
            info: Default::default(),
            rank: 4,
            player: "b",
            value: -50,
            achieved_at: 0,
        };
        assert_eq!(
            text(|out| write_nearby_answer(out, &all_time, 9, vec![entry, next])),
            concat!(
                r#"{"period":"all_time","period_key":"all","period_start":null,"period_end":null,"#,
                r#""board_version":9,"entries":[{"rank":3,"player_id":"p-\"ava\"","value":-42,"#,
                r#""achieved_at":"2025-10-13T00:00:00.125Z"},"#,
                r#"{"rank":4,"player_id":"b","value":-50,"achieved_at":"1970-01-01T00:00:00Z"}]}"#
            )
        );
        assert_eq!(
            text(|out| write_nearby_answer(out, &all_time, 0, [])),
            r#"{"period":"all_time","period_key":"all","period_start":null,"period_end":null,"board_version":0,"entries":[]}"#
        );
    }

    /// The top answer, with a next cursor and on the last page, and the friends answer, with
    /// entries and unranked players and empty, against bytes written by hand from the API's
    /// documented shapes.
    #[test]
    fn top_and_friends_answers_match_hand_written_bytes() {
        let weekly = PeriodFields {
            kind: "weekly",
            key: "2026-W42",
            start_ms: Some(1_792_800_000_000),
            end_ms: Some(1_793_404_800_000),
        };
        let all_time = PeriodFields {
            kind: "all_time",
            key: "all",
            start_ms: None,
            end_ms: None,
        };
        let page = Page {
            board_version: 12,
            total_players: 30,
            entries: vec![
                RankedEntry {
                    info: Default::default(),
                    rank: 11,
                    player: "a\\b",
                    value: 7,
                    achieved_at: 1_500,
                },
                RankedEntry {
                    info: Default::default(),
                    rank: 12,
                    player: "c",
                    value: -7,
                    achieved_at: 0,
                },
            ],
            next_cursor: None,
        };
        assert_eq!(
            text(|out| write_top_answer(out, &weekly, &page, Some("AgEC-_x"))),
            concat!(
                r#"{"period":"weekly","period_key":"2026-W42","#,
                r#""period_start":"2026-10-24T00:00:00Z","period_end":"2026-10-31T00:00:00Z","#,
                r#""board_version":12,"total_players":30,"entries":["#,
                r#"{"rank":11,"player_id":"a\\b","value":7,"achieved_at":"1970-01-01T00:00:01.5Z"},"#,
                r#"{"rank":12,"player_id":"c","value":-7,"achieved_at":"1970-01-01T00:00:00Z"}],"#,
                r#""next_cursor":"AgEC-_x"}"#
            )
        );
        let last = Page {
            board_version: 0,
            total_players: 0,
            entries: vec![],
            next_cursor: None,
        };
        assert_eq!(
            text(|out| write_top_answer(out, &all_time, &last, None)),
            concat!(
                r#"{"period":"all_time","period_key":"all","period_start":null,"period_end":null,"#,
                r#""board_version":0,"total_players":0,"entries":[],"next_cursor":null}"#
            )
        );
        let friends = FriendsBoard {
            board_version: 5,
            entries: vec![
                FriendEntry {
                    info: Default::default(),
                    rank: 1,
                    global_rank: 4,
                    player: "fr\"ed",
                    value: 90,
                    achieved_at: 1_760_313_600_010,
                },
                FriendEntry {
                    info: Default::default(),
                    rank: 2,
                    global_rank: 9,
                    player: "zoe",
                    value: 80,
                    achieved_at: 1_760_313_600_000,
                },
            ],
            unranked: vec!["new\tbie", "x"],
        };
        assert_eq!(
            text(|out| write_friends_answer(out, &all_time, &friends)),
            concat!(
                r#"{"period":"all_time","period_key":"all","period_start":null,"period_end":null,"#,
                r#""board_version":5,"entries":["#,
                r#"{"rank":1,"global_rank":4,"player_id":"fr\"ed","value":90,"#,
                r#""achieved_at":"2025-10-13T00:00:00.01Z"},"#,
                r#"{"rank":2,"global_rank":9,"player_id":"zoe","value":80,"#,
                r#""achieved_at":"2025-10-13T00:00:00Z"}],"unranked":["new\tbie","x"]}"#
            )
        );
        let nobody = FriendsBoard {
            board_version: 0,
            entries: vec![],
            unranked: vec![],
        };
        assert_eq!(
            text(|out| write_friends_answer(out, &weekly, &nobody)),
            concat!(
                r#"{"period":"weekly","period_key":"2026-W42","#,
                r#""period_start":"2026-10-24T00:00:00Z","period_end":"2026-10-31T00:00:00Z","#,
                r#""board_version":0,"entries":[],"unranked":[]}"#
            )
        );
    }
}
