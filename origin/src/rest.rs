//! What the writer does when ingestion pauses: it hands back the memory a burst of writes left
//! behind, so that a service at rest holds its boards and little else.
//!
//! Three things grow during a burst and do not shrink by themselves:
//! - each board's ranked structure, whose leaves inserts leave part empty
//!   ([`Board::repack`](standings_core::Board::repack) packs them as a checkpoint load does:
//!   at 10M members loaded by the load generator, 3.3 bytes per member less at rest; while
//!   the copy is built the structure is held twice, about 250 MB more for ~3 s);
//! - the writer's SQLite page cache (up to 64 MiB, [`Store::release_memory`]);
//! - the C heap, where glibc keeps the pages of freed request bodies, parsed events and SQLite
//!   pages in each thread's arena instead of returning them to the system ([`trim_heap`]).
//!
//! None of it changes what the service answers: a repacked board has the same ranks,
//! `board_version` and digest, and the next burst refills the cache and the heap as it needs.

use crate::boards::Registry;
use crate::metrics::Metrics;
use crate::store::Store;

/// How long the writer must have had nothing to do before it releases memory.
pub const IDLE_BEFORE_RELEASE: std::time::Duration = std::time::Duration::from_secs(2);

/// Repacks the boards that have room to, releases the writer's page cache and trims the heap.
/// Only the writer calls this, so no board changes meanwhile: each is copied under its read
/// lock (reads go on, on a blocking thread) and swapped under its write lock in O(1).
pub async fn release(store: &Store, registry: &Registry, metrics: &Metrics) {
    metrics.rests.add(1);
    // Repacking comes first and one trim last. Trimming before the copies are made lowered
    // the peak (906 against 984 MiB at 10M members) but left more resident at rest (649 and
    // 654 MiB against 609, one 10M load each); why is not established.
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
        eprintln!("standings: could not release the writer's page cache: {e}");
    }
    let _ = tokio::task::spawn_blocking(trim_heap).await;
}

/// Returns the free pages of every malloc arena to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn trim_heap() {
    // SAFETY: malloc_trim takes no pointers and only walks glibc's own free lists under their
    // locks; it is documented as safe to call at any time from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators return memory on their own.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn trim_heap() {}
