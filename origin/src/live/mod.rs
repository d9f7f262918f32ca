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
//! its snapshot, and its subscribers' queues; `topic` holds its decisions (the first message,
//! what a window sends), `message` the encoding, `queue` the bounded queue. A window looks at
//! every topic, not only those of boards reported changed, and compares the board's version
//! with the one it last read, so a change that no caller reported is still sent (only without
//! a commit time for the lag histogram); `changed` costs the writer a map update, and nothing
//! while nobody is subscribed. Each window's work runs on the blocking pool and holds a board's
//! read lock for a few milliseconds of view reads at a time, so neither a runtime's worker nor
//! the applier waits for a whole window, and the two threads hand the lock over once per hold
//! rather than once per event.

mod admission;
mod message;
mod queue;
#[cfg(test)]
mod tests;
mod topic;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use standings_core::{BoardId, Position, View, ViewState};
use tokio::sync::Notify;

use self::message::CloseReason;
use self::queue::{Pushed, Queue};
use self::topic::First;
use crate::FastHash;
use crate::boards::{BoardSlot, Registry};
use crate::clock::Clock;
use crate::config::LiveConfig;
use crate::domain::periods::Period;
use crate::metrics::Metrics;
use crate::sync::LockUnpoisoned;

/// How long a window holds a board's read lock at most before letting the applier in (checked
/// after each view read, so one `top:100` read may pass it).
const HOLD: Duration = Duration::from_millis(2);

/// The most views a window reads under one hold, which bounds the states it keeps before
/// sending them.
const VIEWS_PER_HOLD: usize = 256;

/// What a new subscriber asks to watch.
#[derive(Clone)]
pub struct Watch {
    /// The board instance, resolved from `period` and `at` as reads resolve it (`http::board_of`):
    /// the live slot, or for a closed period that left memory, the one restored from storage.
    /// Later windows look the instance up in the registry again, as eviction, archiving and
    /// installs replace slots.
    pub slot: Arc<BoardSlot>,
    /// The view.
    pub view: View,
    /// Where the client already holds the view, if it is coming back (`since_version` or
    /// `Last-Event-ID`); a position of another instance than `slot`'s counts as none.
    pub since: Option<Position>,
    /// Whom the per-token limit counts this subscription against: a static token's name
    /// (`token:NAME`) or a player JWT's subject (`player:ID`); `None` for a public read without
    /// a token, which the per-address limit bounds instead.
    pub holder: Option<String>,
    /// The address the connection comes from, for the per-address limit of subscribers
    /// without a token.
    pub address: Option<IpAddr>,
}

/// Why a subscription was not opened.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubscribeError {
    /// The holder has `limit` subscriptions open (429 `TOO_MANY_SUBSCRIPTIONS`).
    #[error("this token has {limit} live subscriptions open, the most allowed; close one first")]
    PerToken {
        /// The setting.
        limit: usize,
    },
    /// The board has `limit` subscribers (429 `TOO_MANY_SUBSCRIPTIONS`).
    #[error("this board has {limit} live subscribers, the most allowed; try again later")]
    PerBoard {
        /// The setting.
        limit: usize,
    },
    /// The address has `limit` subscriptions without a token open (429
    /// `TOO_MANY_SUBSCRIPTIONS`).
    #[error(
        "this address has {limit} live subscriptions without a token open, the most allowed; close one first, or subscribe with a token"
    )]
    PerAddress {
        /// The setting.
        limit: usize,
    },
    /// The service has `limit` subscribers in all (503 `SUBSCRIBERS_FULL`).
    #[error("the service has {limit} live subscribers, the most it serves; try again later")]
    Total {
        /// The setting.
        limit: usize,
    },
    /// Reading the views already watched takes the window's share it may (503 `LIVE_BUSY`):
    /// a view nobody watches yet would add to it. Views already watched can still be joined.
    #[error(
        "the live windows are busy ({work_ms} ms of work per {window_ms} ms window); a view nobody watches yet cannot be added now, retry in a few seconds or watch a view others watch (top:N)"
    )]
    Busy {
        /// The recent work per window.
        work_ms: u64,
        /// The window.
        window_ms: u64,
    },
    /// The service is stopping (503 `UNAVAILABLE`); reconnect to the next one.
    #[error("the service is stopping; reconnect with your last board_version")]
    Stopping,
}

