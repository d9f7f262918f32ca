//! The writer's rhythm, as decisions with no IO: what its loop waits for when nothing is
//! queued, and until when (the `poll_timeout` of quinn's driver), whether a small group waits
//! for more events, and when a periodic checkpoint is due. The loop in `driver.rs` only does
//! the IO these name; its state between turns lives here, tested without a database or a clock.

/// Events from which a group is decided at once rather than gathering what arrives while the
/// group in flight commits.
pub(super) const PIPELINE_MIN_EVENTS: usize = 1_000;

/// How long a group whose commit's answer was lost waits before the log is asked again, when
/// no command comes meanwhile (one does ask it anyway).
pub(super) const RESOLVE_RETRY_MS: i64 = 200;

/// What the loop waits for when no command is queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Idle {
    /// A group waits to hear whether its commit took: a command, or at `at` ask the log again.
    Resolve {
        /// When to ask.
        at: i64,
    },
    /// A checkpoint's boards are being encoded: a command, or the encoding's end, which makes
    /// the backlog visible.
    Encoding,
    /// Writes ran since memory was last handed back: a command, or at `at` rest (`rest.rs`).
    Rest {
        /// When to rest.
        at: i64,
    },
    /// Nothing is owed: only a command.
    Command,
}

/// The writer's state between turns of its loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Rhythm {
    /// Whether anything ran since memory was last handed back; the start itself (restoring a
    /// checkpoint, replaying the log) leaves freed buffers, so it begins true.
    wrote_since_rest: bool,
    /// The `seq` of the newest checkpoint begun (or loaded).
    checkpoint_begun: i64,
    /// A periodic checkpoint each this many log entries; 0 for none.
    checkpoint_every: u64,
    /// How long writes must pause before memory is handed back.
    rest_after_ms: i64,
}

impl Rhythm {
    /// The rhythm of a writer started from a checkpoint at `checkpoint_seq`. O(1).
    pub(super) fn new(checkpoint_seq: i64, checkpoint_every: u64, rest_after_ms: i64) -> Rhythm {
        Rhythm {
            wrote_since_rest: true,
            checkpoint_begun: checkpoint_seq,
            checkpoint_every,
            rest_after_ms,
        }
    }

    /// What to wait for at `now_ms` with nothing queued: a group's lost commit first, then an
    /// encoding's end, then the pause after which memory is handed back. O(1).
    pub(super) fn idle(&self, unresolved: bool, encoding: bool, now_ms: i64) -> Idle {
        if unresolved {
            Idle::Resolve {
                at: now_ms.saturating_add(RESOLVE_RETRY_MS),
            }
        } else if encoding {
            Idle::Encoding
        } else if self.wrote_since_rest {
            Idle::Rest {
                at: now_ms.saturating_add(self.rest_after_ms),
            }
        } else {
            Idle::Command
        }
    }

    /// Events or an action ran.
    pub(super) fn wrote(&mut self) {
        self.wrote_since_rest = true;
    }

    /// Memory was handed back.
    pub(super) fn rested(&mut self) {
        self.wrote_since_rest = false;
    }

    /// Whether a periodic checkpoint is due with `last_seq` the newest logged entry: the log
    /// grew by `checkpoint_every` since the newest one begun, and none is being encoded or
    /// stored and no commit's fate is unknown (`busy`). O(1).
    pub(super) fn checkpoint_due(&self, last_seq: i64, busy: bool) -> bool {
        self.checkpoint_every > 0
            && !busy
            && u64::try_from(last_seq - self.checkpoint_begun)
                .is_ok_and(|grown| grown >= self.checkpoint_every)
    }

    /// A checkpoint as of `seq` was begun (or written on request).
    pub(super) fn checkpoint_begun(&mut self, seq: i64) {
        self.checkpoint_begun = self.checkpoint_begun.max(seq);
    }
}

/// Whether a group of `count` events gathers what arrives while the group in flight commits
/// before it is decided: only a small one, when a group is in flight and no command of another
/// kind waits. Single submissions share a commit only this way. O(1).
pub(super) fn gathers_more(in_flight: bool, command_waits: bool, count: usize) -> bool {
    in_flight && !command_waits && count < PIPELINE_MIN_EVENTS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lost commit is asked about first, an encoding's end next, then a rest after a pause
    /// in writes; after a rest, only a command.
    #[test]
    fn the_idle_loop_waits_for_what_is_owed_first() {
        let mut rhythm = Rhythm::new(0, 0, 2_000);
        assert_eq!(rhythm.idle(true, true, 1_000), Idle::Resolve { at: 1_200 });
        assert_eq!(rhythm.idle(false, true, 1_000), Idle::Encoding);
        assert_eq!(rhythm.idle(false, false, 1_000), Idle::Rest { at: 3_000 });
        rhythm.rested();
        assert_eq!(rhythm.idle(false, false, 1_000), Idle::Command);
        rhythm.wrote();
        assert_eq!(rhythm.idle(false, false, 5_000), Idle::Rest { at: 7_000 });
        assert_eq!(rhythm.idle(false, false, i64::MAX), Idle::Rest { at: i64::MAX });
    }

    /// A periodic checkpoint is due once the log grew by its interval since the newest begun,
    /// never while another is busy, never with the interval 0; a checkpoint written on request
    /// moves the count, one older than the newest does not.
    #[test]
    fn periodic_checkpoints_come_every_so_many_entries() {
        let mut rhythm = Rhythm::new(100, 50, 2_000);
        assert!(!rhythm.checkpoint_due(149, false));
        assert!(rhythm.checkpoint_due(150, false));
        assert!(!rhythm.checkpoint_due(150, true));
        rhythm.checkpoint_begun(150);
        assert!(!rhythm.checkpoint_due(199, false));
        rhythm.checkpoint_begun(120);
        assert!(rhythm.checkpoint_due(200, false));
        assert!(
            !rhythm.checkpoint_due(90, false),
            "a log behind the checkpoint is not grown"
        );
        assert!(!Rhythm::new(0, 0, 2_000).checkpoint_due(1_000_000, false));
    }

    /// Only a small group, with one in flight and nothing else waiting, gathers more.
    #[test]
    fn a_small_group_gathers_while_one_commits() {
        assert!(gathers_more(true, false, 1));
        assert!(!gathers_more(true, false, PIPELINE_MIN_EVENTS));
        assert!(!gathers_more(false, false, 1));
        assert!(!gathers_more(true, true, 1));
    }
}
