//! Live subscriptions through the edge's live objects (Durable Objects under `wrangler dev`),
//! against direct subscriptions to the origin: the same messages, byte for byte, at the same
//! versions; catch-up; refusals; the anonymous player; one upstream per view however many
//! sockets; no gap when the origin restarts; and `going_away` when it stays down.

use std::time::{Duration, Instant};

use standings_core::{View, ViewState};
use standings_tests::http::Client;
use standings_tests::live::{LiveStream, Message, Opened, Transport, view_of_read};

use crate::scenarios::{ANONYMOUS_NAME, Run, jwt, with_period};
use crate::stack::{BOARD, GAME, LIVE_MAX_PER_HOLDER, READER_PLAYER, READY_TIMEOUT};

/// How long a stream stays silent before the harness takes it as caught up.
const QUIET: Duration = Duration::from_millis(2_000);
/// Sockets opened through the edge on each view.
const EDGE_SOCKETS: usize = 3;

/// One view followed directly at the origin and through the edge.
struct Followed {
    view: View,
    path: String,
    direct: Stream,
    edge: Vec<Stream>,
}

/// A stream and every message it brought, with its text.
struct Stream {
    live: LiveStream,
    seen: Vec<(Message, String)>,
}

async fn open(addr: &str, path: &str, token: &str) -> Result<Stream, String> {
    match LiveStream::open(addr, path, token, Transport::WebSocket).await? {
        Opened::Stream(live) => Ok(Stream {
            live: *live,
            seen: Vec::new(),
        }),
        Opened::Refused { status, body } => Err(format!("{path} at {addr} refused {status}: {body}")),
    }
}

/// The first message of a subscription opened at `addr`, or its refusal (status and code).
async fn first_of(addr: &str, path: &str, token: &str) -> Result<Result<String, (u16, String)>, String> {
    match LiveStream::open(addr, path, token, Transport::WebSocket).await? {
        Opened::Stream(mut live) => match tokio::time::timeout(QUIET * 5, live.next_text()).await {
            Ok(Ok(Some((_, text)))) => Ok(Ok(text)),
            other => Err(format!("{path} at {addr}: no first message ({other:?})")),
        },
        Opened::Refused { status, body } => {
            let code = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["code"].as_str().map(str::to_string))
                .unwrap_or(body);
            Ok(Err((status, code)))
        }
    }
}

/// A WebSocket upgrade's answer read whole (the client library may return before a refusal's
/// body arrives): its status and its problem's code.
async fn refusal(addr: &str, path: &str, token: &str) -> Result<(u16, String), String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Connection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(QUIET * 5, stream.read_to_end(&mut answer)).await;
    if read.is_err() && answer.is_empty() {
        return Err(format!("{path} at {addr}: no answer"));
    }
    let text = String::from_utf8_lossy(&answer);
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let code = text
        .split_once("\r\n\r\n")
        .and_then(|(_, body)| serde_json::from_str::<serde_json::Value>(body.trim()).ok())
        .and_then(|v| v["code"].as_str().map(str::to_string))
        .unwrap_or_default();
    Ok((status, code))
}

impl Stream {
    /// Reads until the stream is quiet for [`QUIET`].
    async fn drain(&mut self) -> Result<(), String> {
        loop {
            match tokio::time::timeout(QUIET, self.live.next_text()).await {
                Err(_) => return Ok(()),
                Ok(Ok(Some(message))) => self.seen.push(message),
                Ok(Ok(None)) => return Err("the stream ended".into()),
                Ok(Err(e)) => return Err(e),
            }
        }
    }

    /// The view its messages build, following the client's rule; `Err` at a gap.
    fn state(&self) -> Result<ViewState, String> {
        let mut state: Option<ViewState> = None;
        for (message, text) in &self.seen {
            match message {
                Message::Snapshot(s) => state = Some(s.clone()),
                Message::Delta(d) => state
                    .as_mut()
                    .ok_or("a delta before any snapshot")?
                    .apply(d)
                    .map_err(|e| format!("a delta that does not chain ({e}): {text}"))?,
                _ => {}
            }
        }
        state.ok_or_else(|| "no snapshot".to_string())
    }

