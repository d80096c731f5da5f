//! The allocators `zonealloc bench` compares, behind one interface.
//!
//! A [`PageSource`] is an allocator shared by every thread of a run; each thread asks it for
//! a [`PageWorker`], its own view (zonealloc's is a [`CpuHandle`], a claim on one CPU's
//! lists), and allocates and frees blocks of `2^order` 4 KiB pages through it. A block is a
//! [`Token`]: a frame number for the frame allocators, an address for the others.
//!
//! The peers do not all do the same job, and the table says which does what:
//! - *frame numbers*: zonealloc (with and without per-CPU lists, and behind one global
//!   mutex) and `buddy_system_allocator::LockedFrameAllocator` hand out numbers and never
//!   touch the memory they describe, as a kernel's page allocator does;
//! - *memory, untouched*: `LockedHeap`, `posix_memalign` and mimalloc return page-aligned
//!   memory that the benchmark never writes (the allocator itself may write its headers or
//!   free-list links into it);
//! - *memory, faulted in*: `mmap` + a write to every 4 KiB page + `munmap`, the
//!   will-it-scale `page_fault1` pattern, where the kernel's own page allocator (behind the
//!   page-fault path, page zeroing and the page tables) does the work.
//!
//! Every source can say, once every worker is gone, whether all it handed out came back
//! ([`PageSource::verify_empty`]), where the allocator lets anyone see that.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::{Mutex, PoisonError};

use buddy_system_allocator::{LockedFrameAllocator, LockedHeap};
use clap::ValueEnum;
use serde::Serialize;
use zonealloc::{CpuHandle, CpuId, MigrateType, Order, Pfn, Zone, ZoneConfig, ZoneType};

/// Bytes in one page, the unit every peer allocates in.
pub const PAGE_BYTES: usize = 4096;

/// A block handed out: a frame number or an address.
pub type Token = usize;

/// The migratetype of every zonealloc request, as in the core's criterion benches.
const MT: MigrateType = MigrateType::Movable;

/// An allocator shared by all threads of one run.
pub trait PageSource: Sync {
    /// One thread's access to the allocator.
    type Worker<'a>: PageWorker
    where
        Self: 'a;

    /// The worker of thread `thread` (`0..threads`), made on that thread.
    fn worker(&self, thread: usize) -> Self::Worker<'_>;

    /// After a run, with every worker dropped: `Ok` if everything allocated was freed (and the
    /// allocator's own invariants hold), as far as the allocator can tell.
    fn verify_empty(&self) -> Result<(), String>;

    /// The allocator's own counters after a run, where it keeps any worth showing.
    fn counters(&self) -> Option<Counters> {
        None
    }
}

/// zonealloc's per-CPU list counters over a whole cell (warm-up included), to explain a row.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Counters {
    /// Allocations served from a per-CPU list, percent of allocations on a PCP order.
    pub pcp_hit_pct: f64,
    /// Allocations that found their list empty and refilled it from the buddy.
    pub refills: u64,
    /// Pages moved from the buddy to the lists by refills.
    pub refill_pages: u64,
    /// Pages drained back because a list reached `high`.
    pub drain_high_pages: u64,
    /// Pages drained by the `free_high` rule (seed 000).
    pub drain_free_high_pages: u64,
    /// Operations that found a list's lock taken and went to the buddy instead.
    pub trylock_failures: u64,
    /// CPU 0's `high` at the end, pages.
    pub high_pages: i32,
    /// CPU 0's `batch`, pages.
    pub batch_pages: i32,
}

/// One thread's allocation interface.
pub trait PageWorker {
    /// A block of `2^order` pages, or `None` when the allocator has none.
    fn alloc(&mut self, order: u8) -> Option<Token>;
    /// Gives back a block this source handed out with the same `order`.
    fn free(&mut self, token: Token, order: u8);
}

