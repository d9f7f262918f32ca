//! The service a cluster node serves: every request goes to the engine of its partition when
//! this node owns it, to the owner otherwise, and waits briefly while the partition moves.
//! The owner's answers carry `x-standings-served-by`, so a forwarded answer and the owner's are
//! the same bytes.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header, request::Parts};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tower::{Service, ServiceExt};

use super::forward::{self, Forwarded, NOT_OWNER, SERVED_BY};
use super::route::{self, Destination};
use super::standby::{COPY_LAG, Copy};
use super::step::{self, AfterForward, CopyAt, Step, Unanswered};
use super::{Engine, Node, SlotState, hold_for};
use crate::chain::Chain;
use crate::http::MAX_BODY_BYTES;
use crate::http::error::{AppError, Code};
use crate::http::serve::PeerAddr;
use crate::sync::RwLockUnpoisoned;
use standings_core::contract::position::{MIN_POSITION_HEADER, Position};
use standings_core::contract::query::Query;

/// The service; cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct ClusterApp {
    node: Arc<Node>,
}

impl ClusterApp {
    pub(super) fn new(node: Arc<Node>) -> ClusterApp {
        ClusterApp { node }
    }
}

impl Service<Request> for ClusterApp {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let node = self.node.clone();
        Box::pin(async move { Ok(handle(node, request).await) })
    }
}

/// A request read so far: its head, and its body whole (bodies are at most 1 MB).
struct Asked {
    parts: Parts,
    body: Bytes,
    /// It came from another node, which asked this one as the owner: never forwarded again.
    from_peer: bool,
}

impl Asked {
    fn request(&self) -> Request {
        Request::from_parts(self.parts.clone(), Body::from(self.body.clone()))
    }

    fn client(&self) -> Option<std::net::SocketAddr> {
        self.parts.extensions.get::<PeerAddr>().map(|p| p.0)
    }
}

async fn handle(node: Arc<Node>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    let from_peer = forward::from_a_peer(&parts.headers, &node.cluster.secret);
    if from_peer {
        // The client's address as the first node saw it, for the per-address limits.
        if let Some(addr) = parts
            .headers
            .get(forward::CLIENT_ADDR)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
        {
            parts.extensions.insert(PeerAddr(addr));
        }
    }
    let target = route::target(&parts.method, parts.uri.path(), parts.uri.query());
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(body) => body,
        Err(_) => {
            return AppError::new(
                Code::PAYLOAD_TOO_LARGE,
                format!("the body is larger than {MAX_BODY_BYTES} bytes"),
            )
            .into_response();
        }
    };
    let asked = Asked {
        parts,
        body,
        from_peer,
    };
    let target = target.unwrap_or_else(|| {
        route::game_in_body(&asked.body)
            .or_else(|| route::query_game(asked.parts.uri.query()))
            .map_or(Destination::Any, Destination::Game)
    });
    let mut response = match target {
        Destination::Node => node_route(&node, &asked).await,
        Destination::Game(game) => to_partition(&node, node.partition_of(&game), asked, None).await,
        Destination::Read(game) => {
            let p = node.partition_of(&game);
            to_partition(&node, p, asked, Some(&game)).await
        }
        Destination::Any => to_any(&node, asked).await,
        Destination::Part => to_part(&node, asked).await,
        Destination::Batch => batch(&node, asked).await,
    };
    // Every answer names a node: the owner's carry the owner, and what this node answers itself
    // (a partition still moving) carries this one.
    if !response.headers().contains_key(SERVED_BY)
        && let Ok(id) = HeaderValue::from_str(&node.id)
    {
        response.headers_mut().insert(SERVED_BY, id);
    }
    response
}

/// Answers on engine `engine` of partition `p`, counting the request as in flight on it.
async fn local(node: &Node, p: u32, engine: &Engine, request: Request) -> Response {
    let inflight = InFlight::count(&node.slot(p).inflight);
    let response = engine.app.clone().oneshot(request).await;
    drop(inflight);
    let Ok(mut response) = response;
    if let Ok(id) = HeaderValue::from_str(&node.id) {
        response.headers_mut().insert(SERVED_BY, id);
    }
    response
}