    fn first_version(&self) -> u64 {
        self.seen
            .first()
            .and_then(|(m, _)| m.position())
            .map_or(0, |p| p.board_version)
    }

    /// The deltas' texts from `from` on.
    fn deltas_from(&self, from: u64) -> Vec<&str> {
        self.seen
            .iter()
            .filter(|(m, _)| matches!(m, Message::Delta(d) if d.base_version >= from))
            .map(|(_, t)| t.as_str())
            .collect()
    }
}

/// Open subscriptions the origin counts on the boards whose label holds `board` (a board's
/// `game/mode/season/scope`, or a part of it).
pub(crate) async fn origin_subscribers(origin: &mut Client, board: &str) -> Result<f64, String> {
    let reply = origin.get("/metrics", None).await?;
    Ok(String::from_utf8_lossy(&reply.body)
        .lines()
        .filter(|line| line.starts_with("standings_live_subscribers{") && line.contains(board))
        .filter_map(|line| line.rsplit_once(' ')?.1.trim().parse::<f64>().ok())
        .sum())
}

/// Events that move the followed player and the top: new values above the board's top for
/// a few players, the followed player up and down.
async fn move_players(run: &mut Run<'_>, round: i64, player: &str) -> Result<(), String> {
    let mut events: Vec<(String, i64)> = (0..4)
        .map(|i| {
            (
                run.players[20 + (round as usize * 4 + i) % 40].clone(),
                1_000_000 - round * 10 - i as i64,
            )
        })
        .collect();
    events.push((player.to_string(), 900 + round * 400));
    run.submit(false, &events).await
}