/// The peers, as `--peer` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Peer {
    /// zonealloc with per-CPU lists (the default configuration): the baseline of every ratio.
    Zonealloc,
    /// zonealloc without per-CPU lists: every operation takes the zone lock.
    ZoneallocBuddy,
    /// The buddy-only zone behind one `std::sync::Mutex`, the naive shared allocator.
    GlobalLock,
    /// `buddy_system_allocator::LockedFrameAllocator<32>` (a spin mutex around `BTreeSet`s).
    BsaFrame,
    /// `buddy_system_allocator::LockedHeap<32>` over a region from the system allocator.
    BsaHeap,
    /// glibc `posix_memalign(4096, 4096 << order)` and `free`.
    PosixMemalign,
    /// mimalloc's aligned allocation (`mi_malloc_aligned`), `mi_free`.
    Mimalloc,
    /// `mmap` + a write to each 4 KiB page + `munmap`: the kernel's page allocator.
    Mmap,
}

/// What a peer's token is, for the table's legend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hands {
    /// Frame numbers; the memory is never touched.
    FrameNumbers,
    /// Addresses of memory the benchmark does not write.
    Memory,
    /// Addresses of memory whose every page the benchmark writes (page faults included).
    TouchedMemory,
}

impl Peer {
    /// Every peer, in table order.
    pub const ALL: [Peer; 8] = [
        Peer::Zonealloc,
        Peer::ZoneallocBuddy,
        Peer::GlobalLock,
        Peer::BsaFrame,
        Peer::BsaHeap,
        Peer::PosixMemalign,
        Peer::Mimalloc,
        Peer::Mmap,
    ];

    /// The `--peer` name.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Zonealloc => "zonealloc",
            Peer::ZoneallocBuddy => "zonealloc-buddy",
            Peer::GlobalLock => "global-lock",
            Peer::BsaFrame => "bsa-frame",
            Peer::BsaHeap => "bsa-heap",
            Peer::PosixMemalign => "posix-memalign",
            Peer::Mimalloc => "mimalloc",
            Peer::Mmap => "mmap",
        }
    }

    /// What its tokens are.
    pub fn hands(self) -> Hands {
        match self {
            Peer::Zonealloc | Peer::ZoneallocBuddy | Peer::GlobalLock | Peer::BsaFrame => {
                Hands::FrameNumbers
            }
            Peer::BsaHeap | Peer::PosixMemalign | Peer::Mimalloc => Hands::Memory,
            Peer::Mmap => Hands::TouchedMemory,
        }
    }

    /// One line for the legend: what exactly a row of this peer measures.
    pub fn about(self) -> &'static str {
        match self {
            Peer::Zonealloc => {
                "zonealloc `Zone`, `ZoneConfig::default()` (per-CPU lists for one CPU per \
                 thread, watermarks from `min_free_kbytes`), each thread through its own \
                 `CpuHandle`; frame numbers"
            }
            Peer::ZoneallocBuddy => {
                "the same zone without per-CPU lists (`without_pcp`): `Zone::alloc`/`free`, \
                 the zone spinlock on every operation; frame numbers"
            }
            Peer::GlobalLock => {
                "the buddy-only zone inside one `std::sync::Mutex` (futex: waiters sleep), \
                 its own zone lock then uncontended; frame numbers"
            }
            Peer::BsaFrame => {
                "`buddy_system_allocator::LockedFrameAllocator<32>` 0.11: `BTreeSet` free \
                 lists under a spin mutex; frame numbers"
            }
            Peer::BsaHeap => {
                "`buddy_system_allocator::LockedHeap<32>` 0.11 (`GlobalAlloc`, layout \
                 4 KiB << order aligned to 4 KiB) over a region from the system allocator; \
                 memory, not written by the benchmark (the heap writes its free-list links)"
            }
            Peer::PosixMemalign => {
                "glibc `posix_memalign(4096, 4096 << order)` + `free`; memory, not written \
                 by the benchmark"
            }
            Peer::Mimalloc => {
                "mimalloc (crate `mimalloc`, `GlobalAlloc` with 4 KiB alignment: \
                 `mi_malloc_aligned`) + `mi_free`; memory, not written by the benchmark"
            }
            Peer::Mmap => {
                "`mmap(4096 << order)` anonymous private + one write per 4 KiB page + \
                 `munmap` (will-it-scale page_fault1): the kernel's page allocator, page \
                 faults, zeroing and page tables included"
            }
        }
    }

    /// Whether this build has the peer (mimalloc needs the `mimalloc` feature).
    pub fn available(self) -> bool {
        self != Peer::Mimalloc || cfg!(feature = "mimalloc")
    }
}

