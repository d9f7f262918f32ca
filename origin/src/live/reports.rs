//! When the changes reported for a board were committed, kept until every topic of the board has
//! read past them, so that each delta is dated by the earliest change it carries.

use std::collections::VecDeque;
use std::time::Instant;

/// The commit instants of the changes reported for one board ([`Hub::changed`]), numbered in
/// report order, kept until every topic of the board has read past them. Each topic remembers
/// the number of the first report its view has not read, so a delta is dated by the earliest
/// change since its own last read: a view read late in one window and early in the next is
/// not dated from when the first window began, which would add the window's work to its lag.
#[derive(Default)]
pub(super) struct Reports {
    /// The number the next report gets.
    pub(super) next: u64,
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
    pub(super) fn push(&mut self, committed: Instant) {
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
    pub(super) fn earliest_from(&self, seen: u64) -> Option<Instant> {
        if seen >= self.next {
            return None;
        }
        let first = self.next - self.instants.len() as u64;
        let index = usize::try_from(seen.saturating_sub(first)).unwrap_or(usize::MAX);
        self.instants.get(index).copied()
    }

    /// Notes that a window read the board with every report before `next` applied.
    pub(super) fn read_up_to(&mut self, next: u64) {
        self.read_from = Some(self.read_from.map_or(next, |from| from.min(next)));
    }

    /// Forgets, at a window's start, the reports every topic has read: those before the lowest
    /// `next` the last window read the board at (each of its topics read at one of those).
    /// When the last window read none of its topics (it has none with an instance), the
    /// reports it could have read go, and only later ones stay. O(reports dropped).
    pub(super) fn forget_read(&mut self) {
        let below = self.read_from.take().unwrap_or(self.offered);
        self.offered = self.next;
        let first = self.next - self.instants.len() as u64;
        let drop = usize::try_from(below.saturating_sub(first)).unwrap_or(usize::MAX);
        self.instants.drain(..drop.min(self.instants.len()));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Reports are found from the first a topic has not read, even when one came out of order;
    /// a window forgets only those every topic read, and those of a board nobody read once a
    /// window could have read them.
    #[test]
    fn reports_keep_what_a_topic_has_not_read() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut reports = Reports::default();
        for ms in [10, 20, 15, 30] {
            reports.push(at(ms));
        }
        assert_eq!(reports.earliest_from(0), Some(at(10)));
        assert_eq!(reports.earliest_from(1), Some(at(15)));
        assert_eq!(reports.earliest_from(3), Some(at(30)));
        assert_eq!(reports.earliest_from(4), None);
        // A window read the board once every report was in: all read at the next window's start.
        reports.read_up_to(2);
        reports.read_up_to(4);
        reports.forget_read();
        assert_eq!(reports.earliest_from(2), Some(at(15)));
        assert_eq!(reports.earliest_from(0), Some(at(15)), "fell behind what is kept");
        reports.push(at(40));
        reports.forget_read();
        assert_eq!(reports.earliest_from(4), Some(at(40)), "offered to no window yet");
        reports.forget_read();
        assert_eq!(
            reports.earliest_from(4),
            None,
            "offered to a window that read no topic"
        );
        assert!(reports.instants.is_empty());
    }
}
