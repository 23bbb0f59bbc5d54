//! Locks that outlive a panic. A std lock is poisoned when a thread panics
//! while holding it; nothing in the daemon leaves a value half-changed
//! under a lock, so a poisoned lock's value is taken as it is rather than
//! letting one panicked task stop every later caller (a port, a session,
//! the whole gateway). Beside them, [`SharedByKey`]: values made once
//! under a lock and shared by every holder.

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

/// Values made once per key and shared by every holder: the compiled
/// regexes every port and connection of a device family has alike. At
/// most `max` are kept; past it the keeping starts afresh (values in use
/// live on with their holders).
pub struct SharedByKey<K, V> {
    kept: std::sync::OnceLock<Mutex<std::collections::HashMap<K, V>>>,
    max: usize,
}

impl<K: Eq + std::hash::Hash, V: Clone> SharedByKey<K, V> {
    /// An empty store keeping at most `max` values (for a `static`).
    pub const fn new(max: usize) -> SharedByKey<K, V> {
        SharedByKey {
            kept: std::sync::OnceLock::new(),
            max,
        }
    }

    /// The value kept for `key`, or the one `make` makes of it (made
    /// outside the lock, then kept).
    pub fn get_or_make<E>(&self, key: K, make: impl FnOnce(&K) -> Result<V, E>) -> Result<V, E> {
        let kept = self.kept.get_or_init(Mutex::default);
        if let Some(value) = lock(kept).get(&key) {
            return Ok(value.clone());
        }
        let value = make(&key)?;
        let mut kept = lock(kept);
        if kept.len() >= self.max {
            kept.clear();
        }
        kept.insert(key, value.clone());
        Ok(value)
    }
}
