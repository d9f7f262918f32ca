//! When a followed board instance is published again, and when it stops being followed: the
//! decisions only, taking `now` and the board's version as arguments, tested without a board,
//! a clock or a task.
//!
//! An instance is followed from the first request for its head. While its head keeps being
//! asked for (within the idle time), each round publishes it again when its version moved and
//! its last publication is at least an interval old; so a board changing all the time is
//! published once per interval, and a quiet one costs a version check per round. Rounds run
//! [`ROUNDS_PER_INTERVAL`] times an interval, so a change is published at most a quarter of an
//! interval after it is due, whatever the phase of the instance's first publication (which a
//! head request makes, at any time). Once nobody asked for its head for the idle time, it is
//! forgotten, and its parts go on their retention.

/// The timings of publication, in ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Timing {
    /// The shortest time between two publications of one instance.
    pub(crate) interval_ms: i64,
    /// How long an instance whose head nobody asked for is still followed.
    pub(crate) idle_ms: i64,
}

/// The last publication of an instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Published {
    /// The board version it holds.
    pub(crate) board_version: u64,
    /// When it was made.
    pub(crate) at_ms: i64,
}

/// How many rounds run per publication interval.
pub(crate) const ROUNDS_PER_INTERVAL: i64 = 4;

impl Timing {
    /// The time between two rounds: a quarter of the interval, at least 1 ms. O(1).
    pub(crate) fn round_ms(&self) -> i64 {
        (self.interval_ms / ROUNDS_PER_INTERVAL).max(1)
    }
}

/// What a round does with one instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Due {
    /// Publish its current version.
    Publish,
    /// Nothing now.
    Wait,
    /// Stop following it: nobody asked for its head for the idle time.
    Forget,
}

/// What a round at `now_ms` does with an instance last published as `published` (`None`:
/// never), whose head was last asked for at `asked_ms`, and whose board is now at
/// `board_version`. O(1).
pub(crate) fn due(
    timing: Timing,
    published: Option<Published>,
    asked_ms: i64,
    board_version: u64,
    now_ms: i64,
) -> Due {
    if now_ms.saturating_sub(asked_ms) >= timing.idle_ms {
        return Due::Forget;
    }
    match published {
        None => Due::Publish,
        Some(last) if last.board_version == board_version => Due::Wait,
        Some(last) if now_ms.saturating_sub(last.at_ms) < timing.interval_ms => Due::Wait,
        Some(_) => Due::Publish,
    }
}

/// From this many players on, a publication that builds the whole snapshot reads a copy of the
/// board instead of holding its read lock for the build: a copy moves memory, while a build
/// also encodes and hashes every entry, so the writer waits far less; below this size either
/// is short.
pub(crate) const COPY_FROM_PLAYERS: u64 = 10_000;

/// Whether a publisher whose last manifest is at `published_version` (`None`: never) reads a copy
/// of a board of `total_players` rather than the board itself under its lock: when it will
/// build the whole snapshot, because it never published or the board no longer holds the
/// changes since (its history starts at `oldest_held_version`, its version is
/// `board_version`). A publisher that follows the board cuts only what changed, which is short
/// under the lock. O(1).
pub(crate) fn builds_from_a_copy(
    published_version: Option<u64>,
    oldest_held_version: u64,
    board_version: u64,
    total_players: u64,
) -> bool {
    let follows = published_version.is_some_and(|v| (oldest_held_version..=board_version).contains(&v));
    !follows && total_players >= COPY_FROM_PLAYERS
}

/// The next round after one due at `fired`, rounds `every` ms apart: one period on, or a
/// period from `now_ms` when the round ran late (a slow round, or a clock moved far at once),
/// so rounds never bunch up. O(1).
pub(crate) fn next_round(fired: i64, every: i64, now_ms: i64) -> i64 {
    let next = fired.saturating_add(every);
    if next <= now_ms {
        now_ms.saturating_add(every)
    } else {
        next
    }
}

/// The caps on instances followed at once (the `[snapshots]` settings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Caps {
    /// In all.
    pub(crate) total: usize,
    /// Of one board.
    pub(crate) per_board: usize,
}

/// Whether an instance not followed yet may be, under the [`Caps`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Room<K> {
    /// There is room: follow it.
    Free,
    /// Follow it in place of `K`, the closed instance asked for least recently.
    Displace(K),
    /// No room: refuse it.
    Full,
}