/// A request counted in flight on a partition until it is dropped: answered, or given up when
/// its connection closes or its deadline passes (hyper drops the request's future then), so
/// that a hand-over never waits for a request that is gone.
struct InFlight<'a>(&'a AtomicUsize);

impl InFlight<'_> {
    fn count(inflight: &AtomicUsize) -> InFlight<'_> {
        inflight.fetch_add(1, Ordering::AcqRel);
        InFlight(inflight)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The partition is moving and no node answers for it within the wait.
fn moving(p: u32) -> Response {
    AppError::new(
        Code::PARTITION_MOVING,
        format!("the game's partition {p} is moving between nodes; retry shortly"),
    )
    .into_response()
}

/// Sends a request for partition `p` where it is served: here, at its owner, or (while it
/// moves) wherever it lands within the wait. What to do is `step`'s decision; this carries it out.
async fn to_partition(node: &Arc<Node>, p: u32, asked: Asked, read_of: Option<&str>) -> Response {
    let deadline = Instant::now() + hold_for(node.cluster.lease_ttl_ms);
    let mut changes = node.changes.subscribe();
    let mut copy_may_answer = read_of.is_some();
    loop {
        let copy = match read_of {
            Some(game) if copy_may_answer => copy_for(node, p, &asked, game),
            _ => None,
        };
        match step::next(&node.state_of(p), node.now(), asked.from_peer, copy.is_some()) {
            Step::Serve(engine) => return local(node, p, &engine, asked.request()).await,
            Step::Copy => {
                let Some((copy, age_ms)) = copy else { continue };
                let response = from_copy(node, &copy, age_ms, asked.request()).await;
                // A board the copy does not know may be one defined since it last looked
                // (definitions are rows, not log entries): the owner knows.
                if response.status() != StatusCode::NOT_FOUND {
                    return response;
                }
                copy_may_answer = false;
                continue;
            }
            Step::Forward(peer) => {
                if is_upgrade(&asked.parts) {
                    return upgrade_through(node, p, &peer.url, asked).await;
                }
                let safe = asked.parts.method.is_safe();
                let sent = node
                    .forwarder
                    .send(&peer.url, &asked.parts, asked.body.clone(), asked.client());
                // A read whose owner loses the partition while it waits (paused, cut off) is
                // sent again to the next owner rather than waiting out the forward's timeout; a
                // write is not, as the old owner may still commit it.
                let answered = if safe {
                    tokio::select! {
                        answered = sent => answered,
                        () = owner_moved(node, p, &peer.node) => Forwarded::NotOwner,
                    }
                } else {
                    sent.await
                };
                let ended = match answered {
                    Forwarded::Answer(response) => {
                        node.stats.forwarded_ok.add(1);
                        return response;
                    }
                    Forwarded::NotOwner => {
                        node.stats.forwarded_moving.add(1);
                        Unanswered::NotOwner
                    }
                    Forwarded::NotSent(why) => {
                        node.stats.forwarded_unreachable.add(1);
                        tracing::debug!(
                            partition = p,
                            "the owner could not be connected to: {}",
                            Chain(&why)
                        );
                        Unanswered::NotConnected
                    }
                    Forwarded::Unreachable(why) => {
                        node.stats.forwarded_unreachable.add(1);
                        tracing::debug!(partition = p, "the owner could not be reached: {}", Chain(&why));
                        Unanswered::Unreachable
                    }
                };
                forget_owner(node, p, &peer.node);
                if step::after_forward(ended, safe) == AfterForward::GiveUp {
                    return moving(p);
                }
            }
            Step::NotOwner => {
                let mut response = moving(p);
                response
                    .headers_mut()
                    .insert(NOT_OWNER, HeaderValue::from_static("1"));
                return response;
            }
            Step::Wait => {}
        }
        let now = Instant::now();
        if now >= deadline {
            return moving(p);
        }
        let _ = tokio::time::timeout(deadline - now, changes.changed()).await;
    }
}

