//! The live subscription endpoint, `GET .../subscribe`: Server-Sent Events by default, a
//! WebSocket when the request asks to upgrade, the same messages on both (`docs/live.md`).
//!
//! It only translates between HTTP and the [`Hub`](crate::live::Hub): it checks auth, reads the
//! view and the version the client holds, resolves the board instance exactly as reads do,
//! opens the subscription, and writes each message as it comes. Every refusal (auth, a bad
//! parameter, a limit) is an ordinary problem+json answer, given before the stream starts or
//! the connection is upgraded.

use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Uri, header};
use axum::response::Response;
use axum::routing::get;
use futures_util::{SinkExt as _, StreamExt as _, stream};
use standings_core::{Position, View};

use super::read::{BoardPath, board_parts};
use super::serve::{PeerAddr, Streaming};
use super::{ReadQuery, Shared, board_of};
use crate::http::error::{AppError, AppResult, Code};
use crate::live::{Kind, Outgoing, Subscription, Watch};

/// The header `EventSource` sends its last `id:` in when it reconnects.
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// Asks nginx and proxies like it to pass each event on at once instead of buffering the body.
const X_ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");

/// The most a WebSocket client may send in one message: it sends nothing the service reads
/// (pings and close frames are small), so this only bounds what a hostile one can make the
/// service buffer.
const MAX_CLIENT_MESSAGE: usize = 64 * 1024;

/// The WebSocket read buffer, allocated for each socket up front: small, as the client sends
/// next to nothing and an idle subscriber must stay cheap; it grows if a frame needs more.
const READ_BUFFER: usize = 1024;

/// How long a closing WebSocket waits for the client's close frame before it drops the socket.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// How long a WebSocket frame may wait for a client that does not read before the socket is
/// dropped. The hub has long since sent such a client `resync` and left it; this frees its
/// connection and its place in the subscription limits. (An SSE stream has the serve loop's
/// stall deadline instead; an upgraded socket has left the serve loop.)
const WRITE_STALL: Duration = Duration::from_secs(30);

/// The subscription route. Its SSE answers are served outside hyper ([`super::stream_routes`]).
pub(super) const SUBSCRIBE: &str = "/v1/leaderboards/{game}/{mode}/{season}/{scope}/subscribe";

pub(super) fn router() -> Router<Shared> {
    Router::new().route(SUBSCRIBE, get(subscribe))
}

/// Opens a subscription and answers it as SSE or, when asked, over a WebSocket. Auth comes
/// first, as in reads, so a refused caller learns nothing about the parameters or the board.
async fn subscribe(
    State(state): State<Shared>,
    Path(path): Path<BoardPath>,
    uri: Uri,
    headers: HeaderMap,
    peer: Option<axum::Extension<PeerAddr>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> AppResult<Response> {
    let params = ReadQuery(uri.query());
    let holder = state
        .auth
        .subscriber(&headers, params.get("access_token").as_deref(), &path.0)?;
    let view = view_of(&params)?;
    let since = since_of(&params, &headers)?;
    no_body(&headers)?;
    let upgrade = websocket_of(upgrade, &headers)?;
    let slot = board_of(&state, board_parts(&path), &params).await?;
    let view = within_segment(view, &params, &slot)?;
    let subscription = state.live.subscribe(Watch {
        slot,
        view,
        since,
        holder,
        address: peer.map(|axum::Extension(PeerAddr(address))| address.ip()),
    })?;
    Ok(match upgrade {
        Some(upgrade) => upgrade
            .read_buffer_size(READ_BUFFER)
            // Each message is written as it comes: it is due now, and nothing follows soon.
            .write_buffer_size(0)
            .max_message_size(MAX_CLIENT_MESSAGE)
            .max_frame_size(MAX_CLIENT_MESSAGE)
            .on_upgrade(move |socket| websocket(socket, subscription)),
        None => event_stream(subscription),
    })
}

/// The view within the `segment` parameter when there is one (a view's text may also name
/// its segment, `in:country:DE:top:10`), the segment checked against the dimensions the board
/// declares, as the segment reads check it. O(1).
fn within_segment(view: View, params: &ReadQuery<'_>, slot: &crate::boards::BoardSlot) -> AppResult<View> {
    let spec = slot.read().segment_spec();
    let view = match params.segment(&spec, &slot.id)? {
        Some(segment) => view.within(segment),
        None => view,
    };
    if let Some(segment) = view.segment() {
        let raw = format!("{}:{}", segment.dimension, segment.value);
        standings_core::contract::query::check_segment(&raw, &spec, &slot.id)?;
    }
    Ok(view)
}

/// The `view` parameter, required.
fn view_of(params: &ReadQuery<'_>) -> AppResult<View> {
    let raw = params.get("view").ok_or_else(|| {
        AppError::new(
            Code::INVALID_REQUEST,
            "view is required: top:N, around:PLAYER:R or player:PLAYER",
        )
    })?;
    raw.parse()
        .map_err(|e| AppError::new(Code::INVALID_REQUEST, format!("view={raw:?} is not valid: {e}")))
}

/// Where the client holds its view: `since_version`, or when the query has none, the
/// `Last-Event-ID` that `EventSource` sends on its own reconnects (the `id:` of the last
/// snapshot or delta it saw). Both are `PERIOD_KEY:VERSION` or a bare version (see
/// `standings_core::Position`). An empty `Last-Event-ID` is none, as an empty `id:` resets it.
fn since_of(params: &ReadQuery<'_>, headers: &HeaderMap) -> AppResult<Option<Position>> {
    if let Some(raw) = params.get("since_version") {
        return raw.parse().map(Some).map_err(|e| {
            AppError::new(
                Code::INVALID_REQUEST,
                format!("since_version={raw:?} is not valid; {e}"),
            )
        });
    }
    let Some(value) = headers.get(LAST_EVENT_ID) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("\u{fffd}").trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|e| {
        AppError::new(
            Code::INVALID_REQUEST,
            format!("the Last-Event-ID header {text:?} is not valid; {e}"),
        )
    })
}

