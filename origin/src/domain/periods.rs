//! The period calendar of period leaderboards: which day, ISO week and month an event falls in, in
//! the board's time zone, and when each of those periods closes.
//!
//! An event is routed by its `achieved_at` alone, never by when it arrived, so the same events give
//! the same period boards in any order. A period is the half-open interval of instants
//! `[start_ms, end_ms)`. Every bound is the *first instant of a local date*: local midnight, or the
//! end of a DST gap that swallows midnight. A day therefore lasts from one local midnight to the
//! next whatever its length (23 or 25 hours on DST days), an ISO week from Monday to Monday and a
//! month from the 1st to the 1st, and consecutive periods of a kind tile the time line with neither
//! gaps nor overlaps. A period closes `grace` after its end. Nothing here reads a clock: `now` is a
//! parameter, as in `core`.
//!
//! Time zones come from the IANA database bundled into the binary (`jiff`'s `tzdb-bundle-always`),
//! so results do not depend on the machine's `/usr/share/zoneinfo`.

use std::fmt;

use jiff::civil::{Date, ISOWeekDate, Weekday};
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp};

/// What is kept of a closed period that left memory: its board version and ranked entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeriodSnapshot {
    /// The instance's version when it left.
    pub(crate) board_version: i64,
    /// Its entries, by rank.
    pub(crate) entries: Vec<crate::domain::RankedEntry>,
}

/// The time zone of a board that names none.
pub(crate) const DEFAULT_TIMEZONE: &str = "UTC";

/// The grace of a board that names none: how long after a period ends it still takes late events.
pub(crate) const DEFAULT_GRACE_SECONDS: i64 = 300;

/// The longest grace a board may ask for (31 days); anything longer is a configuration mistake.
pub(crate) const MAX_GRACE_SECONDS: i64 = 31 * 86_400;

/// A kind of period a board can keep a leaderboard for.
///
/// The declaration order is the canonical order, used by [`Calendar::kinds`] and
/// [`Calendar::periods_of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PeriodKind {
    /// One period that never ends (key `all_time`).
    AllTime,
    /// Local days, midnight to midnight (key `2026-10-13`).
    Daily,
    /// ISO weeks, Monday midnight to Monday midnight (key `2026-W42`, by ISO week-year).
    Weekly,
    /// Calendar months, from the 1st to the 1st (key `2026-10`).
    Monthly,
}

impl PeriodKind {
    /// Every kind, in canonical order.
    pub(crate) const ALL: [PeriodKind; 4] = [
        PeriodKind::AllTime,
        PeriodKind::Daily,
        PeriodKind::Weekly,
        PeriodKind::Monthly,
    ];

    /// The wire name: `all_time`, `daily`, `weekly` or `monthly`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PeriodKind::AllTime => "all_time",
            PeriodKind::Daily => "daily",
            PeriodKind::Weekly => "weekly",
            PeriodKind::Monthly => "monthly",
        }
    }

    /// The kind with this exact wire name, if any (names are case-sensitive).
    pub(crate) fn parse(name: &str) -> Option<PeriodKind> {
        PeriodKind::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// An example key, for error messages.
    fn example_key(self) -> &'static str {
        match self {
            PeriodKind::AllTime => ALL_TIME_KEY,
            PeriodKind::Daily => "2026-10-13",
            PeriodKind::Weekly => "2026-W42",
            PeriodKind::Monthly => "2026-10",
        }
    }
}

impl fmt::Display for PeriodKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The key of the one all-time period.
const ALL_TIME_KEY: &str = "all_time";

/// One period instance: a given day, week or month, or all time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Period {
    /// Which kind of period this is.
    pub(crate) kind: PeriodKind,
    /// Its name, unique within the kind: `all_time`, `2026-10-13`, `2026-W42` or `2026-10`. Years
    /// outside 0000..=9999 are written `-002026`, as ISO 8601 expanded years.
    pub key: String,
    /// The first instant in it, in ms since the Unix epoch; `None` for all time.
    pub(crate) start_ms: Option<i64>,
    /// The first instant after it (the start of the next one), in ms since the Unix epoch; `None`
    /// for all time.
    pub(crate) end_ms: Option<i64>,
}

impl Period {
    /// The one all-time period.
    pub(crate) fn all_time() -> Period {
        Period {
            kind: PeriodKind::AllTime,
            key: ALL_TIME_KEY.to_owned(),
            start_ms: None,
            end_ms: None,
        }
    }

    /// The period as the plain data the core's encoder prints, so the origin's answers, its live
    /// messages and the edge worker's answers are written by the same code. O(1).
    pub(crate) fn fields(&self) -> standings_core::json::PeriodFields<'_> {
        standings_core::json::PeriodFields {
            kind: self.kind.as_str(),
            key: &self.key,
            start_ms: self.start_ms,
            end_ms: self.end_ms,
        }
    }

    /// Whether the instant `at_ms` lies in `[start_ms, end_ms)`; a missing bound is unbounded.
    #[cfg(test)]
    pub(crate) fn contains(&self, at_ms: i64) -> bool {
        self.start_ms.is_none_or(|start| start <= at_ms) && self.end_ms.is_none_or(|end| at_ms < end)
    }
}

/// A board's validated period calendar: which kinds of period it keeps, in which time zone, and
/// how long after its end a period still takes late events.
#[derive(Clone, Debug)]
pub struct Calendar {
    /// Distinct, in canonical order, never empty.
    kinds: Vec<PeriodKind>,
    time_zone: TimeZone,
    /// The canonical IANA name (`America/New_York` even when configured as `america/new_york`).
    timezone_name: String,
    /// In `0..=MAX_GRACE_SECONDS * 1000`.
    grace_ms: i64,
}

/// Two calendars are equal when they route and close every event alike: same kinds, same zone
/// (compared by canonical IANA name) and same grace.
impl PartialEq for Calendar {
    fn eq(&self, other: &Calendar) -> bool {
        self.kinds == other.kinds
            && self.timezone_name == other.timezone_name
            && self.grace_ms == other.grace_ms
    }
}

impl Eq for Calendar {}

