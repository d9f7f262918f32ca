//! The live object (a Durable Object, class `LiveView`): one per board view at the edge. It
//! holds one WebSocket subscription to the origin and fans each message out to the sockets
//! that subscribed through the edge, which it accepts with the hibernation API so the runtime
//! holds them; where each socket stands lives in its attachment. What each socket is sent is
//! `crate::live::relay`'s decision; this file only moves bytes.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::lock::{Mutex, OwnedMutexGuard};
use serde::{Deserialize, Serialize};
use standings_core::{Position, live_message};
use worker::{
    Delay, DurableObject, Env, Fetch, Headers, Method, Request, RequestInit, Response, Result, State,
    WebSocket, WebSocketIncomingMessage, WebSocketPair, WebsocketEvent, durable_object,
};

use crate::live::key::{HOLDER_HEADER, Limits, SINCE_HEADER, UPSTREAM_HEADER};
use crate::live::relay::{Relay, Standing};
use crate::live::upstream::Upstream;
use crate::problem;

/// States of the view an object keeps, for sockets that come back with a version.
const KEEP_STATES: usize = 64;
/// How long an object tries to subscribe again before it tells its sockets to go away.
const RECONNECT_FOR: Duration = Duration::from_secs(10);

/// What a socket's attachment holds: where it stands.
#[derive(Serialize, Deserialize)]
struct Attachment {
    at: Standing,
}

#[derive(Default)]
struct Inner {
    relay: Option<Relay>,
    /// The origin's subscription path, without a version.
    path: Option<String>,
    /// The open upstream, to close when the last socket leaves.
    upstream: Option<WebSocket>,
    /// Counts upstreams, so a loop of a replaced one stops.
    generation: u64,
}

#[durable_object(websocket)]
pub struct LiveView {
    state: Rc<State>,
    env: Rc<Env>,
    inner: Rc<RefCell<Inner>>,
    /// Held while an upstream is being opened, until its first message is taken.
    opening: Arc<Mutex<()>>,
}

fn var(env: &Env, name: &str) -> Option<String> {
    env.var(name)
        .map(|v| v.to_string())
        .or_else(|_| env.secret(name).map(|s| s.to_string()))
        .ok()
}

fn text(bytes: Vec<u8>) -> String {
    // The core prints JSON, which is UTF-8.
    String::from_utf8(bytes).unwrap_or_default()
}

/// Either an open upstream or the origin's refusal, to pass on to the client.
enum Opened {
    Open(WebSocket),
    Refused(Response),
}

async fn open_upstream(env: &Env, path: &str, since: Option<&Standing>) -> Result<Opened> {
    let origin = var(env, "ORIGIN_URL").unwrap_or_default();
    let mut url = format!("{}{path}", origin.trim_end_matches('/'));
    if let Some(at) = since {
        url.push_str(&format!("&since_version={}:{}", at.key, at.version));
    }
    let headers = Headers::new();
    headers.set("upgrade", "websocket")?;
    if let Some(token) = var(env, "EDGE_TOKEN").filter(|t| !t.is_empty()) {
        headers.set("authorization", &format!("Bearer {token}"))?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Get).with_headers(headers);
    let response = Fetch::Request(Request::new_with_init(&url, &init)?)
        .send()
        .await?;
    if response.status_code() != 101 {
        return Ok(Opened::Refused(response));
    }
    match response.websocket() {
        Some(ws) => Ok(Opened::Open(ws)),
        None => Err(worker::Error::RustError(
            "the origin upgraded without a WebSocket".into(),
        )),
    }
}

impl LiveView {
    /// The limits from the worker's vars; a var that is set and not a whole number is the
    /// deployment's error, said as such.
    fn limits(&self) -> std::result::Result<Limits, problem::Problem> {
        let mut limits = Limits::default();
        for (name, slot) in [
            ("LIVE_MAX_PER_HOLDER", &mut limits.per_holder),
            ("LIVE_MAX_PER_ADDRESS", &mut limits.per_address),
        ] {
            if let Some(text) = var(&self.env, name) {
                *slot = text.trim().parse().map_err(|_| {
                    problem::misconfigured(format!("{name}={text:?} is not a whole number of sockets"))
                })?;
            }
        }
        Ok(limits)
    }

    fn sockets(&self) -> Vec<(WebSocket, Option<Standing>)> {
        self.state
            .get_websockets()
            .into_iter()
            .map(|ws| {
                let at = ws
                    .deserialize_attachment::<Attachment>()
                    .ok()
                    .flatten()
                    .map(|a| a.at);
                (ws, at)
            })
            .collect()
    }

    fn send(ws: &WebSocket, message: &str, at: Option<Standing>) {
        // A socket that cannot take a message is closing; its close event tidies up.
        if ws.send_with_str(message).is_ok()
            && let Some(at) = at
        {
            let _ = ws.serialize_attachment(Attachment { at });
        }
    }

