//! A live subscriber's client (`docs/live.md`): one subscription over Server-Sent Events (a
//! plain HTTP/1.1 GET, the body read as it comes, chunked or ended by the close) or over a
//! WebSocket (tokio-tungstenite), its messages parsed into the core's own types, so that a
//! harness follows a view with [`ViewState::apply`] exactly as a client should, and compares it
//! with a fresh read parsed by [`view_of_read`].
//!
//! Entries travel with `achieved_at` as RFC 3339 text; the core's [`ViewEntry`] keeps ms, so
//! they are read with [`crate::workload::parse_rfc3339`], on both sides of a comparison alike.

use futures_util::StreamExt;
use standings_core::{PlayerId, Position, View, ViewDelta, ViewEntry, ViewState};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{Error as WsError, Message as Frame};

use crate::http::find;
use crate::workload::parse_rfc3339;

/// How a subscriber is connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Server-Sent Events over a plain HTTP/1.1 GET.
    Sse,
    /// A WebSocket upgrade; one text frame per message.
    WebSocket,
}

/// One message of a subscription, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// The whole view at a version.
    Snapshot(ViewState),
    /// The view's net change from `base_version` to `board_version`.
    Delta(ViewDelta),
    /// Nothing happened; the stream is alive.
    Heartbeat,
    /// Start over without a position; the stream ends.
    Resync,
    /// The period closed or the season was archived; the stream ends.
    Closed,
    /// The server is stopping: come back with the position held; the stream ends.
    GoingAway,
}

impl Message {
    /// Parses one message's JSON. O(bytes).
    pub fn parse(json: &[u8]) -> Result<Message, String> {
        let value: serde_json::Value = serde_json::from_slice(json)
            .map_err(|e| format!("a message is not JSON ({e}): {}", lossy(json)))?;
        let number = |name: &str| {
            value[name]
                .as_u64()
                .ok_or_else(|| format!("a message without {name}: {value}"))
        };
        let period_key = || {
            value["period_key"]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("a message without period_key: {value}"))
        };
        match value["type"].as_str() {
            Some("snapshot") => Ok(Message::Snapshot(ViewState {
                period_key: period_key()?,
                board_version: number("board_version")?,
                entries: entries_of(&value["entries"])?,
            })),
            Some("delta") => Ok(Message::Delta(ViewDelta {
                period_key: period_key()?,
                base_version: number("base_version")?,
                board_version: number("board_version")?,
                changed: entries_of(&value["changed"])?,
                left: value["left"]
                    .as_array()
                    .ok_or_else(|| format!("a delta without left: {value}"))?
                    .iter()
                    .map(|p| player_of(p.as_str().unwrap_or("")))
                    .collect::<Result<_, _>>()?,
            })),
            Some("heartbeat") => Ok(Message::Heartbeat),
            Some("resync") => Ok(Message::Resync),
            Some("closed") => Ok(Message::Closed),
            Some("going_away") => Ok(Message::GoingAway),
            _ => Err(format!("a message of no known type: {value}")),
        }
    }

    /// The position a snapshot or a delta brings its view to (its SSE `id:`).
    pub fn position(&self) -> Option<Position> {
        let (period_key, board_version) = match self {
            Message::Snapshot(state) => (&state.period_key, state.board_version),
            Message::Delta(delta) => (&delta.period_key, delta.board_version),
            _ => return None,
        };
        Some(Position {
            period_key: Some(period_key.clone()),
            board_version,
        })
    }
}

fn player_of(id: &str) -> Result<PlayerId, String> {
    PlayerId::new(id).map_err(|e| format!("a player id {id:?} the core refuses: {e}"))
}

