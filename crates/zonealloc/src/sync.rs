//! The only module that names a lock or an atomic type.
//!
//! Three builds share one vocabulary:
//! - `cfg(loom)`: loom's model-checked atomics and mutex, for the concurrency tests;
//! - otherwise: core atomics and `lock_api` locks: [`RawSpinLock`] (the kernel's
//!   `spinlock_t`: one compare-and-swap to lock and a plain release store to unlock; waiters
//!   spin briefly, then under `std` yield the thread, so a holder preempted by the scheduler
//!   is not starved) for the PCP locks, and the platform's raw mutex for the zone lock.
//!
//! The `std` answers to "which CPU" (`current_cpu`) and "what time" (`now_ns`) live here; the
//! [`platform`](crate::platform) layer hands them, or the embedder's own, to the zone.
//!
//! Per-frame metadata uses atomics with `Relaxed` ordering only: each frame's fields are
//! guarded by whichever lock owns the list the frame is on, and that lock's acquire/release
//! orders the accesses. The atomics make the *sharing* of one table between locks sound.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicU8};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicU8};

pub(crate) use core::sync::atomic::Ordering;

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

/// The CPU the calling thread runs on (`smp_processor_id`): see [`cpu`].
#[cfg(all(feature = "std", not(loom)))]
pub(crate) use cpu::{current_cpu, current_cpu_index};

#[cfg(all(feature = "std", not(loom)))]
#[allow(unsafe_code)]
mod cpu;

/// Under loom there is no way to ask: CPU 0, unless the caller says. (Without `std` the
/// platform answers: `platform::SingleCpu` or the embedder's.)
#[cfg(all(feature = "std", loom))]
pub(crate) fn current_cpu() -> u32 {
    0
}

/// [`current_cpu`] as an index.
#[cfg(all(feature = "std", loom))]
pub(crate) fn current_cpu_index() -> usize {
    0
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

/// Monotonic nanoseconds for the optional zone-lock hold-time histograms (0 under loom).
#[cfg(feature = "std")]
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
    #[cfg(loom)]
    {
        0
    }
}

/// Initialises every element of `slice` with `init()` and returns it as initialised: the one
/// step of taking uninitialised boot memory (`&'static mut [MaybeUninit<T>]`) that needs
/// `unsafe`.
pub(crate) fn init_slice<T>(
    slice: &'static mut [core::mem::MaybeUninit<T>],
    init: impl Fn() -> T,
) -> &'static mut [T] {
    for e in slice.iter_mut() {
        e.write(init());
    }
    let len = slice.len();
    let ptr = slice.as_mut_ptr().cast::<T>();
    // SAFETY: every element was written just above, `MaybeUninit<T>` has the layout of `T`,
    // and the exclusive `'static` borrow of the memory moves from `slice` (consumed) to the
    // result, so nothing else can reach it.
    #[allow(unsafe_code)]
    unsafe {
        core::slice::from_raw_parts_mut(ptr, len)
    }
}

/// `N` uninitialised `T`s in a `static` (so in `.bss`), handed out once as the
/// `&'static mut [MaybeUninit<T>]` that [`Zone::from_uninit`](crate::Zone::from_uninit)
/// takes: a `no_std` embedder gets its boot storage without `static mut` or `unsafe`.
///
/// ```
/// use zonealloc::platform::StaticStorage;
/// use zonealloc::FrameMeta;
/// static TABLE: StaticStorage<FrameMeta, 4096> = StaticStorage::new();
/// let table = TABLE.take().unwrap();
/// assert_eq!(table.len(), 4096);
/// assert!(TABLE.take().is_none()); // handed out once
/// ```
pub struct StaticStorage<T, const N: usize> {
    taken: core::sync::atomic::AtomicBool,
    cells: core::cell::UnsafeCell<[core::mem::MaybeUninit<T>; N]>,
}

// SAFETY: the cells are reachable only through `take`, which hands out the one `&mut` at most
// once (the swap of `taken`), to whichever thread wins; sending that borrow to another thread
// is sending the `T`s, hence `T: Send`.
#[allow(unsafe_code)]
unsafe impl<T: Send, const N: usize> Sync for StaticStorage<T, N> {}

impl<T, const N: usize> StaticStorage<T, N> {
    /// Storage not handed out yet; all zero bytes but the uninitialised cells, so a
    /// `static` of it goes to `.bss`.
    pub const fn new() -> Self {
        StaticStorage {
            taken: core::sync::atomic::AtomicBool::new(false),
            // SAFETY (no unsafe needed): an array of `MaybeUninit` is valid uninitialised.
            cells: core::cell::UnsafeCell::new([const { core::mem::MaybeUninit::uninit() }; N]),
        }
    }