/// This node's copy of partition `p`, with its age (ms), if it may answer `asked`, a read of
/// `game` (`step::copy_answers`). O(1), plus reading the position asked for.
fn copy_for(node: &Node, p: u32, asked: &Asked, game: &str) -> Option<(Arc<Copy>, i64)> {
    let copy = node.slot(p).copy.read_unpoisoned().clone()?;
    // Loaded before the clock is read, so the age is never less than it is.
    let synced_at = copy.synced_at.load(Ordering::Acquire);
    let at = CopyAt {
        applied: copy.applied.load(Ordering::Acquire),
        age_ms: node.now() - synced_at,
    };
    let header = asked
        .parts
        .headers
        .get(MIN_POSITION_HEADER)
        .and_then(|v| v.to_str().ok());
    // A token that does not read is the engine's to refuse, as the owner's would.
    let position = Position::asked(Query(asked.parts.uri.query()), header)
        .and_then(|token| Position::parse(&token, game).ok())
        .map(|position| position.seq);
    let max_lag_ms = node.cluster.standby_reads_max_lag_ms;
    step::copy_answers(at, max_lag_ms, position).then_some((copy, at.age_ms.max(0)))
}

/// Answers a read from this node's warm copy, saying how old the copy may be.
async fn from_copy(node: &Node, copy: &Copy, age_ms: i64, request: Request) -> Response {
    let Ok(mut response) = copy.app.clone().oneshot(request).await;
    node.stats.copy_reads.add(1);
    let headers = response.headers_mut();
    if let Ok(id) = HeaderValue::from_str(&node.id) {
        headers.insert(SERVED_BY, id);
    }
    headers.insert(COPY_LAG, HeaderValue::from(age_ms));
    response
}

/// Resolves once the lease table no longer names `owner` as `p`'s owner (its lease expired, or
/// another node took it).
async fn owner_moved(node: &Node, p: u32, owner: &str) {
    let mut changes = node.changes.subscribe();
    loop {
        match node.state_of(p) {
            SlotState::Elsewhere(Some(peer)) if peer.node == owner => {}
            _ => return,
        }
        if changes.changed().await.is_err() {
            return std::future::pending().await;
        }
    }
}

/// The owner this node knew for `p` did not answer for it: forget it until the leases say again.
fn forget_owner(node: &Node, p: u32, owner: &str) {
    node.update(p, super::slot::Transition::Forgot(owner.to_string()));
}

/// A request any engine answers alike: the first one this node owns, else another node's.
async fn to_any(node: &Arc<Node>, asked: Asked) -> Response {
    let now = node.now();
    for p in 0..node.cluster.partitions {
        if let SlotState::Owned(held, engine) = node.state_of(p)
            && held.serving(now)
        {
            return local(node, p, &engine, asked.request()).await;
        }
    }
    if asked.from_peer {
        return moving(0);
    }
    let owners: Vec<u32> = (0..node.cluster.partitions)
        .filter(|p| matches!(node.state_of(*p), SlotState::Elsewhere(Some(_))))
        .collect();
    match owners.first() {
        Some(p) => to_partition(node, *p, asked, None).await,
        None => to_partition(node, 0, asked, None).await,
    }
}

/// A snapshot part: the engines here, then the other nodes, until one holds it.
async fn to_part(node: &Arc<Node>, asked: Asked) -> Response {
    let mut last = None;
    for (p, engine) in node.engines() {
        let response = local(node, p, &engine, asked.request()).await;
        if response.status() != StatusCode::NOT_FOUND {
            return response;
        }
        last = Some(response);
    }
    if !asked.from_peer {
        let mut asked_nodes = Vec::new();
        for p in 0..node.cluster.partitions {
            let SlotState::Elsewhere(Some(peer)) = node.state_of(p) else {
                continue;
            };
            if asked_nodes.contains(&peer.node) {
                continue;
            }
            asked_nodes.push(peer.node.clone());
            if let Forwarded::Answer(response) = node
                .forwarder
                .send(&peer.url, &asked.parts, asked.body.clone(), asked.client())
                .await
            {
                node.stats.forwarded_ok.add(1);
                if response.status() != StatusCode::NOT_FOUND {
                    return response;
                }
                last = Some(response);
            }
        }
    }
    match last {
        Some(response) => response,
        None => to_any(node, asked).await,
    }
}

