//! The live benchmark's subscribers: a hand-written SSE client (HTTP/1.1, chunked bodies) and a
//! WebSocket client (tokio-tungstenite), each on its own connection, feeding every message to
//! one [`Follower`] that checks the `delta` chain of `docs/live.md` and counts what arrived.
//!
//! Messages are read with a scanner that finds only the fields the benchmark needs (`type`,
//! `base_version`, `board_version` and, for a `player:P` view, P's value), so ten thousand
//! subscribers cost the generator little CPU; every [`FULL_PARSE_EVERY`]th message of each
//! subscriber, and its first, is parsed whole with serde_json and must agree with the scanner.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::http::find;
use crate::latency::Histogram;

/// Every this many messages a subscriber also parses one whole as JSON, as a check on the
/// scanner.
const FULL_PARSE_EVERY: u64 = 64;

/// The most `top` deltas kept for choosing the Redis side's message.
const MAX_TOP_DELTAS: usize = 1_000;

/// How a subscriber is connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transport {
    /// Server-Sent Events over a plain HTTP/1.1 GET.
    Sse,
    /// A WebSocket upgrade; one text frame per message.
    WebSocket,
}

/// The shape of a subscriber's view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `top:N`.
    Top,
    /// `around:P:R`.
    Around,
    /// `player:P`.
    Player,
}

/// One subscriber to open.
#[derive(Clone, Debug)]
pub(crate) struct Spec {
    /// How it connects.
    pub(crate) transport: Transport,
    /// Its view's shape.
    pub(crate) shape: Shape,
    /// The `view` query value (`top:100`, `around:player-...:5`, `player:player-...`).
    pub(crate) view: String,
    /// The member a `player:P` view follows, for matching its deltas to the events that changed P.
    pub(crate) watched: Option<u64>,
    /// Whether it also applies every message to the view's entries, for [`Tally::views`].
    pub(crate) verify: bool,
    /// Its place among the subscribers.
    pub(crate) index: usize,
}

/// One entry of a view as the read API spells it: rank, player, value, achieved_at.
pub(crate) type Entry = (u64, String, i64, String);

/// The entries of a JSON array of entries (`entries`, `changed`), or of one entry object.
pub(crate) fn entries_of(value: &serde_json::Value) -> Result<Vec<Entry>, String> {
    let one = |e: &serde_json::Value| -> Result<Entry, String> {
        match (
            e["rank"].as_u64(),
            e["player_id"].as_str(),
            e["value"].as_i64(),
            e["achieved_at"].as_str(),
        ) {
            (Some(rank), Some(player), Some(value), Some(at)) => {
                Ok((rank, player.to_string(), value, at.to_string()))
            }
            _ => Err(format!("not an entry: {e}")),
        }
    };
    match value {
        serde_json::Value::Array(items) => items.iter().map(one).collect(),
        serde_json::Value::Object(_) => Ok(vec![one(value)?]),
        other => Err(format!("not entries: {other}")),
    }
}

/// A verifying subscriber's view as it holds it after its last message.
#[derive(Clone, Debug)]
pub(crate) struct Held {
    /// Which subscriber.
    pub(crate) spec: Spec,
    /// Its version.
    pub(crate) version: u64,
    /// Its entries, by rank.
    pub(crate) entries: Vec<Entry>,
}

/// The wire message kinds (`type`), in the order of [`Tally::messages`].
pub(crate) const KINDS: [&str; 6] = ["snapshot", "delta", "heartbeat", "resync", "closed", "going_away"];

/// The refusals of a subscription that are the service protecting itself, by their problem
/// `code` (`docs/live.md`), in the order of [`Tally::refused`]: counted and reported, not a
/// failure of the run. The 503s must carry `Retry-After`.
pub(crate) const REFUSALS: [(u16, &str); 3] = [
    (503, "LIVE_BUSY"),
    (429, "TOO_MANY_SUBSCRIPTIONS"),
    (503, "SUBSCRIBERS_FULL"),
];

/// Which of [`REFUSALS`] an answer is, from its status, whether it had `Retry-After`, and its
/// problem document; `None` for any other answer. A 503 of these without `Retry-After` is
/// an error.
fn refusal(status: u16, retry_after: bool, body: &[u8]) -> Result<Option<usize>, String> {
    let Some(at) = REFUSALS.iter().position(|(code_status, code)| {
        *code_status == status && find(body, format!("\"code\":\"{code}\"").as_bytes()).is_some()
    }) else {
        return Ok(None);
    };
    if status == 503 && !retry_after {
        return Err(format!("a 503 {} without Retry-After", REFUSALS[at].1));
    }
    Ok(Some(at))
}

