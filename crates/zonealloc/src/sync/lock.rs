//! The locks: [`RawSpinLock`] (the kernel's `spinlock_t`), the [`Lock`] wrapper every lock of
//! the crate is (the platform's raw mutex for `zone->lock`, [`SpinLock`] for the PCP locks and
//! the drain mutex), and loom's model of them under `cfg(loom)`.

/// The lock as loom sees it. `loom::sync::Mutex::try_lock` is not a faithful try-lock: a
/// thread paused just before its `try_lock` is *blocked* when another thread takes the mutex
/// (tokio-rs/loom#376), so loom reports correct try-lock loops as livelocks and does not
/// explore their failure path in those schedules. Here, as in [`RawSpinLock`], the lock is a
/// compare-and-swap on a (loom) atomic; the loom mutex only carries the data, for loom's
/// access tracking, and is never contended. The raw mutex type `R` of the platform is not
/// used: loom models this lock in its place.
#[cfg(loom)]
mod loom_lock {
    use core::marker::PhantomData;
    use loom::sync::atomic::{AtomicBool, Ordering};

    #[derive(Debug)]
    pub(crate) struct CasMutex<R, T> {
        locked: AtomicBool,
        data: loom::sync::Mutex<T>,
        raw: PhantomData<fn() -> R>,
    }

    pub(crate) struct CasGuard<'a, R, T> {
        data: Option<loom::sync::MutexGuard<'a, T>>,
        locked: &'a AtomicBool,
        raw: PhantomData<fn() -> R>,
    }

    impl<R, T> CasMutex<R, T> {
        pub(crate) fn new(value: T) -> Self {
            CasMutex {
                locked: AtomicBool::new(false),
                data: loom::sync::Mutex::new(value),
                raw: PhantomData,
            }
        }

        pub(crate) fn try_lock(&self) -> Option<CasGuard<'_, R, T>> {
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
                raw: PhantomData,
            })
        }
    }

    impl<R, T> core::ops::Deref for CasGuard<'_, R, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.data.as_ref().expect("held")
        }
    }

    impl<R, T> core::ops::DerefMut for CasGuard<'_, R, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.data.as_mut().expect("held")
        }
    }

    impl<R, T> Drop for CasGuard<'_, R, T> {
        fn drop(&mut self) {
            self.data = None; // release loom's mutex first: the CAS flag is the real lock
            self.locked.store(false, Ordering::Release);
        }
    }
}

/// The kernel's `spinlock_t`, and the raw lock of the default platforms: `try_lock` is one
/// test-and-set of bit 0 (`fetch_or`, `Acquire`; one `lock bts` on x86-64, where a
/// compare-and-swap needs its expected value set up first) and unlock one `Release` store,
/// the cheapest lock there is when it is rarely contended. The blocking `lock` spins reading
/// the word until it looks free before it tries again, and under `std` yields the thread
/// every 64 failed attempts, since a user-space holder can be preempted. It does not touch
/// interrupts: a kernel whose interrupt handlers allocate gives the zone lock an IRQ-saving
/// lock of its own through [`Platform::RawMutex`](crate::platform::Platform::RawMutex) (see
/// the interrupt rule in [`platform`](crate::platform)).
#[derive(Debug)]
pub struct RawSpinLock {
    /// Bit 0: held. (A word, not a byte: x86-64 has no bit test-and-set of a byte.)
    locked: core::sync::atomic::AtomicU32,
}

impl RawSpinLock {
    /// An unlocked lock.
    pub const fn new() -> RawSpinLock {
        RawSpinLock {
            locked: core::sync::atomic::AtomicU32::new(0),
        }
    }
}

impl Default for RawSpinLock {
    fn default() -> Self {
        RawSpinLock::new()
    }
}