/// The kind of a wire message (the SSE `event:` name, and the JSON `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The whole view.
    Snapshot,
    /// The net change of the view between two versions.
    Delta,
    /// Nothing changed; the stream is alive.
    Heartbeat,
    /// The client must start over (subscribe again without `since_version`).
    Resync,
    /// The period closed or the season was archived; the stream ends.
    Closed,
    /// The server is stopping; reconnect with the last version.
    GoingAway,
}

impl Kind {
    /// Every kind, in the order the metrics list them.
    pub const ALL: [Kind; 6] = [
        Kind::Snapshot,
        Kind::Delta,
        Kind::Heartbeat,
        Kind::Resync,
        Kind::Closed,
        Kind::GoingAway,
    ];

    /// The position in [`Kind::ALL`].
    fn index(self) -> usize {
        match self {
            Kind::Snapshot => 0,
            Kind::Delta => 1,
            Kind::Heartbeat => 2,
            Kind::Resync => 3,
            Kind::Closed => 4,
            Kind::GoingAway => 5,
        }
    }

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Snapshot => "snapshot",
            Kind::Delta => "delta",
            Kind::Heartbeat => "heartbeat",
            Kind::Resync => "resync",
            Kind::Closed => "closed",
            Kind::GoingAway => "going_away",
        }
    }
}

/// One message for one subscriber: its JSON text, shared by every subscriber of the view.
#[derive(Clone, Debug)]
pub struct Outgoing {
    /// What it is.
    pub kind: Kind,
    /// The `board_version` the subscriber holds once it has applied this message; `None` for
    /// messages that do not change the view.
    pub board_version: Option<u64>,
    /// The period instance of that version: with it, the SSE `id:` (`PERIOD_KEY:VERSION`), so
    /// that `EventSource` reconnects with a `Last-Event-ID` that names the instance.
    pub period_key: Option<Arc<str>>,
    /// The JSON object, as written to the socket.
    pub json: Bytes,
    /// When the earliest change this message carries was committed, for the lag histogram.
    pub committed: Option<Instant>,
}

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

/// The commit instants of the changes reported for one board ([`Hub::changed`]), numbered in
/// report order, kept until every topic of the board has read past them. Each topic remembers
/// the number of the first report its view has not read, so a delta is dated by the earliest
/// change since its own last read: a view read late in one window and early in the next is
/// not dated from when the first window began, which would add the window's work to its lag.
#[derive(Default)]
struct Reports {
    /// The number the next report gets.
    next: u64,
    /// For the reports numbered `next - instants.len()` to `next - 1`, the earliest commit
    /// instant of that report and every later one.
    instants: VecDeque<Instant>,
    /// The lowest `next` a window read the board at since the last `forget_read`.
    read_from: Option<u64>,
    /// `next` at the last `forget_read`: the reports a window could have read since.
    offered: u64,
}

impl Reports {
    /// Adds a report. O(1) when reports come in commit order, as they do.
    fn push(&mut self, committed: Instant) {
        // Each kept instant is the earliest of its report and every later one, so the
        // earliest unread change is found at one index even if a report came out of order.
        for earlier in self.instants.iter_mut().rev() {
            if *earlier <= committed {
                break;
            }
            *earlier = committed;
        }
        self.instants.push_back(committed);
        self.next += 1;
    }

    /// The commit instant of the earliest report numbered `seen` or later, if any is kept (a
    /// topic that fell behind what is kept gets the oldest kept). O(1).
    fn earliest_from(&self, seen: u64) -> Option<Instant> {
        if seen >= self.next {
            return None;
        }
        let first = self.next - self.instants.len() as u64;
        let index = usize::try_from(seen.saturating_sub(first)).unwrap_or(usize::MAX);
        self.instants.get(index).copied()
    }

    /// Notes that a window read the board with every report before `next` applied.
    fn read_up_to(&mut self, next: u64) {
        self.read_from = Some(self.read_from.map_or(next, |from| from.min(next)));
    }

