//! The core's [`Join`] on threads: the core has none, so the origin gives it a second one
//! wherever two halves of its work can run at once (a checkpoint's id table and tree at a
//! start, a split board's shards while a group is applied).

use standings_core::Join;

/// Runs one side of each join on a scoped thread beside the caller's.
pub(crate) struct TwoThreads;

impl Join for TwoThreads {
    fn join(&self, a: &mut (dyn FnMut() + Send), b: &mut (dyn FnMut() + Send)) {
        std::thread::scope(|scope| {
            scope.spawn(a);
            b();
        });
    }

    fn threads(&self) -> usize {
        // Asked once: the answer reads the process's CPU quota from files.
        static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        *CORES.get_or_init(|| std::thread::available_parallelism().map_or(2, usize::from))
    }
}
