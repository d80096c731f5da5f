//! The only module that names a lock or an atomic type.
//!
//! Three builds share one vocabulary:
//! - `cfg(loom)`: loom's model-checked atomics and mutex, for the concurrency tests;
//! - feature `std`: core atomics and `std::sync::Mutex` (a futex lock: cheap uncontended, and it
//!   sleeps rather than spins when a user-space thread holding it is preempted);
//! - neither: core atomics and `spin::Mutex`, for kernels and unikernels.
//!
//! Per-frame metadata uses atomics with `Relaxed` ordering only: each frame's fields are
//! guarded by whichever lock owns the list the frame is on, and that lock's acquire/release
//! orders the accesses. The atomics make the *sharing* of one table between locks sound.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU16, AtomicU32, AtomicU8};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU16, AtomicU32, AtomicU8};

pub(crate) use core::sync::atomic::Ordering;

#[cfg(loom)]
type RawMutex<T> = loom::sync::Mutex<T>;
#[cfg(loom)]
type RawGuard<'a, T> = loom::sync::MutexGuard<'a, T>;
#[cfg(all(not(loom), feature = "std"))]
type RawMutex<T> = std::sync::Mutex<T>;
#[cfg(all(not(loom), feature = "std"))]
type RawGuard<'a, T> = std::sync::MutexGuard<'a, T>;
#[cfg(all(not(loom), not(feature = "std")))]
type RawMutex<T> = spin::Mutex<T>;
#[cfg(all(not(loom), not(feature = "std")))]
type RawGuard<'a, T> = spin::MutexGuard<'a, T>;

/// A mutual-exclusion lock with a blocking `lock` and a non-blocking `try_lock`.
///
/// Panics inside the allocator are bugs, never caused by caller input; if one happens while a
/// lock is held, the lock is not poisoned for other users (the invariant checker is the tool
/// to find out whether state survived).
#[derive(Debug, Default)]
pub(crate) struct Lock<T>(RawMutex<T>);

/// Guard of a held [`Lock`]; dereferences to the protected value.
pub(crate) type LockGuard<'a, T> = RawGuard<'a, T>;

impl<T> Lock<T> {
    pub(crate) fn new(value: T) -> Self {
        Lock(RawMutex::new(value))
    }

    /// Takes the lock, waiting if needed (Linux: `spin_lock_irqsave`).
    #[inline]
    pub(crate) fn lock(&self) -> LockGuard<'_, T> {
        #[cfg(all(not(loom), feature = "std"))]
        {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }
        #[cfg(loom)]
        {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }
        #[cfg(all(not(loom), not(feature = "std")))]
        {
            self.0.lock()
        }
    }

    /// Takes the lock only if it is free (Linux: `spin_trylock`).
    #[inline]
    #[allow(dead_code)] // used by the per-CPU lists
    pub(crate) fn try_lock(&self) -> Option<LockGuard<'_, T>> {
        #[cfg(all(not(loom), feature = "std"))]
        {
            match self.0.try_lock() {
                Ok(g) => Some(g),
                Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            }
        }
        #[cfg(loom)]
        {
            self.0.try_lock().ok()
        }
        #[cfg(all(not(loom), not(feature = "std")))]
        {
            self.0.try_lock()
        }
    }
}
