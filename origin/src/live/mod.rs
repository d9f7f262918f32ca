//! Live subscriptions: the third moment (durable, visible, *notified*).
//!
//! The [`Hub`] sits beside the writer's applying step, never inside it: the applier only tells
//! it which boards changed ([`Hub::changed`]), and the hub's own task reads the views once per
//! coalescing window, computes each view's net delta with the core's `live` module once per
//! (board, period instance, view), encodes it once, and hands the same bytes to every
//! subscriber of that view. Each subscriber has a bounded queue; one that falls behind is sent
//! `resync` and closed, so a slow client never slows the board or anyone else.
//!
//! The HTTP layer (`http::live`) only translates: it resolves the board, period and view from
//! the request, checks auth, calls [`Hub::subscribe`], and writes each [`Outgoing`] as an SSE
//! event or a WebSocket text frame. The wire messages are documented in `docs/live.md`.
//!
//! Inside, one *topic* per (board, period key, view) keeps the state it last sent, the bytes of
//! its snapshot, and its subscribers' queues. The parts, one job each: `subscribe` opens a
//! subscription (the limits, the first message) and gives its place back when it is dropped;
//! `window` is the task that reads the views again each window and sends what changed, and
//! the heartbeats; `topic` holds the decisions of both (the first message, what a window
//! sends), without locks; `reports` dates deltas for the lag histogram; `outgoing` is a message
//! as subscribers receive it, `message` its encoding, `queue` the bounded queue, and
//! `admission` whether the windows have room for another view. A window looks at
//! every topic, not only those of boards reported changed, and compares the board's version
//! with the one it last read, so a change that no caller reported is still sent (only without
//! a commit time for the lag histogram); `changed` costs the writer a map update, and nothing
//! while nobody is subscribed. Each window's work runs on the blocking pool and holds a board's
//! read lock for a few milliseconds of view reads at a time, so neither a runtime's worker nor
//! the applier waits for a whole window, and the two threads hand the lock over once per hold
//! rather than once per event.

mod admission;
mod message;
pub(crate) mod metrics;
mod outgoing;
mod queue;
mod reports;
mod subscribe;
#[cfg(test)]
mod tests;
mod topic;
mod window;

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use standings_core::{BoardId, View, ViewState};
use tokio::sync::Notify;

use self::outgoing::plain;
pub(crate) use self::outgoing::{Kind, Outgoing};
use self::queue::Queue;
use self::reports::Reports;
pub(crate) use self::subscribe::{SubscribeError, Subscription, Watch};
use crate::boards::{BoardSlot, Registry};
use crate::clock::Clock;
use crate::config::LiveConfig;
use crate::domain::periods::Period;
use crate::fast_hash::FastHash;
use crate::metrics::Metrics;
use crate::sync::LockUnpoisoned;

/// A topic's key: one view of one board in one period instance.
type TopicKey = (BoardId, String, View);

/// One view of one board instance, and who watches it (see `topic` for its decisions).
struct Topic {
    /// Shared with the members map, so a topic's names are held once.
    key: Arc<TopicKey>,
    period: Period,
    /// The period key, shared by every message that names the instance.
    period_key: Arc<str>,
    /// Whether subscribers are joining (see [`TopicState::joining`]), so the next window reads
    /// the view even if the board did not move; set and cleared under the state's lock, read
    /// without it.
    has_joining: AtomicBool,
    /// The board version the window last read the view at; only the window task writes it,
    /// and it is read without the state's lock so the board's read lock never waits on it.
    checked: AtomicU64,
    /// The number of the first reported change of the board this topic's view has not read
    /// (see [`Reports`]); only the window task writes it once the topic exists.
    seen: AtomicU64,
    state: Mutex<TopicState>,
}

