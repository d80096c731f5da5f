//! The platform layer: what an embedder (a kernel, a hypervisor, a unikernel) tells the
//! allocator about the machine it runs on. One trait, [`Platform`], names three things:
//!
//! - **the calling CPU** ([`Platform::current_cpu`], `smp_processor_id`): which CPU's per-CPU
//!   lists `Zone::alloc`, `Zone::free`, `drain_local` use, and which CPU `drain_all` counts as
//!   its own. It is a hint: the answer may be stale by the time it is used (the caller may
//!   migrate), which is harmless because the PCP lock, not the CPU id, guards the lists.
//!   Reduced modulo the zone's CPU count.
//! - **the zone lock** ([`Platform::RawMutex`], a [`lock_api::RawMutex`]): `zone->lock`,
//!   taken (blocking) by every refill, drain, bulk free and buddy fallback. A kernel whose
//!   interrupt handlers allocate or free names an IRQ-saving lock here
//!   (`spin_lock_irqsave`), see the interrupt rule below.
//! - **a clock** ([`Platform::now_ns`], optional): monotonic nanoseconds for the zone-lock
//!   hold-time histograms (`Zone::set_instrumentation`); 0 by default.
//!
//! The zone takes the platform as a type parameter, `Zone<P: Platform = DefaultPlatform>`
//! (and [`Node<P>`](crate::Node), [`CpuHandle<'_, P>`](crate::CpuHandle)), so the calls are
//! static and inlined: the default platform's hit path costs no more than before the layer
//! existed (117 and 122 instructions per hit pair through a `CpuHandle` and through
//! `Zone::alloc_with(.on_cpu)`, from 119 and 122; `crates/zonealloc-icount`).
//!
//! # The default platforms
//! - [`StdPlatform`] (feature `std`, the default): the CPU from glibc's rseq area (one load
//!   off the thread pointer, Linux x86-64 and aarch64), else a per-thread CPU refreshed from
//!   `sched_getcpu` every 64 calls (a round-robin per-thread slot where there is none),
//!   [`RawSpinLock`], `std::time::Instant`.
//! - [`SingleCpu`] (always available; the default without `std`): CPU 0 for every caller,
//!   [`RawSpinLock`], no clock. Correct on any number of CPUs (the locks, not the CPU id,
//!   make the allocator safe), but every CPU then shares CPU 0's lists, one contended list.
//!   A `no_std` embedder with more than one CPU names its own platform:
//!
//! ```
//! use zonealloc::platform::{Platform, RawSpinLock};
//!
//! /// This kernel's platform: the CPU index the boot code keeps in a per-CPU register.
//! struct Kernel;
//!
//! impl Platform for Kernel {
//!     type RawMutex = RawSpinLock; // or an IRQ-saving lock, see below
//!     fn current_cpu() -> u32 {
//!         // e.g. read `tp` (riscv64) or `gs:[cpu_number]` (x86-64)
//!         0
//!     }
//! }
//!
//! type KernelZone = zonealloc::Zone<Kernel>;
//! ```
//!
//! # The interrupt rule
//! The per-CPU (PCP) locks are the core's own [`RawSpinLock`]s, and the allocation and free
//! paths only ever *try* them (`pcp_spin_trylock`): when the code an interrupt handler
//! interrupted holds this CPU's PCP lock (it was allocating, freeing, or a `CpuHandle` holds
//! the lists), the handler's try-lock fails and it allocates from (or frees to) the buddy
//! lists under the zone lock instead (`rmqueue_buddy`, `free_one_page`), counted as a trylock
//! failure. So the PCP locks never make an interrupt handler wait.
//!
//! The zone lock is **not** try-locked: it is waited for. If an interrupt arrives while the
//! interrupted code holds the zone lock (a refill, a drain, a bulk free, a buddy
//! allocation) and the handler allocates or frees, the handler spins on a lock that its own
//! CPU holds and will never release: a deadlock. Hence:
//!
//! - **Allocating and freeing from an interrupt handler is safe if and only if the
//!   platform's [`RawMutex`](Platform::RawMutex) disables interrupts on the local CPU while it
//!   is held** (saving and restoring the previous state, as `spin_lock_irqsave` does), so that
//!   no interrupt can arrive on a CPU that holds the zone lock. With [`RawSpinLock`] (the
//!   default) it is not safe. This is Linux's own arrangement: `pcp->lock` is a trylock with
//!   preemption off, `zone->lock` is `spin_lock_irqsave`.
//! - In a handler, allocate with a request that cannot reclaim,
//!   [`AllocRequest::atomic`](crate::AllocRequest::atomic) (`GFP_ATOMIC`):
//!   `Zone::alloc` and `AllocRequest::new` may, when memory is short, drain every CPU's lists
//!   (`drain_all_pages` in the slow path), and a drain *waits* for each PCP lock, which the
//!   interrupted code may hold. Frees ([`Zone::free`](crate::Zone::free),
//!   [`Zone::free_on`](crate::Zone::free_on)) never wait for a PCP lock.
//! - Never call from an interrupt handler what waits for a PCP lock: `drain_all`,
//!   `drain_local`, `drain_cpu`, `tick`, `check`, `pcp_info`, `pcp_pages`, `pcp_stats`,
//!   `write_pagesets`, `cpu_handle` and any `CpuHandle` method (a handle is a thread's claim
//!   on its CPU's lists).
//! - [`Platform::current_cpu`] and [`Platform::now_ns`] must themselves be callable wherever
//!   the zone is used, interrupt handlers included.
//!
//! # Memory ordering
//! - The platform's lock must order like a mutex: acquiring it (`lock`, a successful
//!   `try_lock`) is an `Acquire`, releasing it a `Release`, so a holder sees everything the
//!   previous holder wrote (`lock_api`'s contract; [`RawSpinLock`] is a test-and-set with
//!   `Acquire` and a `Release` store).
//! - The per-frame table is accessed with `Relaxed` atomics only; each frame's entry is
//!   guarded by the lock of the list it is on (zone lock or a PCP lock) or by its owner while
//!   allocated, and that lock's acquire/release orders the accesses. The one read-modify-write
//!   on an entry, the state change of a free, makes two racing frees of one block see each
//!   other without any ordering beyond the entry itself.
//! - The lock-free hints (a PCP's count hint, the zone's free-page mirror and flag byte, a
//!   slot's `attention` word) are read without the lock and only steer a decision that the
//!   locked path re-checks.
//! - Handing a frame to another CPU (an allocation on one CPU, its free on another) needs no
//!   more ordering than the embedder's own hand-over of the frame number.