/// A subscription request carries no body: the stream is the whole exchange, and a body (or
/// a request pipelined behind it) would never be read.
fn no_body(headers: &HeaderMap) -> AppResult<()> {
    let has_body = headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|length| length.as_bytes() != b"0");
    if has_body {
        return Err(AppError::new(
            Code::INVALID_REQUEST,
            "a subscription request has no body; send the view and the version held in the query",
        ));
    }
    Ok(())
}

/// The WebSocket upgrade, when the request asks for one (`Upgrade: websocket`); `None` for
/// SSE. A request that asks but cannot be upgraded (a missing key, a wrong version) is told
/// why rather than answered as SSE.
fn websocket_of(
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    headers: &HeaderMap,
) -> AppResult<Option<WebSocketUpgrade>> {
    let asks = headers
        .get(header::UPGRADE)
        .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"websocket"));
    if asks && !valid_websocket_key(headers.get(header::SEC_WEBSOCKET_KEY)) {
        return Err(AppError::new(
            Code::INVALID_REQUEST,
            "the WebSocket upgrade cannot be made: Sec-WebSocket-Key must be 16 random bytes in base64 (RFC 6455, 4.1)",
        ));
    }
    match upgrade {
        Ok(upgrade) => Ok(Some(upgrade)),
        Err(_) if !asks => Ok(None),
        Err(rejection) => Err(AppError::new(
            Code::INVALID_REQUEST,
            format!("the WebSocket upgrade cannot be made: {}", rejection.body_text()),
        )),
    }
}

/// Whether a `Sec-WebSocket-Key` is what RFC 6455 asks: base64 of 16 bytes. A server must not
/// upgrade on anything else (an empty key is the common mistake). O(1).
fn valid_websocket_key(key: Option<&HeaderValue>) -> bool {
    use base64::Engine as _;
    key.and_then(|key| {
        base64::engine::general_purpose::STANDARD
            .decode(key.as_bytes())
            .ok()
    })
    .is_some_and(|bytes| bytes.len() == 16)
}

