//! Wall-clock time and its wire format. The core never reads a clock; the origin reads it here
//! and passes times in.
//!
//! Everything in the origin that depends on time (period closes, season moments, and the
//! writer's timers: the rest after idleness, checkpoint pacing, retention and eviction) reads
//! one injected [`Clock`], so a test sets and advances a manual clock instead of sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use tokio::sync::Notify;

/// Milliseconds since the Unix epoch, now, by the system clock.
pub fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

/// The service's clock: the system's, or a manual one that tests set and advance, so that
/// period closes and season moments are tested deterministically.
#[derive(Clone, Debug, Default)]
pub enum Clock {
    /// The system clock.
    #[default]
    System,
    /// A clock that only moves when told to.
    Manual(Arc<ManualTime>),
}

/// A manual clock's time, and who waits for it to move.
#[derive(Debug, Default)]
pub struct ManualTime {
    ms: AtomicI64,
    /// Woken each time the time is set or advanced: a timer on a manual clock (the writer's
    /// rest, its retries, the eviction ticker) has no deadline in real time to wake it, so it
    /// waits for the clock to move and looks again.
    moved: Notify,
}

impl Clock {
    /// A manual clock starting at `ms`.
    pub fn manual(ms: i64) -> Clock {
        Clock::Manual(Arc::new(ManualTime {
            ms: AtomicI64::new(ms),
            moved: Notify::new(),
        }))
    }

    /// Now, in ms since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::System => now_ms(),
            Clock::Manual(time) => time.ms.load(Ordering::SeqCst),
        }
    }

    /// Sets a manual clock (no effect on the system clock).
    pub fn set(&self, ms: i64) {
        if let Clock::Manual(time) = self {
            time.ms.store(ms, Ordering::SeqCst);
            time.moved.notify_waiters();
        }
    }

    /// Moves a manual clock forward by `ms`.
    pub fn advance(&self, ms: i64) {
        if let Clock::Manual(time) = self {
            time.ms.fetch_add(ms, Ordering::SeqCst);
            time.moved.notify_waiters();
        }
    }

    /// Waits until the clock reads `deadline_ms` or later: in real time on the system clock,
    /// and on a manual clock until a test sets or advances it that far (never by itself), so
    /// that every timer of the service follows the injected clock and no test sleeps for one.
    /// Cancel-safe.
    pub async fn sleep_until(&self, deadline_ms: i64) {
        match self {
            Clock::System => {
                let wait = deadline_ms.saturating_sub(now_ms()).max(0);
                tokio::time::sleep(std::time::Duration::from_millis(wait as u64)).await;
            }
            Clock::Manual(time) => loop {
                // Registered before the time is read, so a move between the two still wakes it.
                let moved = time.moved.notified();
                tokio::pin!(moved);
                moved.as_mut().enable();
                if time.ms.load(Ordering::SeqCst) >= deadline_ms {
                    return;
                }
                moved.await;
            },
        }
    }
}

/// Parses an RFC 3339 timestamp (`2026-10-13T10:05:00Z`, offsets allowed) into ms since the
/// epoch. Sub-millisecond digits are truncated toward the past.
pub fn parse_rfc3339(text: &str) -> Result<i64, String> {
    let ts: jiff::Timestamp = text
        .parse()
        .map_err(|e| format!("{text:?} is not an RFC 3339 timestamp: {e}"))?;
    Ok(ts.as_millisecond())
}

