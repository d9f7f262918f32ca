//! What the writer does when ingestion pauses: it hands back the memory a burst of writes left
//! behind, so that a service at rest holds its boards and little else.
//!
//! Three things grow during a burst and do not shrink by themselves:
//! - each board's ranked structure, whose leaves inserts leave part empty
//!   ([`Board::repack`](standings_core::Board::repack) fills every leaf under the read lock, and
//!   `install_repacked` swaps it in under the write lock; while the copy is built the structure is
//!   held twice);
//! - the writer's SQLite page cache ([`Store::release_memory`], `PRAGMA shrink_memory`);
//! - the C heap, where glibc keeps the pages of freed request bodies, parsed events and SQLite
//!   pages in each thread's arena ([`trim_heap`], `malloc_trim(0)`). `malloc_trim` does not return
//!   the free top of a thread's arena: glibc shrinks that only past the trim threshold, which it
//!   slides up to 64 MiB as large blocks come and go. [`fix_trim_threshold`] pins it at its
//!   default, 128 KiB, at start, so those free tops go back too.
//!
//! The rest begins a fixed time after the last write, on the injected clock. None of it changes
//! what the service answers: a repacked board has the same ranks, `board_version` and digest, and
//! the next burst refills the cache and the heap as it needs. These two glibc calls are the
//! workspace's only `unsafe`.

use crate::boards::Registry;
use crate::metrics::Metrics;
use crate::store::Store;

/// How long the writer must have had nothing to do before it releases memory (ms, on the
/// injected clock).
pub(crate) const IDLE_BEFORE_RELEASE_MS: i64 = 2_000;

/// Repacks the boards that have room to, releases the writer's page cache and trims the heap.
/// Only the writer calls this, so no board changes meanwhile: each is copied under its read
/// lock (reads go on, on a blocking thread) and swapped under its write lock in O(1).
pub(crate) async fn release(store: &Store, registry: &Registry, metrics: &Metrics) {
    metrics.rests.add(1);
    // Repacking comes first and one trim last: the repack frees the old structure, and a trim
    // before it would leave those pages to the next rest.
    for slot in registry.all_instances() {
        let reading = slot.clone();
        let repacked = tokio::task::spawn_blocking(move || reading.read().repack()).await;
        if let Ok(Some(repacked)) = repacked {
            let old = {
                let mut board = slot.write();
                board.install_repacked(repacked)
            };
            debug_assert!(old, "the writer is the only one that changes a board");
            metrics.boards_repacked.add(u64::from(old));
        }
    }
    if let Err(e) = store.release_memory().await {
        tracing::warn!("could not release the writer's page cache: {e}");
    }
    let _ = tokio::task::spawn_blocking(trim_heap).await;
}

/// Returns the free pages of every malloc arena to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn trim_heap() {
    // SAFETY: malloc_trim takes no pointers and only walks glibc's own free lists under their
    // locks; it is documented as safe to call at any time from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators return memory on their own.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn trim_heap() {}

/// The trim threshold glibc starts with: a thread arena's free top past it goes back to the
/// system when memory is freed.
pub(crate) const TRIM_THRESHOLD: i32 = 128 * 1024;

/// Fixes glibc's trim threshold at [`TRIM_THRESHOLD`] instead of letting it slide up to 64 MiB
/// (which also fixes the mmap threshold at its 128 KiB default: larger blocks are mapped on
/// their own). Called once at start; false if glibc refused.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn fix_trim_threshold() -> bool {
    // SAFETY: mallopt takes two integers and only sets glibc's malloc parameters under its
    // lock; it is documented as safe to call at any time.
    unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 }
}

/// Other allocators have their own policy.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn fix_trim_threshold() -> bool {
    true
}
