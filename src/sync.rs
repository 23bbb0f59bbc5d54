//! Locks that outlive a panic. A std lock is poisoned when a thread panics
//! while holding it; nothing in the daemon leaves a value half-changed
//! under a lock, so a poisoned lock's value is taken as it is rather than
//! letting one panicked task stop every later caller (a port, a session,
//! the whole gateway).

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, taking the value of a poisoned one.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reads `lock`, taking the value of a poisoned one.
pub fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

/// Writes `lock`, taking the value of a poisoned one.
pub fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}
