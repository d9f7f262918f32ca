//! Board work that takes its turn on the applying thread, between the groups it applies.
//!
//! The applier takes a board's write lock for every event, and a live window reads thousands of
//! views under the read lock. Two threads sharing one lock that way hand it over thousands of
//! times a second, and whichever wakes second waits: writes fell behind views, or, under
//! closed-loop writes, views behind writes. Work queued here runs on the applier's own thread in
//! the order it was queued among the groups, so neither waits for a lock the other holds: a
//! group waits at most for one turn queued before it, and a turn for the groups queued before
//! it (a few). Callers keep each turn short (the window reads a few milliseconds of views per
//! turn) so that writes keep coming first.

use std::sync::{Arc, RwLock};

use crate::sync::RwLockUnpoisoned;

/// Work to run on the applying thread.
pub(crate) type Turn = Box<dyn FnOnce() + Send>;

/// What queues turns: the writer's applier while it runs.
pub(crate) trait TakesTurns: Send + Sync {
    /// Queues `turn` behind what was queued before it (waiting while the queue is full), or
    /// gives it back when nothing will run it. Called from a blocking thread, never a runtime's.
    fn queue(&self, turn: Turn) -> Result<(), Turn>;
}

/// Where a registry's board work takes its turn (see the module doc).
#[derive(Default)]
pub(crate) struct Turns(RwLock<Option<Arc<dyn TakesTurns>>>);

impl Turns {
    /// Turns are taken by `taker` from now on.
    pub(crate) fn set(&self, taker: Arc<dyn TakesTurns>) {
        *self.0.write_unpoisoned() = Some(taker);
    }

    /// Runs `work` on the applying thread in its turn, or on this thread when no applier runs
    /// (a copy kept by a standby, a writer that stopped), and returns what it returned; `None`
    /// when the applying thread dropped it unrun (it stopped meanwhile). Blocks until then, so it
    /// is called from a blocking thread only.
    pub(crate) fn run<R: Send + 'static>(&self, work: impl FnOnce() -> R + Send + 'static) -> Option<R> {
        let taker = self.0.read_unpoisoned().clone();
        let Some(taker) = taker else {
            return Some(work());
        };
        let (done, result) = std::sync::mpsc::sync_channel(1);
        let turn: Turn = Box::new(move || {
            let _ = done.send(work());
        });
        match taker.queue(turn) {
            Ok(()) => result.recv().ok(),
            Err(turn) => {
                turn();
                result.recv().ok()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Queues turns and runs them when told, as the applying thread does between groups.
    #[derive(Default)]
    struct Held(Mutex<Vec<Turn>>);

    impl TakesTurns for Held {
        fn queue(&self, turn: Turn) -> Result<(), Turn> {
            self.0.lock().unwrap().push(turn);
            Ok(())
        }
    }

    struct Gone;

    impl TakesTurns for Gone {
        fn queue(&self, turn: Turn) -> Result<(), Turn> {
            Err(turn)
        }
    }

    /// Without an applier the work runs here; with one, it runs where the applier runs it, and
    /// its result comes back; an applier that is gone gives the work back to run here.
    #[test]
    fn work_runs_where_its_turn_is_taken() {
        let turns = Turns::default();
        assert_eq!(turns.run(|| 7), Some(7));

        let held = Arc::new(Held::default());
        turns.set(held.clone());
        let runner = {
            let held = held.clone();
            std::thread::spawn(move || {
                loop {
                    if let Some(turn) = held.0.lock().unwrap().pop() {
                        turn();
                        return;
                    }
                    std::thread::yield_now();
                }
            })
        };
        let on = turns.run(|| std::thread::current().id());
        runner.join().unwrap();
        assert_ne!(on, Some(std::thread::current().id()));

        turns.set(Arc::new(Gone));
        assert_eq!(turns.run(|| 8), Some(8));
    }

    /// A turn dropped unrun (the applying thread stopped) answers `None` rather than waiting.
    #[test]
    fn a_turn_dropped_unrun_answers_none() {
        let turns = Turns::default();
        let held = Arc::new(Held::default());
        turns.set(held.clone());
        let dropper = std::thread::spawn(move || {
            loop {
                if held.0.lock().unwrap().pop().is_some() {
                    return;
                }
                std::thread::yield_now();
            }
        });
        assert_eq!(turns.run(|| 1), None);
        dropper.join().unwrap();
    }
}