/// One entry as the read API and the live messages print it: `{rank, player_id, value,
/// achieved_at}` and the extras that are set (`metadata` kept as its compact JSON text).
pub fn entry_of(value: &serde_json::Value) -> Result<ViewEntry, String> {
    match (
        value["rank"].as_u64(),
        value["player_id"].as_str(),
        value["value"].as_i64(),
        value["achieved_at"].as_str().and_then(parse_rfc3339),
    ) {
        (Some(rank), Some(player), Some(score), Some(achieved_at)) => Ok(ViewEntry {
            rank,
            player_id: player_of(player)?,
            value: score,
            achieved_at,
            display_name: value["display_name"].as_str().map(str::to_owned),
            country: value["country"].as_str().map(str::to_owned),
            metadata: value.get("metadata").map(|m| m.to_string()),
            global_rank: value["global_rank"].as_u64(),
        }),
        _ => Err(format!("not an entry: {value}")),
    }
}

/// The entries of a JSON array of entries.
pub fn entries_of(value: &serde_json::Value) -> Result<Vec<ViewEntry>, String> {
    value
        .as_array()
        .ok_or_else(|| format!("not a list of entries: {value}"))?
        .iter()
        .map(entry_of)
        .collect()
}

/// The read that answers the same as a view (docs/live.md): `top?limit=N`,
/// `players/P/nearby?radius=R` or `players/P/rank`, with `segment=D:V` for a view within a
/// segment, as a path below the board's `/v1/leaderboards/...`.
pub fn read_path_of(view: &View) -> String {
    match view {
        View::Top { limit } => format!("top?limit={limit}"),
        View::Around { player, radius } => format!("players/{player}/nearby?radius={radius}"),
        View::Player { player } => format!("players/{player}/rank"),
        View::In { segment, view } => {
            let path = read_path_of(view);
            let joint = if path.contains('?') { '&' } else { '?' };
            format!("{path}{joint}segment={}:{}", segment.dimension, segment.value)
        }
    }
}

/// A fresh read of `view` (the answer to [`read_path_of`], with its status) as the view's
/// state: the entries of a top or nearby answer, the one entry of a rank answer, none for a
/// player who is not ranked (404 `PLAYER_NOT_RANKED`).
pub fn view_of_read(view: &View, status: u16, body: &[u8]) -> Result<ViewState, String> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| format!("a read answered {status} with a body that is not JSON ({e})"))?;
    let unranked = status == 404 && value["code"] == "PLAYER_NOT_RANKED";
    if status != 200 && !unranked {
        return Err(format!("a read of {view} answered {status}: {value}"));
    }
    if unranked {
        // A 404 names no version; the caller compares at the version it read otherwise.
        return Ok(ViewState {
            period_key: String::new(),
            board_version: 0,
            entries: Vec::new(),
        });
    }
    let single = match view {
        View::In { view, .. } => matches!(**view, View::Player { .. }),
        view => matches!(view, View::Player { .. }),
    };
    let entries = if single {
        vec![entry_of(&value)?]
    } else {
        entries_of(&value["entries"])?
    };
    Ok(ViewState {
        period_key: value["period_key"]
            .as_str()
            .ok_or_else(|| format!("a read without period_key: {value}"))?
            .to_string(),
        board_version: value["board_version"]
            .as_u64()
            .ok_or_else(|| format!("a read without board_version: {value}"))?,
        entries,
    })
}

/// What opening a subscription gave.
pub enum Opened {
    /// The stream, its first message still to be read.
    Stream(Box<LiveStream>),
    /// A refusal before the stream started: its status and body.
    Refused {
        /// The HTTP status.
        status: u16,
        /// The problem document (or what came of it).
        body: String,
    },
}

/// An open subscription.
pub struct LiveStream {
    inner: Inner,
}

enum Inner {
    Sse {
        stream: TcpStream,
        /// Bytes read and not yet taken out as body.
        raw: Vec<u8>,
        /// Body bytes not yet cut into events.
        body: Vec<u8>,
        chunked: bool,
        /// The last chunk came (a chunked body only).
        ended: bool,
    },
    WebSocket(Box<WebSocketStream<TcpStream>>),
}

