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

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use standings_core::BoardId;
use standings_core::View;

use crate::boards::{BoardSlot, Registry};
use crate::clock::Clock;
use crate::config::LiveConfig;
use crate::metrics::Metrics;

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
    /// The version the client already holds the view at, if it is coming back.
    pub since_version: Option<u64>,
    /// Whom the per-token limit counts this subscription against: a static token's name
    /// (`token:NAME`) or a player JWT's subject (`player:ID`); `None` for a public read without
    /// a token, which only the per-board and total limits bound.
    pub holder: Option<String>,
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
    /// The service has `limit` subscribers in all (503 `SUBSCRIBERS_FULL`).
    #[error("the service has {limit} live subscribers, the most it serves; try again later")]
    Total {
        /// The setting.
        limit: usize,
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
    /// The `board_version` the subscriber holds once it has applied this message (the SSE
    /// `id:`, so that `EventSource` reconnects with `Last-Event-ID`); `None` for messages that
    /// do not change the view.
    pub board_version: Option<u64>,
    /// The JSON object, as written to the socket.
    pub json: Bytes,
    /// When the earliest change this message carries was committed, for the lag histogram.
    pub committed: Option<Instant>,
}

/// The hub of live subscriptions (see the module doc).
pub struct Hub {
    config: LiveConfig,
    registry: Arc<Registry>,
    clock: Clock,
    metrics: Arc<Metrics>,
}

impl Hub {
    /// A hub with no subscribers; [`Hub::start`] starts its window task.
    pub fn new(config: LiveConfig, registry: Arc<Registry>, clock: Clock, metrics: Arc<Metrics>) -> Arc<Hub> {
        Arc::new(Hub {
            config,
            registry,
            clock,
            metrics,
        })
    }

    /// Starts the task that flushes a window of changes every `window_ms` and sends heartbeats,
    /// on the hub's clock (a manual clock in tests moves it).
    pub fn start(self: &Arc<Self>) {
        let _ = (&self.config, &self.registry, &self.clock, &self.metrics);
        todo!("the window task")
    }

    /// Boards changed by a group committed at `committed` and now applied; called by the
    /// applier and by every other step that changes a board (actions, late decisions, season
    /// transitions). Cheap: it only marks the boards for the next window.
    pub fn changed<'a>(&self, boards: impl IntoIterator<Item = &'a BoardId>, committed: Instant) {
        let _ = (boards.into_iter().count(), committed);
        todo!("mark the boards for the next window")
    }

    /// Opens a subscription. Its first message is a snapshot, or one delta from
    /// `since_version` when the board still holds that version's history.
    pub fn subscribe(&self, watch: Watch) -> Result<Subscription, SubscribeError> {
        let _ = watch;
        todo!("open a subscription")
    }

    /// Sends `going_away` to every subscriber, refuses new ones, and waits (at most a few
    /// seconds) until every subscription has been dropped, so a stopping server can finish its
    /// streams.
    pub async fn going_away(&self) {
        todo!("stop")
    }
}

/// One open subscription: its queue of messages. Dropping it unsubscribes.
pub struct Subscription {
    _private: (),
}

impl Subscription {
    /// The next message to write; `None` once the stream is over (after a `resync`, `closed`
    /// or `going_away`, which are the last message).
    pub async fn next(&mut self) -> Option<Outgoing> {
        todo!("the next message")
    }

    /// Records that `message` was written to the socket: messages and bytes sent, and the
    /// notification lag (from its commit to now).
    pub fn written(&self, message: &Outgoing) {
        let _ = message;
        todo!("count a written message")
    }
}
