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

/// How many bytes of checkpoint storing cost about as much as replaying one log entry at a
/// start (BENCHMARKS.md has the figures): a checkpoint is worth storing, at a stop or
/// periodically, only once its tail would cost more to replay than the checkpoint to store.
const ENTRY_REPLAY_AS_BYTES: u64 = 256;

/// Whether a checkpoint is worth storing `tail` log entries after the newest one, whose size
/// was `last_bytes` (0 when unknown, and then it is). O(1).
pub(super) fn worth_storing(tail: u64, last_bytes: usize) -> bool {
    last_bytes == 0 || tail.saturating_mul(ENTRY_REPLAY_AS_BYTES) >= last_bytes as u64
}

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
    /// grew by `checkpoint_every` since the newest one begun and by enough to be worth storing
    /// against the newest one stored, `last_bytes` ([`worth_storing`]: a big board's checkpoint
    /// freezes its visible state while encoded and is gigabytes to store, so it comes as often
    /// as its size warrants), and none is being encoded or stored and no commit's fate is
    /// unknown (`busy`). O(1).
    pub(super) fn checkpoint_due(&self, last_seq: i64, busy: bool, last_bytes: usize) -> bool {
        self.checkpoint_every > 0
            && !busy
            && u64::try_from(last_seq - self.checkpoint_begun)
                .is_ok_and(|grown| grown >= self.checkpoint_every && worth_storing(grown, last_bytes))
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
        assert!(!rhythm.checkpoint_due(149, false, 0));
        assert!(rhythm.checkpoint_due(150, false, 0));
        assert!(!rhythm.checkpoint_due(150, true, 0));
        rhythm.checkpoint_begun(150);
        assert!(!rhythm.checkpoint_due(199, false, 0));
        rhythm.checkpoint_begun(120);
        assert!(rhythm.checkpoint_due(200, false, 0));
        assert!(
            !rhythm.checkpoint_due(90, false, 0),
            "a log behind the checkpoint is not grown"
        );
        assert!(!Rhythm::new(0, 0, 2_000).checkpoint_due(1_000_000, false, 0));
    }

    /// Only a small group, with one in flight and nothing else waiting, gathers more.
    #[test]
    fn a_small_group_gathers_while_one_commits() {
        assert!(gathers_more(true, false, 1));
        assert!(!gathers_more(true, false, PIPELINE_MIN_EVENTS));
        assert!(!gathers_more(false, false, 1));
        assert!(!gathers_more(true, true, 1));
    }

    /// A big checkpoint comes only once the log grew enough to be worth storing against it:
    /// a 50M board's 2.2 GB waits for 8.6M entries, not the interval's million, while a small
    /// board's comes at the interval.
    #[test]
    fn periodic_checkpoints_wait_until_their_size_is_worth_storing() {
        let rhythm = Rhythm::new(0, 1_000_000, 2_000);
        assert!(
            rhythm.checkpoint_due(1_000_000, false, 10_000_000),
            "10 MB: the interval"
        );
        assert!(!rhythm.checkpoint_due(999_999, false, 10_000_000));
        assert!(!rhythm.checkpoint_due(1_000_000, false, 2_200_000_000));
        assert!(!rhythm.checkpoint_due(8_593_749, false, 2_200_000_000));
        assert!(rhythm.checkpoint_due(8_593_750, false, 2_200_000_000));
    }

    /// A stop stores a checkpoint when this process has stored none, or when the entries after
    /// the newest one would cost at least its size to replay.
    #[test]
    fn a_stop_weighs_the_tail_against_the_checkpoint() {
        assert!(worth_storing(0, 0));
        assert!(worth_storing(1, 0));
        assert!(!worth_storing(1, 257));
        assert!(worth_storing(1, 256));
        assert!(
            !worth_storing(1_000_000, 2_350_000_000),
            "a 50M board, a tail of 1M"
        );
        assert!(worth_storing(10_000_000, 2_350_000_000));
        assert!(worth_storing(u64::MAX, usize::MAX));
    }
}