impl LiveStream {
    /// Subscribes at `path` (`/v1/leaderboards/.../subscribe?view=...`, with `since_version`
    /// when coming back) as `token`. `Err` when the service cannot be reached or broke off
    /// before answering (as while it restarts).
    pub async fn open(addr: &str, path: &str, token: &str, transport: Transport) -> Result<Opened, String> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        match transport {
            Transport::Sse => open_sse(stream, addr, path, token).await,
            Transport::WebSocket => open_websocket(stream, addr, path, token).await,
        }
    }

    /// The next message; `Ok(None)` when the server ended the stream (after `resync`, `closed`
    /// or `going_away`, or at a stop), `Err` when it broke off (a killed service) or sent
    /// something that is not a message.
    pub async fn next(&mut self) -> Result<Option<Message>, String> {
        match &mut self.inner {
            Inner::Sse {
                stream,
                raw,
                body,
                chunked,
                ended,
            } => loop {
                if let Some(at) = find(body, b"\n\n") {
                    let event = body[..at].to_vec();
                    body.drain(..at + 2);
                    if let Some(message) = sse_event(&event)? {
                        return Ok(Some(message));
                    }
                    continue;
                }
                if *ended {
                    return Ok(None);
                }
                let filled = raw.len();
                raw.reserve(4096);
                let n = stream
                    .read_buf(raw)
                    .await
                    .map_err(|e| format!("the stream broke off: {e}"))?;
                if n == 0 {
                    // A body without chunks ends at the close; a chunked one must end with
                    // its last chunk.
                    return if *chunked {
                        Err("the stream broke off".into())
                    } else if body.is_empty() {
                        Ok(None)
                    } else {
                        Err("the stream broke off inside an event".into())
                    };
                }
                debug_assert!(raw.len() == filled + n);
                if *chunked {
                    *ended = dechunk(raw, body)?;
                } else {
                    body.append(raw);
                }
            },
            Inner::WebSocket(ws) => loop {
                match ws.next().await {
                    None => return Err("the socket closed without a close frame".into()),
                    Some(Err(e)) => return Err(format!("the socket broke off: {e}")),
                    Some(Ok(Frame::Text(text))) => return Message::parse(text.as_bytes()).map(Some),
                    Some(Ok(Frame::Close(_))) => return Ok(None),
                    Some(Ok(Frame::Binary(_))) => return Err("a binary frame".into()),
                    Some(Ok(_)) => {}
                }
            },
        }
    }
}

impl LiveStream {
    /// The next message with its JSON as the server sent it, to compare tiers byte for byte.
    /// WebSocket subscriptions only (an SSE event's data is parsed where it is cut out).
    pub async fn next_text(&mut self) -> Result<Option<(Message, String)>, String> {
        let Inner::WebSocket(ws) = &mut self.inner else {
            return Err("next_text reads WebSocket subscriptions".into());
        };
        loop {
            match ws.next().await {
                None => return Err("the socket closed without a close frame".into()),
                Some(Err(e)) => return Err(format!("the socket broke off: {e}")),
                Some(Ok(Frame::Text(text))) => {
                    let message = Message::parse(text.as_bytes())?;
                    return Ok(Some((message, text.to_string())));
                }
                Some(Ok(Frame::Close(_))) => return Ok(None),
                Some(Ok(Frame::Binary(_))) => return Err("a binary frame".into()),
                Some(Ok(_)) => {}
            }
        }
    }
}