    /// Brings every socket to the relay's current state; `shared` is the origin's delta as it
    /// came, sent to those at its base.
    fn fan_out(&self, shared: Option<(&Standing, &str)>) {
        let inner = self.inner.borrow();
        let Some(relay) = inner.relay.as_ref() else {
            return;
        };
        let now = relay.standing();
        for (ws, at) in self.sockets() {
            let Some(at) = at else { continue };
            match shared {
                Some((base, message)) if *base == at => Self::send(&ws, message, Some(now.clone())),
                _ => {
                    if let Some(message) = relay.catch_up(&at) {
                        Self::send(&ws, &text(message), Some(now.clone()));
                    }
                }
            }
        }
    }

    fn to_all(&self, message: &str) {
        for ws in self.state.get_websockets() {
            let _ = ws.send_with_str(message);
        }
    }

    fn close_all(&self, code: u16, reason: &str) {
        for ws in self.state.get_websockets() {
            let _ = ws.close(Some(code), Some(reason));
        }
    }

    /// Takes one message of the origin's and says what the upstream does next; `Err` for a
    /// message it cannot follow.
    fn take(&self, raw: &str) -> std::result::Result<Follow, String> {
        match Upstream::parse(raw.as_bytes())? {
            Upstream::Snapshot { view, period, state } => {
                {
                    let mut inner = self.inner.borrow_mut();
                    match inner.relay.as_mut() {
                        Some(relay) => relay.restart(view, period, state),
                        None => inner.relay = Some(Relay::new(view, period, state, KEEP_STATES)),
                    }
                }
                self.fan_out(None);
                Ok(Follow::On)
            }
            Upstream::Delta(delta) => {
                let base = Standing {
                    key: delta.period_key.clone(),
                    version: delta.base_version,
                };
                let followed = match self.inner.borrow_mut().relay.as_mut() {
                    Some(relay) => relay.follow(&delta).map_err(|e| e.to_string()),
                    None => Err("a delta before any snapshot".into()),
                };
                followed?;
                self.fan_out(Some((&base, raw)));
                Ok(Follow::On)
            }
            Upstream::Heartbeat => {
                self.to_all(raw);
                Ok(Follow::On)
            }
            Upstream::GoingAway => Ok(Follow::Again),
            Upstream::Resync => Ok(Follow::Fresh),
            Upstream::Closed(_) => {
                self.to_all(raw);
                self.close_all(1000, "closed");
                Ok(Follow::End)
            }
        }
    }

    /// Follows one upstream until it ends, then subscribes again as its end asks.
    async fn follow(
        self: Rc<Self>,
        ws: WebSocket,
        mut opening: Option<OwnedMutexGuard<()>>,
        generation: u64,
    ) {
        let mut next = Follow::Again;
        if ws.accept().is_ok()
            && let Ok(mut events) = ws.events()
        {
            while let Some(event) = events.next().await {
                if self.inner.borrow().generation != generation {
                    return;
                }
                match event {
                    Ok(WebsocketEvent::Message(message)) => {
                        let Some(raw) = message.text() else { continue };
                        next = match self.take(&raw) {
                            Ok(Follow::On) => {
                                opening.take();
                                continue;
                            }
                            Ok(other) => other,
                            // Something it cannot follow: start over with a snapshot.
                            Err(_) => Follow::Fresh,
                        };
                        break;
                    }
                    Ok(WebsocketEvent::Close(_)) | Err(_) => break,
                }
            }
        }
        drop(opening);
        let _ = ws.close(Some(1000), Some("done"));
        self.again(next, generation).await;
    }