/// Why a subscriber stopped before its stream ended by itself.
pub(crate) enum Stop {
    /// The service refused the subscription with one of [`REFUSALS`] (its index).
    Refused(usize),
    /// Anything else: the run fails.
    Failed(String),
}

impl From<String> for Stop {
    fn from(why: String) -> Stop {
        Stop::Failed(why)
    }
}

impl From<&str> for Stop {
    fn from(why: &str) -> Stop {
        Stop::Failed(why.to_string())
    }
}

/// What every subscriber adds to, read by the benchmark at the edges of each phase.
#[derive(Default)]
pub(crate) struct Tally {
    /// Subscribers whose first message (the snapshot) arrived.
    pub(crate) ready: AtomicU64,
    /// Messages received, by kind (see [`KINDS`]).
    pub(crate) messages: [AtomicU64; 6],
    /// Bytes read from the sockets: HTTP and SSE framing, or WebSocket frames, included.
    pub(crate) socket_bytes: AtomicU64,
    /// Bytes of the JSON of every `delta` received.
    pub(crate) delta_bytes: AtomicU64,
    /// Deltas whose `base_version` was not the subscriber's version (must stay 0).
    pub(crate) violations: AtomicU64,
    /// Streams that ended: after `resync`, `closed` or `going_away`, or closed by the server.
    pub(crate) ended: AtomicU64,
    /// The first errors, for the report.
    pub(crate) errors: Mutex<Vec<String>>,
    /// Subscribers that failed (refused otherwise than by [`REFUSALS`], unreadable, or a
    /// message that did not parse).
    pub(crate) failed: AtomicU64,
    /// Subscriptions refused, by [`REFUSALS`]: these subscribers are done and hold nothing.
    pub(crate) refused: [AtomicU64; 3],
    /// The indexes ([`Spec::index`]) of the refused subscribers.
    pub(crate) refused_specs: Mutex<Vec<usize>>,
    /// While set, `top` views' deltas are kept (see `top_deltas`).
    pub(crate) capture_top: std::sync::atomic::AtomicBool,
    /// The `top` views' deltas received while `capture_top` was set, one per `board_version`
    /// (every top subscriber gets the same bytes): the Redis side publishes one of them.
    pub(crate) top_deltas: Mutex<Vec<(u64, Vec<u8>)>>,
    /// The views of the subscribers that apply their messages (see [`Spec::verify`]), by index.
    pub(crate) views: Mutex<HashMap<usize, Held>>,
}

impl Tally {
    /// Subscriptions refused, all reasons together.
    pub(crate) fn refused_total(&self) -> u64 {
        self.refused.iter().map(|r| r.load(Ordering::Relaxed)).sum()
    }

    fn error(&self, why: String) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        if errors.len() < 10 {
            errors.push(why);
        }
    }
}

/// Exact matching of the events sent to watched players (those some `player:P` view follows)
/// with the deltas that carry their values. Each such event raises P's value to one that P
/// never held before, and the writers send at most one event per P at a time, so a message
/// showing P at that value or higher is the first to carry the event: the lag runs from the
/// event's 202 to that message.
#[derive(Default)]
pub(crate) struct Watched {
    players: Mutex<HashMap<u64, Track>>,
    /// Lags of matched events since the last [`Watched::take`].
    lags: Mutex<Histogram>,
    /// Events whose value a subscriber saw before the generator read the 202 (lag counted 0).
    pub(crate) before_ack: AtomicU64,
    /// Off while no subscriber reads: an acknowledged event is then done with at once.
    matching: std::sync::atomic::AtomicBool,
}

struct Track {
    /// P's value as the generator last set it (the seeded one at first).
    value: i64,
    /// How many subscribers follow P (one refused is taken off).
    followers: u32,
    /// The event in flight or not yet seen by a subscriber: its value, its ack and the first
    /// receipt of a message carrying it.
    pending: Option<Pending>,
}

struct Pending {
    value: i64,
    acked: Option<Instant>,
    received: Option<Instant>,
}

