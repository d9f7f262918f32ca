//! A message as subscribers receive it: its kind, the version it brings them to, and its JSON,
//! encoded once and shared by every subscriber of the view.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use super::message;
use super::topic::First;

/// The kind of a wire message (the SSE `event:` name, and the JSON `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
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
    pub(crate) const ALL: [Kind; 6] = [
        Kind::Snapshot,
        Kind::Delta,
        Kind::Heartbeat,
        Kind::Resync,
        Kind::Closed,
        Kind::GoingAway,
    ];

    /// The position in [`Kind::ALL`].
    pub(super) fn index(self) -> usize {
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
    pub(crate) fn as_str(self) -> &'static str {
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
pub(crate) struct Outgoing {
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

/// A message that carries no view change.
pub(super) fn plain(kind: Kind, json: Bytes) -> Outgoing {
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
pub(super) fn first_outgoing(
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
