//! The origin's live messages read into the core's types. The origin printed them with the
//! core's `live_message`, so reading them back and printing again gives the same bytes: entries
//! keep their metadata as the exact JSON text it arrived as.

use serde::Deserialize;
use serde_json::value::RawValue;
use standings_core::json::parse_rfc3339;
use standings_core::{PlayerId, View, ViewDelta, ViewEntry, ViewState};

/// The period fields of a snapshot, owned (the core's `PeriodFields` borrows them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Period {
    /// The kind's wire name (`all_time`, `daily`, ...).
    pub kind: String,
    /// The instance's key.
    pub key: String,
    /// Its first ms, `None` when unbounded.
    pub start_ms: Option<i64>,
    /// Its end (exclusive) in ms, `None` when unbounded.
    pub end_ms: Option<i64>,
}

impl Period {
    /// The fields as the core's printer takes them. O(1).
    pub fn fields(&self) -> standings_core::json::PeriodFields<'_> {
        standings_core::json::PeriodFields {
            kind: &self.kind,
            key: &self.key,
            start_ms: self.start_ms,
            end_ms: self.end_ms,
        }
    }
}

/// One message of the origin's subscription.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Upstream {
    /// The whole view.
    Snapshot {
        /// The view, as the origin names it.
        view: View,
        /// The period instance.
        period: Period,
        /// The entries at their version.
        state: ViewState,
    },
    /// A net change.
    Delta(ViewDelta),
    /// Nothing changed for a while.
    Heartbeat,
    /// The origin is stopping: subscribe again with the last version.
    GoingAway,
    /// The origin dropped this subscription (it fell behind): subscribe again without a version.
    Resync,
    /// The period closed or the season was archived: the message as it came, to pass on.
    Closed(Vec<u8>),
}