async fn open_sse(mut stream: TcpStream, addr: &str, path: &str, token: &str) -> Result<Opened, String> {
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("cannot send the request: {e}"))?;
    let mut raw = Vec::with_capacity(4096);
    let head_end = loop {
        if let Some(at) = find(&raw, b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream
            .read_buf(&mut raw)
            .await
            .map_err(|e| format!("cannot read the answer: {e}"))?;
        if n == 0 {
            return Err("the service closed the connection before answering".into());
        }
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let status = head
        .get(9..12)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("a malformed answer: {head:?}"))?;
    let header = |name: &str| {
        head.lines()
            .find_map(|line| line.strip_prefix(name))
            .map(|value| value.trim().to_string())
    };
    if status != 200 {
        // The problem document follows the head; read what its length says, if it says.
        let length: usize = header("content-length:")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        while raw.len() < head_end + length {
            match stream.read_buf(&mut raw).await {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
        return Ok(Opened::Refused {
            status,
            body: String::from_utf8_lossy(&raw[head_end..]).into_owned(),
        });
    }
    if !header("content-type:").is_some_and(|t| t.starts_with("text/event-stream")) {
        return Err(format!(
            "a subscription answered 200 without text/event-stream: {head:?}"
        ));
    }
    let chunked = header("transfer-encoding:").is_some_and(|t| t.contains("chunked"));
    raw.drain(..head_end);
    let mut body = Vec::new();
    let ended = if chunked {
        dechunk(&mut raw, &mut body)?
    } else {
        body.append(&mut raw);
        false
    };
    Ok(Opened::Stream(Box::new(LiveStream {
        inner: Inner::Sse {
            stream,
            raw,
            body,
            chunked,
            ended,
        },
    })))
}

async fn open_websocket(stream: TcpStream, addr: &str, path: &str, token: &str) -> Result<Opened, String> {
    let mut request = format!("ws://{addr}{path}")
        .into_client_request()
        .map_err(|e| format!("a bad WebSocket request: {e}"))?;
    request.headers_mut().insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {token}")).map_err(|e| e.to_string())?,
    );
    match tokio_tungstenite::client_async(request, stream).await {
        Ok((ws, _)) => Ok(Opened::Stream(Box::new(LiveStream {
            inner: Inner::WebSocket(Box::new(ws)),
        }))),
        Err(WsError::Http(answer)) => Ok(Opened::Refused {
            status: answer.status().as_u16(),
            body: answer
                .body()
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default(),
        }),
        Err(e) => Err(format!("the upgrade failed: {e}")),
    }
}

/// One SSE event's lines: its `data:` is the message, `event:` must name its type, and `id:`,
/// when given, must be the position it brings the view to. `None` for an event without data
/// (a comment).
fn sse_event(event: &[u8]) -> Result<Option<Message>, String> {
    let (mut data, mut name, mut id) = (None, None, None);
    for line in event.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let field = |prefix: &[u8]| {
            line.strip_prefix(prefix)
                .map(|rest| rest.strip_prefix(b" ").unwrap_or(rest))
        };
        if let Some(rest) = field(b"data:") {
            data = Some(rest);
        } else if let Some(rest) = field(b"event:") {
            name = Some(String::from_utf8_lossy(rest).into_owned());
        } else if let Some(rest) = field(b"id:") {
            id = Some(String::from_utf8_lossy(rest).into_owned());
        }
    }
    let Some(data) = data else {
        return Ok(None);
    };
    let message = Message::parse(data)?;
    let expected = format!("\"type\":\"{}\"", name.as_deref().unwrap_or(""));
    if find(data, expected.as_bytes()).is_none() {
        return Err(format!("an SSE event named {name:?} carries {}", lossy(data)));
    }
    if let (Some(id), Some(position)) = (&id, message.position())
        && *id != position.to_string()
    {
        return Err(format!(
            "an SSE event with id: {id} brings the view to {position}"
        ));
    }
    Ok(Some(message))
}

