//! Which live object a subscription belongs to, and what that object asks the origin for. A
//! subscription goes to an object only when the edge can tell it is well formed (a WebSocket
//! upgrade with a view it parses, a version it parses, nothing else it does not know); every
//! other request is the origin's to answer, so refusals keep the origin's words.

use http::header::{CONNECTION, UPGRADE};
use http::{HeaderMap, HeaderName};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use standings_core::contract::{Code, Problem};
use standings_core::{Position, View};

/// The header `EventSource` sends its last `id:` in when it reconnects.
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The header the worker names the origin's subscription path in, for the live object.
pub const UPSTREAM_HEADER: &str = "x-standings-live-upstream";
/// The header the worker names the client's position in, for the live object.
pub const SINCE_HEADER: &str = "x-standings-live-since";
/// The header the worker names who holds the subscription in (see [`LiveRoute::holder`]).
pub const HOLDER_HEADER: &str = "x-standings-live-holder";

/// How many sockets of one view a holder may open through the edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// For a player or a token (`LIVE_MAX_PER_HOLDER`, the origin's `max_subscribers_per_token`
    /// by default).
    pub per_holder: usize,
    /// For an address without a token (`LIVE_MAX_PER_ADDRESS`, the origin's
    /// `max_subscribers_per_address` by default).
    pub per_address: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            per_holder: 1_000,
            per_address: 100,
        }
    }
}

impl Limits {
    /// The refusal of one more socket for `holder`, who has `open` on this view, if any. An
    /// object holds at most 32,768 sockets, so without this one caller could fill a popular
    /// view's object. O(1).
    pub fn refusal(&self, holder: &str, open: usize) -> Option<Problem> {
        let (limit, detail) = if holder.starts_with("address:") {
            (
                self.per_address,
                format!(
                    "this address has {} live subscriptions of this view open through the edge without a token, the most allowed; close one first, or subscribe with a token",
                    self.per_address
                ),
            )
        } else {
            (
                self.per_holder,
                format!(
                    "this token has {} live subscriptions of this view open through the edge, the most allowed; close one first",
                    self.per_holder
                ),
            )
        };
        (open >= limit).then(|| Problem::new(Code::TOO_MANY_SUBSCRIPTIONS, detail))
    }
}

/// A subscription the edge's live objects take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveRoute {
    /// The object's name: one per board, view, period and `at`, as the origin resolves them.
    pub object: String,
    /// The origin's path and query the object subscribes to, without a version.
    pub upstream: String,
    /// Where the client holds the view (`since_version`, else `Last-Event-ID`).
    pub since: Option<Position>,
    /// The player JWT sent as `access_token`, checked by the edge as a bearer token.
    pub access_token: Option<String>,
    /// Who holds the subscription, for the object's limits: `player:SUB`, `token:HASH` (a
    /// static token, by its SHA-256), `address:IP` without a token. Set once the caller is
    /// known; empty until then.
    pub holder: String,
}

fn asks_websocket(headers: &HeaderMap) -> bool {
    let has = |name, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.split(',').any(|part| part.trim().eq_ignore_ascii_case(token)))
        })
    };
    has(UPGRADE, "websocket") && has(CONNECTION, "upgrade")
}

fn encoded(text: &str) -> String {
    utf8_percent_encode(text, NON_ALPHANUMERIC).to_string()
}

