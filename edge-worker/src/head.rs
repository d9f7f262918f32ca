//! A board instance's head, as the origin's `GET /v1/snapshots/.../head` answers it: which
//! manifest is current, its version and period, and when it was published.

use serde::Deserialize;
use standings_core::ChunkHash;
use standings_core::json::{PeriodFields, parse_rfc3339};

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

#[cfg(test)]
mod tests {
    use super::*;

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
