//! Wall-clock time and its wire format. The core never reads a clock; the origin reads it here
//! and passes times in.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

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
    Manual(Arc<AtomicI64>),
}

impl Clock {
    /// A manual clock starting at `ms`.
    pub fn manual(ms: i64) -> Clock {
        Clock::Manual(Arc::new(AtomicI64::new(ms)))
    }

    /// Now, in ms since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::System => now_ms(),
            Clock::Manual(ms) => ms.load(Ordering::SeqCst),
        }
    }

    /// Sets a manual clock (no effect on the system clock).
    pub fn set(&self, ms: i64) {
        if let Clock::Manual(now) = self {
            now.store(ms, Ordering::SeqCst);
        }
    }

    /// Moves a manual clock forward by `ms`.
    pub fn advance(&self, ms: i64) {
        if let Clock::Manual(now) = self {
            now.fetch_add(ms, Ordering::SeqCst);
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
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(ts) => ts.to_string(),
        // Values outside jiff's range (years beyond -9999..=9999) cannot come from a parsed
        // timestamp; print the raw number rather than fail a read.
        Err(_) => ms.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