    /// The storage, the first time; `None` ever after.
    #[allow(clippy::mut_from_ref)] // handed out once: the swap of `taken` makes it unique
    pub fn take(&'static self) -> Option<&'static mut [core::mem::MaybeUninit<T>]> {
        if self.taken.swap(true, core::sync::atomic::Ordering::AcqRel) {
            return None;
        }
        // SAFETY: the swap above returned `false` to exactly one caller, ever, so this is
        // the only reference to the cells that will ever exist; they live for `'static`.
        #[allow(unsafe_code)]
        let cells = unsafe { &mut *self.cells.get() };
        Some(&mut cells[..])
    }
}

impl<T, const N: usize> Default for StaticStorage<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> core::fmt::Debug for StaticStorage<T, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StaticStorage")
            .field("len", &N)
            .field(
                "taken",
                &self.taken.load(core::sync::atomic::Ordering::Relaxed),
            )
            .finish()
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
    /// Whose memory `ptr` points into, and so how `drop` frees it.
    owner: Owner,
}

/// Where a [`StaticSlice`]'s memory came from.
#[derive(Clone, Copy, Debug)]
enum Owner {
    /// Caller storage, never freed here.
    Borrowed,
    /// `Box::into_raw` of a boxed slice.
    #[cfg(feature = "std")]
    Boxed,
    /// `std::alloc::alloc` with this layout, the elements written in place.
    #[cfg(feature = "std")]
    Aligned(std::alloc::Layout),
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
            owner: Owner::Boxed,
        }
    }

    /// `len` elements, each `init()`, on the heap; `None` where the memory cannot be had. A
    /// table of [`HUGE_TABLE_BYTES`] or more is laid on 2 MiB boundaries in whole 2 MiB and
    /// (on Linux) advised to transparent huge pages ([`advise_huge_pages`]): written whole at
    /// once, a zone's frame table of 2^19 frames (6 MiB) then takes four 2 MiB faults, not
    /// some 1,500 of 4 KiB (a heap block of its size starts on a 4 KiB boundary, where huge
    /// pages covered at most its middle).
    #[cfg(feature = "std")]
    pub(crate) fn new_heap(len: usize, init: impl Fn() -> T) -> Option<Self> {
        let bytes = len.checked_mul(core::mem::size_of::<T>())?;
        if bytes >= HUGE_TABLE_BYTES {
            const HUGE_PAGE: usize = 2 << 20;
            return Self::aligned(len, init, HUGE_PAGE, advise_huge_pages);
        }
        let mut v = std::vec::Vec::new();
        v.try_reserve_exact(len).ok()?;
        v.extend((0..len).map(|_| init()));
        Some(Self::from_box(v.into_boxed_slice()))
    }

    /// `len` elements, each `init()`, in a heap block of their size rounded up to `align`
    /// (a power of two) and starting on an `align` boundary; `None` where the layout or the
    /// memory cannot be had. `fresh` sees the whole block before anything of it is touched;
    /// the elements are then written first to last.
    #[cfg(feature = "std")]
    fn aligned(
        len: usize,
        init: impl Fn() -> T,
        align: usize,
        fresh: fn(*mut u8, usize),
    ) -> Option<Self> {
        let bytes = len.checked_mul(core::mem::size_of::<T>())?;
        let layout = std::alloc::Layout::from_size_align(
            bytes.checked_next_multiple_of(align)?.max(align),
            align.max(core::mem::align_of::<T>()),
        )
        .ok()?;
        // SAFETY: `layout` has a non-zero size (at least `align`, a power of two).
        #[allow(unsafe_code)]
        let raw = unsafe { std::alloc::alloc(layout) };
        let base = core::ptr::NonNull::new(raw)?.cast::<T>();
        fresh(raw, layout.size());
        for i in 0..len {
            // SAFETY: the block holds `len` elements of `T` from `base` (its size is at least
            // `bytes`) and is aligned for `T`; element `i` lies inside it, and nothing else
            // refers to the fresh block. Should `init` panic, the block leaks (no UB).
            #[allow(unsafe_code)]
            unsafe {
                base.as_ptr().add(i).write(init());
            }
        }
        Some(StaticSlice {
            ptr: core::ptr::NonNull::slice_from_raw_parts(base, len),
            owner: Owner::Aligned(layout),
        })
    }

    /// Wraps caller-provided storage.
    pub(crate) fn borrowed(slice: &'static [T]) -> Self {
        StaticSlice {
            ptr: core::ptr::NonNull::from(slice),
            owner: Owner::Borrowed,
        }
    }

    /// Whether the slice is caller storage (not freed with this value).
    pub(crate) fn is_borrowed(&self) -> bool {
        matches!(self.owner, Owner::Borrowed)
    }

    /// The slice, for as long as `self` lives.
    #[inline(always)]
    pub(crate) fn get(&self) -> &[T] {
        // SAFETY: `ptr` points to an initialised slice that lives at least as long as `self`:
        // caller storage is `'static`, and owned memory is freed only in `drop`, which the
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
        match core::mem::replace(&mut self.owner, Owner::Borrowed) {
            Owner::Borrowed => {}
            // SAFETY: `Boxed` means `ptr` is exactly what `Box::leak` returned in `from_box`,
            // and resetting the owner first makes this run once. No borrow from `get` is alive
            // (they are tied to `&self`, excluded by `&mut self`), so rebuilding and dropping
            // the box frees the allocation exactly once with nothing pointing into it.
            #[cfg(feature = "std")]
            #[allow(unsafe_code)]
            Owner::Boxed => drop(unsafe { std::boxed::Box::from_raw(self.ptr.as_ptr()) }),
            // SAFETY: `Aligned(layout)` means `ptr` is the `len` elements `aligned` wrote at
            // the start of a block it allocated with `layout`; as above this runs once with no
            // borrow alive, so the elements are dropped in place and the block freed once.
            #[cfg(feature = "std")]
            #[allow(unsafe_code)]
            Owner::Aligned(layout) => unsafe {
                core::ptr::drop_in_place(self.ptr.as_ptr());
                std::alloc::dealloc(self.ptr.cast::<u8>().as_ptr(), layout);
            },
        }
    }
}