impl Watched {
    /// Follows `member`, whose value is `value` now, for one more subscriber.
    pub(crate) fn follow(&self, member: u64, value: i64) {
        let mut players = self.lock();
        let followers = players.get(&member).map_or(0, |t| t.followers);
        players.insert(
            member,
            Track {
                value,
                followers: followers + 1,
                pending: None,
            },
        );
    }

    /// One subscriber of `member` was refused: once none is left, `member`'s events are no
    /// longer waited for (no message will show them) and the writers treat it as any player.
    pub(crate) fn unfollow(&self, member: u64) {
        let mut players = self.lock();
        if let Some(track) = players.get_mut(&member) {
            track.followers = track.followers.saturating_sub(1);
            if track.followers == 0 {
                players.remove(&member);
            }
        }
    }

    /// Whether `member` is followed (the writers send such players only matched events).
    pub(crate) fn is_followed(&self, member: u64) -> bool {
        self.lock().contains_key(&member)
    }

    /// A new value for `member` above any it held, when it has no event pending; `step` is
    /// how much higher (at least 1).
    pub(crate) fn raise(&self, member: u64, step: i64) -> Option<i64> {
        let mut players = self.lock();
        let track = players.get_mut(&member)?;
        if track.pending.is_some() {
            return None;
        }
        track.value += step.max(1);
        track.pending = Some(Pending {
            value: track.value,
            acked: None,
            received: None,
        });
        Some(track.value)
    }

    /// Whether subscribers are reading, so that acknowledged events wait for their message.
    pub(crate) fn set_matching(&self, on: bool) {
        self.matching.store(on, Ordering::Relaxed);
    }

    /// The event raising `member` to `value` was acknowledged at `at`.
    pub(crate) fn acked(&self, member: u64, value: i64, at: Instant) {
        let mut players = self.lock();
        let Some(track) = players.get_mut(&member) else {
            return;
        };
        let Some(pending) = track.pending.as_mut().filter(|p| p.value == value) else {
            return;
        };
        if !self.matching.load(Ordering::Relaxed) {
            track.pending = None;
            return;
        }
        match pending.received {
            Some(_) => {
                self.before_ack.fetch_add(1, Ordering::Relaxed);
                self.record(std::time::Duration::ZERO);
                track.pending = None;
            }
            None => pending.acked = Some(at),
        }
    }

    /// A message shows `member` at `value`, received at `at`.
    pub(crate) fn seen(&self, member: u64, value: i64, at: Instant) {
        let mut players = self.lock();
        let Some(track) = players.get_mut(&member) else {
            return;
        };
        let Some(pending) = track.pending.as_mut().filter(|p| p.value <= value) else {
            return;
        };
        match pending.acked {
            Some(acked) => {
                self.record(at.saturating_duration_since(acked));
                track.pending = None;
            }
            None => {
                pending.received.get_or_insert(at);
            }
        }
    }

    /// The event raising `member` to `value` failed; P may be raised again.
    pub(crate) fn abandon(&self, member: u64, value: i64) {
        if let Some(track) = self.lock().get_mut(&member)
            && track.pending.as_ref().is_some_and(|p| p.value == value)
        {
            track.pending = None;
        }
    }

    /// The lags matched since the last call, and how many events are still waiting for a message.
    pub(crate) fn take(&self) -> (Histogram, u64) {
        let lags = std::mem::take(&mut *self.lags.lock().unwrap_or_else(|e| e.into_inner()));
        let waiting = self
            .lock()
            .values()
            .filter(|t| t.pending.as_ref().is_some_and(|p| p.acked.is_some()))
            .count() as u64;
        (lags, waiting)
    }