/// The calendar of a board that configures none: all time only, in UTC, with the default grace.
impl Default for Calendar {
    fn default() -> Calendar {
        Calendar {
            kinds: vec![PeriodKind::AllTime],
            time_zone: TimeZone::UTC,
            timezone_name: DEFAULT_TIMEZONE.to_owned(),
            grace_ms: DEFAULT_GRACE_SECONDS * 1000,
        }
    }
}

impl Calendar {
    /// Validates a board's `periods`, `timezone` (an IANA name, matched without regard to ASCII
    /// case) and `grace_seconds`. The kinds are kept in canonical order whatever order they are
    /// listed in.
    ///
    /// Errors name the offending value: an empty list, an unknown or repeated period name, a time
    /// zone the bundled IANA database does not know, or a grace that is negative or longer than
    /// [`MAX_GRACE_SECONDS`].
    ///
    /// Cost: one lookup in the bundled database, which parses the zone's rules; build a calendar
    /// once per board configuration, not per event.
    pub(crate) fn new(
        periods: &[String],
        timezone: &str,
        grace_seconds: i64,
    ) -> Result<Calendar, PeriodError> {
        if periods.is_empty() {
            return Err(PeriodError::NoPeriods);
        }
        let mut kinds = Vec::with_capacity(periods.len());
        for name in periods {
            let kind = PeriodKind::parse(name).ok_or_else(|| PeriodError::UnknownPeriod(name.clone()))?;
            if kinds.contains(&kind) {
                return Err(PeriodError::RepeatedPeriod(name.clone()));
            }
            kinds.push(kind);
        }
        kinds.sort_unstable();

        let unknown_zone = |source| PeriodError::UnknownZone {
            name: timezone.to_string(),
            source,
        };
        let time_zone = TimeZone::get(timezone).map_err(|e| unknown_zone(Some(e)))?;
        // `Etc/Unknown` is found, but it is jiff's placeholder for a zone it could not determine,
        // not a real zone, and it has no IANA name; nothing else in the database lacks one.
        let timezone_name = time_zone
            .iana_name()
            .ok_or_else(|| unknown_zone(None))?
            .to_owned();

        if grace_seconds < 0 {
            return Err(PeriodError::NegativeGrace(grace_seconds));
        }
        if grace_seconds > MAX_GRACE_SECONDS {
            return Err(PeriodError::GraceTooLong(grace_seconds));
        }
        Ok(Calendar {
            kinds,
            time_zone,
            timezone_name,
            grace_ms: grace_seconds * 1000,
        })
    }

    /// The kinds of period this board keeps: distinct, in canonical order, never empty.
    pub(crate) fn kinds(&self) -> &[PeriodKind] {
        &self.kinds
    }

    /// The time zone whose local dates bound the periods.
    #[cfg(test)]
    pub(crate) fn time_zone(&self) -> &TimeZone {
        &self.time_zone
    }

    /// The canonical IANA name of the time zone (`America/New_York`, whatever case it was
    /// configured in).
    #[cfg(test)]
    pub(crate) fn timezone_name(&self) -> &str {
        &self.timezone_name
    }

    /// How long after its end a period still takes late events, in ms.
    #[cfg(test)]
    pub(crate) fn grace_ms(&self) -> i64 {
        self.grace_ms
    }

    /// The period of `kind` that the instant `at_ms` (ms since the Unix epoch, normally an event's
    /// `achieved_at`) falls in. `kind` need not be one this board keeps.
    ///
    /// Errors only when `at_ms`, or a bound of its period, is outside the range jiff represents
    /// (about years -9999 to 9999); `AllTime` never errors. Cost: O(log t) for a zone with t
    /// transitions (a few binary searches), and one small allocation for the key.
    pub(crate) fn period_of(&self, kind: PeriodKind, at_ms: i64) -> Result<Period, PeriodError> {
        if kind == PeriodKind::AllTime {
            return Ok(Period::all_time());
        }
        let at = Timestamp::from_millisecond(at_ms).map_err(|source| PeriodError::OutOfRange {
            what: format!("timestamp {at_ms} ms"),
            source,
        })?;
        let local_date = self.time_zone.to_datetime(at).date();
        let mut first = first_date_of(kind, local_date)?;
        let mut period = self.period_starting(kind, first)?;
        // Usually the period of the instant's local date contains it. It does not when a DST fold
        // straddles midnight: St. John's, Newfoundland, fell back from 00:01 to 23:01 every autumn
        // from 1987 to 2010, so the repeated 23:01-00:00 carries yesterday's date but comes after
        // today's first midnight. By the rule "a period runs from its first instant to the next
        // one's", that hour belongs to today: step to the neighbouring period. One step suffices in
        // every zone of the bundled database, even for the 24-hour fold of Alaska's 1867 move
        // across the date line (a test sweeps every transition of every zone); the bound only
        // stops the loop.
        for _ in 0..2 {
            first = match (period.start_ms, period.end_ms) {
                (_, Some(end)) if at_ms >= end => next_first_date(kind, first)?,
                (Some(start), _) if at_ms < start => previous_first_date(kind, first)?,
                _ => break,
            };
            period = self.period_starting(kind, first)?;
        }
        Ok(period)
    }

    /// The period of each kind this board keeps that the instant `at_ms` falls in, in canonical
    /// order: the periods an event with this `achieved_at` counts towards.
    ///
    /// A kind whose period is outside jiff's range (only within weeks of its ends, years -9999 and
    /// 9999) is left out rather than failing the event; callers that must know use
    /// [`Calendar::period_of`]. Cost: one [`Calendar::period_of`] per kind.
    pub(crate) fn periods_of(&self, at_ms: i64) -> Vec<Period> {
        self.kinds
            .iter()
            .filter_map(|&kind| self.period_of(kind, at_ms).ok())
            .collect()
    }

    /// When `period` stops taking late events: its end plus the grace, in ms since the Unix epoch;
    /// `None` for a period without an end (all time). O(1).
    pub(crate) fn closes_at(&self, period: &Period) -> Option<i64> {
        // Saturating: `Period`'s fields are public, so `end_ms` may be anything.
        period.end_ms.map(|end| end.saturating_add(self.grace_ms))
    }