#[derive(Deserialize)]
struct Typed {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct WireEntry {
    rank: u64,
    /// In a view within a segment.
    #[serde(default)]
    global_rank: Option<u64>,
    player_id: String,
    value: i64,
    achieved_at: String,
    display_name: Option<String>,
    country: Option<String>,
    metadata: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct WireSnapshot {
    view: String,
    period: String,
    period_key: String,
    period_start: Option<String>,
    period_end: Option<String>,
    board_version: u64,
    entries: Vec<WireEntry>,
}

#[derive(Deserialize)]
struct WireDelta {
    period_key: String,
    base_version: u64,
    board_version: u64,
    changed: Vec<WireEntry>,
    left: Vec<String>,
}

fn player(id: &str) -> Result<PlayerId, String> {
    PlayerId::new(id).map_err(|e| format!("a player id the core refuses: {e}"))
}

fn time(text: &str) -> Result<i64, String> {
    parse_rfc3339(text).ok_or_else(|| format!("not an RFC 3339 time: {text:?}"))
}

fn entries(wire: Vec<WireEntry>) -> Result<Vec<ViewEntry>, String> {
    wire.into_iter()
        .map(|e| {
            Ok(ViewEntry {
                rank: e.rank,
                player_id: player(&e.player_id)?,
                value: e.value,
                achieved_at: time(&e.achieved_at)?,
                display_name: e.display_name,
                country: e.country,
                metadata: e.metadata.map(|m| m.get().to_owned()),
                global_rank: e.global_rank,
            })
        })
        .collect()
}

impl Upstream {
    /// Reads one message (a WebSocket text frame's JSON). `Err` says what was wrong: the
    /// object then subscribes again, as a client seeing something it cannot follow should.
    /// O(message length).
    pub fn parse(json: &[u8]) -> Result<Upstream, String> {
        let bad = |e: serde_json::Error| format!("not a live message: {e}");
        let typed: Typed = serde_json::from_slice(json).map_err(bad)?;
        match typed.kind.as_str() {
            "snapshot" => {
                let s: WireSnapshot = serde_json::from_slice(json).map_err(bad)?;
                let view = s
                    .view
                    .parse()
                    .map_err(|e| format!("a snapshot of a view the core refuses: {e}"))?;
                let period = Period {
                    kind: s.period,
                    key: s.period_key.clone(),
                    start_ms: s.period_start.as_deref().map(time).transpose()?,
                    end_ms: s.period_end.as_deref().map(time).transpose()?,
                };
                Ok(Upstream::Snapshot {
                    view,
                    period,
                    state: ViewState {
                        period_key: s.period_key,
                        board_version: s.board_version,
                        entries: entries(s.entries)?,
                    },
                })
            }
            "delta" => {
                let d: WireDelta = serde_json::from_slice(json).map_err(bad)?;
                Ok(Upstream::Delta(ViewDelta {
                    period_key: d.period_key,
                    base_version: d.base_version,
                    board_version: d.board_version,
                    changed: entries(d.changed)?,
                    left: d.left.iter().map(|p| player(p)).collect::<Result<_, _>>()?,
                }))
            }
            "heartbeat" => Ok(Upstream::Heartbeat),
            "going_away" => Ok(Upstream::GoingAway),
            "resync" => Ok(Upstream::Resync),
            "closed" => Ok(Upstream::Closed(json.to_vec())),
            other => Err(format!("a live message of an unknown type {other:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use standings_core::live_message;

    /// What the core printed reads back into the same values, and prints again as the same
    /// bytes: names, countries, metadata as sent, a daily period's bounds, negative values.
    #[test]
    fn messages_read_back_and_print_the_same_bytes() {
        let entry = |rank, player: &str, value, metadata: Option<&str>| ViewEntry {
            rank,
            player_id: PlayerId::new(player).unwrap(),
            value,
            achieved_at: 1_760_349_900_250,
            display_name: Some("Åva \"the\" great".into()),
            country: Some("SE".into()),
            metadata: metadata.map(Into::into),
            global_rank: None,
        };
        let period = Period {
            kind: "daily".into(),
            key: "2025-10-13".into(),
            start_ms: Some(1_760_313_600_000),
            end_ms: Some(1_760_400_000_000),
        };
        let state = ViewState {
            period_key: "2025-10-13".into(),
            board_version: 42,
            entries: vec![
                entry(1, "p-ava", 1200, Some("{\"skin\": \"gold\",\"n\":[1, 2]}")),
                entry(2, "p-bo", -900, None),
            ],
        };
        let view: View = "around:p-ava:5".parse().unwrap();
        let printed = live_message::snapshot(&view, &period.fields(), &state);
        let Upstream::Snapshot {
            view: v,
            period: p,
            state: s,
        } = Upstream::parse(&printed).unwrap()
        else {
            panic!("a snapshot")
        };
        assert_eq!((&v, &p, &s), (&view, &period, &state));
        assert_eq!(live_message::snapshot(&v, &p.fields(), &s), printed);
        let delta = ViewDelta {
            period_key: "2025-10-13".into(),
            base_version: 42,
            board_version: 46,
            changed: vec![entry(2, "p-dee", 950, Some("{}"))],
            left: vec![PlayerId::new("p-cy").unwrap()],
        };
        let printed = live_message::delta(&delta);
        assert_eq!(Upstream::parse(&printed).unwrap(), Upstream::Delta(delta));
        // A view within a segment: every entry's global rank, printed after its rank.
        let within: View = "in:country:SE:top:5".parse().unwrap();
        let mut segment_state = state.clone();
        for (e, global) in segment_state.entries.iter_mut().zip([3, 17]) {
            e.global_rank = Some(global);
        }
        let printed = live_message::snapshot(&within, &period.fields(), &segment_state);
        let text = String::from_utf8(printed.clone()).unwrap();
        assert!(text.contains("\"view\":\"in:country:SE:top:5\""), "{text}");
        assert!(
            text.contains("{\"rank\":1,\"global_rank\":3,\"player_id\":\"p-ava\""),
            "{text}"
        );
        let Upstream::Snapshot {
            view: v, state: s, ..
        } = Upstream::parse(&printed).unwrap()
        else {
            panic!("a snapshot")
        };
        assert_eq!((&v, &s), (&within, &segment_state));
        assert_eq!(live_message::snapshot(&v, &period.fields(), &s), printed);
        assert_eq!(
            Upstream::parse(live_message::HEARTBEAT).unwrap(),
            Upstream::Heartbeat
        );
        assert_eq!(
            Upstream::parse(live_message::GOING_AWAY).unwrap(),
            Upstream::GoingAway
        );
        assert_eq!(
            Upstream::parse(&live_message::slow_consumer(64)).unwrap(),
            Upstream::Resync
        );
        let closed = live_message::closed("period_closed", "2025-10-13", 97);
        assert_eq!(Upstream::parse(&closed).unwrap(), Upstream::Closed(closed));
        for bad in [&b"{}"[..], b"[]", b"{\"type\":\"what\"}", b"{\"type\":\"delta\"}"] {
            assert!(Upstream::parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