// SAFETY: a lock is held from a `try_lock` whose `fetch_or` found bit 0 of `locked` clear
// (and set it) until `unlock` stores 0, so at most one holder at a time (a `fetch_or` that
// finds the bit set changes nothing); the `Acquire` of the successful `fetch_or` pairs with the `Release` store of the previous holder's unlock, so the
// holder sees every write of the previous holder. `unlock` is called only by the holder
// (`lock_api`'s contract).
#[allow(unsafe_code)]
unsafe impl lock_api::RawMutex for RawSpinLock {
    #[allow(clippy::declare_interior_mutable_const)] // `lock_api`'s initialiser: copied, not shared
    const INIT: RawSpinLock = RawSpinLock::new();
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        let mut spins = 0u32;
        while !self.try_lock() {
            // Test before the next test-and-set: waiters read the word, they do not write it.
            loop {
                spins = spins.wrapping_add(1);
                if spins % 64 == 0 {
                    relax_hard();
                } else {
                    core::hint::spin_loop();
                }
                if !self.is_locked() {
                    break;
                }
            }
        }
    }

    #[inline(always)]
    fn try_lock(&self) -> bool {
        self.locked
            .fetch_or(1, core::sync::atomic::Ordering::Acquire)
            & 1
            == 0
    }

    #[inline(always)]
    unsafe fn unlock(&self) {
        self.locked.store(0, core::sync::atomic::Ordering::Release);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.locked.load(core::sync::atomic::Ordering::Relaxed) & 1 != 0
    }
}

#[cfg(not(loom))]
type RawLock<R, T> = lock_api::Mutex<R, T>;
#[cfg(loom)]
type RawLock<R, T> = loom_lock::CasMutex<R, T>;

/// A lock over `T` with the raw lock `R`: the platform's for `zone->lock`
/// ([`Platform::RawMutex`](crate::platform::Platform::RawMutex)), [`RawSpinLock`] for the PCP
/// locks and the drain mutex ([`SpinLock`]). Under loom, loom's model of a compare-and-swap
/// lock whatever `R` is.
pub(crate) struct Lock<R, T>(RawLock<R, T>);

/// Guard of a held [`Lock`].
#[cfg(not(loom))]
pub(crate) type LockGuard<'a, R, T> = lock_api::MutexGuard<'a, R, T>;
/// Guard of a held [`Lock`].
#[cfg(loom)]
pub(crate) type LockGuard<'a, R, T> = loom_lock::CasGuard<'a, R, T>;

/// The kernel's `spinlock_t` ([`RawSpinLock`]), used for `pcp->lock` and the drain mutex.
/// The per-CPU hot paths only ever `try_lock` it (`pcp_spin_trylock`).
pub(crate) type SpinLock<T> = Lock<RawSpinLock, T>;

/// Guard of a held [`SpinLock`].
pub(crate) type SpinGuard<'a, T> = LockGuard<'a, RawSpinLock, T>;

impl<R: lock_api::RawMutex, T> Lock<R, T> {
    #[cfg(not(loom))]
    pub(crate) const fn new(value: T) -> Self {
        Lock(RawLock::new(value))
    }

    #[cfg(loom)]
    pub(crate) fn new(value: T) -> Self {
        Lock(RawLock::new(value))
    }

    /// `spin_trylock`.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<LockGuard<'_, R, T>> {
        self.0.try_lock()
    }

    /// `spin_lock`: waits for the lock.
    #[cfg(not(loom))]
    #[inline]
    pub(crate) fn lock(&self) -> LockGuard<'_, R, T> {
        self.0.lock()
    }

    /// `spin_lock`: waits for the lock; every failed attempt yields (loom needs a yield in
    /// each spin).
    #[cfg(loom)]
    pub(crate) fn lock(&self) -> LockGuard<'_, R, T> {
        loop {
            if let Some(g) = self.0.try_lock() {
                return g;
            }
            relax_hard();
        }
    }
}

impl<R: lock_api::RawMutex, T: Default> Default for Lock<R, T> {
    fn default() -> Self {
        Lock::new(T::default())
    }
}

impl<R, T> core::fmt::Debug for Lock<R, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Lock { .. }")
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
