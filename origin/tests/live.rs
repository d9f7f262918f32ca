//! Live subscriptions (`docs/live.md`) over Server-Sent Events and WebSocket, on SQLite and
//! PostgreSQL. Each scenario runs once per transport: SSE through the router (the response's
//! streaming body, read frame by frame), WebSocket over a real socket to the same service
//! served by `standings_origin::run`; the few about one transport (`Last-Event-ID`, `Accept`,
//! what a WebSocket client sends) run on it alone. Each client keeps its view as a `ViewState` and follows
//! the stream with `ViewState::apply`, and is compared with a fresh read of the same view.
//!
//! Time is a manual clock: a 202 means the change is applied, advancing the clock by one
//! window makes the hub flush it, and the message is then awaited with a real-time timeout
//! that only guards against a hang. Nothing sleeps to wait for state. The window's work runs
//! on its own task and reads the boards when it runs, so every window a test ends is seen on
//! some stream (a delta, a heartbeat, a `closed`) before the board changes again; a window
//! that should send a view nothing is made visible by another view that it does change.

mod common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::*;
use futures_util::{SinkExt, StreamExt};
use http_body_util::BodyExt;
use serde::Deserialize;
use serde_json::{Value, json};
use standings_core::{PlayerId, View, ViewDelta, ViewDeltaError, ViewEntry, ViewState};
use standings_origin::clock::{Clock, parse_rfc3339};
use standings_origin::config::{Config, LiveConfig};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tower::ServiceExt;

const LB: &str = "/v1/leaderboards/arena-clash/solo/S7";

/// The coalescing window of every service here.
const WINDOW_MS: i64 = 250;

/// How long a message may take to arrive before the test fails: a guard against a hang, never
/// a wait for state.
const GUARD: Duration = Duration::from_secs(10);

fn ms(rfc3339: &str) -> i64 {
    parse_rfc3339(rfc3339).unwrap()
}

/// How a client subscribes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    /// Server-Sent Events, through the router.
    Sse,
    /// Server-Sent Events over a real socket, where the server writes the stream itself.
    SseSocket,
    /// WebSocket, over a real socket.
    Ws,
}

impl Transport {
    /// Whether the service must be served on a socket for it.
    fn needs_socket(self) -> bool {
        self != Transport::Sse
    }
}

/// Runs a scenario on both databases and over both transports.
macro_rules! on_both_databases_and_transports {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                use super::{Db, Transport};
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite_sse() {
                    super::$name(Db::Sqlite, Transport::Sse).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite_ws() {
                    super::$name(Db::Sqlite, Transport::Ws).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres_sse() {
                    super::$name(Db::Postgres, Transport::Sse).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres_ws() {
                    super::$name(Db::Postgres, Transport::Ws).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite_sse_socket() {
                    super::$name(Db::Sqlite, Transport::SseSocket).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres_sse_socket() {
                    super::$name(Db::Postgres, Transport::SseSocket).await
                }
            }
        )*
    };
}

on_both_databases_and_transports!(
    test_i_a_client_back_with_its_version_catches_up_in_one_delta,
    a_client_back_after_the_history_is_gone_gets_a_snapshot,
    a_delta_that_does_not_chain_is_refused_by_the_view,
    a_move_and_back_within_one_window_sends_nothing,
    a_stalled_subscriber_is_sent_resync_and_dropped_while_others_keep_receiving,
    a_period_view_follows_its_day_until_it_closes,
    around_and_player_views_follow_their_player,
    moderation_moves_a_player_for_subscribers,
    views_within_a_segment_follow_it_with_global_ranks,
    a_late_decision_and_the_season_archive_reach_subscribers,
    subscriptions_take_read_auth_and_a_player_jwt_in_the_query,
    malformed_subscriptions_are_refused_before_the_stream,
    subscription_limits_answer_429_and_503_with_their_codes,
    a_server_stop_sends_going_away,
    a_quiet_stream_gets_heartbeats,
    a_subscriber_joining_within_a_window_starts_at_the_boards_version,
    a_version_of_yesterday_gets_todays_snapshot,
    a_closed_day_that_left_memory_is_sent_from_storage,
    the_per_token_limit_counts_a_player_jwt_by_its_subject,
);

// ---------------------------------------------------------------------------------------------
// The wire messages.

/// An entry as the read API and the stream write it.
#[derive(Debug, Deserialize)]
struct WireEntry {
    rank: u64,
    #[serde(default)]
    global_rank: Option<u64>,
    player_id: String,
    value: i64,
    achieved_at: String,
}

impl WireEntry {
    fn entry(&self) -> ViewEntry {
        ViewEntry {
            country: None,
            display_name: None,
            metadata: None,
            rank: self.rank,
            player_id: PlayerId::new(&self.player_id).unwrap(),
            value: self.value,
            achieved_at: ms(&self.achieved_at),
            global_rank: self.global_rank,
        }
    }
}

fn entries(wire: &[WireEntry]) -> Vec<ViewEntry> {
    wire.iter().map(WireEntry::entry).collect()
}

/// One message as `docs/live.md` writes it.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Wire {
    Snapshot {
        view: String,
        period: String,
        period_key: String,
        period_start: Option<String>,
        period_end: Option<String>,
        board_version: u64,
        entries: Vec<WireEntry>,
    },
    Delta {
        period_key: String,
        base_version: u64,
        board_version: u64,
        changed: Vec<WireEntry>,
        left: Vec<String>,
    },
    Heartbeat {},
    Resync {
        reason: String,
        detail: String,
    },
    Closed {
        reason: String,
        period_key: String,
        board_version: u64,
    },
    GoingAway {},
}

/// A snapshot's period fields, as reads write them.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PeriodFields {
    period: String,
    period_key: String,
    period_start: Option<String>,
    period_end: Option<String>,
}

/// A message, parsed into the core's types.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Message {
    Snapshot {
        view: String,
        period: PeriodFields,
        state: ViewState,
    },
    Delta(ViewDelta),
    Heartbeat,
    Resync {
        reason: String,
        detail: String,
    },
    Closed {
        reason: String,
        period_key: String,
        board_version: u64,
    },
    GoingAway,
}

impl Message {
    fn parse(json: &str) -> Message {
        let wire: Wire = serde_json::from_str(json)
            .unwrap_or_else(|e| panic!("a message that docs/live.md does not describe ({e}): {json}"));
        match wire {
            Wire::Snapshot {
                view,
                period,
                period_key,
                period_start,
                period_end,
                board_version,
                entries: wire,
            } => Message::Snapshot {
                view,
                period: PeriodFields {
                    period,
                    period_key: period_key.clone(),
                    period_start,
                    period_end,
                },
                state: ViewState {
                    period_key: period_key.clone(),
                    board_version,
                    entries: entries(&wire),
                },
            },
            Wire::Delta {
                period_key,
                base_version,
                board_version,
                changed,
                left,
            } => Message::Delta(ViewDelta {
                period_key,
                base_version,
                board_version,
                changed: entries(&changed),
                left: left.iter().map(|p| PlayerId::new(p).unwrap()).collect(),
            }),
            Wire::Heartbeat {} => Message::Heartbeat,
            Wire::Resync { reason, detail } => Message::Resync { reason, detail },
            Wire::Closed {
                reason,
                period_key,
                board_version,
            } => Message::Closed {
                period_key,
                reason,
                board_version,
            },
            Wire::GoingAway {} => Message::GoingAway,
        }
    }