/// Formats ms since the epoch as RFC 3339 in UTC (`2026-10-13T10:05:00Z`).
pub fn format_rfc3339(ms: i64) -> String {
    let mut out = Vec::with_capacity(24);
    write_rfc3339(&mut out, ms);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// From the first ms of year 0 to just before the end of jiff's range (`9999-12-30T22:00:00Z`):
/// a time in this range prints in the fixed `YYYY-MM-DDTHH:MM:SS[.fff]Z` shape.
const FOUR_DIGIT_YEARS_MS: std::ops::Range<i64> = -62_167_219_200_000..253_402_207_200_000;

/// Appends ms since the epoch as RFC 3339 in UTC, exactly as jiff's `Timestamp` prints it
/// (fractional seconds only when non-zero, without trailing zeros). Reads print a time per
/// entry, so the common range is formatted here without allocating; O(1).
pub fn write_rfc3339(out: &mut Vec<u8>, ms: i64) {
    if !FOUR_DIGIT_YEARS_MS.contains(&ms) {
        // Values outside jiff's range (years beyond -9999..=9999) cannot come from a parsed
        // timestamp; print the raw number rather than fail a read.
        let text = match jiff::Timestamp::from_millisecond(ms) {
            Ok(ts) => ts.to_string(),
            Err(_) => ms.to_string(),
        };
        out.extend_from_slice(text.as_bytes());
        return;
    }
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    let (secs, millis) = (in_day / 1000, in_day % 1000);
    let digits = |n: i64| b'0' + n as u8;
    out.extend_from_slice(&[
        digits(year / 1000),
        digits(year / 100 % 10),
        digits(year / 10 % 10),
        digits(year % 10),
        b'-',
        digits(month / 10),
        digits(month % 10),
        b'-',
        digits(day / 10),
        digits(day % 10),
        b'T',
        digits(secs / 36_000),
        digits(secs / 3600 % 10),
        b':',
        digits(secs / 600 % 6),
        digits(secs / 60 % 10),
        b':',
        digits(secs % 60 / 10),
        digits(secs % 10),
    ]);
    if millis != 0 {
        let fraction = [
            b'.',
            digits(millis / 100),
            digits(millis / 10 % 10),
            digits(millis % 10),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A timer on a manual clock wakes once the clock is moved to its deadline, and not
    /// before, however long it waits in real time.
    #[tokio::test]
    async fn a_manual_clock_wakes_its_timers_when_moved_past_them() {
        let clock = Clock::manual(1_000);
        let timer = tokio::spawn({
            let clock = clock.clone();
            async move { clock.sleep_until(3_000).await }
        });
        clock.advance(1_999);
        tokio::task::yield_now().await;
        assert!(!timer.is_finished());
        clock.set(3_000);
        tokio::time::timeout(std::time::Duration::from_secs(10), timer)
            .await
            .expect("woken by the move")
            .unwrap();
        // A deadline already passed does not wait.
        clock.sleep_until(2_000).await;
    }

    /// Timestamps round-trip and offsets are normalized to UTC.
    #[test]
    fn rfc3339_round_trips() {
        let ms = parse_rfc3339("2026-10-13T10:05:00Z").unwrap();
        assert_eq!(format_rfc3339(ms), "2026-10-13T10:05:00Z");
        assert_eq!(parse_rfc3339("2026-10-13T12:05:00+02:00").unwrap(), ms);
        assert_eq!(format_rfc3339(ms + 250), "2026-10-13T10:05:00.25Z");
        assert!(parse_rfc3339("2026-13-13T10:05:00Z").is_err());
        assert!(parse_rfc3339("yesterday").is_err());
    }

    /// The allocation-free formatter prints every time exactly as jiff does, fractions,
    /// leap days and the ends of the four-digit years included.
    #[test]
    fn rfc3339_matches_jiff() {
        let jiff_text = |ms: i64| match jiff::Timestamp::from_millisecond(ms) {
            Ok(ts) => ts.to_string(),
            Err(_) => ms.to_string(),
        };
        let mut probes = vec![
            0,
            1,
            -1,
            999,
            -999,
            FOUR_DIGIT_YEARS_MS.start,
            FOUR_DIGIT_YEARS_MS.start - 1,
            FOUR_DIGIT_YEARS_MS.end,
            FOUR_DIGIT_YEARS_MS.end - 1,
            parse_rfc3339("2024-02-29T23:59:59.990Z").unwrap(),
            parse_rfc3339("2000-03-01T00:00:00.100Z").unwrap(),
            parse_rfc3339("1900-02-28T12:00:00.010Z").unwrap(),
            i64::MIN,
            i64::MAX,
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let span = (FOUR_DIGIT_YEARS_MS.end - FOUR_DIGIT_YEARS_MS.start) as u64;
            let ms = FOUR_DIGIT_YEARS_MS.start + (x % span) as i64;
            probes.push(ms);
            probes.push(ms - ms.rem_euclid(1000) + (x >> 40) as i64 % 1000);
        }
        for ms in probes {
            assert_eq!(format_rfc3339(ms), jiff_text(ms), "{ms}");
        }
    }
}