/// Whether a new instance may be followed while `followed` instances are, `on_board` of them of
/// its board. Under both caps, it is. Past one, a current instance (one whose period has not
/// closed: what live players read) takes the place of the closed instance asked for least
/// recently, of its board when the board's cap is the one reached (`idlest_closed_on_board`),
/// else of any board (`idlest_closed`); a closed one is refused, so a reader walking through
/// old days can neither grow what is followed nor push out what others read now.
/// O(1).
pub(crate) fn room<K>(
    caps: Caps,
    followed: usize,
    on_board: usize,
    current: bool,
    idlest_closed_on_board: Option<K>,
    idlest_closed: Option<K>,
) -> Room<K> {
    let board_full = on_board >= caps.per_board;
    if !board_full && followed < caps.total {
        return Room::Free;
    }
    if !current {
        return Room::Full;
    }
    let candidate = if board_full {
        idlest_closed_on_board
    } else {
        idlest_closed
    };
    candidate.map_or(Room::Full, Room::Displace)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMING: Timing = Timing {
        interval_ms: 1_000,
        idle_ms: 600_000,
    };

    fn at(board_version: u64, at_ms: i64) -> Option<Published> {
        Some(Published { board_version, at_ms })
    }

    /// A moved board is published again once its last publication is an interval old, not
    /// before; an unmoved one never is, however old its publication.
    #[test]
    fn a_moved_board_is_published_at_most_once_an_interval() {
        assert_eq!(due(TIMING, at(5, 10_000), 10_000, 6, 10_999), Due::Wait);
        assert_eq!(due(TIMING, at(5, 10_000), 10_000, 6, 11_000), Due::Publish);
        assert_eq!(due(TIMING, at(5, 10_000), 10_000, 5, 11_000), Due::Wait);
        assert_eq!(due(TIMING, at(5, 10_000), 300_000, 5, 500_000), Due::Wait);
        assert_eq!(due(TIMING, None, 10_000, 0, 10_000), Due::Publish);
    }

    /// An instance whose head nobody asked for during the idle time is forgotten, moved or
    /// not; one asked for just inside it is still followed.
    #[test]
    fn an_instance_nobody_asks_for_is_forgotten() {
        assert_eq!(due(TIMING, at(5, 0), 0, 9, 599_999), Due::Publish);
        assert_eq!(due(TIMING, at(5, 0), 0, 9, 600_000), Due::Forget);
        assert_eq!(due(TIMING, at(5, 0), 0, 5, 600_000), Due::Forget);
        assert_eq!(due(TIMING, None, 0, 5, 600_000), Due::Forget);
    }

    /// Only a whole build of a large board (a first publication, or one whose changes the
    /// board no longer holds) reads a copy; a small board, or a publisher that follows its
    /// board, reads the board under its lock.
    #[test]
    fn only_a_whole_build_of_a_large_board_reads_a_copy() {
        let large = 1_000_000;
        assert!(builds_from_a_copy(None, 0, 0, COPY_FROM_PLAYERS));
        assert!(builds_from_a_copy(None, 10, 20, large));
        assert!(!builds_from_a_copy(None, 10, 20, COPY_FROM_PLAYERS - 1));
        // Following: the changes since the last publication are held.
        assert!(!builds_from_a_copy(Some(10), 10, 20, large));
        assert!(!builds_from_a_copy(Some(20), 10, 20, large));
        // The history moved past it, or the version went back (another board): a whole build.
        assert!(builds_from_a_copy(Some(9), 10, 20, large));
        assert!(builds_from_a_copy(Some(21), 10, 20, large));
    }

    /// Rounds come four times an interval, so an instance first published between two rounds
    /// is published again at most a round after its interval is over.
    #[test]
    fn rounds_come_four_times_an_interval() {
        assert_eq!(TIMING.round_ms(), 250);
        let tiny = Timing {
            interval_ms: 2,
            idle_ms: 1,
        };
        assert_eq!(tiny.round_ms(), 1);
        // First published at 10,100 (a head request), rounds at 10,250, 10,500, ...: due at
        // the round of 11,250, not a whole interval later.
        let first = at(5, 10_100);
        assert_eq!(due(TIMING, first, 10_100, 6, 11_000), Due::Wait);
        assert_eq!(due(TIMING, first, 10_100, 6, 11_250), Due::Publish);
    }

    /// Rounds follow each other a period apart, and a late one is followed an interval
    /// after it ran, not by a burst of the rounds it missed.
    #[test]
    fn rounds_are_an_interval_apart_and_do_not_bunch_up() {
        assert_eq!(next_round(1_000, 1_000, 1_000), 2_000);
        assert_eq!(next_round(1_000, 1_000, 1_500), 2_000);
        assert_eq!(next_round(1_000, 1_000, 2_000), 3_000);
        assert_eq!(next_round(1_000, 1_000, 9_999), 10_999);
        assert_eq!(next_round(i64::MAX - 5, 1_000, 0), i64::MAX);
    }

    const CAPS: Caps = Caps {
        total: 4,
        per_board: 2,
    };

    /// Under both caps every instance is followed; past one, a closed instance is refused and
    /// a current one displaces the idlest closed instance, of its board when its board is
    /// full, else of any.
    #[test]
    fn the_caps_refuse_closed_instances_and_make_room_for_current_ones() {
        assert_eq!(room(CAPS, 3, 1, false, Some(1), Some(2)), Room::Free);
        assert_eq!(room(CAPS, 3, 1, true, None, None), Room::<u8>::Free);
        // The board is full.
        assert_eq!(room(CAPS, 3, 2, false, Some(1), Some(2)), Room::Full);
        assert_eq!(room(CAPS, 3, 2, true, Some(1), Some(2)), Room::Displace(1));
        assert_eq!(room(CAPS, 3, 2, true, None, Some(2)), Room::Full);
        // All are full, the board is not.
        assert_eq!(room(CAPS, 4, 1, false, Some(1), Some(2)), Room::Full);
        assert_eq!(room(CAPS, 4, 1, true, Some(1), Some(2)), Room::Displace(2));
        assert_eq!(room(CAPS, 4, 1, true, Some(1), None), Room::Full);
    }
}