/// `Order` from a workload's order, which is always within the zone's `max_order`.
fn order(o: u8) -> Order {
    Order::new(o).expect("bench orders are at most MAX_ORDER_LIMIT")
}

/// A zone over `pool_pages` frames starting at frame `pool_pages` (aligned to the pool, so
/// a frame allocator sees the same blocks) in the default configuration, which is what a
/// caller gets: watermarks from `min_free_kbytes` (they size the per-CPU lists' `high`),
/// per-CPU lists for `cpus` CPUs, or none.
fn new_zone(pool_pages: u64, cpus: u32, pcp: bool) -> Result<Zone, String> {
    let mut cfg = ZoneConfig::default().with_cpus(cpus.max(1));
    if !pcp {
        cfg = cfg.without_pcp();
    }
    let base = pool_pages;
    let zone = Zone::new(ZoneType::Normal, Pfn(base), Pfn(base + pool_pages), cfg)
        .map_err(|e| format!("zone of {pool_pages} pages: {e}"))?;
    zone.add_free_range(Pfn(base), Pfn(base + pool_pages))
        .map_err(|e| format!("adding {pool_pages} pages: {e}"))?;
    Ok(zone)
}

/// Drains every per-CPU list, then checks the zone's invariants and that no page is
/// allocated.
fn verify_zone(zone: &Zone) -> Result<(), String> {
    zone.drain_all();
    let facts = zone.check().map_err(|e| format!("zone check: {e}"))?;
    if facts.allocated_pages != 0 {
        return Err(format!(
            "{} pages in {} blocks still allocated",
            facts.allocated_pages, facts.allocated_blocks
        ));
    }
    Ok(())
}

/// zonealloc with per-CPU lists: thread `i` works on CPU `i` through a [`CpuHandle`].
#[derive(Debug)]
pub struct ZoneallocPcp(Zone);

impl ZoneallocPcp {
    /// A zone of `pool_pages` frames with lists for `cpus` CPUs.
    pub fn new(pool_pages: u64, cpus: usize) -> Result<Self, String> {
        let cpus = u32::try_from(cpus).map_err(|_| format!("{cpus} CPUs"))?;
        new_zone(pool_pages, cpus, true).map(Self)
    }

    /// A zone built elsewhere (another configuration, to see what a knob does); it must
    /// have per-CPU lists for as many CPUs as the run has threads.
    pub fn from_zone(zone: Zone) -> Self {
        Self(zone)
    }

    /// The zone, for its counters.
    pub fn zone(&self) -> &Zone {
        &self.0
    }
}

/// A thread's [`CpuHandle`] on a [`ZoneallocPcp`].
#[derive(Debug)]
pub struct PcpWorker<'z>(CpuHandle<'z>);

impl PageWorker for PcpWorker<'_> {
    #[inline]
    fn alloc(&mut self, o: u8) -> Option<Token> {
        self.0.alloc(order(o), MT).ok().map(|p| p.get() as Token)
    }

    #[inline]
    fn free(&mut self, token: Token, o: u8) {
        if let Err(e) = self.0.free(Pfn(token as u64), order(o)) {
            panic!("zonealloc refused a free of frame {token}: {e}");
        }
    }
}

