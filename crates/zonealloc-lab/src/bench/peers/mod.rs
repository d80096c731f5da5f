//! The allocators `zonealloc bench` compares, behind one interface.
//!
//! A [`PageSource`] is an allocator shared by every thread of a run; each thread asks it for
//! a [`PageWorker`], its own view (zonealloc's is a [`CpuHandle`](zonealloc::CpuHandle), a claim on one CPU's
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

//!
//! One file per family: [`zone`] (zonealloc's three configurations), [`bsa`]
//! (`buddy_system_allocator`), [`system`] (glibc, mimalloc and the kernel through `mmap`).

pub mod bsa;
pub mod system;
pub mod zone;

use std::alloc::Layout;

use clap::ValueEnum;
use serde::Serialize;

pub use bsa::{BsaFrame, BsaHeap};
#[cfg(feature = "mimalloc")]
pub use system::Mimalloc;
pub use system::{Mmap, PosixMemalign};
pub use zone::{GlobalLock, ZoneallocBuddy, ZoneallocPcp};

/// Bytes in one page, the unit every peer allocates in.
pub const PAGE_BYTES: usize = 4096;

/// A block handed out: a frame number or an address.
pub type Token = usize;

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

/// The layout of a block of `2^order` pages, page-aligned.
pub(crate) fn block_layout(o: u8) -> Layout {
    Layout::from_size_align(PAGE_BYTES << o, PAGE_BYTES).expect("page-sized power of two")
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
