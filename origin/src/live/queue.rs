//! One subscriber's bounded queue of messages.
//!
//! The window task pushes the same shared bytes to every subscriber of a view and never waits
//! for one: a push onto a full queue drops what it held and leaves only a `resync`, which ends
//! the stream, so a client that does not read costs at most one queue and slows nobody. The
//! queue's buffer is allocated on the first push and only grows as far as the client lags: a
//! subscriber that was never sent anything holds no buffer at all, and one that caught up keeps
//! at most a small one. [`Pending`] is the decision, without locks or wakers; [`Queue`] wraps
//! it for the two sides (the window task pushes, the connection pops).

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::sync::Notify;

use super::Outgoing;
use crate::sync::LockUnpoisoned;

/// The most slots a drained queue keeps allocated (a few hundred bytes).
const KEPT_SLOTS: usize = 8;

/// What became of a push.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Queued.
    Queued,
    /// The queue was full: it now holds only the `resync`, and the stream ends.
    Overflowed,
    /// The stream had already ended; nothing was queued.
    Ended,
}

/// The messages waiting for one subscriber, and whether its stream has ended (a terminal
/// message was queued: nothing is queued after it).
#[derive(Debug, Default)]
pub(crate) struct Pending {
    messages: VecDeque<Outgoing>,
    ended: bool,
}

impl Pending {
    /// Queues `message` unless `capacity` messages wait already; then replaces them all with
    /// `resync` and ends the stream. O(1), or O(capacity) to drop a full queue.
    pub(crate) fn push(&mut self, message: Outgoing, capacity: usize, resync: &Outgoing) -> Pushed {
        if self.ended {
            return Pushed::Ended;
        }
        if self.messages.len() >= capacity {
            // Nothing queued can help a client that must start over; the memory goes at once.
            self.messages = VecDeque::new();
            self.messages.push_back(resync.clone());
            self.ended = true;
            return Pushed::Overflowed;
        }
        self.messages.push_back(message);
        Pushed::Queued
    }

    /// Queues a message that ends the stream (`closed`, `going_away`), even onto a full queue:
    /// it is one message past the bound, and the client learns why its stream ends. Returns
    /// whether it was queued (not when the stream had already ended). O(1).
    pub(crate) fn end_with(&mut self, message: Outgoing) -> bool {
        if self.ended {
            return false;
        }
        self.messages.push_back(message);
        self.ended = true;
        true
    }

    /// The next message, if any. O(1).
    pub(crate) fn pop(&mut self) -> Option<Outgoing> {
        let message = self.messages.pop_front();
        if self.messages.is_empty() && self.messages.capacity() > KEPT_SLOTS {
            // A client that caught up after lagging gives back what its lag took; a small
            // buffer stays, so a client that keeps up does not allocate every window.
            self.messages = VecDeque::new();
        }
        message
    }

    /// Whether the stream ended (its last message may still wait).
    pub(crate) fn ended(&self) -> bool {
        self.ended
    }

    /// How many messages wait.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.messages.len()
    }
}

/// A subscriber's queue, shared by the window task (which pushes) and the connection (which
/// awaits the next message). `Notify` wakes through the waker of whichever runtime polls the
/// connection.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    pending: Mutex<Pending>,
    ready: Notify,
}

impl Queue {
    /// See [`Pending::push`]; wakes the connection when something was queued.
    pub(crate) fn push(&self, message: Outgoing, capacity: usize, resync: &Outgoing) -> Pushed {
        let pushed = self.pending.lock_unpoisoned().push(message, capacity, resync);
        if pushed != Pushed::Ended {
            self.ready.notify_one();
        }
        pushed
    }

    /// See [`Pending::end_with`]; wakes the connection.
    pub(crate) fn end_with(&self, message: Outgoing) -> bool {
        let queued = self.pending.lock_unpoisoned().end_with(message);
        if queued {
            self.ready.notify_one();
        }
        queued
    }

    /// Whether the stream ended.
    pub(crate) fn ended(&self) -> bool {
        self.pending.lock_unpoisoned().ended()
    }

    /// The next message, waiting for one; `None` once the stream ended and its last message
    /// was taken. Only one task awaits a queue. Cancel-safe: a message is taken only when
    /// this returns it.
    pub(crate) async fn next(&self) -> Option<Outgoing> {
        loop {
            {
                let mut pending = self.pending.lock_unpoisoned();
                if let Some(message) = pending.pop() {
                    return Some(message);
                }
                if pending.ended() {
                    return None;
                }
            }
            // A push between the check and here leaves a permit, so this wakes at once.
            self.ready.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::live::Kind;

    fn message(kind: Kind, n: u64) -> Outgoing {
        Outgoing {
            kind,
            board_version: Some(n),
            period_key: None,
            json: Bytes::from(n.to_string()),
            committed: None,
        }
    }

    /// A full queue is replaced by one resync that ends the stream, and nothing is queued
    /// after it; a queue below its bound takes every message.
    #[test]
    fn a_full_queue_keeps_only_the_resync() {
        let resync = message(Kind::Resync, 0);
        let mut pending = Pending::default();
        for n in 1..=3 {
            assert_eq!(pending.push(message(Kind::Delta, n), 3, &resync), Pushed::Queued);
        }
        assert_eq!(
            pending.push(message(Kind::Delta, 4), 3, &resync),
            Pushed::Overflowed
        );
        assert!(pending.ended());
        assert_eq!(pending.len(), 1);
        assert_eq!(pending.push(message(Kind::Delta, 5), 3, &resync), Pushed::Ended);
        assert!(!pending.end_with(message(Kind::GoingAway, 6)));
        assert_eq!(pending.pop().map(|m| m.kind), Some(Kind::Resync));
        assert!(pending.pop().is_none());
    }

    /// A terminal message goes in even onto a full queue, after what waits, and ends it.
    #[test]
    fn a_terminal_message_ends_the_stream_after_what_waits() {
        let resync = message(Kind::Resync, 0);
        let mut pending = Pending::default();
        pending.push(message(Kind::Delta, 1), 1, &resync);
        assert!(pending.end_with(message(Kind::Closed, 2)));
        assert_eq!(pending.pop().map(|m| m.kind), Some(Kind::Delta));
        assert_eq!(pending.pop().map(|m| m.kind), Some(Kind::Closed));
        assert!(pending.pop().is_none());
        assert!(pending.ended());
    }

    /// A subscriber that was never sent anything holds no buffer; one that caught up after
    /// lagging keeps at most a small one.
    #[test]
    fn an_idle_queue_holds_at_most_a_small_buffer() {
        let resync = message(Kind::Resync, 0);
        let mut pending = Pending::default();
        assert_eq!(pending.messages.capacity(), 0);
        for n in 0..40 {
            pending.push(message(Kind::Delta, n), 64, &resync);
        }
        assert!(pending.messages.capacity() >= 40);
        while pending.pop().is_some() {}
        assert_eq!(pending.messages.capacity(), 0);
        pending.push(message(Kind::Delta, 1), 64, &resync);
        pending.pop();
        assert!((1..=KEPT_SLOTS).contains(&pending.messages.capacity()));
    }
}
