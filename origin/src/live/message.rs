//! The wire messages of `docs/live.md` as the bytes every subscriber of a view is sent, printed
//! by the core's `live_message` (the edge's live objects print theirs with it too).

use bytes::Bytes;
use standings_core::live_message;
use standings_core::{View, ViewDelta, ViewState};

use crate::domain::periods::Period;

/// Why a stream was closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CloseReason {
    /// The period's close time (its end plus the board's grace) passed.
    PeriodClosed,
    /// The board's season was archived (or the board is gone).
    SeasonArchived,
}

impl CloseReason {
    fn as_str(self) -> &'static str {
        match self {
            CloseReason::PeriodClosed => "period_closed",
            CloseReason::SeasonArchived => "season_archived",
        }
    }
}

/// `snapshot`: the whole view at `state.board_version`. O(entries).
pub(crate) fn snapshot(view: &View, period: &Period, state: &ViewState) -> Bytes {
    Bytes::from(live_message::snapshot(view, &period.fields(), state))
}

/// `delta`: the net change of the instance `period_key` from `base_version` to
/// `board_version`. O(entries sent).
pub(crate) fn delta(delta: &ViewDelta) -> Bytes {
    Bytes::from(live_message::delta(delta))
}

/// `heartbeat`.
pub(crate) fn heartbeat() -> Bytes {
    Bytes::from_static(live_message::HEARTBEAT)
}

/// `going_away`.
pub(crate) fn going_away() -> Bytes {
    Bytes::from_static(live_message::GOING_AWAY)
}

/// `resync` for a subscriber whose queue of `queue_messages` filled up.
pub(crate) fn slow_consumer(queue_messages: usize) -> Bytes {
    Bytes::from(live_message::slow_consumer(queue_messages))
}

/// `closed`, with the instance and the last version the subscriber was sent.
pub(crate) fn closed(reason: CloseReason, period_key: &str, board_version: u64) -> Bytes {
    Bytes::from(live_message::closed(reason.as_str(), period_key, board_version))
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde_json::{Value, json};
    use standings_core::{PlayerId, ViewEntry};

    use super::*;
    use crate::domain::periods::PeriodKind;

    fn entry(rank: u64, player: &str, value: i64, achieved_at: i64) -> ViewEntry {
        ViewEntry {
            country: None,
            display_name: None,
            metadata: None,
            rank,
            player_id: PlayerId::new(player).unwrap(),
            value,
            achieved_at,
            global_rank: None,
        }
    }

    fn parse(bytes: &Bytes) -> Value {
        serde_json::from_slice(bytes).expect("valid JSON")
    }

    /// The read API's entry, as its derived `Serialize` prints it: what snapshots must match.
    #[derive(Serialize)]
    struct ReadEntry {
        rank: u64,
        player_id: String,
        value: i64,
        achieved_at: String,
    }

    /// Snapshot entries print byte for byte as the read API's entries, and the period fields
    /// and order are those of docs/live.md.
    #[test]
    fn a_snapshot_prints_the_read_api_entries() {
        let state = ViewState {
            period_key: "all_time".into(),
            board_version: 42,
            entries: vec![
                entry(1, "p-ava", 1200, 1_760_349_900_000),
                entry(2, "p-\"bo\"", -900, 1_760_349_840_250),
            ],
        };
        let bytes = snapshot(&"top:3".parse().unwrap(), &Period::all_time(), &state);
        let text = std::str::from_utf8(&bytes).unwrap();
        let read_entries: Vec<_> = state
            .entries
            .iter()
            .map(|e| ReadEntry {
                rank: e.rank,
                player_id: e.player_id.as_str().to_string(),
                value: e.value,
                achieved_at: crate::clock::format_rfc3339(e.achieved_at),
            })
            .collect();
        let expected = format!(
            "{{\"type\":\"snapshot\",\"view\":\"top:3\",\"period\":\"all_time\",\"period_key\":\"all_time\",\"period_start\":null,\"period_end\":null,\"board_version\":42,\"entries\":{}}}",
            serde_json::to_string(&read_entries).unwrap()
        );
        assert_eq!(text, expected);
        let daily = Period {
            kind: PeriodKind::Daily,
            key: "2025-10-13".into(),
            start_ms: Some(1_760_313_600_000),
            end_ms: Some(1_760_400_000_000),
        };
        let parsed = parse(&snapshot(&"around:p-ava:5".parse().unwrap(), &daily, &state));
        assert_eq!(parsed["view"], "around:p-ava:5");
        assert_eq!(parsed["period"], "daily");
        assert_eq!(parsed["period_start"], "2025-10-13T00:00:00Z");
        assert_eq!(parsed["period_end"], "2025-10-14T00:00:00Z");
    }

    /// Every other message is the JSON object docs/live.md shows.
    #[test]
    fn the_other_messages_match_the_contract() {
        let d = ViewDelta {
            period_key: "2025-10-13".into(),
            base_version: 42,
            board_version: 46,
            changed: vec![entry(2, "p-dee", 950, 1_760_349_960_000)],
            left: vec![PlayerId::new("p-cy").unwrap()],
        };
        assert_eq!(
            parse(&delta(&d)),
            json!({"type":"delta","period_key":"2025-10-13","base_version":42,"board_version":46,
                "changed":[{"rank":2,"player_id":"p-dee","value":950,"achieved_at":"2025-10-13T10:06:00Z"}],
                "left":["p-cy"]})
        );
        assert!(
            delta(&d).starts_with(b"{\"type\":\"delta\",\"period_key\":\"2025-10-13\",\"base_version\":42,"),
            "the fields come in the contract's order"
        );
        assert_eq!(parse(&heartbeat()), json!({"type":"heartbeat"}));
        assert_eq!(parse(&going_away()), json!({"type":"going_away"}));
        assert_eq!(
            parse(&slow_consumer(64)),
            json!({"type":"resync","reason":"slow_consumer",
                "detail":"this subscriber fell 64 messages behind; subscribe again without since_version"})
        );
        assert_eq!(
            parse(&closed(CloseReason::PeriodClosed, "2025-10-13", 97)),
            json!({"type":"closed","reason":"period_closed","period_key":"2025-10-13","board_version":97})
        );
        assert_eq!(
            parse(&closed(CloseReason::SeasonArchived, "all_time", 3)),
            json!({"type":"closed","reason":"season_archived","period_key":"all_time","board_version":3})
        );
    }
}
