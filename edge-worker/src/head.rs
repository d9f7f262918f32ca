//! A board instance's head, as the origin's `GET /v1/snapshots/.../head` answers it: which
//! manifest is current, its version and period, and when it was published.

use serde::Deserialize;
use standings_core::ChunkHash;
use standings_core::json::PeriodFields;

/// A parsed head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// The period kind (`all_time`, `daily`, ...).
    pub period: String,
    /// The period instance's key.
    pub period_key: String,
    /// Its first ms, `None` when unbounded.
    pub period_start_ms: Option<i64>,
    /// Its end (exclusive) in ms, `None` when unbounded.
    pub period_end_ms: Option<i64>,
    /// The version the manifest was taken at.
    pub board_version: u64,
    /// The manifest's hash.
    pub manifest: ChunkHash,
    /// When it was published, ms since the epoch.
    pub published_at_ms: i64,
    /// How often the origin republishes a changing board.
    pub interval_ms: u64,
}

#[derive(Deserialize)]
struct HeadWire {
    period: String,
    period_key: String,
    period_start: Option<String>,
    period_end: Option<String>,
    board_version: u64,
    manifest: String,
    published_at: String,
    interval_ms: u64,
}

impl Head {
    /// Parses the origin's head JSON; `None` when it is not one. O(length).
    pub fn parse(bytes: &[u8]) -> Option<Head> {
        let wire: HeadWire = serde_json::from_slice(bytes).ok()?;
        let time = |t: &Option<String>| match t {
            None => Some(None),
            Some(t) => parse_rfc3339(t).map(Some),
        };
        Some(Head {
            period_start_ms: time(&wire.period_start)?,
            period_end_ms: time(&wire.period_end)?,
            published_at_ms: parse_rfc3339(&wire.published_at)?,
            manifest: standings_core::BoardDigest::parse_hex(&wire.manifest)?,
            period: wire.period,
            period_key: wire.period_key,
            board_version: wire.board_version,
            interval_ms: wire.interval_ms,
        })
    }

    /// The period fields every read answers with. O(1).
    pub fn period_fields(&self) -> PeriodFields<'_> {
        PeriodFields {
            kind: &self.period,
            key: &self.period_key,
            start_ms: self.period_start_ms,
            end_ms: self.period_end_ms,
        }
    }
}

/// The `max-age` of a `Cache-Control` value, in seconds. O(length).
pub fn max_age_seconds(cache_control: &str) -> Option<u64> {
    cache_control
        .split(',')
        .filter_map(|d| d.trim().strip_prefix("max-age="))
        .find_map(|v| v.trim().parse().ok())
}

/// Parses RFC 3339 in UTC as the origin prints it (`2026-10-13T10:05:00Z`, `.25Z`, up to
/// nanoseconds, truncated to ms; also `+00:00`), years 0000 to 9999. O(1).
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
    match &b[at..] {
        b"Z" | b"z" | b"+00:00" => {}
        _ => return None,
    }
    let days = days_from_civil(year, month, day);
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis)
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

#[cfg(test)]
mod tests {
    use standings_core::json::write_rfc3339;

    use super::*;

    /// Every time the core prints, from year 0 to 9999 and at every fraction length, reads back
    /// to the same ms.
    #[test]
    fn reads_back_what_the_core_prints() {
        let mut ms: i64 = -62_167_219_200_000;
        let mut step: i64 = 1;
        while ms < 253_402_207_200_000 {
            let mut text = Vec::new();
            write_rfc3339(&mut text, ms);
            let text = String::from_utf8(text).unwrap();
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
        for bad in [
            "2026-02-30T00:00:00Z",
            "2026-10-13 10:05:00Z",
            "2026-10-13T10:05:00",
            "2026-10-13T10:05:00.Z",
            "x",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    /// A head reads with its times, hash and period; a malformed one does not.
    #[test]
    fn heads_parse() {
        let hash = "ab".repeat(32);
        let json = format!(
            r#"{{"period":"daily","period_key":"2026-10-13","period_start":"2026-10-13T00:00:00Z","period_end":"2026-10-14T00:00:00Z","board_version":7,"manifest":"{hash}","published_at":"2026-10-13T10:05:00.5Z","interval_ms":1000}}"#
        );
        let head = Head::parse(json.as_bytes()).unwrap();
        assert_eq!(head.manifest.to_string(), hash);
        assert_eq!(head.board_version, 7);
        assert_eq!(head.published_at_ms, 1_791_885_900_500);
        assert_eq!(head.period_fields().start_ms, Some(1_791_849_600_000));
        assert_eq!(Head::parse(json.replace(&hash, "AB").as_bytes()), None);
        assert_eq!(max_age_seconds("public, max-age=1"), Some(1));
        assert_eq!(max_age_seconds("no-store"), None);
    }
}
