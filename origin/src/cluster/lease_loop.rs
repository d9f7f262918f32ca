//! The lease loop: once per tick it renews what this node holds, reads every lease, learns who
//! owns the rest, and takes or gives back partitions as `lease::plan` decides. Taking and giving
//! back run on tasks of their own, so that renewals never wait for an engine to come up.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::error::TakeoverError;
use super::lease::{self, Held};
use super::members::{self, Change, TakenFrom};
use super::slot::Transition;
use super::{Engine, Node, Peer, SlotState, standby};
use crate::chain::Chain;
use crate::store::cluster::LeaseRow;

/// Runs the loop until the process ends.
pub(super) async fn run(node: Arc<Node>) {
    let tick = Duration::from_millis(lease::tick_ms(node.ttl_ms()) as u64);
    loop {
        let began = Instant::now();
        if let Err(e) = once(&node).await {
            tracing::warn!("the lease loop's tick failed: {}", Chain(&e));
        }
        node.ready.store(true, Ordering::Release);
        tokio::time::sleep_until((began + tick).into()).await;
    }
}

/// One tick.
async fn once(node: &Arc<Node>) -> Result<(), crate::store::StoreError> {
    let draining = node.draining.load(Ordering::Acquire);
    if *node.superseded.borrow() {
        return Ok(());
    }
    renew_all(node).await;
    if !node.store.heartbeat(&node.incarnation, draining).await? {
        supersede(node);
        return Ok(());
    }
    let leases = node.store.leases().await?;
    let nodes = node.store.nodes().await?;
    let live_within = lease::live_within_ms(node.ttl_ms());
    let live = nodes
        .iter()
        .filter(|n| n.heartbeat_age_ms < live_within && !n.draining)
        .count()
        .max(usize::from(!draining));
    learn_owners(node, &leases, &nodes);
    tell_changes(node, &nodes, live_within);
    let plan = lease::plan(
        &node.id,
        &leases
            .iter()
            .map(|l| lease::Lease {
                partition: l.partition,
                node: l.node.clone(),
                expires_in_ms: l.expires_in_ms,
            })
            .collect::<Vec<_>>(),
        live,
        draining,
        &node.warm().await,
    );
    let releasing: Vec<u32> = plan
        .release
        .into_iter()
        .filter(|p| matches!(node.state_of(*p), SlotState::Owned(..)))
        .collect();
    if !releasing.is_empty() && !draining {
        tracing::info!(
            partitions = ?releasing,
            live_nodes = live,
            "handing {} over to even the shares",
            crate::words::counted(releasing.len() as u64, "partition", "partitions")
        );
    }
    for p in releasing {
        tokio::spawn(release(node.clone(), p));
    }
    let mut taken: Vec<(u32, TakenFrom)> = Vec::new();
    let mut takeovers = Vec::new();
    for p in plan.take {
        if !matches!(node.state_of(p), SlotState::Elsewhere(_)) {
            continue;
        }
        let sent = node.now();
        match node.store.take(p, node.ttl_ms()).await {
            Ok(Some(epoch)) => {
                let held = Held::renewed(epoch, sent, node.ttl_ms());
                node.update(p, Transition::Taken(held));
                taken.push((
                    p,
                    TakenFrom::of(leases.iter().find(|l| l.partition == p), &node.id),
                ));
                takeovers.push(tokio::spawn(takeover(node.clone(), p, held)));
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(partition = p, "taking a lease failed: {}", Chain(&e)),
        }
    }
    if !taken.is_empty() {
        tell_takeovers(taken, takeovers);
    }
    Ok(())
}

/// Logs what changed among the other nodes since the last tick, one line a change.
fn tell_changes(node: &Node, nodes: &[crate::store::cluster::NodeRow], live_within: i64) {
    let mut seen = node.seen.lock().unwrap_or_else(|e| e.into_inner());
    let (changes, now) = members::changes(seen.as_ref(), nodes, live_within, &node.id);
    *seen = Some(now);
    for change in changes {
        match change {
            Change::Silent { .. } => tracing::warn!("{change}"),
            _ => tracing::info!("{change}"),
        }
    }
}

/// One line for the partitions taken in a tick and where each came from, and one once they
/// all serve, rather than a line a partition.
fn tell_takeovers(taken: Vec<(u32, TakenFrom)>, takeovers: Vec<tokio::task::JoinHandle<bool>>) {
    let mut from: Vec<(String, Vec<u32>)> = Vec::new();
    for (p, source) in &taken {
        let source = source.to_string();
        match from.iter_mut().find(|(s, _)| *s == source) {
            Some((_, ps)) => ps.push(*p),
            None => from.push((source, vec![*p])),
        }
    }
    let sources: Vec<String> = from
        .iter()
        .map(|(source, ps)| format!("{ps:?} {source}"))
        .collect();
    tracing::info!(
        "taking {}: {}",
        crate::words::counted(taken.len() as u64, "partition", "partitions"),
        sources.join("; ")
    );
    let began = Instant::now();
    tokio::spawn(async move {
        let mut up = 0u64;
        for takeover in takeovers {
            up += u64::from(takeover.await.unwrap_or(false));
        }
        tracing::info!(
            took_ms = began.elapsed().as_millis() as u64,
            "{} up of {} taken",
            crate::words::counted(up, "partition", "partitions"),
            taken.len()
        );
    });
}

/// Renews every lease this node holds, in one statement; one that is no longer this node's, or
/// that could not be renewed before this node's deadline, stops being served.
async fn renew_all(node: &Arc<Node>) {
    let held: Vec<(u32, Held)> = (0..node.cluster.partitions)
        .filter_map(|p| node.state_of(p).held().map(|h| (p, h)))
        .collect();
    if held.is_empty() {
        return;
    }
    let sent = node.now();
    let asked: Vec<(u32, i64)> = held.iter().map(|(p, h)| (*p, h.epoch)).collect();
    match node.store.renew(&asked, node.ttl_ms()).await {
        Ok(renewed) => {
            for (p, h) in held {
                if renewed.contains(&p) {
                    node.stats.renewals.add(1);
                    extend(node, p, Held::renewed(h.epoch, sent, node.ttl_ms()));
                } else {
                    node.stats.leases_lost.add(1);
                    tracing::warn!(
                        partition = p,
                        epoch = h.epoch,
                        "the lease was lost; the partition is no longer served here"
                    );
                    lose(node, p);
                }
            }
        }
        Err(e) => {
            node.stats.renewal_failures.add(1);
            for (p, h) in held {
                if !h.serving(node.now()) {
                    node.stats.leases_lost.add(1);
                    tracing::warn!(
                        partition = p,
                        "the lease could not be renewed in time ({}); the partition is no longer served here",
                        Chain(&e)
                    );
                    lose(node, p);
                }
            }
        }
    }
}

/// Extends the lease of partition `p` if the slot still holds the same one (a release may have
/// finished meanwhile).
fn extend(node: &Node, p: u32, renewed: Held) {
    // Requests held while a late renewal left the partition briefly unserved are woken by the
    // change, not left to the end of their wait.
    node.update(p, Transition::Renewed(renewed));
}

/// Stops serving partition `p` at once (its lease is gone): its engine's writes are refused
/// from now on, its live subscribers are told to go away, and it is dropped; a standby copy is
/// rebuilt for it.
fn lose(node: &Arc<Node>, p: u32) {
    if let SlotState::Owned(_, engine) | SlotState::Releasing(_, engine) = node.state_of(p) {
        if let Some(scope) = engine.state.store.scope() {
            scope.set_epoch(0);
        }
        // As at a hand-over: the engine changes no more, so a stream left open would hold its
        // view at this version for good; told to go away, the subscriber comes back (through
        // any node, to the new owner) and catches up with `since_version`.
        let grace = Duration::from_secs(engine.state.live.config().stop_grace_seconds);
        tokio::spawn(async move {
            engine
                .state
                .live
                .going_away(tokio::time::Instant::now() + grace)
                .await;
        });
    }
    node.update(p, Transition::Dropped);
    if node.cluster.standby {
        let node = node.clone();
        tokio::spawn(async move { standby::warm(&node, p).await });
    }
}

/// Another process runs as this node now (its row names another incarnation): this one gives up
/// serving every partition it held, turns unready, and says so for the process to exit. Its
/// leases may be the other's by now, so it gives nothing back; the fence refuses its writes.
fn supersede(node: &Arc<Node>) {
    tracing::error!(
        node_id = %node.id,
        incarnation = %node.incarnation,
        "another process took this node's id over while this one was not heartbeating (paused?); serving nothing more and exiting"
    );
    node.ready.store(false, Ordering::Release);
    for p in 0..node.cluster.partitions {
        if node.state_of(p).held().is_some() {
            lose(node, p);
        }
    }
    node.superseded.send_replace(true);
}

/// Learns the owner of every partition this node does not hold, from the leases and the nodes.
fn learn_owners(node: &Node, leases: &[LeaseRow], nodes: &[crate::store::cluster::NodeRow]) {
    for l in leases {
        if l.partition >= node.cluster.partitions {
            continue;
        }
        let owner = match &l.node {
            Some(n) if *n != node.id && l.expires_in_ms > 0 => {
                nodes.iter().find(|row| row.node_id == *n).map(|row| Peer {
                    node: n.clone(),
                    url: row.advertise_url.clone(),
                })
            }
            _ => None,
        };
        node.update(l.partition, Transition::Learned(owner));
    }
}

/// Brings partition `p`'s engine up under the lease just taken (the standby copy caught up to
/// the log's end, or the newest checkpoint and the log after it); true once it serves.
pub(super) async fn takeover(node: Arc<Node>, p: u32, held: Held) -> bool {
    let began = Instant::now();
    let store = node.store.partition(p);
    if let Some(scope) = store.scope() {
        scope.set_epoch(held.epoch);
    }
    let follower = node.slot(p).standby.lock().await.take();
    node.slot(p).set_copy(None);
    let started = async {
        let (registry, domain, restored) = match follower {
            Some(follower) => standby::promote(follower, &store, node.clock.now_ms()).await?,
            None => {
                let (registry, domain, restored) =
                    crate::writer::checkpoint::restore(&store, node.clock.now_ms()).await?;
                (Arc::new(registry), Arc::new(domain), restored)
            }
        };
        let started = crate::serve_restored(
            &node.config,
            store.clone(),
            node.clock.clone(),
            node.metrics.clone(),
            registry,
            domain,
            restored,
        )
        .await?;
        Ok::<_, TakeoverError>(started)
    }
    .await;
    match started {
        Ok((state, evictor)) => {
            let engine = Arc::new(Engine {
                app: crate::http::app(state.clone()),
                state,
                evictor,
            });
            let now = node.update(
                p,
                Transition::Up {
                    epoch: held.epoch,
                    engine,
                },
            );
            if now {
                node.stats.takeovers.add(1);
                node.stats.takeover_seconds.observe(super::took(began));
                tracing::debug!(
                    partition = p,
                    epoch = held.epoch,
                    took_ms = began.elapsed().as_millis() as u64,
                    "took over a partition"
                );
            }
            now
        }
        Err(why) => {
            tracing::error!(
                partition = p,
                "the partition could not be brought up ({}); giving its lease back",
                Chain(&why)
            );
            if let Some(scope) = store.scope() {
                scope.set_epoch(0);
            }
            let _ = node.store.release(p, held.epoch).await;
            node.update(p, Transition::Dropped);
            false
        }
    }
}

/// How long a hand-over waits for the requests in flight on the partition.
const INFLIGHT_WAIT: Duration = Duration::from_secs(10);

/// Hands partition `p` over: a checkpoint while it still serves, then requests wait here, the
/// ones in flight finish, live subscribers are told to reconnect, and the lease is given back
/// for another node to take at its next tick. This node then keeps it warm as a standby.
pub(super) async fn release(node: Arc<Node>, p: u32) {
    let (held, engine) = match node.state_of(p) {
        SlotState::Owned(h, e) => (h, e),
        SlotState::Taking(h) => {
            // Not serving yet: its lease goes back as soon as it is up.
            let _ = h;
            return;
        }
        _ => return,
    };
    let slot = node.slot(p);
    if slot
        .handing_over
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return;
    }
    hand_over(&node, p, held, engine).await;
    slot.handing_over.store(false, Ordering::Release);
}

