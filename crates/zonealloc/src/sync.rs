//! The only module that names a lock or an atomic type.
//!
//! Three builds share one vocabulary:
//! - `cfg(loom)`: loom's model-checked atomics and mutex, for the concurrency tests;
//! - otherwise: core atomics and `spin::Mutex`, as the kernel's `spinlock_t`: one
//!   compare-and-swap to lock and a plain release store to unlock. Waiters spin briefly, then
//!   (under `std`) yield the thread, so a holder preempted by the scheduler is not starved.
//!
//! This is also where the platform comes in: the calling CPU's id (`current_cpu`), the lock
//! type and the clock (`now_ns`) are named here and nowhere else, so a platform layer that
//! lets the embedder supply them replaces this module's `std`/`spin` choice without touching
//! the layers above (see "Layering" in `docs/DESIGN.md`).
//!
//! Per-frame metadata uses atomics with `Relaxed` ordering only: each frame's fields are
//! guarded by whichever lock owns the list the frame is on, and that lock's acquire/release
//! orders the accesses. The atomics make the *sharing* of one table between locks sound.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicU8};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicU8};

pub(crate) use core::sync::atomic::Ordering;

#[cfg(loom)]
type RawSpin<T> = loom_lock::CasMutex<T>;
#[cfg(loom)]
type RawSpinGuard<'a, T> = loom_lock::CasGuard<'a, T>;

/// The lock as loom sees it. `loom::sync::Mutex::try_lock` is not a faithful try-lock: a
/// thread paused just before its `try_lock` is *blocked* when another thread takes the mutex
/// (tokio-rs/loom#376), so loom reports correct try-lock loops as livelocks and does not
/// explore their failure path in those schedules. Here, as in `spin::Mutex`, the lock is a
/// compare-and-swap on a (loom) atomic; the loom mutex only carries the data, for loom's
/// access tracking, and is never contended.
#[cfg(loom)]
mod loom_lock {
    use loom::sync::atomic::{AtomicBool, Ordering};

    #[derive(Debug, Default)]
    pub(crate) struct CasMutex<T> {
        locked: AtomicBool,
        data: loom::sync::Mutex<T>,
    }

    pub(crate) struct CasGuard<'a, T> {
        data: Option<loom::sync::MutexGuard<'a, T>>,
        locked: &'a AtomicBool,
    }

    impl<T> CasMutex<T> {
        pub(crate) fn new(value: T) -> Self {
            CasMutex {
                locked: AtomicBool::new(false),
                data: loom::sync::Mutex::new(value),
            }
        }

        pub(crate) fn try_lock(&self) -> Option<CasGuard<'_, T>> {
            self.locked
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .ok()?;
            let data = self
                .data
                .try_lock()
                .expect("only the CAS winner takes the data");
            Some(CasGuard {
                data: Some(data),
                locked: &self.locked,
            })
        }
    }

    impl<T> core::ops::Deref for CasGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.data.as_ref().expect("held")
        }
    }

    impl<T> core::ops::DerefMut for CasGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.data.as_mut().expect("held")
        }
    }

    impl<T> Drop for CasGuard<'_, T> {
        fn drop(&mut self) {
            self.data = None; // release loom's mutex first: the CAS flag is the real lock
            self.locked.store(false, Ordering::Release);
        }
    }
}
#[cfg(not(loom))]
type RawSpin<T> = spin::Mutex<T>;
#[cfg(not(loom))]
type RawSpinGuard<'a, T> = spin::MutexGuard<'a, T>;

/// The kernel's `spinlock_t`, used for `pcp->lock`, `zone->lock` and the drain mutex:
/// `try_lock` is one compare-and-swap and unlock one release store, the cheapest lock there is
/// when it is rarely contended. The per-CPU hot paths only ever `try_lock`; the blocking
/// `lock` (zone lock, drains, decay) spins briefly and then yields the thread, since a
/// user-space holder can be preempted.
#[derive(Debug, Default)]
pub(crate) struct SpinLock<T>(RawSpin<T>);

/// Guard of a held [`SpinLock`].
pub(crate) type SpinGuard<'a, T> = RawSpinGuard<'a, T>;

impl<T> SpinLock<T> {
    #[cfg(not(loom))]
    pub(crate) const fn new(value: T) -> Self {
        SpinLock(RawSpin::new(value))
    }

    #[cfg(loom)]
    pub(crate) fn new(value: T) -> Self {
        SpinLock(RawSpin::new(value))
    }

    /// `spin_trylock`.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        self.0.try_lock()
    }

    /// `spin_lock`: waits for the lock.
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        let mut spins = 0u32;
        loop {
            if let Some(g) = self.0.try_lock() {
                return g;
            }
            spins = spins.wrapping_add(1);
            // Under loom every failed attempt yields: loom needs a yield in each spin.
            if cfg!(loom) || spins % 64 == 0 {
                relax_hard();
            } else {
                core::hint::spin_loop();
            }
        }
    }
}

/// Backs off harder than a spin-loop hint: yields the thread under `std` (a holder may have
/// been preempted), spins under `no_std`.
#[inline]
pub(crate) fn relax_hard() {
    #[cfg(all(not(loom), feature = "std"))]
    std::thread::yield_now();
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(all(not(loom), not(feature = "std")))]
    core::hint::spin_loop();
}

/// The CPU the calling thread runs on (`smp_processor_id`), from `sched_getcpu` under `std` on
/// Linux, else a per-thread slot handed out round-robin. Callers reduce it modulo their CPU
/// count. The answer may be stale by the time it is used (the thread can migrate); that is
/// harmless because the PCP lock, not the CPU id, guards the lists.
#[cfg(all(feature = "std", not(loom)))]
#[inline]
pub(crate) fn current_cpu() -> u32 {
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        // SAFETY: sched_getcpu takes no arguments, touches no caller memory and only returns
        // an int (-1 on error).
        #[allow(unsafe_code)]
        let c = unsafe { libc::sched_getcpu() };
        if c >= 0 {
            return c as u32;
        }
    }
    thread_slot()
}

