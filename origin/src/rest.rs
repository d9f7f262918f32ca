//! What the writer does when ingestion pauses: it hands back the memory a burst of writes left
//! behind, so that a service at rest holds its boards and little else.
//!
//! Two things grow during a burst and do not shrink by themselves: the writer's SQLite page
//! cache (up to 64 MiB, [`Store::release_memory`]), and the C heap, where glibc keeps the pages
//! of freed request bodies, parsed events and SQLite pages in each thread's arena instead of
//! returning them to the system ([`trim_heap`]). Neither changes any state: the next burst
//! refills the cache and the heap as it needs.

use crate::store::Store;

/// How long the writer must have had nothing to do before it releases memory.
pub const IDLE_BEFORE_RELEASE: std::time::Duration = std::time::Duration::from_secs(2);

/// Releases the writer's page cache and trims the heap, off the async threads.
pub async fn release(store: &Store) {
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