struct TopicState {
    /// The state last sent: every subscriber holds the view at `last.board_version`.
    last: ViewState,
    /// The snapshot message of `last`, kept once the view has more than one subscriber.
    snapshot: Option<Bytes>,
    /// The subscribers that hold the view at `last.board_version`.
    subscribers: HashMap<u64, Arc<Queue>, FastHash>,
    /// The subscribers that joined after the board moved past `last` (their first message
    /// brought them to the board's version then), by that version; the next window brings
    /// them and `subscribers` to one version and they join `subscribers` (see `topic`).
    joining: BTreeMap<u64, Joining>,
    /// The `closed` that ended the topic, for a subscriber that joins it meanwhile.
    ended: Option<Outgoing>,
}

/// Subscribers that joined a topic at one version newer than its `last`.
struct Joining {
    /// The view they hold.
    state: ViewState,
    /// Its snapshot message, once a second subscriber joined at this version.
    snapshot: Option<Bytes>,
    queues: Vec<(u64, Arc<Queue>)>,
}

impl Topic {
    /// A topic reading its first state from `slot`, which holds every change reported before
    /// the one numbered `seen`. O(one view read).
    fn new(key: Arc<TopicKey>, slot: &BoardSlot, seen: u64) -> Topic {
        let last = ViewState::read(&slot.read(), &key.2, &key.1);
        Topic {
            checked: AtomicU64::new(last.board_version),
            seen: AtomicU64::new(seen),
            period: slot.period.clone(),
            period_key: Arc::from(key.1.as_str()),
            has_joining: AtomicBool::new(false),
            key,
            state: Mutex::new(TopicState {
                last,
                snapshot: None,
                subscribers: HashMap::default(),
                joining: BTreeMap::new(),
                ended: None,
            }),
        }
    }

    /// A view change of this topic's instance, as a message.
    fn change(&self, kind: Kind, board_version: u64, json: Bytes, committed: Option<Instant>) -> Outgoing {
        Outgoing {
            kind,
            board_version: Some(board_version),
            period_key: Some(self.period_key.clone()),
            json,
            committed,
        }
    }

    fn view(&self) -> &View {
        &self.key.2
    }
}

/// Who is subscribed, counted for the limits. One lock, held only for map updates.
#[derive(Default)]
struct Members {
    /// Each topic and how many subscriptions belong to it; a topic leaves with its last one.
    topics: BTreeMap<Arc<TopicKey>, (Arc<Topic>, usize)>,
    next_id: u64,
    total: usize,
    per_board: HashMap<BoardId, usize, FastHash>,
    per_holder: HashMap<String, usize, FastHash>,
    /// Subscriptions without a token, by the address they come from.
    per_address: HashMap<IpAddr, usize, FastHash>,
}

/// What the hub and its subscriptions share.
struct Shared {
    members: Mutex<Members>,
    /// Mirrors `members.total`, so the writer's `changed` costs nothing while nobody watches.
    open: AtomicUsize,
    /// Per board, the commit instants of the changes reported and not yet read by every topic.
    /// A leaf lock: nothing is locked while it is held.
    reports: Mutex<HashMap<BoardId, Reports, FastHash>>,
    stopping: AtomicBool,
    /// Woken when the last subscription is dropped.
    all_gone: Notify,
    /// How many windows were flushed, so a test knows when the one it moved the clock for
    /// is done.
    windows: tokio::sync::watch::Sender<u64>,
    /// The moving average of one view's cost in a window in ns, which admission reads
    /// (`admission`).
    view_cost_ns: AtomicU64,
    metrics: Arc<Metrics>,
}

/// The hub of live subscriptions (see the module doc).
///
/// Locks, always taken in this order and never across an await: the members map, then a
/// topic's state, then a board's read lock or a queue, then the reports (a leaf). The window
/// holds a board's read lock with no topic or queue lock, so the applier never waits on a
/// subscriber.
pub(crate) struct Hub {
    config: LiveConfig,
    registry: Arc<Registry>,
    clock: Clock,
    shared: Arc<Shared>,
    /// The messages that are the same for everyone, encoded once.
    resync: Outgoing,
    heartbeat: Outgoing,
    going_away: Outgoing,
}