    /// Whether `period` is closed at `now_ms`: `now_ms >= end + grace`. All time never closes. O(1).
    pub(crate) fn is_closed(&self, period: &Period, now_ms: i64) -> bool {
        self.closes_at(period)
            .is_some_and(|closes_at| now_ms >= closes_at)
    }

    /// The period of `kind` named `key`, for reading a named period. Only the canonical form that
    /// [`Calendar::period_of`] produces is accepted (`2026-10-13`, `2026-W42`, `2026-10`,
    /// `all_time`); anything else, including dates that do not exist such as `2026-02-30` or
    /// `2026-W54`, is an error naming the key. Cost: as [`Calendar::period_of`].
    pub(crate) fn parse_key(&self, kind: PeriodKind, key: &str) -> Result<Period, PeriodError> {
        let malformed = || PeriodError::MalformedKey {
            key: key.to_string(),
            kind,
        };
        if kind == PeriodKind::AllTime {
            return if key == ALL_TIME_KEY {
                Ok(Period::all_time())
            } else {
                Err(malformed())
            };
        }
        let first = period_first_date(kind, key).map_err(|_| malformed())?;
        let period = self.period_starting(kind, first)?;
        // Parsing takes the year -000000 for 0000; requiring the key to come back unchanged keeps
        // exactly one name per period.
        if period.key != key {
            return Err(malformed());
        }
        Ok(period)
    }

    /// The period of `kind` (not `AllTime`) whose first local date is `first`.
    fn period_starting(&self, kind: PeriodKind, first: Date) -> Result<Period, PeriodError> {
        let next = next_first_date(kind, first)?;
        Ok(Period {
            kind,
            key: key_of(kind, first),
            start_ms: Some(self.first_instant_of(first)?),
            end_ms: Some(self.first_instant_of(next)?),
        })
    }

    /// The first instant of the local date `date`, in ms since the Unix epoch: local midnight, or
    /// when a DST gap swallows midnight, the end of the gap; when midnight happens twice, the
    /// first one. (That is jiff's "compatible" disambiguation.)
    fn first_instant_of(&self, date: Date) -> Result<i64, PeriodError> {
        self.time_zone
            .to_timestamp(date.to_datetime(jiff::civil::Time::midnight()))
            .map(|ts| ts.as_millisecond())
            .map_err(|source| PeriodError::OutOfRange {
                what: format!("the start of {date}"),
                source,
            })
    }
}

/// The first local date of the period of `kind` that contains the local date `date`.
fn first_date_of(kind: PeriodKind, date: Date) -> Result<Date, PeriodError> {
    match kind {
        PeriodKind::AllTime | PeriodKind::Daily => Ok(date),
        PeriodKind::Weekly => date
            .checked_sub(Span::new().days(date.weekday().to_monday_zero_offset()))
            .map_err(|source| out_of_range(date, source)),
        PeriodKind::Monthly => Ok(date.first_of_month()),
    }
}

/// The first local date of the period after the one that starts on `first`.
fn next_first_date(kind: PeriodKind, first: Date) -> Result<Date, PeriodError> {
    match kind {
        PeriodKind::AllTime | PeriodKind::Daily => first.tomorrow(),
        PeriodKind::Weekly => first.checked_add(Span::new().days(7)),
        PeriodKind::Monthly => first.last_of_month().tomorrow(),
    }
    .map_err(|source| out_of_range(first, source))
}

/// The first local date of the period before the one that starts on `first`.
fn previous_first_date(kind: PeriodKind, first: Date) -> Result<Date, PeriodError> {
    match kind {
        PeriodKind::AllTime | PeriodKind::Daily => first.yesterday(),
        PeriodKind::Weekly => first.checked_sub(Span::new().days(7)),
        PeriodKind::Monthly => first.yesterday().map(Date::first_of_month),
    }
    .map_err(|source| out_of_range(first, source))
}

fn out_of_range(date: Date, source: jiff::Error) -> PeriodError {
    PeriodError::OutOfRange {
        what: format!("the period around {date}"),
        source,
    }
}

/// Why a calendar cannot be made or a period cannot be named; the words are the API's, and a
/// date out of jiff's range keeps jiff's error beneath them.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PeriodError {
    /// A definition without periods.
    #[error("periods must list at least one of all_time, daily, weekly, monthly")]
    NoPeriods,
    /// A period name that is not a kind.
    #[error("unknown period {0:?}: expected one of all_time, daily, weekly, monthly")]
    UnknownPeriod(String),
    /// A period listed twice.
    #[error("period {0:?} is listed more than once")]
    RepeatedPeriod(String),
    /// A time zone the bundled IANA database does not know.
    #[error("unknown time zone {name:?}: expected an IANA name like \"Europe/Berlin\"")]
    UnknownZone {
        /// The name given.
        name: String,
        /// jiff's error, when it gave one.
        #[source]
        source: Option<jiff::Error>,
    },
    /// A negative grace.
    #[error("grace_seconds must not be negative, got {0}")]
    NegativeGrace(i64),
    /// A grace longer than [`MAX_GRACE_SECONDS`].
    #[error("grace_seconds must be at most {MAX_GRACE_SECONDS} (31 days), got {0}")]
    GraceTooLong(i64),
    /// An instant or a period bound outside the years jiff represents.
    #[error("{what} is outside the supported range (years -9999 to 9999)")]
    OutOfRange {
        /// What is out of range, in words.
        what: String,
        /// jiff's error.
        #[source]
        source: jiff::Error,
    },
    /// A period key not in its kind's canonical form.
    #[error("{key:?} is not a {kind} period key (expected one like {:?})", kind.example_key())]
    MalformedKey {
        /// The key given.
        key: String,
        /// The kind it was read as.
        kind: PeriodKind,
    },
}