    fn record(&self, lag: std::time::Duration) {
        self.lags.lock().unwrap_or_else(|e| e.into_inner()).record(lag);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Track>> {
        self.players.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The fields of one message the benchmark reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scanned {
    /// The index of its `type` in [`KINDS`].
    pub(crate) kind: usize,
    pub(crate) base_version: Option<u64>,
    pub(crate) board_version: Option<u64>,
    /// The first entry's `value` (a `player:P` view holds at most P's entry).
    pub(crate) first_value: Option<i64>,
}

/// Scans one message's JSON. The keys read are unique in a message: `type`, `base_version`
/// and `board_version` sit only at the top level, and entries are the only objects with a
/// `value`.
pub(crate) fn scan(json: &[u8]) -> Result<Scanned, String> {
    if json.first() != Some(&b'{') || json.last() != Some(&b'}') {
        return Err(format!("not a JSON object: {}", lossy(json)));
    }
    let kind_at = find(json, b"\"type\":\"").ok_or_else(|| format!("no type: {}", lossy(json)))? + 8;
    let kind_end = json[kind_at..]
        .iter()
        .position(|&b| b == b'"')
        .ok_or_else(|| format!("an unterminated type: {}", lossy(json)))?;
    let kind_name = &json[kind_at..kind_at + kind_end];
    let kind = KINDS
        .iter()
        .position(|k| k.as_bytes() == kind_name)
        .ok_or_else(|| format!("an unknown type {:?}", lossy(kind_name)))?;
    Ok(Scanned {
        kind,
        base_version: number_after(json, b"\"base_version\":")?.map(|n| n as u64),
        board_version: number_after(json, b"\"board_version\":")?.map(|n| n as u64),
        first_value: number_after(json, b"\"value\":")?,
    })
}

/// The integer after the first `key`, if the key occurs.
fn number_after(json: &[u8], key: &[u8]) -> Result<Option<i64>, String> {
    let Some(at) = find(json, key) else {
        return Ok(None);
    };
    let digits = &json[at + key.len()..];
    let end = digits
        .iter()
        .position(|&b| !(b.is_ascii_digit() || b == b'-'))
        .unwrap_or(digits.len());
    std::str::from_utf8(&digits[..end])
        .ok()
        .and_then(|s| s.parse().ok())
        .map(Some)
        .ok_or_else(|| format!("{} is not followed by an integer", lossy(key)))
}

/// The same fields, read by a full JSON parse, for checking the scanner.
fn parse_whole(json: &[u8]) -> Result<Scanned, String> {
    let value: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| format!("a message is not JSON ({e}): {}", lossy(json)))?;
    let kind_name = value["type"].as_str().ok_or("a message without a type")?;
    let kind = KINDS
        .iter()
        .position(|k| *k == kind_name)
        .ok_or_else(|| format!("an unknown type {kind_name:?}"))?;
    let entries = if kind_name == "delta" {
        &value["changed"]
    } else {
        &value["entries"]
    };
    Ok(Scanned {
        kind,
        base_version: value["base_version"].as_u64(),
        board_version: value["board_version"].as_u64(),
        first_value: entries
            .as_array()
            .and_then(|e| e.first())
            .and_then(|e| e["value"].as_i64()),
    })
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned()
}

/// One subscriber's state: its version, and what it reports to the shared [`Tally`].
pub(crate) struct Follower {
    spec: Spec,
    tally: Arc<Tally>,
    watched: Arc<Watched>,
    version: Option<u64>,
    received: u64,
    /// The view's entries, kept only when the spec verifies.
    entries: Vec<Entry>,
}

/// What the connection does after a message.
#[derive(PartialEq, Eq)]
pub(crate) enum Next {
    /// Keep reading.
    Read,
    /// The server ended the stream (`resync`, `closed`, `going_away`).
    End,
}

impl Follower {
    pub(crate) fn new(spec: Spec, tally: Arc<Tally>, watched: Arc<Watched>) -> Follower {
        Follower {
            spec,
            tally,
            watched,
            version: None,
            received: 0,
            entries: Vec::new(),
        }
    }

    /// Takes one message: counts it, checks that a delta chains on the version held, and
    /// reports a watched player's value.
    pub(crate) fn message(&mut self, json: &[u8]) -> Result<Next, String> {
        let at = Instant::now();
        let scanned = scan(json)?;
        if self.received.is_multiple_of(FULL_PARSE_EVERY) {
            let whole = parse_whole(json)?;
            if whole != scanned {
                return Err(format!(
                    "the scanner read {scanned:?} but the JSON holds {whole:?}: {}",
                    lossy(json)
                ));
            }
        }
        self.received += 1;
        self.tally.messages[scanned.kind].fetch_add(1, Ordering::Relaxed);
        match KINDS[scanned.kind] {
            "snapshot" => {
                let version = scanned.board_version.ok_or("a snapshot without board_version")?;
                if self.version.is_none() {
                    self.tally.ready.fetch_add(1, Ordering::Relaxed);
                }
                self.version = Some(version);
            }
            "delta" => {
                let next = scanned.board_version.ok_or("a delta without board_version")?;
                let base = scanned.base_version.ok_or("a delta without base_version")?;
                self.tally
                    .delta_bytes
                    .fetch_add(json.len() as u64, Ordering::Relaxed);
                if self.version != Some(base) || next < base {
                    self.tally.violations.fetch_add(1, Ordering::Relaxed);
                }
                self.version = Some(next);
                if self.spec.shape == Shape::Top && self.tally.capture_top.load(Ordering::Relaxed) {
                    let mut kept = self.tally.top_deltas.lock().unwrap_or_else(|e| e.into_inner());
                    if kept.len() < MAX_TOP_DELTAS && !kept.iter().rev().any(|(v, _)| *v == next) {
                        kept.push((next, json.to_vec()));
                    }
                }
            }
            "heartbeat" => return Ok(Next::Read),
            _ => return Ok(Next::End),
        }
        if self.spec.verify {
            self.apply(json)?;
        }
        if let (Some(member), Some(value)) = (self.spec.watched, scanned.first_value) {
            self.watched.seen(member, value, at);
        }
        Ok(Next::Read)
    }
}

impl Follower {
    /// Applies a snapshot or a delta to the entries, as `docs/live.md` says a client does, and
    /// publishes the result for the check against a fresh read.
    fn apply(&mut self, json: &[u8]) -> Result<(), String> {
        let value: serde_json::Value = serde_json::from_slice(json)
            .map_err(|e| format!("a message is not JSON ({e}): {}", lossy(json)))?;
        if value["type"] == "snapshot" {
            self.entries = entries_of(&value["entries"])?;
        } else {
            let changed = entries_of(&value["changed"])?;
            let left = value["left"].as_array().ok_or("a delta without left")?;
            self.entries.retain(|(_, player, _, _)| {
                !left.iter().any(|l| l.as_str() == Some(player)) && !changed.iter().any(|c| c.1 == *player)
            });
            self.entries.extend(changed);
            self.entries.sort_by_key(|e| e.0);
        }
        let held = Held {
            spec: self.spec.clone(),
            version: self.version.unwrap_or(0),
            entries: self.entries.clone(),
        };
        self.tally
            .views
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(self.spec.index, held);
        Ok(())
    }
}

/// Where and as whom subscribers connect.
#[derive(Clone)]
pub(crate) struct Target {
    /// `127.0.0.1:PORT`.
    pub(crate) addr: String,
    /// The board's read path (`/v1/leaderboards/...`).
    pub(crate) board_path: String,
    /// The bearer token.
    pub(crate) token: String,
}

/// Runs one subscriber until the stream ends or the task is aborted; a refusal of
/// [`REFUSALS`] is counted in the tally (and its player no longer followed), anything else
/// that stops it early is an error.
pub(crate) async fn run(target: Arc<Target>, spec: Spec, tally: Arc<Tally>, watched: Arc<Watched>) {
    let (transport, index, followed) = (spec.transport, spec.index, spec.watched);
    let view = spec.view.clone();
    let mut follower = Follower::new(spec, tally.clone(), watched.clone());
    let result = match transport {
        Transport::Sse => sse(&target, &view, &mut follower).await,
        Transport::WebSocket => websocket(&target, &view, &mut follower).await,
    };
    match result {
        Ok(()) => {
            tally.ended.fetch_add(1, Ordering::Relaxed);
        }
        Err(Stop::Refused(why)) => {
            if let Some(member) = followed {
                watched.unfollow(member);
            }
            tally
                .refused_specs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(index);
            tally.refused[why].fetch_add(1, Ordering::Relaxed);
        }
        Err(Stop::Failed(why)) => {
            tally.ended.fetch_add(1, Ordering::Relaxed);
            tally.error(format!("{transport:?} {view}: {why}"));
        }
    }
}

fn subscribe_path(target: &Target, view: &str) -> String {
    format!("{}/subscribe?view={view}", target.board_path)
}

/// Reads an SSE stream: the response head, then the chunked body, cut into events at blank
/// lines; each event's `data:` line is one message.
async fn sse(target: &Target, view: &str, follower: &mut Follower) -> Result<(), Stop> {
    let mut stream = TcpStream::connect(&target.addr)
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nAccept: text/event-stream\r\n\r\n",
        subscribe_path(target, view),
        target.addr,
        target.token
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("cannot send the request: {e}"))?;
    // Small to begin with: ten thousand idle subscribers should cost the generator little.
    let mut raw = Vec::with_capacity(1024);
    let head_end = loop {
        if let Some(at) = find(&raw, b"\r\n\r\n") {
            break at + 4;
        }
        if read_more(&mut stream, &mut raw, &follower.tally).await? == 0 {
            return Err("the service closed the connection before answering".into());
        }
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    if !head.starts_with("http/1.1 200") {
        // The refusal's problem document follows the head, with its length.
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|l| l.trim().parse::<usize>().ok())
            .unwrap_or(0);
        while raw.len() < head_end + length {
            if read_more(&mut stream, &mut raw, &follower.tally).await? == 0 {
                break;
            }
        }
        let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        let retry_after = head.lines().any(|l| l.starts_with("retry-after:"));
        if let Some(why) = refusal(status, retry_after, &raw[head_end..])? {
            return Err(Stop::Refused(why));
        }
        return Err(format!("answered {}", String::from_utf8_lossy(&raw[..raw.len().min(500)])).into());
    }
    let chunked = head.contains("transfer-encoding: chunked");
    raw.drain(..head_end);
    let mut body = Vec::with_capacity(1024);
    loop {
        if chunked {
            if !dechunk(&mut raw, &mut body)? {
                return Ok(());
            }
        } else {
            body.append(&mut raw);
        }
        // Events end at a blank line; the origin writes `\n` line ends.
        while let Some(at) = find(&body, b"\n\n") {
            let next = sse_event(&body[..at], follower)?;
            body.drain(..at + 2);
            if next == Next::End {
                return Ok(());
            }
        }
        if read_more(&mut stream, &mut raw, &follower.tally).await? == 0 {
            return Err("the service closed the stream".into());
        }
    }
}

/// One SSE event's lines: its `data:` is the message; `event:` must name the same type.
fn sse_event(event: &[u8], follower: &mut Follower) -> Result<Next, String> {
    let mut data = None;
    let mut name = None;
    for line in event.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(rest) = line.strip_prefix(b"data:") {
            data = Some(rest.strip_prefix(b" ").unwrap_or(rest));
        } else if let Some(rest) = line.strip_prefix(b"event:") {
            name = Some(rest.strip_prefix(b" ").unwrap_or(rest));
        }
    }
    // A comment-only event (`: keep-alive`) carries no message.
    let Some(data) = data else {
        return Ok(Next::Read);
    };
    let next = follower.message(data)?;
    if let Some(name) = name {
        let expected = format!("\"type\":\"{}\"", String::from_utf8_lossy(name));
        if find(data, expected.as_bytes()).is_none() {
            return Err(format!(
                "an SSE event named {:?} carries {}",
                String::from_utf8_lossy(name),
                lossy(data)
            ));
        }
    }
    Ok(next)
}