impl<T: core::fmt::Debug> core::fmt::Debug for StaticSlice<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StaticSlice")
            .field("len", &self.get().len())
            .field("owner", &self.owner)
            .finish()
    }
}

/// Tables at least this large are laid out for, and on Linux advised to, transparent huge
/// pages.
#[cfg(feature = "std")]
const HUGE_TABLE_BYTES: usize = 4 << 20;

/// Asks Linux to back a fresh heap block (`ptr`, `len`: 2 MiB-aligned, in whole 2 MiB) with
/// transparent huge pages (`madvise(MADV_HUGEPAGE)`, which THP modes `madvise` and `always`
/// honour). Advice only: where it fails, or elsewhere, nothing changes.
#[cfg(feature = "std")]
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    // SAFETY: `ptr..ptr + len` is a block `StaticSlice::aligned` has just allocated and
    // nothing else refers to; MADV_HUGEPAGE changes how its pages are backed, never their
    // contents, and fails harmlessly (EINVAL) on kernels without THP.
    #[cfg(all(target_os = "linux", not(miri), not(loom)))]
    #[allow(unsafe_code)]
    unsafe {
        libc::madvise(ptr.cast::<libc::c_void>(), len, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(all(target_os = "linux", not(miri), not(loom))))]
    let _ = (ptr, len);
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
    fn init_slice_initialises_every_element() {
        static RAW: StaticStorage<u32, 8> = StaticStorage::new();
        let s = init_slice(RAW.take().expect("first take"), || 7);
        assert_eq!(s, &[7; 8]);
    }

    #[test]
    fn static_storage_is_handed_out_once() {
        static S: StaticStorage<u64, 16> = StaticStorage::new();
        let a = S.take().expect("first take");
        assert_eq!(a.len(), 16);
        let a = init_slice(a, || 3);
        a[15] = 4;
        assert!(S.take().is_none());
        assert_eq!(a.iter().sum::<u64>(), 3 * 15 + 4);
    }

    #[test]
    fn aligned_static_slice_is_initialised_aligned_and_freed_once() {
        let s = StaticSlice::aligned(
            1000,
            || u32::MAX,
            1 << 12,
            |ptr, len| {
                assert_eq!((ptr as usize % (1 << 12), len), (0, 4096));
            },
        )
        .expect("memory");
        assert_eq!(s.get(), &[u32::MAX; 1000][..]);
        assert_eq!(s.get().as_ptr() as usize % (1 << 12), 0);
        assert!(!s.is_borrowed());
        drop(s);
        // Elements that own memory are dropped with the block.
        let v = StaticSlice::aligned(3, || std::vec![1u8; 5], 64, |_, _| {}).expect("memory");
        assert_eq!(v.get()[2], [1; 5]);
        assert!(StaticSlice::<u64>::aligned(usize::MAX / 4, || 0, 64, |_, _| {}).is_none());
        // Empty.
        let e = StaticSlice::<u64>::aligned(0, || 0, 64, |_, _| {}).expect("memory");
        assert!(e.get().is_empty());
    }

    #[test]
    fn heap_tables_hold_their_elements() {
        // Below and above the huge-page size.
        let large = if cfg!(miri) { 1000 } else { (5 << 20) / 12 };
        for len in [0, 1, 100, large] {
            let t = StaticSlice::new_heap(len, || 7u32).expect("memory");
            assert_eq!(t.get().len(), len);
            assert!(t.get().iter().all(|&x| x == 7));
        }
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