/// The key of the period of `kind` whose first local date is `first`.
fn key_of(kind: PeriodKind, first: Date) -> String {
    match kind {
        PeriodKind::AllTime => ALL_TIME_KEY.to_owned(),
        PeriodKind::Daily => format!("{}-{:02}-{:02}", Year(first.year()), first.month(), first.day()),
        // The week-year, not the calendar year: 2024-12-30 is in 2025-W01.
        PeriodKind::Weekly => {
            let week = first.iso_week_date();
            format!("{}-W{:02}", Year(week.year()), week.week())
        }
        PeriodKind::Monthly => format!("{}-{:02}", Year(first.year()), first.month()),
    }
}

/// A year as ISO 8601 writes it: four digits for 0000..=9999, a minus and six digits before.
struct Year(i16);

impl fmt::Display for Year {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            // jiff's years stop at 9999, so only negative years need the expanded form.
            year @ 0.. => write!(f, "{year:04}"),
            year => write!(f, "-{:06}", year.unsigned_abs()),
        }
    }
}

/// The first local date of the period of `kind` (not `AllTime`) named `key`. Accepts one
/// non-canonical spelling, the year `-000000`; [`Calendar::parse_key`] rejects it by formatting
/// back.
fn period_first_date(kind: PeriodKind, key: &str) -> Result<Date, ()> {
    match kind {
        PeriodKind::AllTime => Err(()),
        PeriodKind::Daily => {
            let (year_month, day) = key.rsplit_once('-').ok_or(())?;
            let (year, month) = year_month.rsplit_once('-').ok_or(())?;
            Date::new(
                parse_year(year)?,
                parse_two_digits(month)?,
                parse_two_digits(day)?,
            )
            .map_err(|_| ())
        }
        PeriodKind::Weekly => {
            let (year, week) = key.rsplit_once("-W").ok_or(())?;
            ISOWeekDate::new(parse_year(year)?, parse_two_digits(week)?, Weekday::Monday)
                .map(ISOWeekDate::date)
                .map_err(|_| ())
        }
        PeriodKind::Monthly => {
            let (year, month) = key.rsplit_once('-').ok_or(())?;
            Date::new(parse_year(year)?, parse_two_digits(month)?, 1).map_err(|_| ())
        }
    }
}

/// `2026` or `-002026` (see [`Year`]).
fn parse_year(text: &str) -> Result<i16, ()> {
    let (sign, digits) = match text.as_bytes().first() {
        Some(b'-') if text.len() == 7 => (-1, &text[1..]),
        _ if text.len() == 4 => (1, text),
        _ => return Err(()),
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(());
    }
    digits.parse::<i16>().map(|year| sign * year).map_err(|_| ())
}