/// The SSE answer: a body that writes each message as one event until the subscription ends.
/// When the client goes away, hyper drops the body and with it the subscription.
fn event_stream(subscription: Subscription) -> Response {
    let events = stream::unfold(subscription, |mut subscription| async move {
        let message = subscription.next().await?;
        let event = sse_event(&message);
        // Handed to hyper as this item is yielded, within the same poll.
        subscription.written(&message);
        Some((stream::iter(event.map(Ok::<Bytes, Infallible>)), subscription))
    })
    .flatten();
    let mut response = Response::new(Body::from_stream(events));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(X_ACCEL_BUFFERING, HeaderValue::from_static("no"));
    // The serve loop gives the connection no idle deadline until this body ends.
    response.extensions_mut().insert(Streaming);
    response
}

/// One message as an SSE event, in three parts so that the JSON, shared by every subscriber
/// of the view, is not copied: `event:` (and `id:`, `PERIOD_KEY:VERSION`, for a message that
/// moves the view's version) up to `data: `, the JSON, and the blank line that ends the event. The JSON is one
/// line, as `data:` needs: compact JSON has no raw newline (strings escape theirs). O(1) but
/// for the head's few bytes.
fn sse_event(message: &Outgoing) -> [Bytes; 3] {
    debug_assert!(
        !message.json.contains(&b'\n'),
        "an SSE data line holds no newline"
    );
    let mut head = format!("event: {}\n", message.kind.as_str());
    if let (Some(version), Some(key)) = (message.board_version, &message.period_key) {
        head.push_str(&format!("id: {key}:{version}\n"));
    }
    head.push_str("data: ");
    [
        Bytes::from(head),
        message.json.clone(),
        Bytes::from_static(b"\n\n"),
    ]
}

/// Serves one subscription over an upgraded WebSocket: each message as one text frame, then
/// a close frame once the subscription ends (after `resync`, `closed` or `going_away`); stops
/// at once when the client closes. What the client sends is read only for its close frames
/// and pings (tungstenite answers those as it reads).
async fn websocket(mut socket: WebSocket, mut subscription: Subscription) {
    let mut last = None;
    loop {
        tokio::select! {
            message = subscription.next() => {
                let Some(message) = message else { break };
                // The hub's JSON is UTF-8 by construction; the check costs a scan, not a copy.
                let Ok(text) = Utf8Bytes::try_from(message.json.clone()) else {
                    tracing::error!("a live {} message is not UTF-8; closing the WebSocket", message.kind.as_str());
                    break;
                };
                if !sent(&mut socket, Message::Text(text)).await {
                    return;
                }
                subscription.written(&message);
                last = Some(message.kind);
            }
            incoming = socket.recv() => match incoming {
                // tungstenite has queued the answer to a close frame; closing flushes it.
                Some(Ok(Message::Close(_))) => {
                    let _ = socket.close().await;
                    return;
                }
                None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
        }
    }
    let code = match last {
        Some(Kind::GoingAway) => close_code::AWAY,
        _ => close_code::NORMAL,
    };
    let reason = last.map_or("", Kind::as_str);
    let close = CloseFrame {
        code,
        reason: Utf8Bytes::from_static(reason),
    };
    if !sent(&mut socket, Message::Close(Some(close))).await {
        return;
    }
    // Dropped once the close frame is sent: a stopping hub waits for every subscription to
    // go, so the server stops only after its last frames are out.
    drop(subscription);
    // The client's close frame ends the handshake; one that never sends it is not waited for.
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        while let Some(Ok(_)) = socket.recv().await {}
    })
    .await;
}