pub(crate) async fn through_the_edge(run: &mut Run<'_>) -> Result<String, String> {
    let origin_addr = run.stack.origin.addr.clone();
    let edge_addr = run.stack.worker.addr.clone();
    let player = run.players[11].clone();
    let token = jwt(READER_PLAYER, &[GAME]);
    let before = origin_subscribers(&mut run.origin, GAME).await?;
    let mut followed = Vec::new();
    for daily in [false, true] {
        for view in [
            "top:5".to_string(),
            format!("around:{player}:2"),
            format!("player:{player}"),
        ] {
            let path = with_period(&format!("{BOARD}/subscribe?view={view}"), daily);
            let direct = open(&origin_addr, &path, &token).await?;
            let mut edge = Vec::new();
            for _ in 0..EDGE_SOCKETS {
                edge.push(open(&edge_addr, &path, &token).await?);
            }
            followed.push(Followed {
                view: view.parse().map_err(|e| format!("{view}: {e}"))?,
                path,
                direct,
                edge,
            });
        }
    }
    let during = origin_subscribers(&mut run.origin, GAME).await? - before;
    for round in 0..4 {
        move_players(run, round, &player).await?;
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let mut compared = 0;
    let mut deltas = 0;
    let mut days_turned = 0;
    for f in &mut followed {
        f.direct.drain().await?;
        for e in &mut f.edge {
            e.drain().await?;
        }
        let direct = f.direct.state()?;
        let read = run.origin.get(&view_read(&f.view, &f.path), Some(&token)).await?;
        let fresh = view_of_read(&f.view, read.status, &read.body)?;
        if fresh.period_key != direct.period_key {
            // The day turned during the run: the read is of the new day, the stream of the old.
            days_turned += 1;
        } else if fresh.entries != direct.entries {
            return Err(format!(
                "{}: the direct subscriber holds {direct:?}, a fresh read {fresh:?}",
                f.path
            ));
        }
        for e in &f.edge {
            let state = e.state()?;
            if state != direct {
                return Err(format!(
                    "{}: through the edge {state:?}, directly {direct:?}",
                    f.path
                ));
            }
            let from = e.first_version().max(f.direct.first_version());
            let (ours, theirs) = (e.deltas_from(from), f.direct.deltas_from(from));
            if ours != theirs {
                return Err(format!(
                    "{}: from version {from} the edge sent {ours:?}, the origin {theirs:?}",
                    f.path
                ));
            }
            if e.seen.iter().any(|(_, t)| t.contains(ANONYMOUS_NAME)) {
                return Err(format!(
                    "{}: a message through the edge holds the anonymous player's name",
                    f.path
                ));
            }
            deltas += ours.len();
            compared += 1;
        }
    }
    // Coming back: the first message for the first version the object followed, and for the current
    // one, brings the view held there to the origin's entries; at the same version it is the
    // origin's message byte for byte. (The origin may bring a newcomer to the board's version,
    // past its view's last change; an object knows only the versions its view changed at.)
    let top = &followed[0];
    let mut states: Vec<ViewState> = Vec::new();
    let mut state: Option<ViewState> = None;
    for (message, _) in &top.direct.seen {
        match message {
            Message::Snapshot(s) => state = Some(s.clone()),
            Message::Delta(d) => {
                if let Some(s) = state.as_mut() {
                    s.apply(d).map_err(|e| e.to_string())?;
                }
            }
            _ => continue,
        }
        states.extend(state.clone());
    }
    let mut catch_ups = Vec::new();
    for held in [&states[0], &states[states.len() - 1]] {
        let path = format!("{}&since_version=all_time:{}", top.path, held.board_version);
        let (edge, origin) = (
            first_of(&edge_addr, &path, &token).await?,
            first_of(&origin_addr, &path, &token).await?,
        );
        let (Ok(edge), Ok(origin)) = (edge, origin) else {
            return Err(format!("since_version {}: a refusal", held.board_version));
        };
        let brought = |text: &str| -> Result<ViewState, String> {
            let mut state = held.clone();
            match Message::parse(text.as_bytes())? {
                Message::Snapshot(s) => state = s,
                Message::Delta(d) => state.apply(&d).map_err(|e| format!("{e}: {text}"))?,
                _ => return Err(format!("a first message that is neither: {text}")),
            }
            Ok(state)
        };
        let (at_edge, at_origin) = (brought(&edge)?, brought(&origin)?);
        if at_edge.entries != at_origin.entries
            || (at_edge.board_version == at_origin.board_version && edge != origin)
        {
            return Err(format!(
                "since_version {}: the edge's first message {edge}, the origin's {origin}",
                held.board_version
            ));
        }
        catch_ups.push(format!(
            "{} -> {} (origin {})",
            held.board_version, at_edge.board_version, at_origin.board_version
        ));
    }
    // Refusals are the origin's: a forged JWT and another game's.
    let mut refusals = Vec::new();
    for bad in [
        "e30.e30.forged".to_string(),
        jwt(READER_PLAYER, &["another-game"]),
    ] {
        let (edge, origin) = (
            refusal(&edge_addr, &top.path, &bad).await?,
            refusal(&origin_addr, &top.path, &bad).await?,
        );
        if edge != origin || edge.0 < 400 {
            return Err(format!(
                "a bad token through the edge: {edge:?}, at the origin: {origin:?}"
            ));
        }
        refusals.push(format!("{} {}", edge.0, edge.1));
    }
    // One player may hold LIVE_MAX_PER_HOLDER sockets of one view through the edge; the next
    // is refused in the contract's code, and another player is still taken.
    let limited = format!("{BOARD}/subscribe?view=player:{}", run.players[12]);
    let mut held_sockets = Vec::new();
    for _ in 0..LIVE_MAX_PER_HOLDER {
        held_sockets.push(open(&edge_addr, &limited, &token).await?);
    }
    let over = refusal(&edge_addr, &limited, &token).await?;
    if over.0 != 429 || over.1 != "TOO_MANY_SUBSCRIPTIONS" {
        return Err(format!(
            "socket {} of one player on one view answered {over:?}",
            LIVE_MAX_PER_HOLDER + 1
        ));
    }
    open(&edge_addr, &limited, &jwt("p-00002", &[GAME])).await?;
    drop(held_sockets);
    let views = followed.len() as f64;
    if during <= views || during > views * 2.0 {
        return Err(format!(
            "the origin counted {during} new subscribers for {} direct and {} through the edge",
            followed.len(),
            followed.len() * EDGE_SOCKETS
        ));
    }
    // The origin stops and comes back: the edge's sockets stay open and chain on.
    let edge_socket = &mut followed[0].edge[0];
    let held = edge_socket.state()?;
    run.stack.origin.stop(READY_TIMEOUT)?;
    run.stack.origin.start(READY_TIMEOUT).await?;
    let restarted = Instant::now();
    move_players(run, 9, &player).await?;
    let edge_socket = &mut followed[0].edge[0];
    edge_socket.drain().await?;
    let after = edge_socket.state()?;
    let read = run
        .origin
        .get(&view_read(&followed[0].view, &followed[0].path), Some(&token))
        .await?;
    let fresh = view_of_read(&followed[0].view, read.status, &read.body)?;
    if after.entries != fresh.entries || after.board_version <= held.board_version {
        return Err(format!(
            "after the origin's restart the edge's socket holds {after:?} (before {held:?}), a fresh read {fresh:?}"
        ));
    }
    let moved = after.board_version;
    let chained_after = restarted.elapsed();
    // The origin stays down past the object's patience: its sockets are told `going_away` and
    // closed, as the origin's own subscribers are; one coming back later catches up.
    let socket = &mut followed[0].edge[1];
    socket.drain().await?;
    let held = socket.state()?;
    run.stack.origin.stop(READY_TIMEOUT)?;
    let down = Instant::now();
    let mut told = false;
    loop {
        match tokio::time::timeout(Duration::from_secs(20), socket.live.next_text()).await {
            Ok(Ok(Some((Message::GoingAway, _)))) => told = true,
            Ok(Ok(Some(_))) => {}
            Ok(Ok(None)) => break,
            Ok(Err(e)) => return Err(format!("with the origin down, the edge's socket broke off: {e}")),
            Err(_) => {
                return Err(
                    "with the origin down 20 s, the edge's socket was neither told nor closed".into(),
                );
            }
        }
    }
    let gone_after = down.elapsed();
    if !told {
        return Err(format!(
            "the edge closed a socket {gone_after:.1?} into the outage without going_away"
        ));
    }
    run.stack.origin.start(READY_TIMEOUT).await?;
    let back = format!(
        "{}&since_version={}:{}",
        followed[0].path, held.period_key, held.board_version
    );
    let mut again = open(&edge_addr, &back, &token).await?;
    again.drain().await?;
    let caught_up = again.seen.first().map(|(m, _)| m.clone());
    let mut state = held.clone();
    match &caught_up {
        Some(Message::Snapshot(s)) => state = s.clone(),
        Some(Message::Delta(d)) => state
            .apply(d)
            .map_err(|e| format!("the catch-up after the outage does not chain: {e}"))?,
        other => return Err(format!("after the outage the first message was {other:?}")),
    }
    if state.entries != fresh.entries {
        return Err(format!(
            "after the outage the socket that came back holds {state:?}, a fresh read {fresh:?}"
        ));
    }
    Ok(format!(
        "{compared} edge sockets on {} views (all time and daily) equal their direct subscriptions ({deltas} deltas byte for byte, \
         the same final views as fresh reads); the origin counted {during} subscribers for {} direct and {} edge sockets; \
         catch-ups {catch_ups:?} equal at the same version; refusals {refusals:?} as at the origin; socket {} of one player on one view 429 TOO_MANY_SUBSCRIPTIONS; after a restart the socket chained on to {moved} \
         ({:.1?} after it); with the origin down, going_away and a close after {gone_after:.1?}, and the socket that came back \
         caught up by a {}{}",
        followed.len(),
        followed.len(),
        followed.len() * EDGE_SOCKETS,
        LIVE_MAX_PER_HOLDER + 1,
        chained_after,
        if matches!(caught_up, Some(Message::Snapshot(_))) {
            "snapshot"
        } else {
            "delta"
        },
        if days_turned > 0 {
            format!("; {days_turned} daily views not read fresh: the day turned")
        } else {
            String::new()
        }
    ))
}

/// The read that answers a view, for `path`'s period.
fn view_read(view: &View, path: &str) -> String {
    let read = standings_tests::live::read_path_of(view);
    let daily = path.contains("period=daily");
    with_period(&format!("{BOARD}/{read}"), daily)
}