    /// Forgets, at a window's start, the reports every topic has read: those before the lowest
    /// `next` the last window read the board at (each of its topics read at one of those).
    /// When the last window read none of its topics (it has none with an instance), the
    /// reports it could have read go, and only later ones stay. O(reports dropped).
    fn forget_read(&mut self) {
        let below = self.read_from.take().unwrap_or(self.offered);
        self.offered = self.next;
        let first = self.next - self.instants.len() as u64;
        let drop = usize::try_from(below.saturating_sub(first)).unwrap_or(usize::MAX);
        self.instants.drain(..drop.min(self.instants.len()));
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
    /// The moving average of a window's work in µs, which admission reads (`admission`).
    window_work_us: AtomicU64,
    metrics: Arc<Metrics>,
}

/// The hub of live subscriptions (see the module doc).
///
/// Locks, always taken in this order and never across an await: the members map, then a
/// topic's state, then a board's read lock or a queue, then the reports (a leaf). The window
/// holds a board's read lock with no topic or queue lock, so the applier never waits on a
/// subscriber.
pub struct Hub {
    config: LiveConfig,
    registry: Arc<Registry>,
    clock: Clock,
    shared: Arc<Shared>,
    /// The messages that are the same for everyone, encoded once.
    resync: Outgoing,
    heartbeat: Outgoing,
    going_away: Outgoing,
}

/// A message that carries no view change.
fn plain(kind: Kind, json: Bytes) -> Outgoing {
    Outgoing {
        kind,
        board_version: None,
        period_key: None,
        json,
        committed: None,
    }
}

/// The message of a first-message decision for a view of the instance `period_key`: a snapshot
/// of the state at `version` (whose bytes `snapshot` gives), or the delta.
fn first_outgoing(
    period_key: &Arc<str>,
    first: First,
    version: u64,
    snapshot: impl FnOnce() -> Bytes,
) -> Outgoing {
    let (kind, board_version, json) = match first {
        First::Snapshot => (Kind::Snapshot, version, snapshot()),
        First::Delta(delta) => (Kind::Delta, delta.board_version, message::delta(&delta)),
    };
    Outgoing {
        kind,
        board_version: Some(board_version),
        period_key: Some(period_key.clone()),
        json,
        committed: None,
    }
}

/// The next time a timer of period `every` fires after firing at `fired`: one period on, or a
/// period from `now` when the work overran, so a slow window is not followed by a burst.
fn next_deadline(fired: i64, every: i64, now: i64) -> i64 {
    let next = fired.saturating_add(every);
    if next <= now {
        now.saturating_add(every)
    } else {
        next
    }
}

/// Queues `message` for every queue that `keep` is asked about, keeping those still open (a
/// full queue is sent `resync` instead and leaves); counts the resyncs. O(queues).
fn push_retain<T>(queues: &mut Vec<T>, queue_of: impl Fn(&T) -> &Arc<Queue>, message: &Outgoing, hub: &Hub) {
    let mut overflowed = 0;
    queues.retain(|held| hub.push(queue_of(held), message, &mut overflowed));
    if overflowed > 0 {
        hub.shared.metrics.live.resyncs.add(overflowed);
    }
}

impl Hub {
    /// A hub with no subscribers; [`Hub::start`] starts its window task.
    pub fn new(config: LiveConfig, registry: Arc<Registry>, clock: Clock, metrics: Arc<Metrics>) -> Arc<Hub> {
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
                window_work_us: AtomicU64::new(0),
                metrics,
            }),
            resync,
            heartbeat: plain(Kind::Heartbeat, message::heartbeat()),
            going_away: plain(Kind::GoingAway, message::going_away()),
        })
    }

    /// The settings.
    pub fn config(&self) -> &LiveConfig {
        &self.config
    }

    /// Starts the task that flushes a window of changes every `window_ms` and sends heartbeats,
    /// on the hub's clock (a manual clock in tests moves it).
    ///
    /// The first deadlines are taken now, so a manual clock moved before the task first runs
    /// still fires them. Each window's work runs on the blocking pool: reading thousands of
    /// views is CPU work that must not hold up a runtime's worker.
    pub fn start(self: &Arc<Self>) {
        let hub = Arc::downgrade(self);
        let clock = self.clock.clone();
        let window = i64::try_from(self.config.window_ms).unwrap_or(i64::MAX);
        let beat_every =
            i64::try_from(self.config.heartbeat_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
        let started = clock.now_ms();
        let (mut flush_at, mut beat_at) =
            (started.saturating_add(window), started.saturating_add(beat_every));
        tokio::spawn(async move {
            loop {
                clock.sleep_until(flush_at.min(beat_at)).await;
                let Some(hub) = hub.upgrade() else { return };
                if hub.shared.stopping.load(Ordering::Acquire) {
                    return;
                }
                let now = clock.now_ms();
                let (flush, beat) = (now >= flush_at, now >= beat_at);
                if flush {
                    flush_at = next_deadline(flush_at, window, now);
                }
                if beat {
                    beat_at = next_deadline(beat_at, beat_every, now);
                }
                let work = tokio::task::spawn_blocking(move || {
                    if flush {
                        let began = Instant::now();
                        hub.flush(now);
                        let took = began.elapsed();
                        hub.shared.metrics.live.window.observe(took);
                        let work = &hub.shared.window_work_us;
                        let average = admission::average_work_us(work.load(Ordering::Relaxed), took);
                        work.store(average, Ordering::Relaxed);
                    }
                    if beat {
                        hub.beat();
                    }
                    if flush {
                        hub.shared.windows.send_modify(|n| *n += 1);
                    }
                });
                if let Err(e) = work.await {
                    tracing::error!("a live window failed: {e}");
                }
            }
        });
    }

    /// Boards changed by a group committed at `committed` and now applied; called by the
    /// applier and by every other step that changes a board (actions, late decisions, season
    /// transitions). Cheap: it only records when the change was committed, which dates the
    /// deltas that carry it (windows find the change itself by the board's version).
    /// O(boards), and O(1) while nobody is subscribed.
    pub fn changed<'a>(&self, boards: impl IntoIterator<Item = &'a BoardId>, committed: Instant) {
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
    pub fn is_watched(&self) -> bool {
        self.shared.open.load(Ordering::Relaxed) > 0
    }

    /// Opens a subscription. Its first message brings the subscriber to the board's version now
    /// (or newer): a snapshot, or one delta from its `since` position when that is of this
    /// instance and the board still holds its history.
    ///
    /// The first message is queued under the topic's lock, before the subscriber can receive
    /// a window's delta. When the board has not moved since the topic's last-sent state, it
    /// brings the subscriber to that state and the deltas that follow chain; when it has, the
    /// subscriber joins at the version it read and the next window brings everyone to one
    /// version (`topic::settle`). O(log topics + a view read), plus the read at the version
    /// held when it is behind.
    pub fn subscribe(&self, watch: Watch) -> Result<Subscription, SubscribeError> {
        let Watch {
            slot,
            view,
            since,
            holder,
            address,
        } = watch;
        if self.shared.stopping.load(Ordering::Acquire) {
            return Err(SubscribeError::Stopping);
        }
        let since_version = topic::held_version(since.as_ref(), &slot.period.key);
        let ended = match self.registry.entry(&slot.id) {
            Some(entry) if entry.is_archived() => Some(CloseReason::SeasonArchived),
            None => Some(CloseReason::SeasonArchived),
            Some(entry) if entry.calendar.is_closed(&slot.period, self.clock.now_ms()) => {
                Some(CloseReason::PeriodClosed)
            }
            Some(_) => None,
        };
        if let Some(reason) = ended {
            return Ok(self.already_ended(&slot, &view, since_version, reason));
        }
        // Only a subscriber without a token is counted by its address.
        let address = address.filter(|_| holder.is_none());
        let key = (slot.id.clone(), slot.period.key.clone(), view);
        let (topic, id) = self.join(key, &slot, holder.as_deref(), address)?;
        let queue = Arc::new(Queue::default());
        {
            let mut state = topic.state.lock_unpoisoned();
            let now = ViewState::read(&slot.read(), topic.view(), &topic.key.1);
            let joins = now.board_version > state.last.board_version;
            let first = if joins {
                self.first_joining(&topic, &mut state, &slot, &now, since_version)
            } else {
                self.first(&topic, &mut state, &slot, since_version)
            };
            queue.push(first, self.config.queue_messages, &self.resync);
            if let Some(end) = &state.ended {
                queue.end_with(end.clone());
            } else if self.shared.stopping.load(Ordering::Acquire) {
                // `going_away` began after the check above and may have passed this topic.
                queue.end_with(self.going_away.clone());
            } else if joins {
                let group = state.joining.entry(now.board_version).or_insert_with(|| Joining {
                    state: now,
                    snapshot: None,
                    queues: Vec::new(),
                });
                group.queues.push((id, queue.clone()));
                topic.has_joining.store(true, Ordering::Release);
            } else {
                state.subscribers.insert(id, queue.clone());
            }
        }
        Ok(Subscription {
            queue,
            metrics: self.shared.metrics.clone(),
            member: Some(Member {
                shared: self.shared.clone(),
                topic,
                id,
                holder,
                address,
            }),
        })
    }

    /// Counts a new subscriber against the limits and finds (or creates) its topic; a new
    /// topic only while the windows have room for another view (`admission`).
    fn join(
        &self,
        key: TopicKey,
        slot: &BoardSlot,
        holder: Option<&str>,
        address: Option<IpAddr>,
    ) -> Result<(Arc<Topic>, u64), SubscribeError> {
        let config = &self.config;
        let mut members = self.shared.members.lock_unpoisoned();
        if self.shared.stopping.load(Ordering::Acquire) {
            return Err(SubscribeError::Stopping);
        }
        if let Some(holder) = holder
            && members.per_holder.get(holder).copied().unwrap_or(0) >= config.max_subscribers_per_token
        {
            return Err(SubscribeError::PerToken {
                limit: config.max_subscribers_per_token,
            });
        }
        if let Some(address) = address
            && members.per_address.get(&address).copied().unwrap_or(0) >= config.max_subscribers_per_address
        {
            return Err(SubscribeError::PerAddress {
                limit: config.max_subscribers_per_address,
            });
        }
        let on_board = members.per_board.get(&key.0).copied().unwrap_or(0);
        if on_board >= config.max_subscribers_per_board {
            return Err(SubscribeError::PerBoard {
                limit: config.max_subscribers_per_board,
            });
        }
        if members.total >= config.max_subscribers {
            return Err(SubscribeError::Total {
                limit: config.max_subscribers,
            });
        }
        let board = key.0.clone();
        let topic = match members.topics.get_mut(&key) {
            Some((topic, count)) => {
                *count += 1;
                topic.clone()
            }
            None => {
                let work_us = self.shared.window_work_us.load(Ordering::Relaxed);
                if !admission::admits_new_view(work_us, config.window_ms, config.max_window_share_percent) {
                    self.shared.metrics.live.busy_refusals.add(1);
                    return Err(SubscribeError::Busy {
                        work_ms: work_us / 1000,
                        window_ms: config.window_ms,
                    });
                }
                // Numbered before the view is read: a change reported meanwhile is in the view
                // and also dated for its next delta, which errs toward a longer lag, never a
                // shorter one.
                let seen = self
                    .shared
                    .reports
                    .lock_unpoisoned()
                    .get(&key.0)
                    .map_or(0, |reported| reported.next);
                let key = Arc::new(key);
                let topic = Arc::new(Topic::new(key.clone(), slot, seen));
                members.topics.insert(key, (topic.clone(), 1));
                topic
            }
        };
        members.total += 1;
        self.shared.open.store(members.total, Ordering::Relaxed);
        members.per_board.insert(board.clone(), on_board + 1);
        self.shared.metrics.live.set_subscribers(&board, on_board + 1);
        if let Some(holder) = holder {
            *members.per_holder.entry(holder.to_owned()).or_insert(0) += 1;
        }
        if let Some(address) = address {
            *members.per_address.entry(address).or_insert(0) += 1;
        }
        let id = members.next_id;
        members.next_id += 1;
        Ok((topic, id))
    }

    /// The first message for a subscriber of `topic` whose board has not moved since `last`
    /// (see `topic::first_message`).
    fn first(
        &self,
        topic: &Topic,
        state: &mut TopicState,
        slot: &BoardSlot,
        since_version: Option<u64>,
    ) -> Outgoing {
        let view = topic.view();
        let first = topic::first_message(&state.last, since_version, |n| {
            ViewState::read_at(&slot.read(), view, &topic.key.1, n).ok()
        });
        let version = state.last.board_version;
        first_outgoing(&topic.period_key, first, version, || {
            if let Some(json) = &state.snapshot {
                return json.clone();
            }
            let json = message::snapshot(view, &topic.period, &state.last);
            // Kept once a second subscriber shows the view is shared: a view only one client
            // watches (most `around` and `player` views) would hold its snapshot for nothing.
            if !state.subscribers.is_empty() {
                state.snapshot = Some(json.clone());
            }
            json
        })
    }

    /// The first message for a subscriber joining `topic` while its board is at `now`, past
    /// the topic's `last`: `now` itself, or one delta to it.
    fn first_joining(
        &self,
        topic: &Topic,
        state: &mut TopicState,
        slot: &BoardSlot,
        now: &ViewState,
        since_version: Option<u64>,
    ) -> Outgoing {
        let view = topic.view();
        let first = topic::first_message(now, since_version, |n| {
            ViewState::read_at(&slot.read(), view, &topic.key.1, n).ok()
        });
        first_outgoing(&topic.period_key, first, now.board_version, || {
            let group = state.joining.get_mut(&now.board_version);
            if let Some(json) = group.as_ref().and_then(|g| g.snapshot.as_ref()) {
                return json.clone();
            }
            let json = message::snapshot(view, &topic.period, now);
            // As for `last`: kept once a second subscriber joins at this version.
            if let Some(group) = group {
                group.snapshot = Some(json.clone());
            }
            json
        })
    }

    /// A subscription to a period that has closed (or a season archived): its first message,
    /// then `closed`. It joins no topic, as nothing will change. O(a view read).
    fn already_ended(
        &self,
        slot: &BoardSlot,
        view: &View,
        since_version: Option<u64>,
        reason: CloseReason,
    ) -> Subscription {
        let period_key: Arc<str> = Arc::from(slot.period.key.as_str());
        let last = ViewState::read(&slot.read(), view, &period_key);
        let first = topic::first_message(&last, since_version, |n| {
            ViewState::read_at(&slot.read(), view, &period_key, n).ok()
        });
        let first = first_outgoing(&period_key, first, last.board_version, || {
            message::snapshot(view, &slot.period, &last)
        });
        let queue = Arc::new(Queue::default());
        queue.push(first, self.config.queue_messages, &self.resync);
        queue.end_with(plain(
            Kind::Closed,
            message::closed(reason, &period_key, last.board_version),
        ));
        Subscription {
            queue,
            metrics: self.shared.metrics.clone(),
            member: None,
        }
    }

    /// Every topic, grouped by board instance (the map's order). O(topics).
    fn topics(&self) -> Vec<Arc<Topic>> {
        let members = self.shared.members.lock_unpoisoned();
        members.topics.values().map(|(topic, _)| topic.clone()).collect()
    }

    /// One window: every topic's view is read again where its board moved (or subscribers are
    /// joining it), and the net change since its last message goes to its subscribers; topics
    /// of archived boards and closed periods are ended. Every topic is looked at, not only
    /// those of boards marked changed, so a change that was not reported is still sent.
    /// O(topics + moved views x their size + subscribers of changed views).
    fn flush(&self, now_ms: i64) {
        for board in self.shared.reports.lock_unpoisoned().values_mut() {
            board.forget_read();
        }
        let topics = self.topics();
        for group in topics.chunk_by(|a, b| a.key.0 == b.key.0 && a.key.1 == b.key.1) {
            let (id, period_key) = (&group[0].key.0, &group[0].key.1);
            let entry = match self.registry.entry(id) {
                Some(entry) if !entry.is_archived() => entry,
                _ => {
                    for topic in group {
                        self.end(topic, CloseReason::SeasonArchived);
                    }
                    continue;
                }
            };
            // An instance that left memory (evicted once closed) has not changed since.
            if let Some(slot) = entry.instance(period_key) {
                let mut rest = group;
                while !rest.is_empty() {
                    rest = self.refresh(&slot, rest);
                }
            }
            if entry.calendar.is_closed(&group[0].period, now_ms) {
                for topic in group {
                    self.end(topic, CloseReason::PeriodClosed);
                }
            }
        }
    }

    /// Reads again, under one hold of the board's read lock, the views of the first topics of
    /// `topics` whose board moved or that have subscribers joining, for up to [`HOLD`] or
    /// [`VIEWS_PER_HOLD`] views, then (with the lock released) sends each view's net change
    /// since its last message to its subscribers. Returns the topics not reached.
    ///
    /// The applier takes the write lock per event. Each time the lock passes between it and the
    /// window, one of the two threads sleeps until the other wakes it, which on a busy machine
    /// costs more than many view reads; so the window reads in holds of a bounded time rather
    /// than per view, and the applier waits at most one hold. O(views read x (log n + k)), plus
    /// the subscribers of the views that changed.
    fn refresh<'t>(&self, slot: &BoardSlot, topics: &'t [Arc<Topic>]) -> &'t [Arc<Topic>] {
        let mut moved = Vec::new();
        let mut reached = 0;
        {
            let board = slot.read();
            let held = Instant::now();
            let version = board.version();
            for topic in topics {
                if moved.len() >= VIEWS_PER_HOLD || held.elapsed() >= HOLD {
                    break;
                }
                reached += 1;
                let board_moved = topic.checked.swap(version, Ordering::Relaxed) != version;
                if board_moved || topic.has_joining.load(Ordering::Acquire) {
                    moved.push((topic, ViewState::read(&board, topic.view(), &topic.key.1), None));
                }
            }
            // Still under the read lock: every change reported by now was applied before the
            // lock was taken, so the views just read hold it.
            let mut reports = self.shared.reports.lock_unpoisoned();
            if let Some(reported) = reports.get_mut(&slot.id) {
                for (topic, _, committed) in &mut moved {
                    *committed = reported.earliest_from(topic.seen.load(Ordering::Relaxed));
                }
                for topic in &topics[..reached] {
                    topic.seen.store(reported.next, Ordering::Relaxed);
                }
                reported.read_up_to(reported.next);
            }
        }
        for (topic, now, committed) in moved {
            let mut state = topic.state.lock_unpoisoned();
            if state.ended.is_some() {
                continue;
            }
            self.send_window(topic, &mut state, now, committed);
        }
        &topics[reached..]
    }

    /// Sends a topic what its window read `now` brings: the net change since `last` to its
    /// settled subscribers, and to the groups joining at a version `now` has reached whatever
    /// brings them to it; those groups then settle (`topic::settle`).
    fn send_window(&self, topic: &Topic, state: &mut TopicState, now: ViewState, committed: Option<Instant>) {
        // Groups that joined after this read (at a later version) wait for the next window.
        let later = state.joining.split_off(&(now.board_version + 1));
        let reached = std::mem::replace(&mut state.joining, later);
        topic
            .has_joining
            .store(!state.joining.is_empty(), Ordering::Release);
        if reached.is_empty() {
            let Some(delta) = topic::window(&mut state.last, now) else {
                return;
            };
            state.snapshot = None;
            let message = topic.change(
                Kind::Delta,
                delta.board_version,
                message::delta(&delta),
                committed,
            );
            self.send(state, &message);
            return;
        }
        let groups: Vec<Joining> = reached.into_values().collect();
        let held: Vec<&ViewState> = groups.iter().map(|g| &g.state).collect();
        let (to_last, to_groups) = topic::settle(&mut state.last, &held, now);
        state.snapshot = None;
        if let Some(delta) = to_last {
            let message = topic.change(
                Kind::Delta,
                delta.board_version,
                message::delta(&delta),
                committed,
            );
            self.send(state, &message);
        }
        for (mut group, delta) in groups.into_iter().zip(to_groups) {
            if let Some(delta) = delta {
                let message = topic.change(Kind::Delta, delta.board_version, message::delta(&delta), None);
                push_retain(&mut group.queues, |(_, queue)| queue, &message, self);
            }
            state.subscribers.extend(group.queues);
        }
    }

    /// Queues `message` for one subscriber: whether its stream is still open (a full queue is
    /// sent `resync` instead, counted in `overflowed`). O(1).
    fn push(&self, queue: &Queue, message: &Outgoing, overflowed: &mut u64) -> bool {
        match queue.push(message.clone(), self.config.queue_messages, &self.resync) {
            Pushed::Queued => true,
            Pushed::Overflowed => {
                *overflowed += 1;
                false
            }
            Pushed::Ended => false,
        }
    }

    /// Queues `message` for every settled subscriber of a topic; those whose queue was full are
    /// sent `resync` instead and leave the topic. O(subscribers).
    fn send(&self, state: &mut TopicState, message: &Outgoing) {
        let mut overflowed = 0;
        state
            .subscribers
            .retain(|_, queue| self.push(queue, message, &mut overflowed));
        if overflowed > 0 {
            self.shared.metrics.live.resyncs.add(overflowed);
        }
    }

    /// Ends a topic: its subscribers are sent `closed` with the version they hold, and it
    /// leaves the map (its subscriptions stay counted until they are dropped).
    fn end(&self, topic: &Arc<Topic>, reason: CloseReason) {
        {
            let mut state = topic.state.lock_unpoisoned();
            if state.ended.is_some() {
                return;
            }
            let closed_at = |version| plain(Kind::Closed, message::closed(reason, &topic.key.1, version));
            let closed = closed_at(state.last.board_version);
            for queue in state.subscribers.values() {
                queue.end_with(closed.clone());
            }
            for (version, group) in std::mem::take(&mut state.joining) {
                let closed = closed_at(version);
                for (_, queue) in &group.queues {
                    queue.end_with(closed.clone());
                }
            }
            topic.has_joining.store(false, Ordering::Release);
            state.subscribers = HashMap::default();
            state.ended = Some(closed);
        }
        let mut members = self.shared.members.lock_unpoisoned();
        if members
            .topics
            .get(&topic.key)
            .is_some_and(|(held, _)| Arc::ptr_eq(held, topic))
        {
            members.topics.remove(&topic.key);
        }
    }

    /// Sends every subscriber a heartbeat (one shared message). O(subscribers).
    fn beat(&self) {
        for topic in self.topics() {
            let mut state = topic.state.lock_unpoisoned();
            self.send(&mut state, &self.heartbeat);
            for group in state.joining.values_mut() {
                push_retain(&mut group.queues, |(_, queue)| queue, &self.heartbeat, self);
            }
        }
    }

    /// Sends `going_away` to every subscriber, refuses new ones, and waits until every
    /// subscription has been dropped or `deadline` has passed, so a stopping server can
    /// finish its streams without waiting on a client that does not read.
    pub async fn going_away(&self, deadline: tokio::time::Instant) {
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

/// A subscription's place in the hub, given back when it is dropped.
struct Member {
    shared: Arc<Shared>,
    topic: Arc<Topic>,
    id: u64,
    holder: Option<String>,
    address: Option<IpAddr>,
}

impl Member {
    /// Leaves the topic (and the map, with its last member) and the counts.
    fn leave(self) {
        {
            let mut state = self.topic.state.lock_unpoisoned();
            if state.subscribers.remove(&self.id).is_none() {
                for group in state.joining.values_mut() {
                    group.queues.retain(|(id, _)| *id != self.id);
                }
                state.joining.retain(|_, group| !group.queues.is_empty());
                self.topic
                    .has_joining
                    .store(!state.joining.is_empty(), Ordering::Release);
            }
        }
        let mut members = self.shared.members.lock_unpoisoned();
        let key = &self.topic.key;
        if let Some((held, count)) = members.topics.get_mut(key)
            && Arc::ptr_eq(held, &self.topic)
        {
            *count -= 1;
            if *count == 0 {
                members.topics.remove(key);
            }
        }
        members.total -= 1;
        let on_board = members.per_board.get(&key.0).copied().unwrap_or(1) - 1;
        if on_board == 0 {
            members.per_board.remove(&key.0);
        } else {
            members.per_board.insert(key.0.clone(), on_board);
        }
        self.shared.metrics.live.set_subscribers(&key.0, on_board);
        if let Some(holder) = &self.holder
            && let Some(n) = members.per_holder.get_mut(holder)
        {
            *n -= 1;
            if *n == 0 {
                members.per_holder.remove(holder);
            }
        }
        if let Some(address) = &self.address
            && let Some(n) = members.per_address.get_mut(address)
        {
            *n -= 1;
            if *n == 0 {
                members.per_address.remove(address);
            }
        }
        self.shared.open.store(members.total, Ordering::Release);
        if members.total == 0 {
            self.shared.all_gone.notify_waiters();
        }
    }
}

/// One open subscription: its queue of messages. Dropping it unsubscribes.
pub struct Subscription {
    queue: Arc<Queue>,
    metrics: Arc<Metrics>,
    /// `None` for a subscription that ended as it opened (a closed period).
    member: Option<Member>,
}

impl Subscription {
    /// The next message to write; `None` once the stream is over (after a `resync`, `closed`
    /// or `going_away`, which are the last message). Cancel-safe.
    pub async fn next(&mut self) -> Option<Outgoing> {
        self.queue.next().await
    }

    /// Records that `message` was written to the socket: messages and bytes sent, and the
    /// notification lag (from its commit to now).
    pub fn written(&self, message: &Outgoing) {
        let live = &self.metrics.live;
        live.messages[message.kind.index()].add(1);
        live.bytes.add(message.json.len() as u64);
        if let Some(committed) = message.committed {
            live.notify_lag.observe(committed.elapsed());
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let Some(member) = self.member.take() else {
            return;
        };
        if !self.queue.ended() {
            // The client went away on its own, not after a message that ended its stream.
            self.metrics.live.drops.add(1);
        }
        member.leave();
    }
}