    /// Subscribes again after an upstream ended, for as long as sockets remain; past
    /// [`RECONNECT_FOR`] without the origin, the sockets are told to go away and come back with
    /// their version, as the origin's own subscribers are when it stops.
    async fn again(self: Rc<Self>, how: Follow, generation: u64) {
        if matches!(how, Follow::End) || self.state.get_websockets().is_empty() {
            self.reset(generation);
            return;
        }
        let mut waited = Duration::ZERO;
        let mut pause = Duration::from_millis(50);
        loop {
            let (path, since) = {
                let inner = self.inner.borrow();
                if inner.generation != generation {
                    return;
                }
                let since = match how {
                    Follow::Fresh => None,
                    _ => inner.relay.as_ref().map(Relay::standing),
                };
                (inner.path.clone().unwrap_or_default(), since)
            };
            if let Ok(Opened::Open(ws)) = open_upstream(&self.env, &path, since.as_ref()).await {
                let generation = {
                    let mut inner = self.inner.borrow_mut();
                    inner.generation += 1;
                    inner.upstream = Some(ws.clone());
                    inner.generation
                };
                worker::wasm_bindgen_futures::spawn_local(self.clone().follow(ws, None, generation));
                return;
            }
            if waited >= RECONNECT_FOR || self.state.get_websockets().is_empty() {
                self.to_all(std::str::from_utf8(live_message::GOING_AWAY).unwrap_or_default());
                self.close_all(1001, "going away");
                self.reset(generation);
                return;
            }
            Delay::from(pause).await;
            waited += pause;
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }

    fn reset(&self, generation: u64) {
        let mut inner = self.inner.borrow_mut();
        if inner.generation == generation {
            inner.relay = None;
            inner.upstream = None;
            inner.generation += 1;
        }
    }
}

/// What an upstream's end asks for.
enum Follow {
    /// Keep reading.
    On,
    /// Subscribe again from the current state (the origin is going away).
    Again,
    /// Subscribe again without a version (the origin dropped the subscription, or sent what
    /// the object could not follow).
    Fresh,
    /// The view ended (its period closed): nothing more to follow.
    End,
}

impl DurableObject for LiveView {
    fn new(state: State, env: Env) -> Self {
        LiveView {
            state: Rc::new(state),
            env: Rc::new(env),
            inner: Rc::default(),
            opening: Arc::new(Mutex::new(())),
        }
    }

    async fn fetch(&self, request: Request) -> Result<Response> {
        let Some(path) = request.headers().get(UPSTREAM_HEADER)? else {
            return Response::error("a live object is reached through the edge worker", 400);
        };
        let since: Option<Position> = request.headers().get(SINCE_HEADER)?.and_then(|s| s.parse().ok());
        let holder = request.headers().get(HOLDER_HEADER)?.unwrap_or_default();
        let limits = match self.limits() {
            Ok(limits) => limits,
            Err(refused) => return crate::workers_types::to_response(problem::response(&refused)),
        };
        let open = self.state.get_websockets_with_tag(&holder).len();
        if let Some(refused) = limits.refusal(&holder, open) {
            return crate::workers_types::to_response(problem::response(&refused));
        }
        let guard = self.opening.clone().lock_owned().await;
        if self.inner.borrow().relay.is_none() {
            match open_upstream(&self.env, &path, None).await {
                Ok(Opened::Refused(refused)) => return Ok(refused),
                Ok(Opened::Open(ws)) => {
                    let generation = {
                        let mut inner = self.inner.borrow_mut();
                        inner.generation += 1;
                        inner.path = Some(path.clone());
                        inner.upstream = Some(ws.clone());
                        inner.generation
                    };
                    let this = Rc::new(LiveView {
                        state: self.state.clone(),
                        env: self.env.clone(),
                        inner: self.inner.clone(),
                        opening: self.opening.clone(),
                    });
                    worker::wasm_bindgen_futures::spawn_local(this.follow(ws, Some(guard), generation));
                    // The upstream's first message is taken before the lock is free again.
                    drop(self.opening.lock().await);
                }
                Err(_) => drop(guard),
            }
        } else {
            drop(guard);
        }
        let first = {
            let inner = self.inner.borrow();
            inner
                .relay
                .as_ref()
                .map(|relay| (text(relay.message_for(since.as_ref())), relay.standing()))
        };
        let Some((first, at)) = first else {
            return crate::workers_types::to_response(problem::response(&problem::origin_unavailable(
                "the origin's live subscription could not be opened; retry shortly",
            )));
        };
        let pair = WebSocketPair::new()?;
        self.state
            .accept_websocket_with_tags(&pair.server, &[holder.as_str()]);
        Self::send(&pair.server, &first, Some(at));
        Response::from_websocket(pair.client)
    }

    async fn websocket_message(&self, _ws: WebSocket, _message: WebSocketIncomingMessage) -> Result<()> {
        // Subscribers send nothing the service reads (docs/live.md).
        Ok(())
    }

    async fn websocket_close(&self, ws: WebSocket, code: usize, _reason: String, _clean: bool) -> Result<()> {
        let code = u16::try_from(code)
            .ok()
            .filter(|c| *c == 1000 || (3000..5000).contains(c));
        let _ = ws.close(code.or(Some(1000)), Some("closed"));
        // The last socket gone: the upstream is closed, and the object may be evicted.
        let others = self
            .state
            .get_websockets()
            .into_iter()
            .filter(|other| *other != ws)
            .count();
        if others == 0 {
            let mut inner = self.inner.borrow_mut();
            if let Some(upstream) = inner.upstream.take() {
                let _ = upstream.close(Some(1000), Some("no subscribers"));
            }
            inner.relay = None;
            inner.generation += 1;
        }
        Ok(())
    }

    async fn websocket_error(&self, _ws: WebSocket, _error: worker::Error) -> Result<()> {
        Ok(())
    }
}
