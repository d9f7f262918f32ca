//! The core's [`Join`] on threads: the core has none, so the origin gives it more wherever
//! parts of its work can run at once (a checkpoint's id table and tree at a start, a split
//! board's shards while a group is applied).

use standings_core::Join;

/// Runs one side of each join on a scoped thread beside the caller's, keeping up to this many
/// threads busy; with 1, both sides run in turn on the caller's.
pub(crate) struct Threads(usize);

impl Threads {
    /// Two threads: the caller's and one more.
    pub(crate) const TWO: Threads = Threads(2);

    /// The threads that change a split board's shards: `configured`, or with 0 half the CPUs
    /// this process may use, leaving the rest to connections, the writer and the database.
    pub(crate) fn for_shards(configured: usize) -> Threads {
        if configured > 0 {
            return Threads(configured);
        }
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Threads((cores / 2).max(1))
    }
}

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