/// The live object for `GET /v1/leaderboards/{board_raw}/subscribe?{query}`, or `None` when the
/// origin should answer it (an SSE subscription, a parameter the edge cannot read, a body, a
/// `min_position`, a token both in the header and the query). O(query length).
pub fn route(board_raw: &str, query: Option<&str>, headers: &HeaderMap, has_body: bool) -> Option<LiveRoute> {
    if has_body || !asks_websocket(headers) {
        return None;
    }
    let (mut view, mut segment, mut since, mut period, mut at, mut access_token) =
        (None, None, None, None, None, None);
    for (name, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let slot = match name.as_ref() {
            "view" => &mut view,
            "segment" => &mut segment,
            "since_version" => &mut since,
            "period" => &mut period,
            "at" => &mut at,
            "access_token" => &mut access_token,
            _ => return None,
        };
        if slot.replace(value.into_owned()).is_some() {
            return None;
        }
    }
    let mut view: View = view?.parse().ok()?;
    if let Some(segment) = segment {
        // Checked against the board's dimensions by the origin, when the object subscribes:
        // a view within a segment travels as one text (`in:country:DE:top:10`).
        let (dimension, value) = segment.split_once(':')?;
        if dimension.is_empty() || value.is_empty() || value.contains(':') || view.segment().is_some() {
            return None;
        }
        view = view.within(standings_core::Segment {
            dimension: dimension.into(),
            value: value.into(),
        });
    }
    let since: Option<Position> = match since {
        Some(raw) => Some(raw.parse().ok()?),
        None => match headers.get(LAST_EVENT_ID) {
            None => None,
            Some(value) => {
                let text = value.to_str().ok()?.trim();
                if text.is_empty() {
                    None
                } else {
                    Some(text.parse().ok()?)
                }
            }
        },
    };
    if access_token.is_some() && headers.contains_key(http::header::AUTHORIZATION) {
        return None;
    }
    let view_text = view.to_string();
    let mut upstream = format!(
        "/v1/leaderboards/{board_raw}/subscribe?view={}",
        encoded(&view_text)
    );
    let mut object = format!("{board_raw}|{view_text}");
    for (name, value) in [("period", &period), ("at", &at)] {
        object.push('|');
        if let Some(value) = value {
            upstream.push_str(&format!("&{name}={}", encoded(value)));
            object.push_str(value);
        }
    }
    Some(LiveRoute {
        object,
        upstream,
        since,
        access_token,
        holder: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn upgrade() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
        headers.insert(CONNECTION, HeaderValue::from_static("keep-alive, Upgrade"));
        headers
    }

    #[test]
    fn one_object_per_board_view_period_and_at() {
        let first = route(
            "g/m/s/global",
            Some("view=top%3A10&period=daily&since_version=2026-10-13:4"),
            &upgrade(),
            false,
        )
        .unwrap();
        assert_eq!(first.object, "g/m/s/global|top:10|daily|");
        assert_eq!(
            first.upstream,
            "/v1/leaderboards/g/m/s/global/subscribe?view=top%3A10&period=daily"
        );
        assert_eq!(first.since, Some("2026-10-13:4".parse().unwrap()));
        let other = route(
            "g/m/s/global",
            Some("view=top:10&period=daily"),
            &upgrade(),
            false,
        )
        .unwrap();
        assert_eq!(
            other.object, first.object,
            "the version held is no part of the object"
        );
        let mut reconnect = upgrade();
        reconnect.insert(LAST_EVENT_ID, HeaderValue::from_static("all_time:7"));
        assert_eq!(
            route("g/m/s/global", Some("view=player:p1"), &reconnect, false)
                .unwrap()
                .since,
            Some("all_time:7".parse().unwrap())
        );
    }

    /// A view within a segment is an object of its own, subscribed to upstream as one text.
    #[test]
    fn a_segment_view_is_an_object_of_its_own() {
        let within = route(
            "g/m/s/global",
            Some("view=top:10&segment=country:DE"),
            &upgrade(),
            false,
        )
        .unwrap();
        assert_eq!(within.object, "g/m/s/global|in:country:DE:top:10||");
        assert_eq!(
            within.upstream,
            "/v1/leaderboards/g/m/s/global/subscribe?view=in%3Acountry%3ADE%3Atop%3A10"
        );
        let written = route(
            "g/m/s/global",
            Some("view=in:country:DE:top:10"),
            &upgrade(),
            false,
        )
        .unwrap();
        assert_eq!(
            written.object, within.object,
            "the same view, either way it was asked"
        );
        for odd in [
            "segment=DE",
            "segment=:DE",
            "segment=country:",
            "view=in:country:FR:top:10&segment=country:DE",
        ] {
            let query = if odd.starts_with("view=") {
                odd.to_string()
            } else {
                format!("view=top:10&{odd}")
            };
            assert!(
                route("g/m/s/global", Some(&query), &upgrade(), false).is_none(),
                "{odd}"
            );
        }
    }

    #[test]
    fn a_holder_may_open_up_to_its_limit_on_one_view() {
        let limits = Limits {
            per_holder: 2,
            per_address: 1,
        };
        assert!(limits.refusal("player:p-1", 1).is_none());
        let refused = limits.refusal("player:p-1", 2).unwrap();
        assert_eq!((refused.status, refused.code), (429, "TOO_MANY_SUBSCRIPTIONS"));
        assert!(limits.refusal("token:ab12", 1).is_none());
        assert!(limits.refusal("address:192.0.2.1", 0).is_none());
        assert!(
            limits
                .refusal("address:192.0.2.1", 1)
                .unwrap()
                .detail
                .contains("without a token")
        );
    }

    /// What the edge cannot read goes to the origin, which answers it in its own words.
    #[test]
    fn the_origin_answers_what_the_edge_cannot_read() {
        let board = "g/m/s/global";
        assert!(
            route(board, Some("view=top:10"), &HeaderMap::new(), false).is_none(),
            "SSE"
        );
        assert!(
            route(board, Some("view=top:10"), &upgrade(), true).is_none(),
            "a body"
        );
        assert!(route(board, Some("view=top:0"), &upgrade(), false).is_none());
        assert!(route(board, None, &upgrade(), false).is_none(), "no view");
        assert!(route(board, Some("view=top:10&since_version=x"), &upgrade(), false).is_none());
        assert!(route(board, Some("view=top:10&view=top:5"), &upgrade(), false).is_none());
        assert!(route(board, Some("view=top:10&min_position=3"), &upgrade(), false).is_none());
        let mut both = upgrade();
        both.insert(http::header::AUTHORIZATION, HeaderValue::from_static("Bearer t"));
        assert!(route(board, Some("view=top:10&access_token=a.b.c"), &both, false).is_none());
        let mut bad_id = upgrade();
        bad_id.insert(LAST_EVENT_ID, HeaderValue::from_static("x7"));
        assert!(route(board, Some("view=top:10"), &bad_id, false).is_none());
    }
}