/// Moves the complete chunks at the front of `raw` into `body`. False once the last (empty)
/// chunk came.
fn dechunk(raw: &mut Vec<u8>, body: &mut Vec<u8>) -> Result<bool, String> {
    let mut at = 0;
    let mut more = true;
    while let Some(line) = find(&raw[at..], b"\r\n") {
        let size_text = std::str::from_utf8(&raw[at..at + line]).map_err(|_| "a chunk size is not text")?;
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size =
            usize::from_str_radix(size_text, 16).map_err(|_| format!("a bad chunk size {size_text:?}"))?;
        let data = at + line + 2;
        if raw.len() < data + size + 2 {
            break;
        }
        if size == 0 {
            more = false;
            at = data + 2;
            break;
        }
        body.extend_from_slice(&raw[data..data + size]);
        at = data + size + 2;
    }
    raw.drain(..at);
    Ok(more)
}

async fn read_more(stream: &mut TcpStream, raw: &mut Vec<u8>, tally: &Tally) -> Result<usize, String> {
    let filled = raw.len();
    if raw.capacity() - filled < 512 {
        raw.reserve(raw.capacity().max(1024));
    }
    let n = stream
        .read_buf(raw)
        .await
        .map_err(|e| format!("cannot read: {e}"))?;
    tally.socket_bytes.fetch_add(n as u64, Ordering::Relaxed);
    Ok(n)
}