impl PageSource for ZoneallocPcp {
    type Worker<'a> = PcpWorker<'a>;

    fn worker(&self, thread: usize) -> PcpWorker<'_> {
        let cpu = CpuId(u32::try_from(thread).expect("thread index fits a CPU id"));
        match self.0.cpu_handle(cpu) {
            Ok(h) => PcpWorker(h),
            Err(e) => panic!("CPU handle for thread {thread}: {e}"),
        }
    }

    fn verify_empty(&self) -> Result<(), String> {
        verify_zone(&self.0)
    }

    fn counters(&self) -> Option<Counters> {
        let s = self.0.pcp_stats();
        let info = self.0.pcp_info(CpuId(0));
        let allocs = s.alloc_hits + s.alloc_misses;
        Some(Counters {
            pcp_hit_pct: if allocs == 0 {
                0.0
            } else {
                s.alloc_hits as f64 * 100.0 / allocs as f64
            },
            refills: s.alloc_misses,
            refill_pages: s.refill_pages,
            drain_high_pages: s.drain_high_pages,
            drain_free_high_pages: s.drain_free_high_pages,
            trylock_failures: s.trylock_failures,
            high_pages: info.high,
            batch_pages: info.batch,
        })
    }
}

/// zonealloc without per-CPU lists, `Zone::alloc`/`Zone::free`.
#[derive(Debug)]
pub struct ZoneallocBuddy(Zone);

impl ZoneallocBuddy {
    /// A buddy-only zone of `pool_pages` frames.
    pub fn new(pool_pages: u64) -> Result<Self, String> {
        new_zone(pool_pages, 1, false).map(Self)
    }
}

/// A thread's view of a shared buddy-only zone (the zone itself is `Sync`).
#[derive(Debug)]
pub struct ZoneWorker<'z>(&'z Zone);

impl PageWorker for ZoneWorker<'_> {
    #[inline]
    fn alloc(&mut self, o: u8) -> Option<Token> {
        self.0.alloc(order(o), MT).ok().map(|p| p.get() as Token)
    }

    #[inline]
    fn free(&mut self, token: Token, o: u8) {
        if let Err(e) = self.0.free(Pfn(token as u64), order(o)) {
            panic!("zonealloc refused a free of frame {token}: {e}");
        }
    }
}

impl PageSource for ZoneallocBuddy {
    type Worker<'a> = ZoneWorker<'a>;

    fn worker(&self, _thread: usize) -> ZoneWorker<'_> {
        ZoneWorker(&self.0)
    }

    fn verify_empty(&self) -> Result<(), String> {
        verify_zone(&self.0)
    }
}

/// The buddy-only zone behind one global `Mutex`.
#[derive(Debug)]
pub struct GlobalLock(Mutex<Zone>);

impl GlobalLock {
    /// A buddy-only zone of `pool_pages` frames inside a mutex.
    pub fn new(pool_pages: u64) -> Result<Self, String> {
        new_zone(pool_pages, 1, false).map(|z| Self(Mutex::new(z)))
    }

    fn zone(&self) -> std::sync::MutexGuard<'_, Zone> {
        // A panicking worker fails the run anyway; the zone itself stays consistent.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A thread's view of a [`GlobalLock`].
#[derive(Debug)]
pub struct GlobalLockWorker<'a>(&'a GlobalLock);

impl PageWorker for GlobalLockWorker<'_> {
    #[inline]
    fn alloc(&mut self, o: u8) -> Option<Token> {
        self.0
            .zone()
            .alloc(order(o), MT)
            .ok()
            .map(|p| p.get() as Token)
    }

    #[inline]
    fn free(&mut self, token: Token, o: u8) {
        if let Err(e) = self.0.zone().free(Pfn(token as u64), order(o)) {
            panic!("zonealloc refused a free of frame {token}: {e}");
        }
    }
}

impl PageSource for GlobalLock {
    type Worker<'a> = GlobalLockWorker<'a>;