impl Hub {
    /// A hub with no subscribers; [`Hub::start`] starts its window task.
    pub(crate) fn new(
        config: LiveConfig,
        registry: Arc<Registry>,
        clock: Clock,
        metrics: Arc<Metrics>,
    ) -> Arc<Hub> {
        let resync = plain(Kind::Resync, message::slow_consumer(config.queue_messages));
        Arc::new(Hub {
            config,
            registry,
            clock,
            shared: Arc::new(Shared {
                members: Mutex::default(),
                open: AtomicUsize::new(0),
                reports: Mutex::default(),
                stopping: AtomicBool::new(false),
                all_gone: Notify::new(),
                windows: tokio::sync::watch::Sender::new(0),
                view_cost_ns: AtomicU64::new(0),
                metrics,
            }),
            resync,
            heartbeat: plain(Kind::Heartbeat, message::heartbeat()),
            going_away: plain(Kind::GoingAway, message::going_away()),
        })
    }

    /// The settings.
    pub(crate) fn config(&self) -> &LiveConfig {
        &self.config
    }

    /// Boards changed by a group committed at `committed` and now applied; called by the
    /// applier and by every other step that changes a board (actions, late decisions, season
    /// transitions). Cheap: it only records when the change was committed, which dates the
    /// deltas that carry it (windows find the change itself by the board's version).
    /// O(boards), and O(1) while nobody is subscribed.
    pub(crate) fn changed<'a>(&self, boards: impl IntoIterator<Item = &'a BoardId>, committed: Instant) {
        if !self.is_watched() {
            return;
        }
        let mut reports = self.shared.reports.lock_unpoisoned();
        for id in boards {
            match reports.get_mut(id) {
                Some(board) => board.push(committed),
                None => {
                    let mut board = Reports::default();
                    board.push(committed);
                    reports.insert(id.clone(), board);
                }
            }
        }
    }

    /// Whether any subscription is open, so a caller can skip gathering the boards it would
    /// pass to [`Hub::changed`]. O(1).
    pub(crate) fn is_watched(&self) -> bool {
        self.shared.open.load(Ordering::Relaxed) > 0
    }

    /// Every topic, grouped by board instance (the map's order). O(topics).
    fn topics(&self) -> Vec<Arc<Topic>> {
        let members = self.shared.members.lock_unpoisoned();
        members.topics.values().map(|(topic, _)| topic.clone()).collect()
    }

    /// Sends `going_away` to every subscriber, refuses new ones, and waits until every
    /// subscription has been dropped or `deadline` has passed, so a stopping server can
    /// finish its streams without waiting on a client that does not read.
    pub(crate) async fn going_away(&self, deadline: tokio::time::Instant) {
        self.shared.stopping.store(true, Ordering::Release);
        for topic in self.topics() {
            let mut state = topic.state.lock_unpoisoned();
            for (_, queue) in state.subscribers.drain() {
                queue.end_with(self.going_away.clone());
            }
            for (_, group) in std::mem::take(&mut state.joining) {
                for (_, queue) in group.queues {
                    queue.end_with(self.going_away.clone());
                }
            }
            topic.has_joining.store(false, Ordering::Release);
        }
        let shared = &self.shared;
        let all_gone = async {
            loop {
                let gone = shared.all_gone.notified();
                tokio::pin!(gone);
                // Registered before the count is read, so a drop in between still wakes it.
                gone.as_mut().enable();
                if shared.open.load(Ordering::Acquire) == 0 {
                    return;
                }
                gone.await;
            }
        };
        if tokio::time::timeout_at(deadline, all_gone).await.is_err() {
            tracing::warn!(
                "{} live subscriptions were still open at the end of the stop's grace; their connections are dropped",
                shared.open.load(Ordering::Acquire),
            );
        }
    }
}