/// A batch: whole to its partition when its events share one, else split by partition, sent
/// at once, and the per-event answers put back in the request's order. A part refused as a
/// whole (a token, a limit) is the answer; the other parts may have been stored, and a retry
/// with the same ids answers them `DUPLICATE`.
async fn batch(node: &Arc<Node>, asked: Asked) -> Response {
    let body = asked.body.clone();
    // Most batches are one partition's: their games are read in one pass and the body sent on
    // whole; only a batch that must be split is read again, raw, event by event.
    let games = match route::batch_games(&body) {
        Some(games) => games,
        None => match route::split_batch(&body) {
            Some(split) => split.events.into_iter().map(|(_, game)| game).collect(),
            None => return to_any(node, asked).await,
        },
    };
    let partitions: Vec<Option<u32>> = games
        .iter()
        .map(|game| game.as_deref().map(|g| node.partition_of(g)))
        .collect();
    let first = partitions.iter().flatten().next().copied();
    let Some(first) = first else {
        return to_any(node, asked).await;
    };
    let over = partitions.len() > crate::intake::MAX_BATCH;
    // An event naming no game is refused by whichever partition reads it.
    let of = |i: usize| partitions[i].unwrap_or(first);
    let mut groups: Vec<(u32, Vec<usize>)> = Vec::new();
    for i in 0..partitions.len() {
        match groups.iter_mut().find(|(p, _)| *p == of(i)) {
            Some((_, members)) => members.push(i),
            None => groups.push((of(i), vec![i])),
        }
    }
    if groups.len() == 1 || over {
        return to_partition(node, first, asked, None).await;
    }
    let Some(split) = route::split_batch(&body) else {
        return to_any(node, asked).await;
    };
    let sends = groups.iter().map(|(p, members)| {
        let sub: Vec<_> = members.iter().map(|i| split.events[*i].0).collect();
        let part = Asked {
            parts: asked.parts.clone(),
            body: Bytes::from(route::batch_body(&sub)),
            from_peer: asked.from_peer,
        };
        to_partition(node, *p, part, None)
    });
    let answers = futures_util::future::join_all(sends).await;
    let mut bodies = Vec::with_capacity(answers.len());
    let mut served_by = Vec::new();
    for answer in answers {
        if answer.status() != StatusCode::OK {
            return answer;
        }
        if let Some(by) = answer.headers().get(SERVED_BY).and_then(|v| v.to_str().ok())
            && !served_by.iter().any(|s| s == by)
        {
            served_by.push(by.to_string());
        }
        match axum::body::to_bytes(answer.into_body(), usize::MAX).await {
            Ok(bytes) => bodies.push(bytes),
            Err(e) => {
                return AppError::new(
                    Code::PARTITION_MOVING,
                    format!("a part of the batch was cut short: {e}"),
                )
                .into_response();
            }
        }
    }
    let mut results = vec![None; split.events.len()];
    let mut positions = std::collections::BTreeMap::new();
    for ((_, members), bytes) in groups.iter().zip(&bodies) {
        let Some(part) = route::batch_results(bytes) else {
            return AppError::new(Code::INTERNAL, "a part of a batch was answered in another shape")
                .into_response();
        };
        // A part of one game names its position without the game: the part's events name it.
        if let Some(token) = part.position {
            let mut games = members.iter().filter_map(|i| split.events[*i].1.clone());
            if let Some(game) = games.next() {
                positions.insert(game, token);
            }
        }
        positions.extend(part.positions);
        let answered = part.results;
        if answered.len() != members.len() {
            return AppError::new(Code::INTERNAL, "a part of a batch was answered for other events")
                .into_response();
        }
        for (i, r) in members.iter().zip(answered) {
            results[*i] = Some(r);
        }
    }
    let results: Vec<_> = results.into_iter().flatten().collect();
    let mut response = (StatusCode::OK, route::merged_answer(&results, &positions)).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Ok(by) = HeaderValue::from_str(&served_by.join(",")) {
        response.headers_mut().insert(SERVED_BY, by);
    }
    response
}

/// The node's own routes: health, readiness, metrics and the cluster's table, the operations the
/// table marks `Partition::Node`, each answered by this node about itself.
fn node_routes() -> axum::Router<Arc<Node>> {
    use axum::routing::get;
    axum::Router::new()
        .route("/healthz", get(crate::http::ops::healthz))
        .route("/readyz", get(node_readyz))
        .route("/metrics", get(node_metrics))
        .route("/v1/cluster", get(cluster_status))
}