    fn worker(&self, _thread: usize) -> GlobalLockWorker<'_> {
        GlobalLockWorker(self)
    }

    fn verify_empty(&self) -> Result<(), String> {
        verify_zone(&self.zone())
    }
}

/// `buddy_system_allocator::LockedFrameAllocator<32>` over the zone's frames.
pub struct BsaFrame {
    alloc: LockedFrameAllocator<32>,
    base: usize,
    pool_pages: usize,
}

impl std::fmt::Debug for BsaFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BsaFrame")
            .field("base", &self.base)
            .field("pool_pages", &self.pool_pages)
            .finish_non_exhaustive()
    }
}

impl BsaFrame {
    /// The frames `pool_pages..2 * pool_pages` (not from frame 0: `add_frame` special-cases
    /// it and would cap the first block at 32 frames).
    pub fn new(pool_pages: u64) -> Result<Self, String> {
        let n = usize::try_from(pool_pages).map_err(|_| format!("{pool_pages} pages"))?;
        let alloc = LockedFrameAllocator::<32>::new();
        alloc.lock().add_frame(n, 2 * n);
        Ok(Self {
            alloc,
            base: n,
            pool_pages: n,
        })
    }
}

/// A thread's view of a [`BsaFrame`].
pub struct BsaFrameWorker<'a>(&'a LockedFrameAllocator<32>);

impl PageWorker for BsaFrameWorker<'_> {
    #[inline]
    fn alloc(&mut self, o: u8) -> Option<Token> {
        self.0.lock().alloc(1 << o)
    }

    #[inline]
    fn free(&mut self, token: Token, o: u8) {
        self.0.lock().dealloc(token, 1 << o);
    }
}

impl PageSource for BsaFrame {
    type Worker<'a> = BsaFrameWorker<'a>;

    fn worker(&self, _thread: usize) -> BsaFrameWorker<'_> {
        BsaFrameWorker(&self.alloc)
    }

    /// `FrameAllocator` keeps its counters private, but a pool that is whole again merges
    /// back into one block: allocating the whole pool must succeed (and then it is freed).
    fn verify_empty(&self) -> Result<(), String> {
        let mut a = self.alloc.lock();
        match a.alloc(self.pool_pages) {
            Some(start) if start == self.base => {
                a.dealloc(start, self.pool_pages);
                Ok(())
            }
            Some(start) => Err(format!("whole pool at frame {start}, not {}", self.base)),
            None => Err("the pool did not merge back into one block: pages leaked".into()),
        }
    }
}

/// The layout of a block of `2^order` pages, page-aligned.
fn block_layout(o: u8) -> Layout {
    Layout::from_size_align(PAGE_BYTES << o, PAGE_BYTES).expect("page-sized power of two")
}

/// `buddy_system_allocator::LockedHeap<32>` managing a region taken from the system
/// allocator (aligned to the region's size, so the heap's blocks are whole buddies).
pub struct BsaHeap {
    heap: LockedHeap<32>,
    region: *mut u8,
    region_layout: Layout,
}

// SAFETY: `region` is owned memory that only the heap (behind its spin mutex) hands out
// and that `Drop` releases once; the raw pointer is what makes the type `!Send`/`!Sync`.
unsafe impl Send for BsaHeap {}
// SAFETY: as above: shared access goes through `LockedHeap`'s mutex only.
unsafe impl Sync for BsaHeap {}

impl std::fmt::Debug for BsaHeap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BsaHeap")
            .field("region_bytes", &self.region_layout.size())
            .finish_non_exhaustive()
    }
}

