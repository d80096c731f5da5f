//! zonealloc's three rows: the zone with per-CPU lists (the baseline), the same zone without
//! them, and that buddy-only zone behind one global `Mutex`. Every zone is built the same way
//! ([`ZoneConfig::default`], frames `pool..2 * pool`) and checked the same way after a run.

use std::sync::{Mutex, PoisonError};

use zonealloc::{CpuHandle, CpuId, MigrateType, Order, Pfn, Zone, ZoneConfig, ZoneType};

use super::{Counters, PageSource, PageWorker, Token};

/// The migratetype of every zonealloc request, as in the core's criterion benches.
const MT: MigrateType = MigrateType::Movable;

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