pub use crate::sync::{RawSpinLock, StaticStorage};
pub use lock_api;

/// What the embedder provides: the calling CPU, the zone lock and an optional clock. See the
/// [module documentation](self) for the interrupt rule and the memory-ordering assumptions.
///
/// The functions take no `self`: a platform is a type, named once as the zone's type
/// parameter (`Zone<MyPlatform>`), and its calls are static.
pub trait Platform: 'static {
    /// The raw lock of `zone->lock`. For a kernel whose interrupt handlers allocate or free,
    /// a lock that disables interrupts on the local CPU while held (saving and restoring
    /// the previous state); otherwise [`RawSpinLock`] or the kernel's own spinlock or ticket
    /// lock. `Send + Sync` so that the zone is.
    type RawMutex: lock_api::RawMutex + Send + Sync;

    /// The calling CPU (`smp_processor_id`), any `u32`: the zone reduces it modulo its CPU
    /// count. Called on every allocation and free without an explicit CPU, so it should be a
    /// register read, not a system call; it must be callable from every context the zone is
    /// used in (interrupt handlers included).
    fn current_cpu() -> u32;

    /// [`Platform::current_cpu`] widened to `usize`, which is what the zone indexes with.
    /// A platform may answer it directly to save the widening (`StdPlatform` does); it must
    /// equal `current_cpu() as usize`.
    #[doc(hidden)]
    #[inline(always)]
    fn current_cpu_index() -> usize {
        Self::current_cpu() as usize
    }

    /// Monotonic nanoseconds, for the optional zone-lock hold-time histograms (read only
    /// while `Zone::set_instrumentation(true)`). 0 when the platform has no clock.
    #[inline]
    fn now_ns() -> u64 {
        0
    }
}

/// The platform of a hosted build (feature `std`): the CPU from rseq's `cpu_id` on Linux
/// with glibc 2.35+ (x86-64, aarch64), else a per-thread CPU refreshed from `sched_getcpu`
/// every 64 calls (a per-thread slot handed out round-robin where that cannot answer),
/// [`RawSpinLock`] (which yields the thread after spinning a while) and
/// `std::time::Instant`. Under loom, CPU 0 and no clock.
#[cfg(feature = "std")]
#[derive(Debug, Clone, Copy, Default)]
pub struct StdPlatform;

#[cfg(feature = "std")]
impl Platform for StdPlatform {
    type RawMutex = RawSpinLock;

    #[inline(always)]
    fn current_cpu() -> u32 {
        crate::sync::current_cpu()
    }

    #[inline(always)]
    fn current_cpu_index() -> usize {
        crate::sync::current_cpu_index()
    }

    #[inline]
    fn now_ns() -> u64 {
        crate::sync::now_ns()
    }
}

/// A platform that reports CPU 0 for every caller, with [`RawSpinLock`] and no clock: the
/// default without `std`, where the core cannot ask which CPU it runs on. Correct with any
/// number of CPUs, but they all share CPU 0's per-CPU lists; a multi-CPU `no_std` embedder
/// implements [`Platform`] instead.
#[derive(Debug, Clone, Copy, Default)]
pub struct SingleCpu;

impl Platform for SingleCpu {
    type RawMutex = RawSpinLock;

    #[inline(always)]
    fn current_cpu() -> u32 {
        0
    }
}

/// The platform a plain `Zone` uses: [`StdPlatform`] with the `std` feature, [`SingleCpu`]
/// without it.
#[cfg(feature = "std")]
pub type DefaultPlatform = StdPlatform;

/// The platform a plain `Zone` uses: [`StdPlatform`] with the `std` feature, [`SingleCpu`]
/// without it.
#[cfg(not(feature = "std"))]
pub type DefaultPlatform = SingleCpu;