/// Without `std` (or under loom) there is no way to ask: CPU 0, unless the caller says.
#[cfg(any(not(feature = "std"), loom))]
pub(crate) fn current_cpu() -> u32 {
    0
}

#[cfg(all(feature = "std", not(loom)))]
fn thread_slot() -> u32 {
    use core::sync::atomic::AtomicU32 as StdAtomicU32;
    static NEXT: StdAtomicU32 = StdAtomicU32::new(0);
    std::thread_local! {
        static SLOT: u32 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    SLOT.with(|s| *s)
}

/// A number unique to the calling thread (from 1), or 0 where threads cannot be told apart
/// (`no_std`, loom). Lets a drain recognise the CPU its own thread owns.
#[cfg(all(feature = "std", not(loom)))]
pub(crate) fn thread_token() -> u64 {
    static NEXT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);
    std::thread_local! {
        static TOKEN: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    TOKEN.with(|t| *t)
}

/// A number unique to the calling thread, or 0 where threads cannot be told apart.
#[cfg(any(not(feature = "std"), loom))]
pub(crate) fn thread_token() -> u64 {
    0
}

/// Monotonic nanoseconds for the optional zone-lock hold-time histograms (0 without `std`).
#[inline]
pub(crate) fn now_ns() -> u64 {
    #[cfg(all(feature = "std", not(loom)))]
    {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }
    #[cfg(any(not(feature = "std"), loom))]
    {
        0
    }
}

/// A slice that is either borrowed for `'static` (caller-provided storage, `no_std`) or a heap
/// allocation this value owns. Either way accesses see one plain slice, with no branch on
/// where the storage came from: the per-frame table is read several times per allocation.
///
/// Only the raw pointer is stored, never a reference: a reference field would be retagged
/// (and protected) whenever the value moves, and could then not be invalidated by the free in
/// `drop`. `get` derives each borrow from the pointer.
pub(crate) struct StaticSlice<T: 'static> {
    ptr: core::ptr::NonNull<[T]>,
    /// `ptr` came from `Box::into_raw` and is freed on drop.
    owned: bool,
}

// SAFETY: a `StaticSlice<T>` only ever hands out `&[T]`, like a `&'static [T]` or a `Box<[T]>`
// would; the pointer is used to free the allocation once, in `drop`. So it may move to another
// thread when `T: Send + Sync` (ownership of the box, shared access) ...
#[allow(unsafe_code)]
unsafe impl<T: Send + Sync> Send for StaticSlice<T> {}
// SAFETY: ... and be shared when `T: Sync`: `&StaticSlice<T>` gives only `&[T]`.
#[allow(unsafe_code)]
unsafe impl<T: Sync> Sync for StaticSlice<T> {}

impl<T> StaticSlice<T> {
    /// Takes ownership of a heap slice.
    #[cfg(feature = "std")]
    pub(crate) fn from_box(b: std::boxed::Box<[T]>) -> Self {
        StaticSlice {
            ptr: core::ptr::NonNull::from(std::boxed::Box::leak(b)),
            owned: true,
        }
    }

    /// Wraps caller-provided storage.
    pub(crate) fn borrowed(slice: &'static [T]) -> Self {
        StaticSlice {
            ptr: core::ptr::NonNull::from(slice),
            owned: false,
        }
    }

    /// Whether the slice is caller storage (not freed with this value).
    pub(crate) fn is_borrowed(&self) -> bool {
        !self.owned
    }

    /// The slice, for as long as `self` lives.
    #[inline(always)]
    pub(crate) fn get(&self) -> &[T] {
        // SAFETY: `ptr` points to an initialised slice that lives at least as long as `self`:
        // caller storage is `'static`, and an owned box is freed only in `drop`, which the
        // borrow of `self` returned here rules out while it lives. Only shared borrows are ever
        // made from `ptr` (until `drop`), so this one aliases nothing mutable.
        #[allow(unsafe_code)]
        unsafe {
            self.ptr.as_ref()
        }
    }
}

impl<T> Drop for StaticSlice<T> {
    fn drop(&mut self) {
        #[cfg(feature = "std")]
        if self.owned {
            self.owned = false;
            // SAFETY: `owned` means `ptr` is exactly what `Box::leak` returned in `from_box`, and
            // clearing it first makes this run once. No borrow from `get` is alive (they are tied
            // to `&self`, excluded by `&mut self`), so rebuilding and dropping the box frees the
            // allocation exactly once with nothing pointing into it.
            #[allow(unsafe_code)]
            drop(unsafe { std::boxed::Box::from_raw(self.ptr.as_ptr()) });
        }
    }
}

impl<T: core::fmt::Debug> core::fmt::Debug for StaticSlice<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StaticSlice")
            .field("len", &self.get().len())
            .field("owned", &self.owned)
            .finish()
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn owned_static_slice_is_readable_and_freed_once() {
        let v: Vec<u64> = (0..1000).collect();
        let s = StaticSlice::from_box(v.into_boxed_slice());
        assert_eq!(s.get().len(), 1000);
        assert_eq!(s.get()[999], 999);
        drop(s); // Miri reports a leak or a double free here if the SAFETY argument is wrong
    }

    #[test]
    fn borrowed_static_slice_is_not_freed() {
        static DATA: [u8; 4] = [1, 2, 3, 4];
        let s = StaticSlice::borrowed(&DATA);
        assert_eq!(s.get(), &[1, 2, 3, 4]);
        drop(s);
        assert_eq!(DATA[3], 4);
    }
}