impl BsaHeap {
    /// A heap of `pool_pages` pages.
    pub fn new(pool_pages: u64) -> Result<Self, String> {
        let bytes = usize::try_from(pool_pages)
            .ok()
            .and_then(|n| n.checked_mul(PAGE_BYTES))
            .ok_or_else(|| format!("{pool_pages} pages do not fit the address space"))?;
        let region_layout = Layout::from_size_align(bytes, bytes)
            .map_err(|e| format!("heap region of {bytes} bytes: {e}"))?;
        if bytes == 0 {
            return Err("a heap of 0 pages".into());
        }
        // SAFETY: the layout's size is not zero.
        let region = unsafe { std::alloc::alloc(region_layout) };
        if region.is_null() {
            return Err(format!("no {bytes}-byte region for the heap"));
        }
        let heap = LockedHeap::<32>::new();
        // SAFETY: `region..region + bytes` is memory we own, unused elsewhere, valid until
        // `Drop` (after the heap is gone from every worker, as they borrow `self`).
        unsafe { heap.lock().init(region as usize, bytes) };
        Ok(Self {
            heap,
            region,
            region_layout,
        })
    }
}

impl Drop for BsaHeap {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once; no worker outlives `self`.
        unsafe { std::alloc::dealloc(self.region, self.region_layout) };
    }
}

/// A thread's view of a [`BsaHeap`].
pub struct BsaHeapWorker<'a>(&'a LockedHeap<32>);

impl PageWorker for BsaHeapWorker<'_> {
    #[inline]
    fn alloc(&mut self, o: u8) -> Option<Token> {
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { GlobalAlloc::alloc(self.0, block_layout(o)) };
        (!p.is_null()).then_some(p as Token)
    }

    #[inline]
    fn free(&mut self, token: Token, o: u8) {
        // SAFETY: `token` came from `alloc` of this heap with the same layout (the runner
        // frees each block once, with its order).
        unsafe { GlobalAlloc::dealloc(self.0, token as *mut u8, block_layout(o)) };
    }
}

impl PageSource for BsaHeap {
    type Worker<'a> = BsaHeapWorker<'a>;

    fn worker(&self, _thread: usize) -> BsaHeapWorker<'_> {
        BsaHeapWorker(&self.heap)
    }

    fn verify_empty(&self) -> Result<(), String> {
        match self.heap.lock().stats_alloc_actual() {
            0 => Ok(()),
            n => Err(format!("{n} bytes still allocated from the heap")),
        }
    }
}

/// glibc `posix_memalign` + `free`. Stateless: conservation is the runner's count only.
#[derive(Debug, Default)]
pub struct PosixMemalign;

impl PageWorker for PosixMemalign {
    #[inline]
    fn alloc(&mut self, o: u8) -> Option<Token> {
        let mut p: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: `p` is a valid out-pointer; the alignment is a power of two and a multiple
        // of `sizeof(void *)`.
        let rc = unsafe { libc::posix_memalign(&mut p, PAGE_BYTES, PAGE_BYTES << o) };
        (rc == 0 && !p.is_null()).then_some(p as Token)
    }

    #[inline]
    fn free(&mut self, token: Token, _o: u8) {
        // SAFETY: `token` came from `posix_memalign` and is freed once.
        unsafe { libc::free(token as *mut libc::c_void) };
    }
}

impl PageSource for PosixMemalign {
    type Worker<'a> = PosixMemalign;

    fn worker(&self, _thread: usize) -> PosixMemalign {
        PosixMemalign
    }

    fn verify_empty(&self) -> Result<(), String> {
        Ok(())
    }
}

/// mimalloc's aligned allocation. Stateless: conservation is the runner's count only.
#[cfg(feature = "mimalloc")]
#[derive(Debug, Default)]
pub struct Mimalloc;

#[cfg(feature = "mimalloc")]
impl PageWorker for Mimalloc {
    #[inline]
    fn alloc(&mut self, o: u8) -> Option<Token> {
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { GlobalAlloc::alloc(&mimalloc::MiMalloc, block_layout(o)) };
        (!p.is_null()).then_some(p as Token)
    }