    /// The `type` (and SSE `event:`) name.
    fn kind(&self) -> &'static str {
        match self {
            Message::Snapshot { .. } => "snapshot",
            Message::Delta(_) => "delta",
            Message::Heartbeat => "heartbeat",
            Message::Resync { .. } => "resync",
            Message::Closed { .. } => "closed",
            Message::GoingAway => "going_away",
        }
    }

    /// The instance and `board_version` a client holds after it, for the messages that move
    /// the view.
    fn position(&self) -> Option<(String, u64)> {
        match self {
            Message::Snapshot { state, .. } => Some((state.period_key.clone(), state.board_version)),
            Message::Delta(delta) => Some((delta.period_key.clone(), delta.board_version)),
            _ => None,
        }
    }

    fn delta(self) -> ViewDelta {
        match self {
            Message::Delta(delta) => delta,
            other => panic!("expected a delta, got {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The transports.

/// Where an SSE stream's bytes come from; dropped at the end of the stream, which drops the
/// server's subscription with it (at once for a body, at the server's next write for a socket).
enum SseSource {
    /// The router's response body.
    Body(Option<Body>),
    /// A real socket, after the answer's head.
    Socket(Option<tokio::net::TcpStream>),
}

impl SseSource {
    /// The next bytes of the stream, or `None` at its end.
    async fn read(&mut self) -> Option<Vec<u8>> {
        let read = match self {
            SseSource::Body(body) => match body.as_mut()?.frame().await {
                Some(Ok(frame)) => Some(frame.into_data().map(|d| d.to_vec()).unwrap_or_default()),
                Some(Err(e)) => panic!("the SSE body failed: {e}"),
                None => None,
            },
            SseSource::Socket(socket) => {
                use tokio::io::AsyncReadExt;
                let mut chunk = vec![0; 16 * 1024];
                match socket.as_mut()?.read(&mut chunk).await {
                    Ok(0) => None,
                    Ok(n) => {
                        chunk.truncate(n);
                        Some(chunk)
                    }
                    Err(e) => panic!("the SSE socket failed: {e}"),
                }
            }
        };
        if read.is_none() {
            self.close();
        }
        read
    }

    fn close(&mut self) {
        match self {
            SseSource::Body(body) => *body = None,
            SseSource::Socket(socket) => *socket = None,
        }
    }
}

/// One open stream of messages.
enum Stream {
    /// An SSE stream and the bytes read of an event not yet complete.
    Sse { source: SseSource, pending: Vec<u8> },
    /// The WebSocket; `None` once closed. Boxed, as it is many times the size of the SSE
    /// variant.
    Ws(Option<Box<WebSocketStream<tokio::net::TcpStream>>>),
}

/// One SSE event's fields.
#[derive(Debug, Default)]
struct SseEvent {
    event: Option<String>,
    id: Option<String>,
    data: Option<String>,
}

impl SseEvent {
    /// Parses one event's lines (without the blank line that ends it); comment lines and
    /// unknown fields are ignored, as `EventSource` ignores them.
    fn parse(text: &str) -> SseEvent {
        let mut event = SseEvent::default();
        for line in text.lines() {
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value).to_string();
            match field {
                "event" => event.event = Some(value),
                "id" => event.id = Some(value),
                "data" => {
                    event.data = Some(match event.data.take() {
                        Some(before) => format!("{before}\n{value}"),
                        None => value,
                    })
                }
                _ => {}
            }
        }
        event
    }

    /// The message it carries, checked against the SSE framing of `docs/live.md`: `event:` is
    /// the type, and `id:` is `PERIOD_KEY:VERSION` of a snapshot or delta (the instance and the
    /// `board_version` it brings the client to) and absent otherwise.
    fn message(&self) -> Message {
        let data = self
            .data
            .as_deref()
            .unwrap_or_else(|| panic!("an SSE event without data: {self:?}"));
        let message = Message::parse(data);
        assert_eq!(
            self.event.as_deref(),
            Some(message.kind()),
            "the SSE event name is the message type: {self:?}"
        );
        let id = self.id.as_deref().map(|id| {
            let (key, version) = id.rsplit_once(':').expect("the SSE id is PERIOD_KEY:VERSION");
            (key.to_string(), version.parse::<u64>().unwrap())
        });
        assert_eq!(
            id,
            message.position(),
            "the SSE id is the instance and board_version a snapshot or delta brings the client to: {self:?}"
        );
        message
    }
}

impl Stream {
    /// The next message and its JSON text as it came, or `None` once the server has ended
    /// the stream.
    async fn next(&mut self) -> Option<(Message, String)> {
        match self {
            Stream::Sse { source, pending } => loop {
                // Lines may end in \r\n; no JSON here holds a raw \r.
                if let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                    let raw: Vec<u8> = pending.drain(..end + 2).collect();
                    let text = String::from_utf8(raw).unwrap();
                    let event = SseEvent::parse(&text);
                    if event.data.is_none() && event.event.is_none() {
                        continue;
                    }
                    let json = event.data.clone().unwrap_or_default();
                    return Some((event.message(), json));
                }
                match source.read().await {
                    Some(data) => pending.extend(data.iter().filter(|b| **b != b'\r')),
                    None => {
                        assert!(
                            pending.iter().all(|b| b.is_ascii_whitespace()),
                            "the SSE stream ended inside an event: {:?}",
                            String::from_utf8_lossy(pending)
                        );
                        return None;
                    }
                }
            },
            Stream::Ws(socket) => loop {
                let ws = socket.as_mut()?;
                match ws.next().await {
                    Some(Ok(tungstenite::Message::Text(text))) => {
                        return Some((Message::parse(text.as_str()), text.to_string()));
                    }
                    Some(Ok(tungstenite::Message::Binary(_))) => {
                        panic!("the stream sent a binary frame; docs/live.md says text frames")
                    }
                    Some(Ok(tungstenite::Message::Close(_))) | None => {
                        *socket = None;
                        return None;
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => panic!("the WebSocket failed: {e}"),
                }
            },
        }
    }

    /// Closes the client's end.
    async fn close(&mut self) {
        match self {
            Stream::Sse { source, .. } => source.close(),
            Stream::Ws(socket) => {
                if let Some(mut ws) = socket.take() {
                    let _ = ws.close(None).await;
                    let _ = ws.flush().await;
                }
            }
        }
    }
}

/// What to subscribe to, and as whom.
#[derive(Clone, Debug)]
struct Sub {
    scope: &'static str,
    view: View,
    /// `period=...&at=...`, or empty for all_time.
    period: String,
    /// `since_version`: `PERIOD_KEY:VERSION`, or a bare version.
    since_version: Option<String>,
    /// `Authorization: Bearer` (the service token unless told otherwise).
    bearer: Option<String>,
    access_token: Option<String>,
    /// Query parameters sent as they are, for refusals.
    raw: Option<String>,
    /// A small receive buffer, so that a client that does not read stalls the server soon.
    small_buffer: bool,
}

impl Sub {
    fn new(scope: &'static str, view: &str) -> Sub {
        Sub {
            scope,
            view: view.parse().unwrap(),
            period: String::new(),
            since_version: None,
            bearer: Some(SERVICE.into()),
            access_token: None,
            raw: None,
            small_buffer: false,
        }
    }

    fn period(mut self, period: &str, at: &str) -> Sub {
        self.period = format!("period={period}&at={at}");
        self
    }

    /// Comes back at `version` of the instance `period_key`.
    fn since(mut self, period_key: &str, version: u64) -> Sub {
        self.since_version = Some(format!("{period_key}:{version}"));
        self
    }

    /// Follows "the current" instance of `period` (no `at`): the one a request resolves now.
    fn current(mut self, period: &str) -> Sub {
        self.period = format!("period={period}");
        self
    }

    fn bearer(mut self, token: Option<&str>) -> Sub {
        self.bearer = token.map(str::to_string);
        self
    }

    fn access_token(mut self, token: &str) -> Sub {
        self.access_token = Some(token.into());
        self
    }

    /// Sends `query` instead of the one this subscription makes.
    fn raw_query(mut self, query: &str) -> Sub {
        self.raw = Some(query.into());
        self
    }

    fn stalling(mut self) -> Sub {
        self.small_buffer = true;
        self
    }

    fn path(&self) -> String {
        format!("{LB}/{}/subscribe?{}", self.scope, self.query())
    }

    fn query(&self) -> String {
        if let Some(raw) = &self.raw {
            return raw.clone();
        }
        let mut query = format!("view={}", self.view);
        if !self.period.is_empty() {
            query.push('&');
            query.push_str(&self.period);
        }
        if let Some(since) = &self.since_version {
            query.push_str(&format!("&since_version={since}"));
        }
        if let Some(token) = &self.access_token {
            query.push_str(&format!("&access_token={token}"));
        }
        query
    }
}

/// A subscription refused before its stream: the status and the problem's code.
#[derive(Debug, PartialEq, Eq)]
struct Refused {
    status: u16,
    code: String,
}

fn refused(status: u16, content_type: &str, body: &[u8]) -> Refused {
    assert!(
        content_type.starts_with("application/problem+json"),
        "a refusal is problem+json, not {content_type:?}"
    );
    let body: Value = serde_json::from_slice(body).unwrap();
    Refused {
        status,
        code: body["code"].as_str().unwrap_or_default().to_string(),
    }
}

/// A subscriber: its stream, and its view as it holds it.
struct Client {
    sub: Sub,
    stream: Stream,
    /// The last snapshot with every delta since applied; `None` until the first snapshot
    /// (or, for a client coming back, the view it held).
    state: Option<ViewState>,
    /// The JSON text of the last message, as it came.
    json: String,
}

impl Client {
    fn new(sub: Sub, stream: Stream, state: Option<ViewState>) -> Client {
        Client {
            sub,
            stream,
            state,
            json: String::new(),
        }
    }

    /// The next message, as it came, applied to nothing; `None` once the stream is over.
    async fn next_raw(&mut self) -> Option<Message> {
        let (message, json) = tokio::time::timeout(GUARD, self.stream.next())
            .await
            .unwrap_or_else(|_| panic!("no message within {GUARD:?} on {}", self.sub.path()))?;
        self.json = json;
        Some(message)
    }

    /// The next message, applied to the view: a snapshot replaces it, a delta must chain
    /// (`ViewState::apply`) or the test fails.
    async fn recv(&mut self) -> Message {
        let message = self
            .next_raw()
            .await
            .unwrap_or_else(|| panic!("the stream of {} ended", self.sub.path()));
        match &message {
            Message::Snapshot { state, .. } => self.state = Some(state.clone()),
            Message::Delta(delta) => {
                let state = self
                    .state
                    .as_mut()
                    .unwrap_or_else(|| panic!("a delta before any snapshot: {delta:?}"));
                state
                    .apply(delta)
                    .unwrap_or_else(|e| panic!("the view refused a delta from the server ({e}): {delta:?}"));
            }
            _ => {}
        }
        message
    }

    /// The view's entries and version as this client holds them.
    fn state(&self) -> &ViewState {
        self.state.as_ref().expect("no snapshot yet")
    }

    fn version(&self) -> u64 {
        self.state().board_version
    }

    /// Asserts the server ends the stream now, with nothing more before the end.
    async fn ends(&mut self) {
        if let Some(message) = self.next_raw().await {
            panic!("expected the end of the stream, got {message:?}");
        }
    }

    async fn close(mut self) {
        self.stream.close().await;
    }
}

/// A service on a manual clock, reached by the router and, for WebSocket, on a real socket.
struct Live {
    service: TestService,
    config: Config,
    clock: Clock,
    transport: Transport,
    served: Option<Served>,
}

/// The `[live]` settings of the tests: the default window, and heartbeats rare enough that
/// none falls inside a scenario that does not ask for one.
fn live_config() -> LiveConfig {
    LiveConfig {
        window_ms: WINDOW_MS as u64,
        heartbeat_seconds: 3_600,
        ..LiveConfig::default()
    }
}

impl Live {
    async fn start(db: Db, transport: Transport, now: &str) -> Live {
        Live::start_with(db, transport, now, |_| {}).await
    }

    /// A start with the test's settings changed by `edit`.
    async fn start_with(db: Db, transport: Transport, now: &str, edit: impl FnOnce(&mut Config)) -> Live {
        let db = TestDb::new(db).await;
        let mut config = config(&db.url);
        config.live = live_config();
        edit(&mut config);
        let clock = Clock::manual(ms(now));
        Live::start_on(db, config, clock, transport).await
    }

    async fn start_on(db: TestDb, config: Config, clock: Clock, transport: Transport) -> Live {
        let service = TestService::start_with_config(db, &config, clock.clone()).await;
        // The WebSocket needs a socket; a stop is tested on one for both transports.
        let served = match transport {
            _ if transport.needs_socket() => Some(service.serve().await),
            _ => None,
        };
        Live {
            service,
            config,
            clock,
            transport,
            served,
        }
    }

    /// Starts the service again on its database, config and clock, once its server has
    /// stopped.
    async fn restart(self) -> Live {
        assert!(self.served.is_none(), "stop the server first");
        let db = self.service.stop().await;
        Live::start_on(db, self.config, self.clock, self.transport).await
    }

    async fn define(&self, scope: &str, body: Value) {
        self.service.define_scope(scope, &body).await;
    }

    /// Submits one event to `scope` and asserts it was accepted (so it is applied).
    async fn score(&self, id: &str, scope: &str, player: &str, value: i64, achieved_at: &str) {
        let mut e = event(id, player, value, achieved_at);
        e["scopes"] = json!([scope]);
        let (status, body) = self.service.submit(&e).await;
        assert_eq!(
            (status, body["status"].as_str()),
            (StatusCode::ACCEPTED, Some("ACCEPTED")),
            "{body}"
        );
    }

    /// Submits `events` (id, player, value) to `scope` in one batch, each accepted.
    async fn batch(&self, scope: &str, events: &[(String, String, i64)], achieved_at: &str) {
        let events: Vec<Value> = events
            .iter()
            .map(|(id, player, value)| {
                let mut e = event(id, player, *value, achieved_at);
                e["scopes"] = json!([scope]);
                e
            })
            .collect();
        let (status, body) = self.service.submit_batch(&events).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        for result in body["results"].as_array().unwrap() {
            assert_eq!(result["status"], "ACCEPTED", "{result}");
        }
    }

    async fn moderate(&self, body: Value) -> Value {
        let (status, answer) = self
            .service
            .call(
                Method::POST,
                "/v1/moderation-actions",
                Some(MODERATOR),
                Some(&body),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        answer
    }

    async fn set_season(&self, state: &str) {
        let (status, body) = self
            .service
            .call(
                Method::PUT,
                "/v1/seasons/arena-clash/S7/state",
                Some(ADMIN),
                Some(&json!({ "state": state })),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{state}: {body}");
    }

    /// Ends the current window: the hub flushes what changed in it. Its work runs when the
    /// window task gets to it, so a test awaits a message of this window before it changes
    /// the board again.
    fn flush(&self) {
        self.clock.advance(WINDOW_MS);
    }

    /// Opens a subscription over this test's transport.
    async fn open(&self, sub: &Sub) -> Result<Client, Refused> {
        self.open_over(self.transport, sub).await
    }

    async fn open_over(&self, transport: Transport, sub: &Sub) -> Result<Client, Refused> {
        let stream = match transport {
            Transport::Sse => self.open_sse(sub, &[]).await?,
            Transport::SseSocket => self.open_sse_socket(sub).await?,
            Transport::Ws => self.open_ws(sub).await?,
        };
        Ok(Client::new(sub.clone(), stream, None))
    }

    async fn open_sse(&self, sub: &Sub, headers: &[(&str, &str)]) -> Result<Stream, Refused> {
        let mut request = Request::builder().method(Method::GET).uri(sub.path());
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("accept"))
        {
            request = request.header("accept", "text/event-stream");
        }
        if let Some(token) = &sub.bearer {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = self
            .service
            .app
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        if status != StatusCode::OK {
            let body = response.into_body().collect().await.unwrap().to_bytes();
            return Err(refused(status.as_u16(), &content_type, &body));
        }
        assert!(
            content_type.starts_with("text/event-stream"),
            "an SSE stream is text/event-stream, not {content_type:?}"
        );
        Ok(Stream::Sse {
            source: SseSource::Body(Some(response.into_body())),
            pending: Vec::new(),
        })
    }

    /// A socket to the served service, with a small receive buffer for a stalling client.
    async fn connect(&self, sub: &Sub) -> tokio::net::TcpStream {
        let addr = self
            .served
            .as_ref()
            .expect("the service is not served on a socket")
            .addr;
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        if sub.small_buffer {
            socket.set_recv_buffer_size(4096).unwrap();
        }
        socket.connect(addr).await.unwrap()
    }

    /// An SSE subscription over a socket: a plain HTTP/1.1 request, the answer's head read up
    /// to its blank line, and the stream after it (the server closes the connection at its
    /// end, so the body has no framing of its own).
    async fn open_sse_socket(&self, sub: &Sub) -> Result<Stream, Refused> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut tcp = self.connect(sub).await;
        let mut request = format!(
            "GET {} HTTP/1.1\r\nhost: test\r\naccept: text/event-stream\r\n",
            sub.path()
        );
        if let Some(token) = &sub.bearer {
            request.push_str(&format!("authorization: Bearer {token}\r\n"));
        }
        request.push_str("\r\n");
        tcp.write_all(request.as_bytes()).await.unwrap();
        let mut read = Vec::new();
        let head_end = loop {
            if let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            let mut chunk = [0u8; 4096];
            let n = tokio::time::timeout(GUARD, tcp.read(&mut chunk))
                .await
                .expect("no answer's head within the guard")
                .unwrap();
            assert!(n > 0, "the connection closed before the answer's head");
            read.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8(read[..head_end].to_vec()).unwrap();
        let rest = read[head_end + 4..].to_vec();
        let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        let header = |name: &str| {
            head.lines()
                .skip(1)
                .find_map(|line| {
                    let (key, value) = line.split_once(':')?;
                    key.eq_ignore_ascii_case(name).then(|| value.trim().to_string())
                })
                .unwrap_or_default()
        };
        assert!(
            !header("transfer-encoding").contains("chunked"),
            "the stream is written without framing, not chunked: {head}"
        );
        let content_type = header("content-type");
        if status != 200 {
            let mut body = rest;
            let length: Option<usize> = header("content-length").parse().ok();
            while length.is_none_or(|length| body.len() < length) {
                let mut chunk = [0u8; 4096];
                let n = tokio::time::timeout(GUARD, tcp.read(&mut chunk))
                    .await
                    .expect("no refusal's body within the guard")
                    .unwrap();
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
            return Err(refused(status, &content_type, &body));
        }
        assert!(
            content_type.starts_with("text/event-stream"),
            "an SSE stream is text/event-stream, not {content_type:?}"
        );
        // The route is one the router streams outside hyper, on a connection of its own.
        assert_eq!(
            (header("connection").as_str(), header("content-length").as_str()),
            ("close", ""),
            "a subscription is served outside hyper: {head}"
        );
        Ok(Stream::Sse {
            source: SseSource::Socket(Some(tcp)),
            pending: rest.into_iter().filter(|b| *b != b'\r').collect(),
        })
    }

    async fn open_ws(&self, sub: &Sub) -> Result<Stream, Refused> {
        let tcp = self.connect(sub).await;
        let addr = tcp.peer_addr().unwrap();
        let mut request = format!("ws://{addr}{}", sub.path())
            .into_client_request()
            .unwrap();
        if let Some(token) = &sub.bearer {
            request
                .headers_mut()
                .insert("authorization", format!("Bearer {token}").parse().unwrap());
        }
        match tokio::time::timeout(GUARD, tokio_tungstenite::client_async(request, tcp))
            .await
            .expect("no WebSocket handshake answer within the guard")
        {
            Ok((ws, _)) => Ok(Stream::Ws(Some(Box::new(ws)))),
            Err(tungstenite::Error::Http(response)) => {
                let content_type = response
                    .headers()
                    .get("content-type")
                    .map(|v| v.to_str().unwrap().to_string())
                    .unwrap_or_default();
                let body = response.body().clone().unwrap_or_default();
                Err(refused(response.status().as_u16(), &content_type, &body))
            }
            Err(e) => panic!("the WebSocket handshake failed: {e}"),
        }
    }

    /// Opens a subscription that must be accepted.
    async fn subscribe(&self, sub: Sub) -> Client {
        match self.open(&sub).await {
            Ok(client) => client,
            Err(refused) => panic!("{} was refused: {refused:?}", sub.path()),
        }
    }

    /// Opens a subscription and takes its first message, which must be a snapshot equal to a
    /// fresh read of the view.
    async fn subscribe_snapshot(&self, sub: Sub) -> Client {
        let mut client = self.subscribe(sub).await;
        let first = client.recv().await;
        assert!(matches!(first, Message::Snapshot { .. }), "{first:?}");
        self.assert_fresh(&client).await;
        client
    }

    /// Comes back with the view `state` held, with `since_version` set to its version.
    async fn resume(&self, sub: Sub, state: ViewState) -> Client {
        let mut client = self
            .subscribe(sub.since(&state.period_key, state.board_version))
            .await;
        client.state = Some(state);
        client
    }

    /// A fresh read of the client's view through the read API: `.../top?limit=N`,
    /// `.../players/P/nearby?radius=R` or `.../players/P/rank`, in the client's period. An
    /// unranked player's view is empty (the read answers 404), with no version.
    async fn read(&self, sub: &Sub) -> (Option<u64>, Vec<ViewEntry>) {
        let board = format!("{LB}/{}", sub.scope);
        let period = if sub.period.is_empty() {
            String::new()
        } else {
            format!("&{}", sub.period)
        };
        let (view, period) = match &sub.view {
            View::In { segment, view } => (
                &**view,
                format!("{period}&segment={}:{}", segment.dimension, segment.value),
            ),
            view => (view, period),
        };
        let (path, single) = match view {
            View::Top { limit } => (format!("{board}/top?limit={limit}{period}"), false),
            View::Around { player, radius } => (
                format!("{board}/players/{player}/nearby?radius={radius}{period}"),
                false,
            ),
            View::Player { player } => (format!("{board}/players/{player}/rank?{period}"), true),
            View::In { .. } => unreachable!("a view is within one segment at most"),
        };
        let (status, body) = self.service.get(&path).await;
        if status == StatusCode::NOT_FOUND && body["code"] == "PLAYER_NOT_RANKED" {
            return (None, Vec::new());
        }
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        let version = body["board_version"].as_u64().unwrap();
        let entries = if single {
            vec![WireEntry::deserialize(&body).unwrap().entry()]
        } else {
            entries(&Vec::<WireEntry>::deserialize(&body["entries"]).unwrap())
        };
        (Some(version), entries)
    }

    /// Asserts the client holds exactly what a fresh read of its view returns. Its version is
    /// that of its view's last change, which is never after the read's. Returns the read's
    /// version.
    async fn assert_fresh(&self, client: &Client) -> Option<u64> {
        let (version, entries) = self.read(&client.sub).await;
        assert_eq!(
            client.state().entries,
            entries,
            "{} at version {} differs from a fresh read at {version:?}",
            client.sub.view,
            client.version()
        );
        if let Some(version) = version {
            assert!(
                client.version() <= version,
                "the client is at {} but a fresh read is at {version}",
                client.version()
            );
        }
        version
    }

    /// The board's current version, by a read.
    async fn board_version(&self, scope: &str) -> u64 {
        let (status, body) = self.service.get(&format!("{LB}/{scope}/top?limit=1")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["board_version"].as_u64().unwrap()
    }

    /// The sum of the metric's samples whose name and labels start with `prefix`
    /// (`standings_live_resyncs_total`, `standings_live_messages_total{type="delta"}`).
    async fn metric(&self, prefix: &str) -> f64 {
        let (status, body) = self.service.get("/metrics").await;
        assert_eq!(status, StatusCode::OK);
        let text = body.as_str().unwrap();
        // A prefix that ends a name or a label set matches only that; otherwise the name must
        // end where the prefix does.
        let whole = prefix.ends_with(['{', '}']);
        text.lines()
            .filter(|line| {
                line.strip_prefix(prefix)
                    .is_some_and(|rest| whole || rest.starts_with([' ', '{']))
            })
            .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum()
    }
}

/// About the least a top:100 delta in which every entry moved takes, with [`long_id`]s.
const DELTA_BYTES: usize = 16_000;

/// A player id of 100 bytes that starts with `name`.
fn long_id(name: &str) -> String {
    format!("{name}-{}", "x".repeat(99 - name.len()))
}

/// The most a TCP socket's send buffer grows to (`net.ipv4.tcp_wmem`'s maximum; Linux's
/// default 4 MiB where it cannot be read): what a server can have written to a client that
/// reads nothing before its writes wait.
fn socket_send_buffer_limit() -> usize {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem")
        .ok()
        .and_then(|text| text.split_whitespace().nth(2)?.parse().ok())
        .unwrap_or(4 << 20)
}

/// Player `p-{i}` for i in `range`, each with one event `{tag}-{i}` of `value(i)`.
fn players(tag: &str, range: std::ops::Range<i64>, value: impl Fn(i64) -> i64) -> Vec<(String, String, i64)> {
    range
        .map(|i| (format!("{tag}-{i}"), format!("p-{i}"), value(i)))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The scenarios.

/// Test I: a client at version 42 goes away while the board moves to 46; coming back with
/// `since_version=42`, its first message is one delta from 42 to 46, after which it holds
/// exactly a fresh read. A client back at the current version gets an empty delta.
async fn test_i_a_client_back_with_its_version_catches_up_in_one_delta(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-13T12:00:00Z").await;
    live.define("global", json!({"score_mode": "cumulative"})).await;
    // Every event adds to one of six players' totals, so each is one board version.
    let events: Vec<_> = (0..42)
        .map(|i| (format!("e{i}"), format!("p-{}", i % 6), 10 + i))
        .collect();
    live.batch("global", &events, "2026-10-13T10:00:00Z").await;
    assert_eq!(live.board_version("global").await, 42);
    let top = Sub::new("global", "top:10");
    let first = live.subscribe_snapshot(top.clone()).await;
    assert_eq!(first.version(), 42);
    // Another subscriber stays: the delta it is sent shows that the window has been sent
    // before the first one comes back.
    let mut witness = live.subscribe_snapshot(top.clone()).await;
    let held = first.state().clone();
    first.close().await;

    for (i, player) in ["p-3", "p-50", "p-7", "p-3"].into_iter().enumerate() {
        live.score(
            &format!("away-{i}"),
            "global",
            player,
            500 + i as i64,
            "2026-10-13T11:00:00Z",
        )
        .await;
    }
    assert_eq!(live.board_version("global").await, 46);
    live.flush();
    let seen = witness.recv().await.delta();
    assert_eq!((seen.base_version, seen.board_version), (42, 46));

    let mut back = live.resume(top.clone(), held).await;
    let delta = back.recv().await.delta();
    assert_eq!((delta.base_version, delta.board_version), (42, 46));
    assert_eq!(live.assert_fresh(&back).await, Some(46));
    let now = back.state().clone();
    back.close().await;

    // Back at the version it holds: nothing to catch up.
    let mut again = live.resume(top, now.clone()).await;
    let delta = again.recv().await.delta();
    assert_eq!(delta.base_version, 46);
    assert!(delta.changed.is_empty() && delta.left.is_empty(), "{delta:?}");
    assert_eq!(again.state(), &now);
    // The stream goes on from there.
    live.score("next", "global", "p-4", 900, "2026-10-13T11:30:00Z")
        .await;
    live.flush();
    let delta = again.recv().await.delta();
    assert_eq!((delta.base_version, delta.board_version), (46, 47));
    live.assert_fresh(&again).await;
    assert_eq!(witness.recv().await.delta(), delta);
}

/// A client coming back with a version the board no longer holds (its history is shorter than
/// the changes since) gets a snapshot, and so does one with a version the board never had.
async fn a_client_back_after_the_history_is_gone_gets_a_snapshot(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-13T12:00:00Z").await;
    live.define("global", json!({"score_mode": "cumulative"})).await;
    live.batch("global", &players("e", 0..8, |i| 10 + i), "2026-10-13T10:00:00Z")
        .await;
    let top = Sub::new("global", "top:5");
    let first = live.subscribe_snapshot(top.clone()).await;
    // Another subscriber stays, so each window is known to be sent before a client comes back.
    let mut witness = live.subscribe_snapshot(top.clone()).await;
    let held = first.state().clone();
    first.close().await;

    // The board keeps 4,096 deltas by default; a short history is forced out by a few changes.
    let global = standings_core::BoardId::new("arena-clash", "solo", "S7", "global").unwrap();
    let slot = live.service.state.registry().entry(&global).unwrap().all_time();
    slot.write().set_history_limit(3);
    for i in 0..5 {
        live.score(
            &format!("more-{i}"),
            "global",
            &format!("p-{i}"),
            100,
            "2026-10-13T11:00:00Z",
        )
        .await;
    }
    live.flush();
    witness.recv().await.delta();
    assert!(slot.read().oldest_held_version() > held.board_version);

    let mut back = live.resume(top.clone(), held).await;
    let first = back.recv().await;
    assert!(matches!(first, Message::Snapshot { .. }), "{first:?}");
    assert_eq!(live.assert_fresh(&back).await, Some(back.version()));
    back.close().await;

    let mut ahead = live.subscribe(top.clone().since("all_time", 9_999)).await;
    let first = ahead.recv().await;
    assert!(matches!(first, Message::Snapshot { .. }), "{first:?}");
    live.assert_fresh(&ahead).await;

    // A version still held is caught up with a delta.
    let current = ahead.state().clone();
    ahead.close().await;
    live.score("last", "global", "p-6", 400, "2026-10-13T11:00:00Z")
        .await;
    live.flush();
    witness.recv().await.delta();
    let mut held = live.resume(top, current.clone()).await;
    let delta = held.recv().await.delta();
    assert_eq!(delta.base_version, current.board_version);
    live.assert_fresh(&held).await;
}

/// The stream's deltas chain; one that does not start at the view's version is refused by
/// `ViewState::apply`, which leaves the view as it was.
async fn a_delta_that_does_not_chain_is_refused_by_the_view(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-13T12:00:00Z").await;
    live.define("global", json!({"score_mode": "highest"})).await;
    live.batch("global", &players("e", 0..5, |i| 10 * i), "2026-10-13T10:00:00Z")
        .await;
    let mut client = live.subscribe_snapshot(Sub::new("global", "top:3")).await;
    let at_snapshot = client.state().clone();

    live.score("a", "global", "p-9", 100, "2026-10-13T11:00:00Z")
        .await;
    live.flush();
    let first = client.next_raw().await.unwrap().delta();
    live.score("b", "global", "p-8", 200, "2026-10-13T11:00:00Z")
        .await;
    live.flush();
    let second = client.next_raw().await.unwrap().delta();
    assert_eq!(second.base_version, first.board_version);

    // A view that missed `first` cannot take `second`.
    let mut missed = at_snapshot.clone();
    assert_eq!(
        missed.apply(&second),
        Err(ViewDeltaError::VersionGap {
            view_version: at_snapshot.board_version,
            delta_base: first.board_version,
        })
    );
    assert_eq!(missed, at_snapshot);
    // In order, both apply and the view is a fresh read.
    missed.apply(&first).unwrap();
    missed.apply(&second).unwrap();
    client.state = Some(missed);
    live.assert_fresh(&client).await;
}

/// Changes within one window go out as one delta of their net effect: a player who moves 5 ->
/// 4 -> 5 sends nothing to a `top` view, nor to its own `player` view. Once another view's
/// delta shows that window was sent, the next message after a later real change is that
/// change's delta from the version the client already held, so nothing was sent in between.
async fn a_move_and_back_within_one_window_sends_nothing(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-13T12:00:00Z").await;
    live.define("global", json!({"score_mode": "highest"})).await;
    // p-1 .. p-6 at 60 .. 10: p-5 is 5th.
    for i in 1..=6 {
        live.score(
            &format!("e{i}"),
            "global",
            &format!("p-{i}"),
            70 - 10 * i,
            "2026-10-13T10:00:00Z",
        )
        .await;
    }
    let mut top = live.subscribe_snapshot(Sub::new("global", "top:5")).await;
    let mut own = live.subscribe_snapshot(Sub::new("global", "player:p-5")).await;
    // A view the window does change, so that its delta shows the window has been sent.
    let mut probe = live.subscribe_snapshot(Sub::new("global", "player:p-6")).await;
    let (top_at, own_at) = (top.version(), own.version());
    assert_eq!(own.state().entries[0].rank, 5);

    // p-5 moves to 4th, and the score that moved it is invalidated: back to 5th.
    live.score("up", "global", "p-5", 35, "2026-10-13T11:00:00Z")
        .await;
    let (_, rank) = live.service.get(&format!("{LB}/global/players/p-5/rank")).await;
    assert_eq!(rank["rank"], 4);
    live.moderate(
        json!({"moderation_id": "m-up", "action_type": "INVALIDATE", "reason": "test",
                         "game": "arena-clash", "target_event_id": "up"}),
    )
    .await;
    // p-6, 6th, gains a little: outside the top 5.
    live.score("six", "global", "p-6", 12, "2026-10-13T11:00:00Z")
        .await;
    assert_eq!(live.board_version("global").await, top_at + 3);
    live.flush();
    let seen = probe.recv().await.delta();
    assert_eq!((seen.base_version, seen.board_version), (top_at, top_at + 3));

    // Three changes in one window: one delta for each view that they touch.
    live.score("n1", "global", "p-1", 61, "2026-10-13T11:00:00Z")
        .await;
    live.score("n2", "global", "p-2", 51, "2026-10-13T11:00:00Z")
        .await;
    live.score("n3", "global", "p-5", 22, "2026-10-13T11:00:00Z")
        .await;
    live.flush();
    let delta = top.recv().await.delta();
    assert_eq!((delta.base_version, delta.board_version), (top_at, top_at + 6));
    let players: Vec<_> = delta.changed.iter().map(|e| e.player_id.as_str()).collect();
    assert_eq!(players, ["p-1", "p-2", "p-5"]);
    live.assert_fresh(&top).await;
    let delta = own.recv().await.delta();
    assert_eq!((delta.base_version, delta.board_version), (own_at, own_at + 6));
    live.assert_fresh(&own).await;
}

/// A subscriber that never reads fills its queue, is sent `resync` as its last message and is
/// dropped, while another subscriber of the same view receives every window; the metrics count
/// the subscribers, the messages and the resync.
async fn a_stalled_subscriber_is_sent_resync_and_dropped_while_others_keep_receiving(
    db: Db,
    transport: Transport,
) {
    let queue = 2;
    let live = Live::start_with(db, transport, "2026-10-13T12:00:00Z", |config| {
        config.live.queue_messages = queue;
    })
    .await;
    live.define("global", json!({"score_mode": "highest"})).await;
    // A full top:100 of long player ids, so that each new leader moves every entry and a
    // delta is about 17 KB: the socket's buffers fill after as few windows as can be.
    let seeded: Vec<_> = (0..100)
        .map(|i| (format!("e{i}"), long_id(&format!("p-{i}")), 1_000 + i))
        .collect();
    live.batch("global", &seeded, "2026-10-13T10:00:00Z").await;
    let view = Sub::new("global", "top:100");
    let mut reader = live.subscribe_snapshot(view.clone()).await;
    let mut stalled = live.subscribe(view.clone().stalling()).await;
    assert_eq!(live.metric("standings_live_subscribers{").await, 2.0);

    // Through the router nothing is read from the stalled body, so its queue is full after a
    // few windows; over a socket (SSE or WebSocket) the kernel buffers what the server sends
    // first, up to its socket send buffer's limit.
    let most_windows = match transport {
        Transport::Sse => queue + 2,
        Transport::SseSocket | Transport::Ws => socket_send_buffer_limit() / DELTA_BYTES + queue + 64,
    };
    let mut windows = 0;
    while live.metric("standings_live_resyncs_total").await == 0.0 {
        assert!(
            windows < most_windows,
            "no resync after {windows} windows with a subscriber that reads nothing"
        );
        live.score(
            &format!("lead-{windows}"),
            "global",
            &long_id(&format!("p-lead-{windows}")),
            10_000 + windows as i64,
            "2026-10-13T11:00:00Z",
        )
        .await;
        live.flush();
        let delta = reader.recv().await.delta();
        assert_eq!(delta.changed.len(), 100);
        windows += 1;
    }
    assert_eq!(live.metric("standings_live_resyncs_total").await, 1.0);

    // The reader goes on.
    live.score(
        "after",
        "global",
        &long_id("p-after"),
        99_999,
        "2026-10-13T11:00:00Z",
    )
    .await;
    live.flush();
    reader.recv().await.delta();
    assert_eq!(live.assert_fresh(&reader).await, Some(reader.version()));

    // The stalled one finds, once it reads, messages that chain and then the resync, and the
    // end of its stream.
    let mut seen = 0;
    let (reason, detail) = loop {
        match stalled.recv().await {
            Message::Resync { reason, detail } => break (reason, detail),
            Message::Snapshot { .. } | Message::Delta(_) => seen += 1,
            other => panic!("unexpected before the resync: {other:?}"),
        }
    };
    assert!(seen <= windows + 1, "{seen} messages for {windows} windows");
    assert_eq!(reason, "slow_consumer");
    assert!(!detail.is_empty());
    stalled.ends().await;
    assert_eq!(live.metric("standings_live_resyncs_total").await, 1.0);
    assert!(
        live.metric("standings_live_messages_total{type=\"snapshot\"}")
            .await
            >= 1.0
    );
    assert!(live.metric("standings_live_messages_total{type=\"delta\"}").await >= windows as f64);
    assert!(live.metric("standings_live_bytes_total").await > 0.0);
    assert!(live.metric("standings_live_notify_lag_seconds_count").await >= 1.0);
    if transport == Transport::Sse {
        // An SSE body's end drops its subscription at once (a WebSocket's goes with the
        // server's end of the close, which the client does not wait for): the one that was
        // sent resync is gone, and a client that closes its end counts as a drop.
        assert_eq!(live.metric("standings_live_subscribers{").await, 1.0);
        assert_eq!(live.metric("standings_live_drops_total").await, 0.0);
        reader.close().await;
        assert_eq!(live.metric("standings_live_subscribers{").await, 0.0);
        assert_eq!(live.metric("standings_live_drops_total").await, 1.0);
    }
}

/// A `period=daily` view with `at` follows that day only, like a read of it, and is sent
/// `closed` when the day's close time (its end plus the grace) passes. The closed day can
/// still be subscribed to, as it can be read.
async fn a_period_view_follows_its_day_until_it_closes(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-14T00:01:00Z").await;
    live.define(
        "daily",
        json!({"score_mode": "highest", "periods": ["all_time", "daily"], "grace_seconds": 300}),
    )
    .await;
    let day = "2026-10-13T23:59:00Z";
    for (i, value) in [30, 20, 10].into_iter().enumerate() {
        live.score(&format!("d{i}"), "daily", &format!("p-{i}"), value, day)
            .await;
    }
    let view = Sub::new("daily", "top:3").period("daily", "2026-10-13T12:00:00Z");
    let mut client = live.subscribe(view.clone()).await;
    match client.recv().await {
        Message::Snapshot { view, period, .. } => {
            assert_eq!(view, "top:3");
            // The period fields are the read's.
            let (_, read) = live
                .service
                .get(&format!("{LB}/daily/top?period=daily&at=2026-10-13T12:00:00Z"))
                .await;
            let field = |name: &str| read[name].as_str().map(str::to_string);
            assert_eq!(
                period,
                PeriodFields {
                    period: "daily".into(),
                    period_key: "2026-10-13".into(),
                    period_start: field("period_start"),
                    period_end: field("period_end"),
                }
            );
            assert!(period.period_start.is_some(), "{read}");
        }
        other => panic!("expected a snapshot, got {other:?}"),
    }
    live.assert_fresh(&client).await;
    let at_snapshot = client.version();
    // Today (the clock's day) has no scores yet: its view is empty until its first one.
    let today = Sub::new("daily", "top:3").period("daily", "2026-10-14T00:01:00Z");
    let mut first_today = live.subscribe_snapshot(today).await;
    assert!(first_today.state().entries.is_empty());

    // A score of the next day is not this view's but today's; one of its own day (in the
    // grace) is.
    live.score("next-day", "daily", "p-9", 1_000, "2026-10-14T00:00:30Z")
        .await;
    live.flush();
    let delta = first_today.recv().await.delta();
    assert_eq!(delta.changed.len(), 1);
    live.assert_fresh(&first_today).await;
    live.score("late-in-grace", "daily", "p-2", 25, day).await;
    live.flush();
    let delta = client.recv().await.delta();
    assert_eq!(delta.base_version, at_snapshot);
    assert!(
        delta.changed.iter().all(|e| e.player_id.as_str() != "p-9"),
        "{delta:?}"
    );
    let last = live.assert_fresh(&client).await.unwrap();

    // The close time passes.
    live.clock.set(ms("2026-10-14T00:05:00Z"));
    live.flush();
    match client.recv().await {
        Message::Closed {
            reason,
            period_key,
            board_version,
        } => {
            assert_eq!(reason, "period_closed");
            assert_eq!(period_key, "2026-10-13");
            assert_eq!(board_version, last);
        }
        other => panic!("expected closed, got {other:?}"),
    }
    client.ends().await;

    // Subscribed to once closed: its results, and at once the reason nothing more comes.
    let mut again = live.subscribe(view).await;
    let first = again.recv().await;
    assert!(matches!(first, Message::Snapshot { .. }), "{first:?}");
    live.assert_fresh(&again).await;
    assert_eq!(
        again.recv().await,
        Message::Closed {
            reason: "period_closed".into(),
            period_key: "2026-10-13".into(),
            board_version: last
        }
    );
    again.ends().await;

    // Today's view is still open, and follows today.
    live.score("today-2", "daily", "p-8", 5, "2026-10-14T00:04:00Z")
        .await;
    live.flush();
    first_today.recv().await.delta();
    live.assert_fresh(&first_today).await;
}

/// `around:P:R` and `player:P` views follow the player as the board moves around it, and a
/// player with no score yet has empty views until its first score arrives as a delta.
async fn around_and_player_views_follow_their_player(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-13T12:00:00Z").await;
    live.define("global", json!({"score_mode": "highest"})).await;
    live.batch(
        "global",
        &players("e", 0..8, |i| 100 - 10 * i),
        "2026-10-13T10:00:00Z",
    )
    .await;
    let mut clients = Vec::new();
    for view in [
        "around:p-3:1",
        "player:p-3",
        "around:p-z:2",
        "player:p-z",
        "top:3",
    ] {
        clients.push(live.subscribe_snapshot(Sub::new("global", view)).await);
    }
    assert_eq!(clients[0].state().entries.len(), 3);
    assert!(clients[2].state().entries.is_empty() && clients[3].state().entries.is_empty());

    // Each window moves the board around p-3 (who is 4th, at 70) and then p-z arrives.
    let windows: &[&[(&str, i64)]] = &[
        &[("p-6", 75)],
        &[("p-3", 95), ("p-1", 99)],
        &[("p-7", 200)],
        &[("p-z", 80)],
        &[("p-z", 96), ("p-0", 300)],
    ];
    for (w, changes) in windows.iter().enumerate() {
        for (i, (player, value)) in changes.iter().enumerate() {
            live.score(
                &format!("w{w}-{i}"),
                "global",
                player,
                *value,
                "2026-10-13T11:00:00Z",
            )
            .await;
        }
        let version = live.board_version("global").await;
        live.flush();
        for client in &mut clients {
            // Only the views this window changed get a delta, so take one only where a fresh
            // read shows the client behind.
            let (_, fresh) = live.read(&client.sub).await;
            if client.state().entries != fresh {
                let delta = client.recv().await.delta();
                assert_eq!(delta.board_version, version, "{}", client.sub.view);
            }
            live.assert_fresh(client).await;
        }
    }
    // p-z arrived: its views are no longer empty.
    assert_eq!(clients[3].state().entries.len(), 1);
    assert_eq!(clients[2].state().entries.len(), 5);
    // Nothing else was sent: the next message of every view is the next change's delta.
    live.score("end", "global", "p-3", 1_000, "2026-10-13T11:00:00Z")
        .await;
    live.flush();
    for client in &mut clients {
        let before = client.version();
        let delta = client.recv().await.delta();
        assert_eq!(delta.base_version, before, "{}", client.sub.view);
        live.assert_fresh(client).await;
    }
}

/// Views within a country segment (`segment=country:DE` or `in:country:DE:...`) follow it as
/// the segment reads answer it, `rank` within the segment and `global_rank` board-wide: through
/// scores inside and outside the segment (which move only global ranks), a player moving to
/// another country and one who turns anonymous (who leaves every country segment). An
/// undeclared dimension is refused with words.
async fn views_within_a_segment_follow_it_with_global_ranks(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-13T12:00:00Z").await;
    live.define(
        "global",
        json!({"score_mode": "highest", "segments": {"country": "profile"}}),
    )
    .await;
    for i in 0..8 {
        let country = if i % 2 == 0 { "DE" } else { "FR" };
        let (status, body) = live
            .service
            .call(
                Method::PUT,
                &format!("/v1/games/arena-clash/players/p-{i}/profile"),
                Some(SERVICE),
                Some(&json!({ "country": country })),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    live.batch(
        "global",
        &players("e", 0..8, |i| 100 - 10 * i),
        "2026-10-13T10:00:00Z",
    )
    .await;
    let mut clients = Vec::new();
    for view in [
        "in:country:DE:top:3",
        "in:country:DE:around:p-4:1",
        "in:country:DE:player:p-6",
    ] {
        clients.push(live.subscribe_snapshot(Sub::new("global", view)).await);
    }
    // The same view asked with the segment parameter.
    let mut asked = Sub::new("global", "in:country:DE:top:3");
    asked.raw = Some("view=top:3&segment=country:DE".into());
    clients.push(live.subscribe_snapshot(asked).await);
    let top = clients[0].state().entries.clone();
    assert_eq!(
        top.iter()
            .map(|e| (e.rank, e.global_rank, e.player_id.as_str()))
            .collect::<Vec<_>>(),
        vec![(1, Some(1), "p-0"), (2, Some(3), "p-2"), (3, Some(5), "p-4")]
    );
    assert_eq!(clients[3].state().entries, top);

    let steps: [(&str, i64, Option<Value>); 4] = [
        // A French player passes everyone: only global ranks move in the German views.
        ("p-1", 500, None),
        // A German player climbs within the segment.
        ("p-6", 95, None),
        // p-2 moves to France: it leaves the German views.
        ("p-2", 0, Some(json!({"country": "FR"}))),
        // p-4 shows anonymously: it leaves every country segment.
        ("p-4", 0, Some(json!({"country": "DE", "anonymous": true}))),
    ];
    for (w, (player, value, profile)) in steps.into_iter().enumerate() {
        match profile {
            Some(profile) => {
                let (status, body) = live
                    .service
                    .call(
                        Method::PUT,
                        &format!("/v1/games/arena-clash/players/{player}/profile"),
                        Some(SERVICE),
                        Some(&profile),
                    )
                    .await;
                assert_eq!(status, StatusCode::OK, "{body}");
            }
            None => {
                live.score(&format!("w{w}"), "global", player, value, "2026-10-13T11:00:00Z")
                    .await
            }
        }
        live.flush();
        for client in &mut clients {
            let (_, fresh) = live.read(&client.sub).await;
            if client.state().entries != fresh {
                client.recv().await.delta();
            }
            live.assert_fresh(client).await;
        }
    }
    assert!(
        clients[0]
            .state()
            .entries
            .iter()
            .all(|e| !["p-2", "p-4"].contains(&e.player_id.as_str())),
        "{:?}",
        clients[0].state().entries
    );
    for (query, words) in [
        ("view=top:3&segment=platform:ios", "ranks no segments by"),
        ("view=in:country:de:top:3", "two capital letters"),
        ("view=top:3&segment=DE", "expected dimension:value"),
    ] {
        let (status, body) = live
            .service
            .call(
                Method::GET,
                &format!("{LB}/global/subscribe?{query}"),
                Some(SERVICE),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert!(
            body["detail"].as_str().unwrap_or_default().contains(words),
            "{query}: {body}"
        );
    }
}

/// Moderation moves a player like any change: an invalidation takes the player whose only
/// score it was out of the top view and empties its own view, a restore brings it back, and
/// so do a disqualification and a reinstatement.
async fn moderation_moves_a_player_for_subscribers(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-13T12:00:00Z").await;
    live.define("global", json!({"score_mode": "highest"})).await;
    for (i, value) in [100, 90, 80, 70].into_iter().enumerate() {
        live.score(
            &format!("e{i}"),
            "global",
            &format!("p-{i}"),
            value,
            "2026-10-13T10:00:00Z",
        )
        .await;
    }
    let mut top = live.subscribe_snapshot(Sub::new("global", "top:3")).await;
    let mut own = live.subscribe_snapshot(Sub::new("global", "player:p-0")).await;
    assert_eq!(own.state().entries.len(), 1);

    live.moderate(
        json!({"moderation_id": "m-1", "action_type": "INVALIDATE", "reason": "cheat",
                         "game": "arena-clash", "target_event_id": "e0"}),
    )
    .await;
    live.flush();
    let delta = top.recv().await.delta();
    assert_eq!(delta.left, [PlayerId::new("p-0").unwrap()]);
    assert_eq!(live.assert_fresh(&top).await, Some(top.version()));
    let players: Vec<_> = top.state().entries.iter().map(|e| e.player_id.as_str()).collect();
    assert_eq!(players, ["p-1", "p-2", "p-3"]);
    let delta = own.recv().await.delta();
    assert_eq!(delta.left, [PlayerId::new("p-0").unwrap()]);
    assert!(own.state().entries.is_empty());
    live.assert_fresh(&own).await;

    // Restored: back on top, and in its own view again.
    live.moderate(
        json!({"moderation_id": "m-2", "action_type": "RESTORE", "reason": "appeal",
                         "game": "arena-clash", "target_event_id": "e0"}),
    )
    .await;
    live.flush();
    top.recv().await.delta();
    live.assert_fresh(&top).await;
    let delta = own.recv().await.delta();
    assert_eq!(delta.changed.len(), 1);
    live.assert_fresh(&own).await;
    // A disqualified player leaves the board's views; reinstated, it comes back.
    for (id, action) in [("m-3", "DISQUALIFY"), ("m-4", "REINSTATE")] {
        live.moderate(
            json!({"moderation_id": id, "action_type": action, "reason": "review",
                             "game": "arena-clash", "mode": "solo", "season": "S7", "scope": "global",
                             "target_player_id": "p-0"}),
        )
        .await;
        live.flush();
        top.recv().await.delta();
        live.assert_fresh(&top).await;
        own.recv().await.delta();
        live.assert_fresh(&own).await;
        assert_eq!(own.state().entries.is_empty(), action == "DISQUALIFY");
    }
}

/// A late event applied by a moderator's decision reaches subscribers like any change, and
/// archiving the season sends `closed` (`season_archived`) and ends the stream; the archived
/// board can no longer be subscribed to.
async fn a_late_decision_and_the_season_archive_reach_subscribers(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-13T12:00:00Z").await;
    live.define("global", json!({"score_mode": "highest"})).await;
    live.batch("global", &players("e", 0..4, |i| 10 + i), "2026-10-13T10:00:00Z")
        .await;
    let view = Sub::new("global", "top:3");
    let mut client = live.subscribe_snapshot(view.clone()).await;

    live.clock.advance(1_000);
    live.set_season("frozen").await;
    // Achieved before the freeze, received after it: late, and not applied until decided.
    let mut late = event("late-1", "p-late", 500, "2026-10-13T11:00:00Z");
    late["scopes"] = json!(["global"]);
    let (status, body) = live.service.submit(&late).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (StatusCode::ACCEPTED, Some("LATE")),
        "{body}"
    );
    let before = client.version();
    let (status, decided) = live
        .service
        .call(
            Method::POST,
            "/v1/late-events/late-1/decision",
            Some(MODERATOR),
            Some(&json!({"decision": "apply", "reason": "clock drift", "game": "arena-clash"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    live.flush();
    let delta = client.recv().await.delta();
    assert_eq!(delta.base_version, before);
    assert_eq!(delta.changed[0].player_id.as_str(), "p-late");
    let last = live.assert_fresh(&client).await.unwrap();

    for state in ["finalized", "published", "archived"] {
        live.clock.advance(1_000);
        live.set_season(state).await;
    }
    live.flush();
    match client.recv().await {
        Message::Closed {
            reason,
            period_key: _,
            board_version,
        } => {
            assert_eq!(reason, "season_archived");
            assert_eq!(board_version, last);
        }
        other => panic!("expected closed, got {other:?}"),
    }
    client.ends().await;
    assert_eq!(
        live.open(&view).await.err(),
        Some(Refused {
            status: 404,
            code: "UNKNOWN_BOARD".into()
        })
    );
}

/// A subscription is authorised as a read: no or a bad token is 401 (with the read's code), a
/// token of another game 403; a player JWT is taken in the header or as `access_token`, and a
/// static token as `access_token` is not.
async fn subscriptions_take_read_auth_and_a_player_jwt_in_the_query(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-13T12:00:00Z").await;
    live.define("global", json!({"score_mode": "highest"})).await;
    live.batch("global", &players("e", 0..3, |i| 10 + i), "2026-10-13T10:00:00Z")
        .await;
    let top = Sub::new("global", "top:3");
    let read_code = |token: Option<&'static str>| {
        let live = &live;
        async move {
            let (status, body) = live
                .service
                .call(Method::GET, &format!("{LB}/global/top"), token, None)
                .await;
            (
                status.as_u16(),
                body["code"].as_str().unwrap_or_default().to_string(),
            )
        }
    };
    let (status, unauthenticated) = read_code(None).await;
    assert_eq!(status, 401);
    let (status, forbidden) = read_code(Some(OTHER_GAME)).await;
    assert_eq!(status, 403);
    let refusal = |status: u16, code: &str| {
        Some(Refused {
            status,
            code: code.into(),
        })
    };

    let jwt = player_jwt("p-ava", &["arena-clash"]);
    let other_game_jwt = player_jwt("p-ava", &["other-game"]);
    let forged = standings_origin::http::auth::sign_jwt(
        b"another-key-another-key-another-key!",
        &json!({"sub": "p-ava", "exp": standings_origin::clock::now_ms() / 1000 + 600, "games": ["arena-clash"]}),
    );
    let cases: Vec<(&str, Sub, Option<Refused>)> = vec![
        (
            "no token",
            top.clone().bearer(None),
            refusal(401, &unauthenticated),
        ),
        (
            "an unknown token",
            top.clone().bearer(Some("not-a-token-anyone-was-given-000")),
            refusal(401, &unauthenticated),
        ),
        (
            "another game's token",
            top.clone().bearer(Some(OTHER_GAME)),
            refusal(403, &forbidden),
        ),
        ("the service token", top.clone(), None),
        ("a static player token", top.clone().bearer(Some(PLAYER)), None),
        ("a player JWT in the header", top.clone().bearer(Some(&jwt)), None),
        (
            "a player JWT as access_token",
            top.clone().bearer(None).access_token(&jwt),
            None,
        ),
        (
            "another game's player JWT as access_token",
            top.clone().bearer(None).access_token(&other_game_jwt),
            refusal(403, &forbidden),
        ),
        (
            "a forged JWT as access_token",
            top.clone().bearer(None).access_token(&forged),
            refusal(401, &unauthenticated),
        ),
        (
            "a garbled JWT as access_token",
            top.clone().bearer(None).access_token("eyJhbGciOi.x.y"),
            refusal(401, &unauthenticated),
        ),
        (
            "the service token as access_token",
            top.clone().bearer(None).access_token(SERVICE),
            refusal(401, &unauthenticated),
        ),
        (
            "a static player token as access_token",
            top.clone().bearer(None).access_token(PLAYER),
            refusal(401, &unauthenticated),
        ),
        (
            "a token in the header and a JWT as access_token",
            top.clone().access_token(&jwt),
            refusal(400, "INVALID_REQUEST"),
        ),
    ];
    for (what, sub, expected) in cases {
        match (live.open(&sub).await, expected) {
            (Ok(mut client), None) => {
                let first = client.recv().await;
                assert!(matches!(first, Message::Snapshot { .. }), "{what}: {first:?}");
                live.assert_fresh(&client).await;
                client.close().await;
            }
            (Err(got), Some(expected)) => assert_eq!(got, expected, "{what}"),
            (Ok(_), Some(expected)) => panic!("{what}: accepted, expected {expected:?}"),
            (Err(got), None) => panic!("{what}: refused with {got:?}"),
        }
    }
}

/// Malformed parameters are 400 `INVALID_REQUEST` and an unknown board 404 `UNKNOWN_BOARD`,
/// before any stream starts.
async fn malformed_subscriptions_are_refused_before_the_stream(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-13T12:00:00Z").await;
    live.define("global", json!({"score_mode": "highest"})).await;
    live.score("e", "global", "p-1", 1, "2026-10-13T10:00:00Z").await;
    let invalid = Refused {
        status: 400,
        code: "INVALID_REQUEST".into(),
    };
    for query in [
        "",
        "view=",
        "view=top:0",
        "view=top:101",
        "view=bottom:3",
        "view=around:p-1",
        "view=around:p-1:26",
        "view=player:",
        "view=top:3&since_version=abc",
        "view=top:3&since_version=-1",
        "view=top:3&period=hourly",
        "view=top:3&at=yesterday",
        // A position of another game, and text this service did not give.
        "view=top:3&min_position=p1-00000000-1",
        "view=top:3&min_position=soon",
        // A live view of a segment is not built: refused, never the whole board instead.
        "view=top:3&segment=country:DE",
    ] {
        let sub = Sub::new("global", "top:1").raw_query(query);
        assert_eq!(live.open(&sub).await.err().as_ref(), Some(&invalid), "{query:?}");
    }
    // A position the boards do not reach in time: never a stream older than it.
    let ahead = standings_core::contract::position::Position::new("arena-clash", 1_000_000).token();
    let sub = Sub::new("global", "top:1").raw_query(&format!("view=top:3&min_position={ahead}"));
    assert_eq!(
        live.open(&sub).await.err(),
        Some(Refused {
            status: 503,
            code: "POSITION_NOT_REACHED".into()
        })
    );
    assert_eq!(
        live.open(&Sub::new("nowhere", "top:3")).await.err(),
        Some(Refused {
            status: 404,
            code: "UNKNOWN_BOARD".into()
        })
    );
}

/// The limits of `[live]`: one subscription past the token's or the board's limit is 429
/// `TOO_MANY_SUBSCRIPTIONS`, one past the service's 503 `SUBSCRIBERS_FULL`; what is open keeps
/// working.
async fn subscription_limits_answer_429_and_503_with_their_codes(db: Db, transport: Transport) {
    let live = Live::start_with(db, transport, "2026-10-13T12:00:00Z", |config| {
        config.live.max_subscribers_per_token = 2;
        config.live.max_subscribers_per_board = 3;
        config.live.max_subscribers = 4;
    })
    .await;
    for scope in ["global", "other"] {
        live.define(scope, json!({"score_mode": "highest"})).await;
        live.score(&format!("e-{scope}"), scope, "p-1", 1, "2026-10-13T10:00:00Z")
            .await;
    }
    let too_many = Some(Refused {
        status: 429,
        code: "TOO_MANY_SUBSCRIPTIONS".into(),
    });
    let global = Sub::new("global", "top:3");
    let mut open = Vec::new();
    // The service token's two.
    open.push(live.subscribe_snapshot(global.clone()).await);
    open.push(live.subscribe_snapshot(global.clone()).await);
    assert_eq!(live.open(&global).await.err(), too_many, "a third for one token");
    // The board's third, under another token; a fourth on the board is one too many.
    open.push(live.subscribe_snapshot(global.clone().bearer(Some(ADMIN))).await);
    assert_eq!(
        live.open(&global.clone().bearer(Some(MODERATOR))).await.err(),
        too_many,
        "a fourth on one board"
    );
    // The service's fourth, on another board; a fifth is one too many.
    let other = Sub::new("other", "top:3");
    open.push(
        live.subscribe_snapshot(other.clone().bearer(Some(MODERATOR)))
            .await,
    );
    let jwt = player_jwt("p-ava", &["arena-clash"]);
    assert_eq!(
        live.open(&other.clone().bearer(None).access_token(&jwt))
            .await
            .err(),
        Some(Refused {
            status: 503,
            code: "SUBSCRIBERS_FULL".into()
        }),
        "a fifth in all"
    );
    assert_eq!(live.metric("standings_live_subscribers{").await, 4.0);
    // The open ones are not disturbed.
    live.score("more", "global", "p-2", 50, "2026-10-13T11:00:00Z")
        .await;
    live.flush();
    for client in open.iter_mut().take(3) {
        client.recv().await.delta();
        live.assert_fresh(client).await;
    }
}

/// A server stop sends `going_away` to every stream and ends it (SSE through the router and
/// WebSocket alike), and a subscription asked for after the stop is 503 `UNAVAILABLE`.
async fn a_server_stop_sends_going_away(db: Db, transport: Transport) {
    let mut live = Live::start(db, transport, "2026-10-13T12:00:00Z").await;
    if live.served.is_none() {
        // The stop is a real server's, also when the stream goes through the router.
        live.served = Some(live.service.serve().await);
    }
    live.define("global", json!({"score_mode": "highest"})).await;
    live.score("e", "global", "p-1", 1, "2026-10-13T10:00:00Z").await;
    let view = Sub::new("global", "top:3");
    let mut client = live.subscribe_snapshot(view.clone()).await;
    let version = client.version();

    let served = live.served.take().unwrap();
    let stop = tokio::spawn(served.stop());
    assert_eq!(client.recv().await, Message::GoingAway);
    client.ends().await;
    tokio::time::timeout(GUARD, stop)
        .await
        .expect("the server did not stop once its streams ended")
        .unwrap();
    assert_eq!(client.version(), version);
    assert_eq!(
        live.open_over(Transport::Sse, &view).await.err(),
        Some(Refused {
            status: 503,
            code: "UNAVAILABLE".into()
        })
    );

    // Back once the service is: the board is at the version the client holds, so there is
    // nothing to catch up, and the stream goes on from there.
    let live = live.restart().await;
    let held = client.state().clone();
    let mut back = live.resume(view, held.clone()).await;
    let delta = back.recv().await.delta();
    assert_eq!(delta.base_version, version);
    assert!(delta.changed.is_empty() && delta.left.is_empty(), "{delta:?}");
    assert_eq!(back.state(), &held);
    live.score("after", "global", "p-2", 7, "2026-10-13T11:00:00Z")
        .await;
    live.flush();
    let delta = back.recv().await.delta();
    assert_eq!(delta.base_version, version);
    live.assert_fresh(&back).await;
}

/// A stream with nothing to say gets a `heartbeat` every `heartbeat_seconds` of the clock,
/// which does not move the view; the next change still chains.
async fn a_quiet_stream_gets_heartbeats(db: Db, transport: Transport) {
    let live = Live::start_with(db, transport, "2026-10-13T12:00:00Z", |config| {
        config.live.heartbeat_seconds = 2;
    })
    .await;
    live.define("global", json!({"score_mode": "highest"})).await;
    live.score("e", "global", "p-1", 1, "2026-10-13T10:00:00Z").await;
    let mut client = live.subscribe_snapshot(Sub::new("global", "top:3")).await;
    let version = client.version();
    for _ in 0..2 {
        live.clock.advance(2_000);
        assert_eq!(client.recv().await, Message::Heartbeat);
    }
    assert_eq!(client.version(), version);
    live.score("f", "global", "p-2", 5, "2026-10-13T11:00:00Z").await;
    live.flush();
    let delta = client.recv().await.delta();
    assert_eq!(delta.base_version, version);
    live.assert_fresh(&client).await;
}

/// A subscriber that joins while a window's changes are not sent yet is brought to the board's
/// version at once (issue 28: not to the topic's older state), as is one coming back at the
/// older version; the window then brings the view's other subscribers to that version, sends
/// the joiners nothing they already hold, and from then on one delta (the same bytes) chains
/// for all of them.
async fn a_subscriber_joining_within_a_window_starts_at_the_boards_version(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-13T12:00:00Z").await;
    live.define("global", json!({"score_mode": "highest"})).await;
    live.batch("global", &players("e", 0..5, |i| 10 * i), "2026-10-13T10:00:00Z")
        .await;
    let top = Sub::new("global", "top:3");
    let mut first = live.subscribe_snapshot(top.clone()).await;
    let sent = first.state().clone();

    // Applied, and not sent yet.
    live.score("a", "global", "p-new", 100, "2026-10-13T11:00:00Z")
        .await;
    let mut joining = live.subscribe(top.clone()).await;
    let snapshot = joining.recv().await;
    assert!(matches!(snapshot, Message::Snapshot { .. }), "{snapshot:?}");
    let now = live.assert_fresh(&joining).await.unwrap();
    assert!(now > sent.board_version, "the board's version, not the topic's");
    let mut back = live.resume(top.clone(), sent.clone()).await;
    let caught_up = back.recv().await.delta();
    assert_eq!(
        (caught_up.base_version, caught_up.board_version),
        (sent.board_version, now)
    );
    assert_eq!(back.state(), joining.state());

    live.flush();
    let delta = first.recv().await.delta();
    assert_eq!(
        (delta.base_version, delta.board_version),
        (sent.board_version, now)
    );
    assert_eq!(first.state(), joining.state());

    live.score("b", "global", "p-newer", 200, "2026-10-13T11:01:00Z")
        .await;
    live.flush();
    let next = first.recv().await.delta();
    assert_eq!(next.base_version, now);
    for client in [&mut joining, &mut back] {
        assert_eq!(client.recv().await.delta(), next);
        assert_eq!(
            client.json, first.json,
            "one view's delta is the same bytes for all"
        );
        assert_eq!(live.assert_fresh(client).await, Some(next.board_version));
    }
}

/// A closed day past its retention leaves memory; subscribed to then, it is read from storage:
/// its snapshot (or, back at its version, an empty delta) and then `closed`.
async fn a_closed_day_that_left_memory_is_sent_from_storage(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-14T00:01:00Z").await;
    live.define(
        "daily",
        json!({"score_mode": "highest", "periods": ["all_time", "daily"], "grace_seconds": 300}),
    )
    .await;
    for (i, value) in [30, 20, 10].into_iter().enumerate() {
        live.score(
            &format!("d{i}"),
            "daily",
            &format!("p-{i}"),
            value,
            "2026-10-13T23:59:00Z",
        )
        .await;
    }
    // A day after its close (the harness keeps closed periods a day).
    live.clock.set(ms("2026-10-15T00:05:00Z"));
    live.service.state.ingest().evict_closed().await.unwrap();
    let daily = standings_core::BoardId::new("arena-clash", "solo", "S7", "daily").unwrap();
    let entry = live.service.state.registry().entry(&daily).unwrap();
    assert!(
        entry.instance("2026-10-13").is_none(),
        "the day is still in memory"
    );

    let view = Sub::new("daily", "top:3").period("daily", "2026-10-13T12:00:00Z");
    let mut client = live.subscribe(view.clone()).await;
    let first = client.recv().await;
    assert!(matches!(first, Message::Snapshot { .. }), "{first:?}");
    let version = live.assert_fresh(&client).await.unwrap();
    assert_eq!(client.version(), version);
    assert_eq!(
        client.recv().await,
        Message::Closed {
            reason: "period_closed".into(),
            period_key: "2026-10-13".into(),
            board_version: version
        }
    );
    client.ends().await;

    let mut back = live.resume(view, client.state().clone()).await;
    let delta = back.recv().await.delta();
    assert_eq!((delta.base_version, delta.board_version), (version, version));
    assert!(matches!(back.recv().await, Message::Closed { .. }));
    back.ends().await;
}

/// The per-token limit counts a static token by its name and a player JWT by its subject, so
/// two JWTs of one player share one allowance; a read without a token (with `public_reads`)
/// is bounded only by the board's and the service's limits.
async fn the_per_token_limit_counts_a_player_jwt_by_its_subject(db: Db, transport: Transport) {
    let live = Live::start_with(db, transport, "2026-10-13T12:00:00Z", |config| {
        config.public_reads = true;
        config.live.max_subscribers_per_token = 1;
    })
    .await;
    live.define("global", json!({"score_mode": "highest"})).await;
    live.score("e", "global", "p-1", 1, "2026-10-13T10:00:00Z").await;
    let top = Sub::new("global", "top:3");
    let too_many = Some(Refused {
        status: 429,
        code: "TOO_MANY_SUBSCRIPTIONS".into(),
    });
    let mut open = Vec::new();
    open.push(
        live.subscribe_snapshot(
            top.clone()
                .bearer(None)
                .access_token(&player_jwt("p-ava", &["arena-clash"])),
        )
        .await,
    );
    // Another JWT of the same player (signed a moment later, or for more games) is the same
    // subject.
    let again = player_jwt("p-ava", &["arena-clash", "other-game"]);
    assert_eq!(
        live.open(&top.clone().bearer(None).access_token(&again))
            .await
            .err(),
        too_many
    );
    assert_eq!(live.open(&top.clone().bearer(Some(&again))).await.err(), too_many);
    // Another player, and the static token that stands for p-ava (counted by its name).
    open.push(
        live.subscribe_snapshot(
            top.clone()
                .bearer(None)
                .access_token(&player_jwt("p-ben", &["arena-clash"])),
        )
        .await,
    );
    open.push(live.subscribe_snapshot(top.clone().bearer(Some(PLAYER))).await);
    assert_eq!(live.open(&top.clone().bearer(Some(PLAYER))).await.err(), too_many);
    // No token: not a holder.
    for _ in 0..3 {
        open.push(live.subscribe_snapshot(top.clone().bearer(None)).await);
    }
    assert_eq!(live.metric("standings_live_subscribers{").await, 6.0);
}

/// `EventSource` comes back with the last `id:` it saw as `Last-Event-ID`: the server takes it
/// as `since_version` when the query has none, so the browser's own reconnect is an exact
/// catch-up too.
async fn last_event_id_is_taken_as_since_version(db: Db) {
    let live = Live::start(db, Transport::Sse, "2026-10-13T12:00:00Z").await;
    live.define("global", json!({"score_mode": "cumulative"})).await;
    live.batch("global", &players("e", 0..6, |i| 10 + i), "2026-10-13T10:00:00Z")
        .await;
    let top = Sub::new("global", "top:5");
    let first = live.subscribe_snapshot(top.clone()).await;
    let held = first.state().clone();
    first.close().await;
    live.score("away", "global", "p-5", 100, "2026-10-13T11:00:00Z")
        .await;

    let last_event_id = format!("{}:{}", held.period_key, held.board_version);
    let stream = live
        .open_sse(&top, &[("last-event-id", &last_event_id)])
        .await
        .unwrap();
    let mut back = Client::new(top.clone(), stream, Some(held.clone()));
    let delta = back.recv().await.delta();
    assert_eq!(delta.base_version, held.board_version);
    live.assert_fresh(&back).await;

    // `since_version` in the query wins over the header.
    let stream = live
        .open_sse(
            &top.clone().since("all_time", back.version()),
            &[("last-event-id", "all_time:1")],
        )
        .await
        .unwrap();
    let mut current = Client::new(top.clone(), stream, Some(back.state().clone()));
    let delta = current.recv().await.delta();
    assert_eq!(delta.base_version, back.version());
    // A header that is not a version is refused, as a bad since_version is.
    assert_eq!(
        live.open_sse(&top, &[("last-event-id", "x7")]).await.err(),
        Some(Refused {
            status: 400,
            code: "INVALID_REQUEST".into()
        })
    );
}

/// SSE is the answer whatever the `Accept` header says, and without one.
async fn sse_is_the_default_whatever_the_accept(db: Db) {
    let live = Live::start(db, Transport::Sse, "2026-10-13T12:00:00Z").await;
    live.define("global", json!({"score_mode": "highest"})).await;
    live.score("e", "global", "p-1", 1, "2026-10-13T10:00:00Z").await;
    let top = Sub::new("global", "top:3");
    for accept in ["*/*", "application/json", "text/html"] {
        let stream = live.open_sse(&top, &[("accept", accept)]).await.unwrap();
        let mut client = Client::new(top.clone(), stream, None);
        let first = client.recv().await;
        assert!(matches!(first, Message::Snapshot { .. }), "{accept}: {first:?}");
    }
    let request = Request::builder()
        .uri(top.path())
        .header("authorization", format!("Bearer {SERVICE}"))
        .body(Body::empty())
        .unwrap();
    let response = live.service.app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
}

/// A WebSocket server reads what the client sends only for its pings and close frames: a
/// text frame changes nothing, a ping is answered, and the client's close ends the stream.
async fn a_websocket_ignores_what_the_client_sends(db: Db) {
    let live = Live::start(db, Transport::Ws, "2026-10-13T12:00:00Z").await;
    live.define("global", json!({"score_mode": "highest"})).await;
    live.score("e", "global", "p-1", 1, "2026-10-13T10:00:00Z").await;
    let mut client = live.subscribe_snapshot(Sub::new("global", "top:3")).await;
    let Stream::Ws(Some(ws)) = &mut client.stream else {
        panic!("not a WebSocket")
    };
    ws.send(tungstenite::Message::text(
        r#"{"type":"subscribe","view":"top:1"}"#,
    ))
    .await
    .unwrap();
    ws.send(tungstenite::Message::Ping(b"are you there".to_vec().into()))
        .await
        .unwrap();
    let pong = tokio::time::timeout(GUARD, ws.next())
        .await
        .expect("no pong within the guard");
    match pong {
        Some(Ok(tungstenite::Message::Pong(payload))) => assert_eq!(&payload[..], b"are you there"),
        other => panic!("expected a pong, got {other:?}"),
    }
    live.score("f", "global", "p-2", 5, "2026-10-13T11:00:00Z").await;
    live.flush();
    client.recv().await.delta();
    live.assert_fresh(&client).await;
    let Stream::Ws(Some(ws)) = &mut client.stream else {
        panic!("not a WebSocket")
    };
    ws.close(None).await.unwrap();
    client.ends().await;
}

on_both_databases!(
    last_event_id_is_taken_as_since_version,
    sse_is_the_default_whatever_the_accept,
    a_websocket_ignores_what_the_client_sends,
);

/// Issue 28: a client that held yesterday's daily view and comes back to "the current day"
/// with its position (`since_version`, or `Last-Event-ID` as `EventSource` sends it) gets a
/// snapshot of today, never a delta from yesterday's version that would mix the two days; a
/// bare version of a day is not trusted either. Every message names its instance.
async fn a_version_of_yesterday_gets_todays_snapshot(db: Db, transport: Transport) {
    let live = Live::start(db, transport, "2026-10-13T22:00:00Z").await;
    live.define(
        "daily",
        json!({"score_mode": "highest", "periods": ["all_time", "daily"]}),
    )
    .await;
    for (i, value) in [30, 20, 10, 5].into_iter().enumerate() {
        let at = format!("2026-10-13T21:0{i}:00Z");
        live.score(&format!("y{i}"), "daily", &format!("p-{i}"), value, &at)
            .await;
    }
    let view = Sub::new("daily", "top:5").current("daily");
    let yesterday = live.subscribe_snapshot(view.clone()).await;
    let held = yesterday.state().clone();
    assert_eq!((held.period_key.as_str(), held.entries.len()), ("2026-10-13", 4));
    yesterday.close().await;

    live.clock.set(ms("2026-10-14T00:30:00Z"));
    for (i, value) in [40, 1].into_iter().enumerate() {
        live.score(
            &format!("t{i}"),
            "daily",
            &format!("q-{i}"),
            value,
            "2026-10-14T00:10:00Z",
        )
        .await;
    }
    let mut back = live
        .subscribe(view.clone().since(&held.period_key, held.board_version))
        .await;
    let first = back.recv().await;
    let Message::Snapshot { state, .. } = &first else {
        panic!("another day's version gets a snapshot, got {first:?}");
    };
    assert_eq!(state.period_key, "2026-10-14");
    assert_eq!(state.entries.len(), 2, "today's players only");
    live.assert_fresh(&back).await;
    let mut bare = view.clone();
    bare.since_version = Some(held.board_version.to_string());
    let mut back = live.subscribe(bare).await;
    assert!(matches!(back.recv().await, Message::Snapshot { .. }));
    if transport == Transport::Sse {
        let last_event_id = format!("{}:{}", held.period_key, held.board_version);
        let stream = live
            .open_sse(&view, &[("last-event-id", &last_event_id)])
            .await
            .unwrap();
        let mut reconnected = Client::new(view.clone(), stream, None);
        let first = reconnected.recv().await;
        assert!(matches!(first, Message::Snapshot { .. }), "{first:?}");
        live.assert_fresh(&reconnected).await;
    }
}