async fn node_route(node: &Arc<Node>, asked: &Asked) -> Response {
    let Ok(mut response) = node_routes()
        .with_state(node.clone())
        .oneshot(asked.request())
        .await;
    if let Ok(id) = HeaderValue::from_str(&node.id) {
        response.headers_mut().insert(SERVED_BY, id);
    }
    response
}

/// Ready: as a single origin's `/readyz` (`http::ops::readiness`), and not draining; names the
/// node and how many partitions it owns.
async fn node_readyz(State(node): State<Arc<Node>>) -> Response {
    let serving = node.ready.load(Ordering::Acquire) && !node.draining.load(Ordering::Acquire);
    match crate::http::ops::readiness(serving, node.store.ping()).await {
        Err(e) => e.into_response(),
        Ok(()) => crate::http::json(
            StatusCode::OK,
            &json!({ "status": "ready", "node_id": node.id, "partitions_owned": node.owned().len() }),
        ),
    }
}

/// Every engine's metrics, then the cluster's.
async fn node_metrics(State(node): State<Arc<Node>>) -> Response {
    let engines = node.engines();
    let registries: Vec<&crate::boards::Registry> = engines.iter().map(|(_, e)| &*e.state.registry).collect();
    let mut text = node.metrics.render_all(&registries);
    super::render_metrics(&node, &mut text);
    crate::http::ops::exposition(text)
}

/// `GET /v1/cluster` (admin): the nodes and partitions, and with `?game=` where it lives.
async fn cluster_status(State(node): State<Arc<Node>>, request: Request) -> Response {
    let answer = node
        .auth
        .admin(request.headers(), "*")
        .and_then(|_| crate::http::unique_query(request.uri().query()).map(|mut q| q.remove("game")));
    match answer {
        Err(e) => e.into_response(),
        Ok(game) => match super::status::read(&node.store, Some(&node.id), game.as_deref()).await {
            Ok(status) => crate::http::json(StatusCode::OK, &status),
            Err(e) => AppError::from(e).into_response(),
        },
    }
}

fn is_upgrade(parts: &Parts) -> bool {
    parts.headers.contains_key(header::UPGRADE)
}

/// A WebSocket subscription for a partition owned elsewhere: the upgrade is asked of the owner,
/// and once both sides switched, the two connections are joined byte for byte.
async fn upgrade_through(node: &Arc<Node>, p: u32, url: &str, mut asked: Asked) -> Response {
    let Some(client_side) = asked.parts.extensions.remove::<hyper::upgrade::OnUpgrade>() else {
        return AppError::new(Code::INVALID_REQUEST, "the connection cannot be upgraded").into_response();
    };
    let answer = node.forwarder.upgrade(url, &asked.parts, asked.client()).await;
    let (response, owner_side) = match answer {
        Ok(pair) => pair,
        Err(why) => {
            node.stats.forwarded_unreachable.add(1);
            tracing::debug!("an upgrade could not be forwarded: {}", Chain(&why));
            return moving(p);
        }
    };
    node.stats.forwarded_ok.add(1);
    if let Some(owner_side) = owner_side {
        tokio::spawn(async move {
            let (Ok(client), Ok(owner)) = (client_side.await, owner_side.await) else {
                return;
            };
            let mut client = hyper_util::rt::TokioIo::new(client);
            let mut owner = hyper_util::rt::TokioIo::new(owner);
            let _ = tokio::io::copy_bidirectional(&mut client, &mut owner).await;
        });
    }
    response
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    /// A request whose future is dropped before it is answered (its connection closed, or its
    /// deadline passed) no longer counts as in flight, so a hand-over does not wait for it.
    #[test]
    fn a_request_dropped_unanswered_is_no_longer_in_flight() {
        let inflight = AtomicUsize::new(0);
        let mut answering = Box::pin(async {
            let _counted = InFlight::count(&inflight);
            std::future::pending::<()>().await;
        });
        assert!((&mut answering).now_or_never().is_none());
        assert_eq!(inflight.load(Ordering::Acquire), 1, "counted while it waits");
        drop(answering);
        assert_eq!(inflight.load(Ordering::Acquire), 0, "no longer once dropped");
        drop(InFlight::count(&inflight));
        assert_eq!(inflight.load(Ordering::Acquire), 0);
    }
}