/// A WebSocket subscriber: one message per text frame.
async fn websocket(target: &Target, view: &str, follower: &mut Follower) -> Result<(), Stop> {
    let stream = TcpStream::connect(&target.addr)
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut request = format!("ws://{}{}", target.addr, subscribe_path(target, view))
        .into_client_request()
        .map_err(|e| format!("a bad WebSocket request: {e}"))?;
    request.headers_mut().insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {}", target.token)).map_err(|e| e.to_string())?,
    );
    // tungstenite's 128 KiB buffers by default would cost ten thousand subscribers gigabytes.
    let config = WebSocketConfig::default()
        .read_buffer_size(4096)
        .write_buffer_size(0);
    let counted = Counted {
        inner: stream,
        tally: follower.tally.clone(),
    };
    let (mut ws, _) = match tokio_tungstenite::client_async_with_config(request, counted, Some(config)).await
    {
        Ok(upgraded) => upgraded,
        Err(tokio_tungstenite::tungstenite::Error::Http(answer)) => {
            let status = answer.status().as_u16();
            let retry_after = answer.headers().contains_key("retry-after");
            let body = answer.body().as_deref().unwrap_or_default();
            if let Some(why) = refusal(status, retry_after, body)? {
                return Err(Stop::Refused(why));
            }
            return Err(format!("the upgrade was answered {status}: {}", lossy(body)).into());
        }
        Err(e) => return Err(format!("the upgrade failed: {e}").into()),
    };
    while let Some(frame) = ws.next().await {
        match frame.map_err(|e| format!("cannot read a frame: {e}"))? {
            Message::Text(text) => {
                if follower.message(text.as_bytes())? == Next::End {
                    return Ok(());
                }
            }
            Message::Close(_) => return Ok(()),
            Message::Binary(_) => return Err("a binary frame".into()),
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
        }
    }
    Err("the service closed the stream without a close frame".into())
}