/// Sends one frame; false when the socket failed or the client did not take it within
/// [`WRITE_STALL`].
async fn sent(socket: &mut WebSocket, message: Message) -> bool {
    matches!(
        tokio::time::timeout(WRITE_STALL, socket.send(message)).await,
        Ok(Ok(()))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: Kind, board_version: Option<u64>, json: &'static str) -> Outgoing {
        Outgoing {
            kind,
            board_version,
            period_key: board_version.map(|_| std::sync::Arc::from("2026-10-13")),
            json: Bytes::from_static(json.as_bytes()),
            committed: None,
        }
    }

    fn event_text(message: &Outgoing) -> String {
        sse_event(message)
            .iter()
            .map(|part| std::str::from_utf8(part).unwrap())
            .collect()
    }

    /// A message that moves the view's version carries it with its instance as `id:`, others
    /// have none; each
    /// event is `event:`, `data:` and a blank line, with the shared JSON bytes not copied.
    #[test]
    fn each_message_is_one_sse_event() {
        let delta = message(
            Kind::Delta,
            Some(46),
            r#"{"type":"delta","base_version":42,"board_version":46,"changed":[],"left":[]}"#,
        );
        assert_eq!(
            event_text(&delta),
            "event: delta\nid: 2026-10-13:46\ndata: {\"type\":\"delta\",\"base_version\":42,\"board_version\":46,\"changed\":[],\"left\":[]}\n\n"
        );
        assert_eq!(
            sse_event(&delta)[1].as_ptr(),
            delta.json.as_ptr(),
            "the JSON part is the shared bytes"
        );
        let heartbeat = message(Kind::Heartbeat, None, r#"{"type":"heartbeat"}"#);
        assert_eq!(
            event_text(&heartbeat),
            "event: heartbeat\ndata: {\"type\":\"heartbeat\"}\n\n"
        );
        let going = message(Kind::GoingAway, None, r#"{"type":"going_away"}"#);
        assert!(event_text(&going).starts_with("event: going_away\ndata: "));
    }

    fn query(text: &str) -> Uri {
        format!("/x?{text}").parse().unwrap()
    }

    fn error_text(result: AppResult<impl std::fmt::Debug>) -> String {
        result.unwrap_err().to_string()
    }

    /// What `WebSocketUpgrade` makes of a GET with these headers, as the handler receives it.
    async fn upgrade_of(headers: &[(&str, &str)]) -> Result<WebSocketUpgrade, WebSocketUpgradeRejection> {
        use axum::extract::FromRequestParts as _;
        let mut request = axum::http::Request::get("/x");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let (mut parts, ()) = request.body(()).unwrap().into_parts();
        WebSocketUpgrade::from_request_parts(&mut parts, &()).await
    }

    /// A request that does not ask for a WebSocket is answered as SSE (an `Upgrade: h2c` too);
    /// one that asks but cannot be upgraded is told why, never answered as SSE.
    #[tokio::test]
    async fn only_a_request_for_a_websocket_is_upgraded() {
        for headers in [
            &[][..],
            &[("connection", "Upgrade, HTTP2-Settings"), ("upgrade", "h2c")][..],
        ] {
            let upgrade = upgrade_of(headers).await;
            let headers: HeaderMap = headers
                .iter()
                .map(|(n, v)| (n.parse().unwrap(), v.parse().unwrap()))
                .collect();
            assert!(websocket_of(upgrade, &headers).unwrap().is_none());
        }
        let asks = [
            ("connection", "upgrade"),
            ("upgrade", "WebSocket"),
            ("sec-websocket-version", "13"),
        ];
        let upgrade = upgrade_of(&asks).await;
        let headers: HeaderMap = asks
            .iter()
            .map(|(n, v)| (n.parse().unwrap(), v.parse().unwrap()))
            .collect();
        let text = error_text(websocket_of(upgrade, &headers));
        assert!(
            text.starts_with("INVALID_REQUEST: the WebSocket upgrade cannot be made: ")
                && text.contains("Sec-WebSocket-Key"),
            "{text}"
        );
    }

    /// `view` is required and parsed by the core, its error named with the parameter.
    #[test]
    fn the_view_is_required_and_checked() {
        let uri = query("view=top:10");
        assert_eq!(view_of(&ReadQuery(uri.query())).unwrap(), View::Top { limit: 10 });
        let uri = query("view=around%3Ap-ava%3A5");
        assert_eq!(
            view_of(&ReadQuery(uri.query())).unwrap().to_string(),
            "around:p-ava:5"
        );
        let uri = query("since_version=3");
        assert!(
            error_text(view_of(&ReadQuery(uri.query()))).starts_with("INVALID_REQUEST: view is required")
        );
        for bad in ["top:0", "top:101", "around:p-ava", "near:p-ava", "top:x"] {
            let uri = query(&format!("view={bad}"));
            let text = error_text(view_of(&ReadQuery(uri.query())));
            assert!(
                text.starts_with(&format!("INVALID_REQUEST: view={bad:?} is not valid: ")),
                "{text}"
            );
        }
    }

    /// `since_version` wins over `Last-Event-ID`, which stands for it when the query has
    /// none; both take `PERIOD_KEY:VERSION` or a bare version; junk in either is a 400 naming
    /// it, and an empty `Last-Event-ID` is none.
    #[test]
    fn since_comes_from_the_query_or_last_event_id() {
        let at = |key: Option<&str>, board_version| {
            Some(Position {
                period_key: key.map(Into::into),
                board_version,
            })
        };
        let mut headers = HeaderMap::new();
        let none = query("view=top:3");
        let since = query("view=top:3&since_version=42");
        let keyed = query("view=top:3&since_version=2026-10-13%3A42");
        assert_eq!(since_of(&ReadQuery(none.query()), &headers).unwrap(), None);
        assert_eq!(
            since_of(&ReadQuery(since.query()), &headers).unwrap(),
            at(None, 42)
        );
        assert_eq!(
            since_of(&ReadQuery(keyed.query()), &headers).unwrap(),
            at(Some("2026-10-13"), 42)
        );
        headers.insert(LAST_EVENT_ID, HeaderValue::from_static("all_time:46"));
        assert_eq!(
            since_of(&ReadQuery(none.query()), &headers).unwrap(),
            at(Some("all_time"), 46)
        );
        assert_eq!(
            since_of(&ReadQuery(since.query()), &headers).unwrap(),
            at(None, 42)
        );
        headers.insert(LAST_EVENT_ID, HeaderValue::from_static("46"));
        assert_eq!(
            since_of(&ReadQuery(none.query()), &headers).unwrap(),
            at(None, 46)
        );
        headers.insert(LAST_EVENT_ID, HeaderValue::from_static(""));
        assert_eq!(since_of(&ReadQuery(none.query()), &headers).unwrap(), None);
        headers.insert(LAST_EVENT_ID, HeaderValue::from_static("x7"));
        assert!(
            error_text(since_of(&ReadQuery(none.query()), &headers))
                .contains("the Last-Event-ID header \"x7\" is not valid; expected PERIOD_KEY:VERSION")
        );
        for (bad, shown) in [
            ("-1", "-1"),
            ("%2B4", "+4"),
            ("4.0", "4.0"),
            ("", ""),
            ("18446744073709551616", "18446744073709551616"),
            ("day%20one%3A3", "day one:3"),
        ] {
            let uri = query(&format!("view=top:3&since_version={bad}"));
            let text = error_text(since_of(&ReadQuery(uri.query()), &HeaderMap::new()));
            assert!(
                text.starts_with(&format!("INVALID_REQUEST: since_version={shown:?} is not valid")),
                "{text}"
            );
        }
    }

    /// A request to upgrade with an empty or malformed `Sec-WebSocket-Key` is refused, never
    /// upgraded; a key of 16 bytes in base64 is taken.
    #[tokio::test]
    async fn a_websocket_key_must_be_16_bytes_in_base64() {
        let key = |text: &'static str| HeaderValue::from_static(text);
        assert!(valid_websocket_key(Some(&key("dGhlIHNhbXBsZSBub25jZQ=="))));
        for bad in ["", "  ", "not base64!", "AAAA", "dGhlIHNhbXBsZSBub25jZQ"] {
            assert!(!valid_websocket_key(Some(&key(bad))), "{bad:?}");
        }
        assert!(!valid_websocket_key(None));
        let asks = [
            ("connection", "upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-version", "13"),
            ("sec-websocket-key", ""),
        ];
        let upgrade = upgrade_of(&asks).await;
        let headers: HeaderMap = asks
            .iter()
            .map(|(n, v)| (n.parse().unwrap(), v.parse().unwrap()))
            .collect();
        let refused = error_text(websocket_of(upgrade, &headers));
        assert!(
            refused.starts_with(
                "INVALID_REQUEST: the WebSocket upgrade cannot be made: Sec-WebSocket-Key must be"
            ),
            "{refused}"
        );
    }

    /// A subscription request with a body is refused: nothing would ever read it.
    #[test]
    fn a_subscription_has_no_body() {
        let mut headers = HeaderMap::new();
        assert!(no_body(&headers).is_ok());
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
        assert!(no_body(&headers).is_ok());
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("5"));
        assert!(error_text(no_body(&headers)).contains("has no body"));
        let mut chunked = HeaderMap::new();
        chunked.insert(header::TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
        assert!(no_body(&chunked).is_err());
    }
}