/// Moves the complete chunks at the front of `raw` into `body`; true once the last (empty)
/// chunk came.
fn dechunk(raw: &mut Vec<u8>, body: &mut Vec<u8>) -> Result<bool, String> {
    let mut at = 0;
    let mut last = false;
    while let Some(line) = find(&raw[at..], b"\r\n") {
        let size_text = std::str::from_utf8(&raw[at..at + line]).map_err(|_| "a chunk size is not text")?;
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size =
            usize::from_str_radix(size_text, 16).map_err(|_| format!("a bad chunk size {size_text:?}"))?;
        let data = at + line + 2;
        if raw.len() < data + size + 2 {
            break;
        }
        at = data + size + 2;
        if size == 0 {
            last = true;
            break;
        }
        body.extend_from_slice(&raw[data..data + size]);
    }
    raw.drain(..at);
    Ok(last)
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented messages parse into the core's types, with times in ms.
    #[test]
    fn parses_the_documented_messages() {
        let snapshot = br#"{"type":"snapshot","view":"top:3","period":"all_time","period_key":"all_time","period_start":null,"period_end":null,"board_version":42,"entries":[{"rank":1,"player_id":"p-ava","value":1200,"achieved_at":"2026-10-13T10:05:00Z"}]}"#;
        let Message::Snapshot(state) = Message::parse(snapshot).unwrap() else {
            panic!("not a snapshot");
        };
        assert_eq!((state.period_key.as_str(), state.board_version), ("all_time", 42));
        assert_eq!(
            state.entries[0].achieved_at,
            parse_rfc3339("2026-10-13T10:05:00Z").unwrap()
        );
        let delta = br#"{"type":"delta","period_key":"all_time","base_version":42,"board_version":46,"changed":[{"rank":2,"player_id":"p-dee","value":950,"achieved_at":"2026-10-13T10:06:00.5Z"}],"left":["p-cy"]}"#;
        let message = Message::parse(delta).unwrap();
        assert_eq!(message.position().unwrap().to_string(), "all_time:46");
        let Message::Delta(delta) = message else {
            panic!("not a delta");
        };
        assert_eq!((delta.base_version, delta.left[0].as_str()), (42, "p-cy"));
        assert_eq!(
            Message::parse(br#"{"type":"heartbeat"}"#).unwrap(),
            Message::Heartbeat
        );
        assert!(Message::parse(br#"{"type":"surprise"}"#).is_err());
    }

    /// An SSE event's name and id must agree with its data.
    #[test]
    fn checks_an_events_name_and_id() {
        let data = r#"data: {"type":"delta","period_key":"all_time","base_version":1,"board_version":2,"changed":[],"left":[]}"#;
        assert!(
            sse_event(format!("event: delta\nid: all_time:2\n{data}").as_bytes())
                .unwrap()
                .is_some()
        );
        assert!(sse_event(format!("event: delta\nid: all_time:3\n{data}").as_bytes()).is_err());
        assert!(sse_event(format!("event: snapshot\n{data}").as_bytes()).is_err());
        assert!(sse_event(b": keep-alive").unwrap().is_none());
    }

    /// Chunks split anywhere come out whole and in order; the empty chunk ends the body.
    #[test]
    fn dechunks_across_reads() {
        let wire = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        for split in 0..wire.len() {
            let mut raw = wire[..split].to_vec();
            let mut body = Vec::new();
            assert!(!dechunk(&mut raw, &mut body).unwrap());
            raw.extend_from_slice(&wire[split..]);
            assert!(dechunk(&mut raw, &mut body).unwrap(), "split at {split}");
            assert_eq!(body, b"hello world");
        }
    }

    /// A rank answer is a view of one entry; an unranked player's 404 a view of none.
    #[test]
    fn reads_answers_as_views() {
        let view: View = "player:p-ava".parse().unwrap();
        let rank = br#"{"period":"all_time","period_key":"all_time","period_start":null,"period_end":null,"board_version":7,"player_id":"p-ava","rank":1,"value":5,"achieved_at":"2026-10-13T10:05:00Z","competition_rank":1,"dense_rank":1,"percentile":100.0,"total_players":1}"#;
        let state = view_of_read(&view, 200, rank).unwrap();
        assert_eq!((state.board_version, state.entries.len()), (7, 1));
        let missing = br#"{"type":"about:blank","title":"Not Found","status":404,"code":"PLAYER_NOT_RANKED","detail":"x"}"#;
        assert!(view_of_read(&view, 404, missing).unwrap().entries.is_empty());
        assert!(view_of_read(&view, 503, br#"{"code":"BOARD_BROKEN"}"#).is_err());
        assert_eq!(
            read_path_of(&"around:p-ava:3".parse().unwrap()),
            "players/p-ava/nearby?radius=3"
        );
    }
}