/// A socket that counts the bytes read from it into the tally.
struct Counted {
    inner: TcpStream,
    tally: Arc<Tally>,
}

impl AsyncRead for Counted {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        this.tally.socket_bytes.fetch_add(read as u64, Ordering::Relaxed);
        polled
    }
}

impl AsyncWrite for Counted {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scanner reads the documented examples as a full parse does.
    #[test]
    fn scans_the_documented_messages() {
        let delta = br#"{"type":"delta","base_version":42,"board_version":46,"changed":[{"rank":2,"player_id":"p-dee","value":950,"achieved_at":"2026-10-13T10:06:00Z"}],"left":["p-cy"]}"#;
        let scanned = scan(delta).unwrap();
        assert_eq!(scanned, parse_whole(delta).unwrap());
        assert_eq!(
            (
                KINDS[scanned.kind],
                scanned.base_version,
                scanned.board_version,
                scanned.first_value
            ),
            ("delta", Some(42), Some(46), Some(950))
        );
        let snapshot = br#"{"type":"snapshot","view":"player:p-x","period":"all_time","period_key":"all_time","period_start":null,"period_end":null,"board_version":7,"entries":[]}"#;
        assert_eq!(scan(snapshot).unwrap(), parse_whole(snapshot).unwrap());
        assert_eq!(scan(snapshot).unwrap().first_value, None);
        assert!(scan(br#"{"type":"surprise"}"#).is_err());
        assert!(scan(b"not json").is_err());
    }

    /// Chunks split anywhere come out whole and in order; the empty chunk ends the body.
    #[test]
    fn dechunks_across_reads() {
        let wire = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        for split in 0..wire.len() {
            let mut raw = wire[..split].to_vec();
            let mut body = Vec::new();
            assert!(dechunk(&mut raw, &mut body).unwrap());
            raw.extend_from_slice(&wire[split..]);
            assert!(!dechunk(&mut raw, &mut body).unwrap(), "split at {split}");
            assert_eq!(body, b"hello world");
        }
    }

    /// A delta that does not chain on the version held is counted, one that does is not, and a
    /// verifying subscriber holds the entries its messages add up to.
    #[test]
    fn counts_deltas_that_do_not_chain() {
        let tally = Arc::new(Tally::default());
        let spec = Spec {
            transport: Transport::Sse,
            shape: Shape::Top,
            view: "top:3".into(),
            watched: None,
            verify: true,
            index: 7,
        };
        let mut follower = Follower::new(spec, tally.clone(), Arc::new(Watched::default()));
        let snapshot = br#"{"type":"snapshot","board_version":42,"entries":[]}"#;
        let chains = br#"{"type":"delta","base_version":42,"board_version":46,"changed":[],"left":[]}"#;
        let skips = br#"{"type":"delta","base_version":47,"board_version":50,"changed":[],"left":[]}"#;
        assert!(follower.message(snapshot).unwrap() == Next::Read);
        follower.message(chains).unwrap();
        assert_eq!(tally.violations.load(Ordering::Relaxed), 0);
        follower.message(skips).unwrap();
        assert_eq!(tally.violations.load(Ordering::Relaxed), 1);
        let moved = br#"{"type":"delta","base_version":50,"board_version":51,"changed":[{"rank":1,"player_id":"b","value":9,"achieved_at":"t1"},{"rank":2,"player_id":"a","value":5,"achieved_at":"t0"}],"left":[]}"#;
        let left = br#"{"type":"delta","base_version":51,"board_version":52,"changed":[{"rank":1,"player_id":"c","value":12,"achieved_at":"t2"},{"rank":2,"player_id":"b","value":9,"achieved_at":"t1"}],"left":["a"]}"#;
        follower.message(moved).unwrap();
        follower.message(left).unwrap();
        let held = tally.views.lock().unwrap()[&7].clone();
        assert_eq!(held.version, 52);
        let players: Vec<&str> = held.entries.iter().map(|e| e.1.as_str()).collect();
        assert_eq!(players, ["c", "b"]);
        assert_eq!(tally.messages[1].load(Ordering::Relaxed), 4);
        assert_eq!(tally.ready.load(Ordering::Relaxed), 1);
    }

    /// The service's refusals that protect it are told apart from other answers, and a 503 of
    /// them must say when to retry.
    #[test]
    fn tells_refusals_apart() {
        let busy = br#"{"type":"about:blank","title":"Service Unavailable","status":503,"code":"LIVE_BUSY","detail":"..."}"#;
        assert_eq!(refusal(503, true, busy).unwrap(), Some(0));
        assert!(refusal(503, false, busy).is_err());
        let many = br#"{"status":429,"code":"TOO_MANY_SUBSCRIPTIONS"}"#;
        assert_eq!(refusal(429, false, many).unwrap(), Some(1));
        assert_eq!(refusal(503, true, many).unwrap(), None);
        assert_eq!(
            refusal(400, false, br#"{"code":"INVALID_REQUEST"}"#).unwrap(),
            None
        );
    }

    /// A player is followed while one of its subscribers is; a refused one is taken off.
    #[test]
    fn unfollows_a_player_once_no_subscriber_is_left() {
        let watched = Watched::default();
        watched.follow(4, 10);
        watched.follow(4, 10);
        watched.unfollow(4);
        assert!(watched.is_followed(4));
        watched.unfollow(4);
        assert!(!watched.is_followed(4));
        assert_eq!(watched.raise(4, 1), None);
    }

    /// A watched player's event is matched to the first message at its value or above, in
    /// either order of ack and receipt.
    #[test]
    fn matches_events_to_messages() {
        let watched = Watched::default();
        watched.follow(9, 100);
        let v = watched.raise(9, 5).unwrap();
        watched.acked(9, v, Instant::now());
        assert!(
            watched.raise(9, 0).is_some(),
            "done with at its ack while no one reads"
        );
        watched.set_matching(true);
        watched.follow(9, 100);
        let v = watched.raise(9, 5).unwrap();
        assert_eq!(v, 105);
        assert_eq!(watched.raise(9, 5), None, "one event in flight per player");
        let t0 = Instant::now();
        watched.acked(9, v, t0);
        watched.seen(9, 104, t0 + std::time::Duration::from_millis(10));
        watched.seen(9, 105, t0 + std::time::Duration::from_millis(300));
        let (lags, waiting) = watched.take();
        assert_eq!(waiting, 0);
        let p = lags.quantile(1.0).as_millis();
        assert!((295..=305).contains(&p), "{p}");
        let v = watched.raise(9, 1).unwrap();
        watched.seen(9, v + 3, t0);
        watched.acked(9, v, t0);
        assert_eq!(watched.before_ack.load(Ordering::Relaxed), 1);
        assert_eq!(watched.take().0.quantile(1.0), std::time::Duration::ZERO);
    }
}
