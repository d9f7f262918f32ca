//! Locks that stay usable after a holder panicked. Every guarded value here is changed by
//! whole assignments or single inserts, so a panic (a bug) leaves it readable; one bug must not
//! turn every later request that touches the lock into a panic too.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// [`Mutex::lock`], recovering from poison.
pub(crate) trait LockUnpoisoned<T> {
    /// Locks, waiting for the lock, whether or not an earlier holder panicked.
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T>;
}

impl<T> LockUnpoisoned<T> for Mutex<T> {
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// [`RwLock::read`] and [`RwLock::write`], recovering from poison.
pub(crate) trait RwLockUnpoisoned<T> {
    /// A shared guard, whether or not an earlier holder panicked.
    fn read_unpoisoned(&self) -> RwLockReadGuard<'_, T>;
    /// An exclusive guard, whether or not an earlier holder panicked.
    fn write_unpoisoned(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T> RwLockUnpoisoned<T> for RwLock<T> {
    fn read_unpoisoned(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_unpoisoned(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(|e| e.into_inner())
    }
}
