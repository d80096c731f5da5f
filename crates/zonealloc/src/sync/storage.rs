//! Storage for tables and per-CPU slots: [`StaticStorage`] (uninitialised `'static` memory
//! handed out once), [`init_slice`], and [`StaticSlice`], a slice that is owned (boxed,
//! zeroed on the heap, or mapped on huge pages) or borrowed for `'static`.

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

/// Writes the items of `items` to the first elements of `slice` and returns those as
/// initialised (the rest stays uninitialised and unused); `None` where `items` has more than
/// `slice` holds (the items written are then leaked, never dropped: boot memory).
pub(crate) fn init_prefix<T>(
    slice: &'static mut [core::mem::MaybeUninit<T>],
    items: impl IntoIterator<Item = T>,
) -> Option<&'static mut [T]> {
    let mut items = items.into_iter();
    let mut len = 0;
    for e in slice.iter_mut() {
        let Some(item) = items.next() else { break };
        e.write(item);
        len += 1;
    }
    if items.next().is_some() {
        return None;
    }
    let ptr = slice.as_mut_ptr().cast::<T>();
    // SAFETY: the first `len` elements were written just above, `MaybeUninit<T>` has the
    // layout of `T`, and the exclusive `'static` borrow of the memory moves from `slice`
    // (consumed) to the result, so nothing else can reach it.
    #[allow(unsafe_code)]
    unsafe {
        Some(core::slice::from_raw_parts_mut(ptr, len))
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
    /// `std::alloc::alloc_zeroed` with this layout.
    #[cfg(all(feature = "std", not(loom)))]
    Zeroed(std::alloc::Layout),
    /// An anonymous mapping of this many bytes, from `ptr` on.
    #[cfg(all(feature = "std", target_os = "linux", not(miri), not(loom)))]
    Mapped(usize),
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

    /// `len` elements, each `init()`, on the heap; `None` where the memory cannot be had.
    /// (A loom build's frame table: loom's atomics are no plain memory, so it cannot take
    /// [`StaticSlice::zeroed_heap`]'s zero bytes.)
    #[cfg(all(feature = "std", loom))]
    pub(crate) fn new_heap(len: usize, init: impl Fn() -> T) -> Option<Self> {
        let mut v = std::vec::Vec::new();
        v.try_reserve_exact(len).ok()?;
        v.extend((0..len).map(|_| init()));
        Some(Self::from_box(v.into_boxed_slice()))
    }

    /// `len` elements of all-zero bytes on the heap, none of their memory touched here; `None`
    /// where the memory cannot be had. The pages are the kernel's zero pages until first
    /// written, so a zone's frame table costs only the part its memory uses (a 16 GiB span's
    /// 48 MiB table, of which a trace may touch a tenth). On Linux a table of
    /// [`HUGE_TABLE_BYTES`] or more is mapped fresh, on 2 MiB boundaries in whole 2 MiB, and
    /// advised to transparent huge pages ([`StaticSlice::mapped`]): written whole, a zone of
    /// 2^19 frames (6 MiB) then takes three 2 MiB faults, not some 1,500 of 4 KiB. Elsewhere,
    /// and below that size, `alloc_zeroed` (`calloc`, which takes large blocks from fresh
    /// mappings too).
    #[cfg(all(feature = "std", not(loom)))]
    pub(crate) fn zeroed_heap(len: usize) -> Option<Self>
    where
        T: Zeroable,
    {
        let layout = std::alloc::Layout::array::<T>(len).ok()?;
        #[cfg(all(target_os = "linux", not(miri)))]
        if layout.size() >= HUGE_TABLE_BYTES {
            return Self::mapped(len, layout.size());
        }
        if layout.size() == 0 {
            return Some(Self::from_box(std::vec::Vec::new().into_boxed_slice()));
        }
        // SAFETY: `layout` has a non-zero size (tested above).
        #[allow(unsafe_code)]
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let base = core::ptr::NonNull::new(raw)?.cast::<T>();
        // All-zero bytes are `len` valid elements (`T: Zeroable`), in a block of their size
        // and alignment.
        Some(StaticSlice {
            ptr: core::ptr::NonNull::slice_from_raw_parts(base, len),
            owner: Owner::Zeroed(layout),
        })
    }

    /// [`StaticSlice::zeroed_heap`] for `bytes` (at least 2 MiB) on Linux: an anonymous
    /// mapping of `bytes` rounded up to 2 MiB, on a 2 MiB boundary (a larger mapping, its
    /// head and tail unmapped), advised `MADV_HUGEPAGE`. Without `MAP_NORESERVE`, so that
    /// the kernel's overcommit check refuses a table no memory could hold (an error for a
    /// span sized from untrusted input, not a kill at first touch).
    #[cfg(all(feature = "std", target_os = "linux", not(miri), not(loom)))]
    fn mapped(len: usize, bytes: usize) -> Option<Self>
    where
        T: Zeroable,
    {
        const HUGE_PAGE: usize = 2 << 20;
        let size = bytes.checked_next_multiple_of(HUGE_PAGE)?;
        let map_len = size.checked_add(HUGE_PAGE)?;
        // SAFETY: an anonymous private mapping where the kernel chooses: it overlaps no memory
        // Rust knows about. The result is checked for MAP_FAILED.
        #[allow(unsafe_code)]
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        // Pointer arithmetic, so that the pointers keep the mapping's provenance.
        let start = p.cast::<u8>();
        let head = (start as usize).wrapping_neg() & (HUGE_PAGE - 1);
        let base = start.wrapping_add(head);
        let tail = map_len - head - size;
        // SAFETY: `start..base` and `base + size..start + map_len` are the head and tail of the
        // mapping just made, whole pages that nothing refers to; `base..base + size` is the
        // rest of it, whose backing (never its contents) MADV_HUGEPAGE changes. A failed trim
        // or advice leaves bytes mapped or small pages, nothing worse.
        #[allow(unsafe_code)]
        unsafe {
            if head > 0 {
                libc::munmap(p, head);
            }
            if tail > 0 {
                libc::munmap(base.wrapping_add(size).cast(), tail);
            }
            libc::madvise(base.cast(), size, libc::MADV_HUGEPAGE);
        }
        // Fresh anonymous pages read as zero bytes: `len` valid elements (`T: Zeroable`).
        Some(StaticSlice {
            ptr: core::ptr::NonNull::slice_from_raw_parts(
                core::ptr::NonNull::new(base)?.cast::<T>(),
                len,
            ),
            owner: Owner::Mapped(size),
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
            // SAFETY: `Zeroed(layout)` means `ptr` is the block `zeroed_heap` allocated with
            // `layout`; as above this runs once with no borrow alive, so the elements are
            // dropped in place and the block freed once.
            #[cfg(all(feature = "std", not(loom)))]
            #[allow(unsafe_code)]
            Owner::Zeroed(layout) => unsafe {
                core::ptr::drop_in_place(self.ptr.as_ptr());
                std::alloc::dealloc(self.ptr.cast::<u8>().as_ptr(), layout);
            },
            // SAFETY: `Mapped(size)` means `ptr` starts the `size`-byte mapping `mapped` made;
            // as above this runs once with no borrow alive, so it is unmapped once, after the
            // elements are dropped in place.
            #[cfg(all(feature = "std", target_os = "linux", not(miri), not(loom)))]
            #[allow(unsafe_code)]
            Owner::Mapped(size) => unsafe {
                core::ptr::drop_in_place(self.ptr.as_ptr());
                libc::munmap(self.ptr.cast::<libc::c_void>().as_ptr(), size);
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

/// Tables at least this large are mapped on Linux, on 2 MiB boundaries, and advised to
/// transparent huge pages.
#[cfg(all(feature = "std", target_os = "linux", not(miri), not(loom)))]
const HUGE_TABLE_BYTES: usize = 4 << 20;

/// Types for which all-zero bytes are a valid value that needs no drop, so that
/// [`StaticSlice::zeroed_heap`] may hand out memory it never wrote.
///
/// # Safety
/// An implementor must be valid as all-zero bytes, and dropping it in place must do nothing
/// (its memory is given back without writing it).
#[cfg(all(feature = "std", not(loom)))]
#[allow(unsafe_code)]
pub(crate) unsafe trait Zeroable {}

// SAFETY: zero is a valid `u32`, and integers need no drop.
#[cfg(all(test, feature = "std", not(loom)))]
#[allow(unsafe_code)]
unsafe impl Zeroable for u32 {}

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

    #[cfg(not(loom))]
    #[test]
    fn zeroed_heap_tables_are_zero_and_freed_once() {
        // Below and above the size mapped on Linux (Miri allocates it, smaller).
        let large = if cfg!(miri) { 1000 } else { (5 << 20) / 4 };
        for len in [0, 1, 100, large] {
            let t = StaticSlice::<u32>::zeroed_heap(len).expect("memory");
            assert_eq!(t.get().len(), len);
            assert!(t.get().iter().all(|&x| x == 0));
            assert!(!t.is_borrowed());
            if len == large && cfg!(all(target_os = "linux", not(miri))) {
                // Mapped on a 2 MiB boundary.
                assert_eq!(t.get().as_ptr() as usize % (2 << 20), 0);
            }
            drop(t); // Miri reports a leak or a double free here if the SAFETY argument is wrong
        }
        assert!(StaticSlice::<u32>::zeroed_heap(usize::MAX / 2).is_none());
    }

    #[test]
    fn borrowed_static_slice_is_not_freed() {
        static DATA: [u8; 4] = [1, 2, 3, 4];
        let s = StaticSlice::borrowed(&DATA);
        assert_eq!(s.get(), &[1, 2, 3, 4]);
        drop(s);
        assert_eq!(DATA[3], 4);
    }

    #[test]
    fn init_prefix_hands_back_the_written_prefix_only() {
        static THREE: StaticStorage<u64, 3> = StaticStorage::new();
        let got = init_prefix(THREE.take().unwrap(), [7, 8]).unwrap();
        assert_eq!(got, &[7, 8]);
        got[1] = 9; // the exclusive borrow moved to the result
        assert_eq!(got, &[7, 9]);
        static ONE: StaticStorage<u64, 1> = StaticStorage::new();
        assert!(init_prefix(ONE.take().unwrap(), [1, 2]).is_none());
    }
}
