//! How the core runs independent parts of its work at once without starting threads itself:
//! the driver hands it a [`Join`].

/// Runs two independent halves of a long job and returns once both are done: on two threads
/// where the caller has them (a start reading a checkpoint, a split board's shards settled),
/// one after the other otherwise.
pub trait Join {
    /// Runs `a` and `b`, each once.
    fn join(&self, a: &mut (dyn FnMut() + Send), b: &mut (dyn FnMut() + Send));

    /// How many threads joins may keep busy at once: work is cut into no more sides than
    /// this, since sides beyond the cores only wait for one. 2 unless the driver says.
    fn threads(&self) -> usize {
        2
    }
}

/// [`Join`] on the caller's thread: `a`, then `b`.
pub struct OneThread;

impl Join for OneThread {
    fn join(&self, a: &mut (dyn FnMut() + Send), b: &mut (dyn FnMut() + Send)) {
        a();
        b();
    }

    fn threads(&self) -> usize {
        1
    }
}

/// [`Join`] on threads, for drivers with `std`: each join runs one side on a scoped thread
/// beside the caller's, keeping up to this many threads busy; with 1, both sides run in turn on
/// the caller's.
#[cfg(feature = "std")]
#[derive(Clone, Copy, Debug)]
pub struct Threads(pub usize);

#[cfg(feature = "std")]
impl Join for Threads {
    fn join(&self, a: &mut (dyn FnMut() + Send), b: &mut (dyn FnMut() + Send)) {
        if self.0 <= 1 {
            a();
            b();
            return;
        }
        std::thread::scope(|scope| {
            scope.spawn(a);
            b();
        });
    }

    fn threads(&self) -> usize {
        self.0
    }
}
