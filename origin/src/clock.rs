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

/// Formats ms since the epoch as RFC 3339 in UTC (`2026-10-13T10:05:00Z`), with the core's
/// writer, which prints exactly as jiff does (see the test below).
pub fn format_rfc3339(ms: i64) -> String {
    let mut out = Vec::with_capacity(24);
    standings_core::json::write_rfc3339(&mut out, ms);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
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

    /// The core's allocation-free formatter prints every time exactly as jiff does, fractions,
    /// leap days, years before 0 and the ends of jiff's range included. It lives here because
    /// jiff is the origin's dependency, not the core's.
    #[test]
    fn rfc3339_matches_jiff() {
        use standings_core::json::RFC3339_RANGE_MS;
        // The four-digit years: from the first ms of year 0 to the end of jiff's range.
        const FOUR_DIGIT_YEARS_MS: std::ops::Range<i64> = -62_167_219_200_000..253_402_207_200_000;
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
            *RFC3339_RANGE_MS.start(),
            RFC3339_RANGE_MS.start() - 1,
            *RFC3339_RANGE_MS.end(),
            RFC3339_RANGE_MS.end() + 1,
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
            // Years before 0, which jiff prints as `-00YYYY`.
            let before_zero = (FOUR_DIGIT_YEARS_MS.start - RFC3339_RANGE_MS.start()) as u64;
            probes.push(RFC3339_RANGE_MS.start() + (x % before_zero) as i64);
        }
        for ms in probes {
            assert_eq!(format_rfc3339(ms), jiff_text(ms), "{ms}");
        }
    }
}