/// Exactly two ASCII digits.
fn parse_two_digits(text: &str) -> Result<i8, ()> {
    match text.as_bytes() {
        &[tens @ b'0'..=b'9', units @ b'0'..=b'9'] => Ok(((tens - b'0') * 10 + (units - b'0')) as i8),
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::parse_rfc3339;

    const HOUR_MS: i64 = 3_600_000;
    const DAY_MS: i64 = 24 * HOUR_MS;

    fn ms(rfc3339: &str) -> i64 {
        parse_rfc3339(rfc3339).unwrap()
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    /// A calendar keeping every kind, in `zone`, with the default grace.
    fn calendar(zone: &str) -> Calendar {
        Calendar::new(
            &names(&["all_time", "daily", "weekly", "monthly"]),
            zone,
            DEFAULT_GRACE_SECONDS,
        )
        .unwrap()
    }

    fn key(calendar: &Calendar, kind: PeriodKind, at_ms: i64) -> String {
        calendar.period_of(kind, at_ms).unwrap().key
    }

    fn bounds(period: &Period) -> (i64, i64) {
        (period.start_ms.unwrap(), period.end_ms.unwrap())
    }

    /// Asserts that every instant sampled in `[from_ms, to_ms)` (every `step_ms`, plus every ms
    /// within a second of each period boundary and of each `extra` instant) lies in the period it
    /// is routed to, and that consecutive periods meet exactly. Returns the periods seen, in order.
    fn assert_tiles(
        calendar: &Calendar,
        kind: PeriodKind,
        from_ms: i64,
        to_ms: i64,
        step_ms: i64,
        extra: &[i64],
    ) -> Vec<Period> {
        let mut samples: Vec<i64> = (from_ms..to_ms).step_by(step_ms as usize).collect();
        let mut seen: Vec<Period> = Vec::new();
        let mut boundaries = extra.to_vec();
        for &at in &samples {
            let period = calendar.period_of(kind, at).unwrap();
            boundaries.extend([period.start_ms.unwrap(), period.end_ms.unwrap()]);
        }
        boundaries.sort_unstable();
        boundaries.dedup();
        for point in boundaries {
            samples.extend((point - 1000..point + 1000).filter(|at| (from_ms..to_ms).contains(at)));
        }
        samples.sort_unstable();
        samples.dedup();
        for at in samples {
            let period = calendar.period_of(kind, at).unwrap();
            assert!(
                period.contains(at),
                "{at} is routed to {period:?}, which does not contain it"
            );
            match seen.last() {
                Some(last) if *last == period => {}
                Some(last) => {
                    assert_eq!(
                        last.end_ms, period.start_ms,
                        "{last:?} and {period:?} do not meet"
                    );
                    seen.push(period);
                }
                None => seen.push(period),
            }
        }
        seen
    }

    /// Wire names round-trip and nothing else parses.
    #[test]
    fn kind_names_round_trip() {
        for kind in PeriodKind::ALL {
            assert_eq!(PeriodKind::parse(kind.as_str()), Some(kind));
            assert_eq!(kind.to_string(), kind.as_str());
        }
        for name in ["", "Daily", "all-time", "hourly", " daily"] {
            assert_eq!(PeriodKind::parse(name), None, "{name:?}");
        }
    }

    /// A valid configuration is kept in canonical order with the zone's canonical name, and the
    /// default calendar is the documented one.
    #[test]
    fn calendar_new_orders_kinds_and_canonicalizes_the_zone() {
        let calendar = Calendar::new(&names(&["monthly", "all_time", "daily"]), "europe/BERLIN", 60).unwrap();
        assert_eq!(
            calendar.kinds(),
            [PeriodKind::AllTime, PeriodKind::Daily, PeriodKind::Monthly]
        );
        assert_eq!(calendar.timezone_name(), "Europe/Berlin");
        assert_eq!(calendar.time_zone().iana_name(), Some("Europe/Berlin"));
        assert_eq!(calendar.grace_ms(), 60_000);
        assert_eq!(
            Calendar::new(&names(&["all_time"]), "utc", 300).unwrap(),
            Calendar::default()
        );
        assert_eq!(Calendar::default().timezone_name(), DEFAULT_TIMEZONE);
        assert!(Calendar::new(&names(&["daily"]), "UTC", 0).is_ok());
        assert!(Calendar::new(&names(&["daily"]), "UTC", MAX_GRACE_SECONDS).is_ok());
    }

    /// Each kind of bad configuration is refused with a message naming the bad value.
    #[test]
    fn calendar_new_rejects_bad_configuration() {
        let error = |periods: &[&str], zone: &str, grace: i64| {
            Calendar::new(&names(periods), zone, grace)
                .unwrap_err()
                .to_string()
        };
        assert!(error(&[], "UTC", 300).contains("at least one"));
        assert!(error(&["daily", "hourly"], "UTC", 300).contains("unknown period \"hourly\""));
        assert!(error(&["Daily"], "UTC", 300).contains("unknown period \"Daily\""));
        assert!(
            error(&["daily", "weekly", "daily"], "UTC", 300).contains("\"daily\" is listed more than once")
        );
        for zone in [
            "Mars/Olympus_Mons",
            "",
            "Etc/Unknown",
            "../../etc/passwd",
            "+02:00",
            "CET-1CEST,M3.5.0,M10.5.0/3",
        ] {
            let message = error(&["daily"], zone, 300);
            assert!(message.starts_with("unknown time zone"), "{zone:?}: {message}");
        }
        assert!(error(&["daily"], "UTC", -1).contains("must not be negative, got -1"));
        assert!(error(&["daily"], "UTC", MAX_GRACE_SECONDS + 1).contains("at most 2678400"));
        assert!(error(&["daily"], "UTC", i64::MAX).contains("at most"));
    }

    /// In UTC the last millisecond of a day and the first of the next are in different days, and
    /// an event in flight across midnight counts for the day it was achieved in.
    #[test]
    fn utc_midnight_splits_days_by_achieved_at() {
        let utc = calendar("UTC");
        let before = utc
            .period_of(PeriodKind::Daily, ms("2026-10-13T23:59:59.999Z"))
            .unwrap();
        let after = utc
            .period_of(PeriodKind::Daily, ms("2026-10-14T00:00:00Z"))
            .unwrap();
        assert_eq!(before.key, "2026-10-13");
        assert_eq!(after.key, "2026-10-14");
        assert_eq!(
            bounds(&before),
            (ms("2026-10-13T00:00:00Z"), ms("2026-10-14T00:00:00Z"))
        );
        assert_eq!(before.end_ms, after.start_ms);

        // Achieved just before midnight, received just after: routed by achieved_at, and the
        // day it belongs to is still open thanks to the grace.
        let achieved_at = ms("2026-10-13T23:59:59.950Z");
        let received_at = ms("2026-10-14T00:00:00.200Z");
        let day = utc.period_of(PeriodKind::Daily, achieved_at).unwrap();
        assert_eq!(day, before);
        assert!(!utc.is_closed(&day, received_at));
    }

    /// In Berlin days start at local midnight: 22:00Z in summer time and 23:00Z in winter.
    #[test]
    fn berlin_days_start_at_local_midnight() {
        let berlin = calendar("Europe/Berlin");
        assert_eq!(
            key(&berlin, PeriodKind::Daily, ms("2026-10-13T21:59:59.999Z")),
            "2026-10-13"
        );
        let summer = berlin
            .period_of(PeriodKind::Daily, ms("2026-10-13T22:00:00Z"))
            .unwrap();
        assert_eq!(summer.key, "2026-10-14");
        assert_eq!(
            bounds(&summer),
            (ms("2026-10-13T22:00:00Z"), ms("2026-10-14T22:00:00Z"))
        );
        assert_eq!(
            key(&berlin, PeriodKind::Daily, ms("2026-12-01T22:59:59.999Z")),
            "2026-12-01"
        );
        let winter = berlin
            .period_of(PeriodKind::Daily, ms("2026-12-01T23:00:00Z"))
            .unwrap();
        assert_eq!(
            bounds(&winter),
            (ms("2026-12-01T23:00:00Z"), ms("2026-12-02T23:00:00Z"))
        );
        assert_eq!(winter.key, "2026-12-02");
    }

    /// In Berlin the spring-forward day lasts 23 hours and the fall-back day 25, the days around
    /// them tile time without gap or overlap, and both copies of the repeated hour belong to
    /// 2026-10-25.
    #[test]
    fn berlin_dst_days_last_23_and_25_hours() {
        let berlin = calendar("Europe/Berlin");
        let spring = berlin
            .period_of(PeriodKind::Daily, ms("2026-03-29T12:00:00Z"))
            .unwrap();
        assert_eq!(
            bounds(&spring),
            (ms("2026-03-28T23:00:00Z"), ms("2026-03-29T22:00:00Z"))
        );
        assert_eq!(spring.end_ms.unwrap() - spring.start_ms.unwrap(), 23 * HOUR_MS);
        let autumn = berlin
            .period_of(PeriodKind::Daily, ms("2026-10-25T12:00:00Z"))
            .unwrap();
        assert_eq!(autumn.key, "2026-10-25");
        assert_eq!(
            bounds(&autumn),
            (ms("2026-10-24T22:00:00Z"), ms("2026-10-25T23:00:00Z"))
        );
        assert_eq!(autumn.end_ms.unwrap() - autumn.start_ms.unwrap(), 25 * HOUR_MS);

        // Local 02:00-03:00 happens at 00:00Z-01:00Z (summer time) and again at 01:00Z-02:00Z.
        for at in (ms("2026-10-25T00:00:00Z")..ms("2026-10-25T02:00:00Z")).step_by(60_000) {
            assert_eq!(key(&berlin, PeriodKind::Daily, at), "2026-10-25");
        }

        let transitions = [ms("2026-03-29T01:00:00Z"), ms("2026-10-25T01:00:00Z")];
        for (around, expected) in [
            ("2026-03-29T12:00:00Z", ["2026-03-28", "2026-03-29", "2026-03-30"]),
            ("2026-10-25T12:00:00Z", ["2026-10-24", "2026-10-25", "2026-10-26"]),
        ] {
            let middle = ms(around);
            let days = assert_tiles(
                &berlin,
                PeriodKind::Daily,
                middle - DAY_MS,
                middle + DAY_MS,
                60_000,
                &transitions,
            );
            assert_eq!(
                days.iter().map(|day| day.key.as_str()).collect::<Vec<_>>(),
                expected
            );
        }
    }

    /// In New York the spring-forward day lasts 23 hours and the fall-back day 25, the days around
    /// them tile time, and both copies of the repeated 01:00-02:00 belong to 2026-11-01.
    #[test]
    fn new_york_dst_days_last_23_and_25_hours() {
        let new_york = calendar("America/New_York");
        let spring = new_york
            .period_of(PeriodKind::Daily, ms("2026-03-08T12:00:00Z"))
            .unwrap();
        assert_eq!(spring.key, "2026-03-08");
        assert_eq!(
            bounds(&spring),
            (ms("2026-03-08T05:00:00Z"), ms("2026-03-09T04:00:00Z"))
        );
        let autumn = new_york
            .period_of(PeriodKind::Daily, ms("2026-11-01T12:00:00Z"))
            .unwrap();
        assert_eq!(autumn.key, "2026-11-01");
        assert_eq!(
            bounds(&autumn),
            (ms("2026-11-01T04:00:00Z"), ms("2026-11-02T05:00:00Z"))
        );
        for at in (ms("2026-11-01T05:00:00Z")..ms("2026-11-01T07:00:00Z")).step_by(60_000) {
            assert_eq!(key(&new_york, PeriodKind::Daily, at), "2026-11-01");
        }

        let transitions = [ms("2026-03-08T07:00:00Z"), ms("2026-11-01T06:00:00Z")];
        for around in ["2026-03-08T12:00:00Z", "2026-11-01T12:00:00Z"] {
            let middle = ms(around);
            let days = assert_tiles(
                &new_york,
                PeriodKind::Daily,
                middle - DAY_MS,
                middle + DAY_MS,
                60_000,
                &transitions,
            );
            assert_eq!(days.len(), 3);
        }
    }

    /// When a fold straddles midnight (St. John's fell back from 00:01 to 23:01 until 2010), the
    /// day starts at the first midnight and the repeated evening hour belongs to the new day, so
    /// days still tile time.
    #[test]
    fn fold_across_midnight_belongs_to_the_new_day() {
        let st_johns = calendar("America/St_Johns");
        // 2006-10-29 00:00 NDT (-02:30) is 02:30Z; at 02:31Z the clocks went back to 23:01 NST
        // (-03:30) on the 28th, and 00:00 came again at 03:30Z.
        let day = st_johns
            .period_of(PeriodKind::Daily, ms("2006-10-29T02:31:00Z"))
            .unwrap();
        assert_eq!(day.key, "2006-10-29");
        assert_eq!(
            bounds(&day),
            (ms("2006-10-29T02:30:00Z"), ms("2006-10-30T03:30:00Z"))
        );
        let middle = ms("2006-10-29T02:31:00Z");
        assert_tiles(
            &st_johns,
            PeriodKind::Daily,
            middle - DAY_MS,
            middle + DAY_MS,
            60_000,
            &[middle],
        );
        // A month that begins at such a midnight follows the same rule: in 2009 the fold came on
        // 1 November, so the repeated "31 October" evening belongs to November.
        let month = st_johns
            .period_of(PeriodKind::Monthly, ms("2009-11-01T02:31:00Z"))
            .unwrap();
        assert_eq!(month.key, "2009-11");
        assert_eq!(month.start_ms, Some(ms("2009-11-01T02:30:00Z")));
        let middle = ms("2009-11-01T02:31:00Z");
        assert_tiles(
            &st_johns,
            PeriodKind::Monthly,
            middle - 40 * DAY_MS,
            middle + 40 * DAY_MS,
            HOUR_MS,
            &[middle],
        );
    }

    /// Weeks start on Monday at local midnight, and the week holding a DST change is 7 days and
    /// one hour long.
    #[test]
    fn weeks_start_on_monday_at_local_midnight() {
        let berlin = calendar("Europe/Berlin");
        // Sunday 2026-10-18 23:59 and Monday 2026-10-19 00:00, Berlin summer time.
        assert_eq!(
            key(&berlin, PeriodKind::Weekly, ms("2026-10-18T21:59:00Z")),
            "2026-W42"
        );
        let week = berlin
            .period_of(PeriodKind::Weekly, ms("2026-10-18T22:00:00Z"))
            .unwrap();
        assert_eq!(week.key, "2026-W43");
        assert_eq!(
            bounds(&week),
            (ms("2026-10-18T22:00:00Z"), ms("2026-10-25T23:00:00Z"))
        );
        assert_eq!(
            key(&berlin, PeriodKind::Weekly, ms("2026-10-13T10:00:00Z")),
            "2026-W42"
        );
        assert_eq!(
            key(&calendar("UTC"), PeriodKind::Weekly, ms("2026-10-18T22:00:00Z")),
            "2026-W42"
        );
        let middle = ms("2026-10-22T00:00:00Z");
        let weeks = assert_tiles(
            &berlin,
            PeriodKind::Weekly,
            middle - 14 * DAY_MS,
            middle + 14 * DAY_MS,
            HOUR_MS,
            &[],
        );
        assert!(
            weeks
                .iter()
                .all(|week| week.end_ms.unwrap() - week.start_ms.unwrap() >= 7 * DAY_MS - HOUR_MS)
        );
    }

    /// Weekly keys use the ISO week-year and a zero-padded week, across year ends.
    #[test]
    fn weekly_keys_use_the_iso_week_year() {
        let utc = calendar("UTC");
        for (at, expected) in [
            ("2026-12-31T12:00:00Z", "2026-W53"), // 2026 starts on a Thursday: 53 weeks.
            ("2027-01-01T12:00:00Z", "2026-W53"),
            ("2027-01-03T23:59:59.999Z", "2026-W53"),
            ("2027-01-04T00:00:00Z", "2027-W01"),
            ("2024-12-30T00:00:00Z", "2025-W01"),
            ("2024-12-29T23:59:59.999Z", "2024-W52"),
            ("2021-01-03T12:00:00Z", "2020-W53"),
            ("2021-01-04T00:00:00Z", "2021-W01"),
        ] {
            assert_eq!(key(&utc, PeriodKind::Weekly, ms(at)), expected, "{at}");
        }
        let straddling = utc
            .period_of(PeriodKind::Weekly, ms("2026-12-31T12:00:00Z"))
            .unwrap();
        assert_eq!(
            bounds(&straddling),
            (ms("2026-12-28T00:00:00Z"), ms("2027-01-04T00:00:00Z"))
        );
    }

    /// Months start on the 1st at local midnight, across December to January and a leap February.
    #[test]
    fn months_start_on_the_first_at_local_midnight() {
        let utc = calendar("UTC");
        assert_eq!(
            key(&utc, PeriodKind::Monthly, ms("2026-12-31T23:59:59.999Z")),
            "2026-12"
        );
        let january = utc
            .period_of(PeriodKind::Monthly, ms("2027-01-01T00:00:00Z"))
            .unwrap();
        assert_eq!(january.key, "2027-01");
        assert_eq!(
            bounds(&january),
            (ms("2027-01-01T00:00:00Z"), ms("2027-02-01T00:00:00Z"))
        );
        let february = utc
            .period_of(PeriodKind::Monthly, ms("2028-02-29T12:00:00Z"))
            .unwrap();
        assert_eq!(february.key, "2028-02");
        assert_eq!(
            bounds(&february),
            (ms("2028-02-01T00:00:00Z"), ms("2028-03-01T00:00:00Z"))
        );
        assert_eq!(
            key(&utc, PeriodKind::Daily, ms("2028-02-29T12:00:00Z")),
            "2028-02-29"
        );

        let berlin = calendar("Europe/Berlin");
        assert_eq!(
            key(&berlin, PeriodKind::Monthly, ms("2026-12-31T22:59:59.999Z")),
            "2026-12"
        );
        assert_eq!(
            key(&berlin, PeriodKind::Monthly, ms("2026-12-31T23:00:00Z")),
            "2027-01"
        );
        // March 2026 in Berlin starts in winter time and ends in summer time: one hour short.
        let march = berlin
            .period_of(PeriodKind::Monthly, ms("2026-03-15T00:00:00Z"))
            .unwrap();
        assert_eq!(
            bounds(&march),
            (ms("2026-02-28T23:00:00Z"), ms("2026-03-31T22:00:00Z"))
        );
        let middle = ms("2026-12-31T23:00:00Z");
        assert_tiles(
            &berlin,
            PeriodKind::Monthly,
            middle - 70 * DAY_MS,
            middle + 70 * DAY_MS,
            HOUR_MS,
            &[],
        );
    }

    /// periods_of gives one period per configured kind, in canonical order.
    #[test]
    fn periods_of_follows_the_configured_kinds() {
        let calendar = Calendar::new(&names(&["monthly", "daily"]), "UTC", 300).unwrap();
        let keys: Vec<String> = calendar
            .periods_of(ms("2026-10-13T10:00:00Z"))
            .into_iter()
            .map(|p| p.key)
            .collect();
        assert_eq!(keys, ["2026-10-13", "2026-10"]);
        let all = self::calendar("UTC").periods_of(ms("2026-10-13T10:00:00Z"));
        assert_eq!(all.iter().map(|p| p.kind).collect::<Vec<_>>(), PeriodKind::ALL);
        assert_eq!(all[0], Period::all_time());
    }

    /// A period closes exactly at end + grace, not a millisecond before; all time never closes.
    #[test]
    fn grace_closes_a_period_exactly_at_end_plus_grace() {
        let utc = calendar("UTC");
        let day = utc
            .period_of(PeriodKind::Daily, ms("2026-10-13T10:00:00Z"))
            .unwrap();
        let closes_at = ms("2026-10-14T00:05:00Z");
        assert_eq!(utc.closes_at(&day), Some(closes_at));
        assert!(!utc.is_closed(&day, ms("2026-10-14T00:00:00Z")));
        assert!(!utc.is_closed(&day, closes_at - 1));
        assert!(utc.is_closed(&day, closes_at));
        assert!(utc.is_closed(&day, i64::MAX));

        let no_grace = Calendar::new(&names(&["daily"]), "UTC", 0).unwrap();
        assert!(!no_grace.is_closed(&day, day.end_ms.unwrap() - 1));
        assert!(no_grace.is_closed(&day, day.end_ms.unwrap()));

        assert_eq!(utc.closes_at(&Period::all_time()), None);
        assert!(!utc.is_closed(&Period::all_time(), i64::MAX));
        let far = Period {
            end_ms: Some(i64::MAX),
            ..day
        };
        assert_eq!(utc.closes_at(&far), Some(i64::MAX));
    }

    /// Every key period_of produces parses back to the same period, for every kind.
    #[test]
    fn keys_round_trip_for_every_kind() {
        for zone in ["UTC", "Europe/Berlin", "America/New_York", "Pacific/Kiritimati"] {
            let calendar = calendar(zone);
            for at in [
                "2026-10-13T10:00:00Z",
                "2026-12-31T23:30:00Z",
                "2027-01-01T00:30:00Z",
                "2026-03-29T01:30:00Z",
                "2028-02-29T12:00:00Z",
                "1970-01-01T00:00:00Z",
                "0001-01-01T12:00:00Z",
                "-000001-06-15T12:00:00Z",
            ] {
                for period in calendar.periods_of(ms(at)) {
                    assert_eq!(
                        calendar.parse_key(period.kind, &period.key).ok(),
                        Some(period.clone()),
                        "{zone} {at}"
                    );
                }
            }
        }
        let utc = calendar("UTC");
        assert_eq!(
            key(&utc, PeriodKind::Daily, ms("-000001-06-15T12:00:00Z")),
            "-000001-06-15"
        );
        assert_eq!(
            key(&utc, PeriodKind::Monthly, ms("0001-01-01T12:00:00Z")),
            "0001-01"
        );
        assert_eq!(
            utc.parse_key(PeriodKind::Weekly, "2026-W53").unwrap().start_ms,
            Some(ms("2026-12-28T00:00:00Z"))
        );
    }

    /// Keys that are malformed, not canonical or name no real period are errors naming the key.
    #[test]
    fn malformed_keys_are_rejected() {
        let berlin = calendar("Europe/Berlin");
        let bad = [
            (PeriodKind::Monthly, "2026-13"),
            (PeriodKind::Monthly, "2026-00"),
            (PeriodKind::Monthly, "2026-1"),
            (PeriodKind::Monthly, "+2026-10"),
            (PeriodKind::Monthly, "-000000-10"),
            (PeriodKind::Monthly, "2026-10-13"),
            (PeriodKind::Weekly, "2026-W54"),
            (PeriodKind::Weekly, "2027-W53"),
            (PeriodKind::Weekly, "2026-W00"),
            (PeriodKind::Weekly, "2026-w42"),
            (PeriodKind::Weekly, "2026-W4２"),
            (PeriodKind::Daily, "2026-02-30"),
            (PeriodKind::Daily, "2027-02-29"),
            (PeriodKind::Daily, "20261013"),
            (PeriodKind::Daily, "2026-10-13T00:00"),
            (PeriodKind::Daily, " 2026-10-13"),
            (PeriodKind::Daily, "all_time"),
            (PeriodKind::AllTime, "ALL_TIME"),
            (PeriodKind::AllTime, "2026-10-13"),
        ];
        for (kind, key) in bad {
            let message = berlin.parse_key(kind, key).unwrap_err().to_string();
            assert!(
                message.contains(&format!("{key:?} is not a {kind} period key")),
                "{message}"
            );
        }
        for kind in PeriodKind::ALL {
            for key in ["garbage", "", "-", "-W", "--", "é-é", "-0000000-01-01"] {
                assert!(berlin.parse_key(kind, key).is_err(), "{kind} {key:?}");
            }
        }
    }

    /// Timestamps and keys at and beyond jiff's range give errors or are left out, never panics.
    #[test]
    fn extreme_inputs_give_errors_not_panics() {
        let utc = calendar("UTC");
        // jiff takes whole seconds only at its ends: from_millisecond refuses
        // Timestamp::MAX.as_millisecond(), which has 999 ms past its last whole second.
        let (first, last) = (
            Timestamp::MIN.as_second() * 1000,
            Timestamp::MAX.as_second() * 1000,
        );
        assert!(
            utc.period_of(PeriodKind::Daily, Timestamp::MAX.as_millisecond())
                .is_err()
        );
        for at in [i64::MIN, first - 1, first, last, last + 1, i64::MAX] {
            for kind in PeriodKind::ALL {
                let _ = utc.period_of(kind, at);
            }
            assert_eq!(utc.periods_of(at).first(), Some(&Period::all_time()));
        }
        assert!(
            utc.period_of(PeriodKind::Daily, i64::MAX)
                .unwrap_err()
                .to_string()
                .contains("outside the supported range")
        );
        assert_eq!(utc.periods_of(i64::MIN), [Period::all_time()]);
        // jiff's last instant is 9999-12-30T22:00Z, so that day has no representable end while
        // the day before does.
        assert!(
            utc.period_of(PeriodKind::Daily, last)
                .unwrap_err()
                .to_string()
                .contains("9999-12-31")
        );
        assert_eq!(
            key(&utc, PeriodKind::Daily, ms("9999-12-29T12:00:00Z")),
            "9999-12-29"
        );
        for (kind, key) in [
            (PeriodKind::Daily, "9999-12-31"),
            (PeriodKind::Daily, "-009999-01-01"),
            (PeriodKind::Weekly, "9999-W52"),
            (PeriodKind::Weekly, "-009999-W01"),
            (PeriodKind::Monthly, "9999-12"),
            (PeriodKind::Monthly, "-009999-01"),
        ] {
            assert!(utc.parse_key(kind, key).is_err(), "{kind} {key}");
        }
    }

    /// In every zone of the bundled database, around every transition up to 2040, each instant is
    /// routed to a period of each kind that contains it, the next period starts where it ends,
    /// and its key parses back to it.
    #[test]
    fn every_zone_tiles_time_around_every_transition() {
        let until = Timestamp::from_millisecond(ms("2040-01-01T00:00:00Z")).unwrap();
        let mut checked = 0;
        for zone in jiff::tz::db().available() {
            let calendar = calendar(zone.as_str());
            for transition in calendar.time_zone().following(Timestamp::MIN) {
                if transition.timestamp() > until {
                    break;
                }
                let at_ms = transition.timestamp().as_millisecond();
                for at in [at_ms - 1, at_ms] {
                    for kind in [PeriodKind::Daily, PeriodKind::Weekly, PeriodKind::Monthly] {
                        let period = calendar.period_of(kind, at).unwrap();
                        assert!(period.contains(at), "{zone}: {at} is routed to {period:?}");
                        let next = calendar.period_of(kind, period.end_ms.unwrap()).unwrap();
                        assert_eq!(next.start_ms, period.end_ms, "{zone}: {period:?} then {next:?}");
                        assert_eq!(
                            calendar.parse_key(kind, &period.key).ok().as_ref(),
                            Some(&period),
                            "{zone}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        // The bundled database has about 600 zones and tens of thousands of transitions.
        assert!(checked > 100_000, "only {checked} checks");
    }
}