    #[inline]
    fn free(&mut self, token: Token, o: u8) {
        // SAFETY: `token` came from `MiMalloc::alloc` with this layout and is freed once.
        unsafe { GlobalAlloc::dealloc(&mimalloc::MiMalloc, token as *mut u8, block_layout(o)) };
    }
}

#[cfg(feature = "mimalloc")]
impl PageSource for Mimalloc {
    type Worker<'a> = Mimalloc;

    fn worker(&self, _thread: usize) -> Mimalloc {
        Mimalloc
    }

    fn verify_empty(&self) -> Result<(), String> {
        Ok(())
    }
}

/// `mmap` + touch + `munmap`. Stateless: conservation is the runner's count only.
#[derive(Debug, Default)]
pub struct Mmap;

impl PageWorker for Mmap {
    #[inline]
    fn alloc(&mut self, o: u8) -> Option<Token> {
        let len = PAGE_BYTES << o;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing
        // aliases nothing.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        let base = p.cast::<u8>();
        for page in 0..(1usize << o) {
            // SAFETY: `page * PAGE_BYTES < len`, inside the fresh writable mapping; the
            // volatile write makes sure each page is really faulted in.
            unsafe { base.add(page * PAGE_BYTES).write_volatile(1) };
        }
        Some(p as Token)
    }

    #[inline]
    fn free(&mut self, token: Token, o: u8) {
        // SAFETY: `token..token + len` is a mapping made by `alloc` and unmapped once.
        let rc = unsafe { libc::munmap(token as *mut libc::c_void, PAGE_BYTES << o) };
        assert_eq!(rc, 0, "munmap failed: {}", std::io::Error::last_os_error());
    }
}

impl PageSource for Mmap {
    type Worker<'a> = Mmap;

    fn worker(&self, _thread: usize) -> Mmap {
        Mmap
    }

    fn verify_empty(&self) -> Result<(), String> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<S: PageSource>(s: &S) {
        let mut w = s.worker(0);
        let a = w.alloc(0).expect("order 0");
        let b = w.alloc(3).expect("order 3");
        assert_ne!(a, b);
        w.free(a, 0);
        w.free(b, 3);
        drop(w);
        s.verify_empty().expect("empty after freeing everything");
    }

    #[test]
    fn every_peer_allocates_and_frees() {
        round_trip(&ZoneallocPcp::new(4096, 1).unwrap());
        round_trip(&ZoneallocBuddy::new(4096).unwrap());
        round_trip(&GlobalLock::new(4096).unwrap());
        round_trip(&BsaFrame::new(4096).unwrap());
        round_trip(&BsaHeap::new(4096).unwrap());
        round_trip(&PosixMemalign);
        #[cfg(feature = "mimalloc")]
        round_trip(&Mimalloc);
        round_trip(&Mmap);
    }

    #[test]
    fn memory_peers_return_page_aligned_blocks() {
        let mut w = PosixMemalign;
        let p = w.alloc(2).unwrap();
        assert_eq!(p % PAGE_BYTES, 0);
        w.free(p, 2);
        let heap = BsaHeap::new(1024).unwrap();
        let mut h = heap.worker(0);
        let p = h.alloc(9).unwrap();
        assert_eq!(
            p % (PAGE_BYTES << 9),
            0,
            "a buddy block is aligned to its size"
        );
        h.free(p, 9);
    }

    #[test]
    fn leaks_are_reported() {
        let z = ZoneallocPcp::new(4096, 1).unwrap();
        let mut w = z.worker(0);
        let _kept = w.alloc(0).unwrap();
        drop(w);
        assert!(z.verify_empty().unwrap_err().contains("still allocated"));
        let f = BsaFrame::new(4096).unwrap();
        let _kept = f.worker(0).alloc(0).unwrap();
        assert!(f.verify_empty().is_err());
        let h = BsaHeap::new(1024).unwrap();
        let kept = h.worker(0).alloc(0).unwrap();
        assert!(h.verify_empty().is_err());
        h.worker(0).free(kept, 0);
    }
}