async fn hand_over(node: &Arc<Node>, p: u32, held: Held, engine: Arc<Engine>) {
    if let Err(e) = engine.state.ingest.checkpoint().await {
        tracing::warn!(
            partition = p,
            "the hand-over's checkpoint failed (the next owner replays more of the log): {}",
            Chain(&e)
        );
    }
    node.update(p, Transition::Releasing { epoch: held.epoch });
    let waited = Instant::now();
    while node.slot(p).inflight.load(Ordering::Acquire) > 0 && waited.elapsed() < INFLIGHT_WAIT {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let grace = Duration::from_secs(engine.state.live.config().stop_grace_seconds);
    engine
        .state
        .live
        .going_away(tokio::time::Instant::now() + grace)
        .await;
    if let Some(scope) = engine.state.store.scope() {
        scope.set_epoch(0);
    }
    let epoch = node.state_of(p).held().map_or(held.epoch, |h| h.epoch);
    match node.store.release(p, epoch).await {
        Ok(_) => {
            node.stats.releases.add(1);
            tracing::debug!(partition = p, epoch, "handed a partition over");
        }
        Err(e) => tracing::warn!(
            partition = p,
            "giving the lease back failed (it expires instead): {}",
            Chain(&e)
        ),
    }
    // Only the lease handed over leaves: had it been lost and taken again meanwhile, the new
    // one stays served.
    node.update(p, Transition::Released { epoch });
    drop(engine);
    if node.cluster.standby && !node.draining.load(Ordering::Acquire) {
        standby::warm(node, p).await;
    }
}
