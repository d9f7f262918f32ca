//! Opening a subscription: counting it against the limits, finding or creating its topic (while
//! the windows have room for another view), and queueing its first message; and, when the
//! [`Subscription`] is dropped, giving its place back.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use standings_core::{Position, View, ViewState};

use super::message::{self, CloseReason};
use super::outgoing::{first_outgoing, plain};
use super::queue::Queue;
use super::{Hub, Joining, Kind, Outgoing, Shared, Topic, TopicKey, TopicState, admission, topic};
use crate::boards::BoardSlot;
use crate::metrics::Metrics;
use crate::sync::LockUnpoisoned;

/// What a new subscriber asks to watch.
#[derive(Clone)]
pub(crate) struct Watch {
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

impl Hub {
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
    pub(crate) fn subscribe(&self, watch: Watch) -> Result<Subscription, SubscribeError> {
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
                let view_cost_ns = self.shared.view_cost_ns.load(Ordering::Relaxed);
                let work_us = admission::projected_work_us(view_cost_ns, members.topics.len() + 1);
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
                // The view's first read is a sample of what each window will pay for it, so
                // admission knows a view's cost before any window has read one.
                let began = Instant::now();
                let topic = Arc::new(Topic::new(key.clone(), slot, seen));
                let cost = &self.shared.view_cost_ns;
                let average =
                    admission::average_view_cost_ns(cost.load(Ordering::Relaxed), began.elapsed(), 1);
                cost.store(average, Ordering::Relaxed);
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
pub(crate) struct Subscription {
    queue: Arc<Queue>,
    metrics: Arc<Metrics>,
    /// `None` for a subscription that ended as it opened (a closed period).
    member: Option<Member>,
}

impl Subscription {
    /// The next message to write; `None` once the stream is over (after a `resync`, `closed`
    /// or `going_away`, which are the last message). Cancel-safe.
    pub(crate) async fn next(&mut self) -> Option<Outgoing> {
        self.queue.next().await
    }

    /// Records that `message` was written to the socket: messages and bytes sent, and the
    /// notification lag (from its commit to now).
    pub(crate) fn written(&self, message: &Outgoing) {
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
