//! What every hart does: allocate and free blocks of mixed orders on its own CPU's lists,
//! write a pattern to every page it is given and check it before giving the page back.
//!
//! A block is held in one of `SLOTS` slots; each step picks a slot at random and frees its
//! block (after checking its pattern) or, if it is empty, allocates one into it. One free in
//! eight instead hands the block to the next CPU's mailbox, and that CPU checks the pattern and
//! frees the block on its own lists: a page allocated on one CPU and freed on another, as
//! when Linux frees a page on the CPU that last used it. Two harts handed overlapping frames
//! would overwrite each other's patterns, and the check before the free would catch it.

use core::sync::atomic::{AtomicU64, Ordering};

use zonealloc::numa::{MemPolicy, TaskPolicy};
use zonealloc::{
    AllocError, AllocRequest, CpuId, FreeError, Machine, MigrateType, Order, Pfn, Zone,
};

use crate::platform::Hart;

use crate::memory::PAGE_SIZE;

/// Steps per hart.
pub const STEPS: u32 = 10_000;
/// Steps between two runs of a CPU's vmstat worker (on a machine of several nodes).
pub const VMSTAT_EVERY: u32 = 64;

/// What the workload allocates from: one zone, or a machine of several nodes.
pub trait Pages: Sync {
    /// Allocates on the calling CPU.
    fn alloc(&self, order: Order, mt: MigrateType) -> Result<Pfn, AllocError>;
    /// Frees on the calling CPU.
    fn free(&self, pfn: Pfn, order: Order) -> Result<(), FreeError>;
    /// Whether `pfn` lies on CPU `cpu`'s node.
    fn local(&self, cpu: u32, pfn: Pfn) -> bool;
    /// CPU `cpu`'s periodic work; what it changed.
    fn tick(&self, cpu: u32) -> u32;
}

impl Pages for Zone<Hart> {
    fn alloc(&self, order: Order, mt: MigrateType) -> Result<Pfn, AllocError> {
        Zone::alloc(self, order, mt)
    }

    fn free(&self, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        Zone::free(self, pfn, order)
    }

    fn local(&self, _cpu: u32, _pfn: Pfn) -> bool {
        true
    }

    fn tick(&self, _cpu: u32) -> u32 {
        0
    }
}

impl Pages for Machine<Hart> {
    /// The default policy, `MPOL_LOCAL`: the calling CPU's node first (`numa_node_id()`),
    /// then the others in its zonelist's order.
    fn alloc(&self, order: Order, mt: MigrateType) -> Result<Pfn, AllocError> {
        let mut task = TaskPolicy::new(MemPolicy::Local);
        self.alloc_policy(order, AllocRequest::new(mt), &mut task)
    }

    /// To the calling CPU's pageset of the page's own zone, whichever node it is on.
    fn free(&self, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        Machine::free(self, pfn, order)
    }

    fn local(&self, cpu: u32, pfn: Pfn) -> bool {
        let home = self.cpu_to_node(CpuId(cpu));
        self.node_of(pfn).is_some_and(|x| Some(x.id()) == home)
    }

    /// The CPU's vmstat worker (`refresh_cpu_vm_stats`): expires its remote pagesets.
    fn tick(&self, cpu: u32) -> u32 {
        self.vmstat_tick(CpuId(cpu))
    }
}
/// Blocks a hart holds at most.
const SLOTS: usize = 32;
const WORDS_PER_PAGE: usize = (PAGE_SIZE / 8) as usize;

/// One hart's results, written by that hart, read by the boot hart after the barrier.
#[derive(Default)]
pub struct CpuCounters {
    /// The hart id.
    pub hart: AtomicU64,
    /// Successful allocations.
    pub allocs: AtomicU64,
    /// Of `allocs`, those on the CPU's own node.
    pub local_allocs: AtomicU64,
    /// What the CPU's vmstat worker changed (remote pagesets expired and drained).
    pub vmstat_changes: AtomicU64,
    /// Frees.
    pub frees: AtomicU64,
    /// Allocations refused (a full zone, a watermark).
    pub failed: AtomicU64,
    /// Of `frees`, blocks another CPU allocated and handed over.
    pub remote_frees: AtomicU64,
    /// Pages written and checked.
    pub pages: AtomicU64,
    /// `time` ticks the loop took.
    pub ticks: AtomicU64,
}

impl CpuCounters {
    /// All zero.
    pub const fn new() -> Self {
        CpuCounters {
            hart: AtomicU64::new(0),
            allocs: AtomicU64::new(0),
            local_allocs: AtomicU64::new(0),
            vmstat_changes: AtomicU64::new(0),
            frees: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            remote_frees: AtomicU64::new(0),
            pages: AtomicU64::new(0),
            ticks: AtomicU64::new(0),
        }
    }
}

/// Blocks handed to one CPU by the CPU before it, with the CPU whose pattern they carry.
struct Mailbox {
    blocks: [(Pfn, Order, u32); MAILBOX_BLOCKS],
    len: usize,
}

const MAILBOX_BLOCKS: usize = 8;

/// One mailbox per CPU.
static MAILBOXES: [spin::Mutex<Mailbox>; crate::MAX_CPUS] = [const {
    spin::Mutex::new(Mailbox {
        blocks: [(Pfn(0), Order::ZERO, 0); MAILBOX_BLOCKS],
        len: 0,
    })
}; crate::MAX_CPUS];

/// Puts a block in `to`'s mailbox; gives it back if the mailbox is full.
fn post(to: usize, block: (Pfn, Order, u32)) -> Result<(), (Pfn, Order, u32)> {
    let mut m = MAILBOXES[to].lock();
    if m.len == MAILBOX_BLOCKS {
        return Err(block);
    }
    let i = m.len;
    m.blocks[i] = block;
    m.len += 1;
    Ok(())
}

/// Takes every block out of `cpu`'s mailbox.
fn collect(cpu: usize) -> ([(Pfn, Order, u32); MAILBOX_BLOCKS], usize) {
    let mut m = MAILBOXES[cpu].lock();
    let taken = (m.blocks, m.len);
    m.len = 0;
    taken
}

/// xorshift64*: a deterministic stream per hart.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The word at `word` of frame `pfn` while CPU `cpu` holds it.
fn pattern(cpu: u32, pfn: u64, word: usize) -> u64 {
    (u64::from(cpu) + 1) << 56 | pfn << 9 | word as u64
}

fn page_words(pfn: u64) -> *mut u64 {
    (pfn * PAGE_SIZE) as *mut u64
}

/// Fills every page of the block with this CPU's pattern.
fn fill(cpu: u32, pfn: Pfn, order: Order) {
    for p in pfn.0..pfn.0 + order.pages() {
        let base = page_words(p);
        for w in 0..WORDS_PER_PAGE {
            // SAFETY: the zone only holds RAM frames the device tree listed and nothing else
            // reserved (memory.rs), paging is off so frame `p` is at `p * PAGE_SIZE`, and the
            // allocator has just given this block to this hart alone; volatile, because
            // another hart writing here would be the allocator bug this test looks for.
            unsafe { base.add(w).write_volatile(pattern(cpu, p, w)) };
        }
    }
}

/// Checks the pattern on every page of the block; panics (and fails the run) on a mismatch.
fn verify(cpu: u32, pfn: Pfn, order: Order) {
    for p in pfn.0..pfn.0 + order.pages() {
        let base = page_words(p);
        for w in 0..WORDS_PER_PAGE {
            // SAFETY: as in `fill`: a RAM frame of a block this hart holds.
            let got = unsafe { base.add(w).read_volatile() };
            let want = pattern(cpu, p, w);
            if got != want {
                panic!("cpu {cpu}: frame {p:#x} word {w}: found {got:#018x}, wrote {want:#018x}");
            }
        }
    }
}

/// Orders 0..=3 (the per-CPU lists' orders), and some 9 (2 MiB, past them, from the buddy).
fn pick_order(r: u64) -> Order {
    let o = match r % 20 {
        0..=7 => 0,
        8..=10 => 1,
        11..=13 => 2,
        14..=17 => 3,
        _ => 9,
    };
    Order::new(o).expect("orders up to 9 are below MAX_ORDER")
}

/// The loop of one hart, on CPU `cpu` of `cpus` of `zone`. `all_posted` returns once every
/// CPU has stopped handing blocks over, so that the last mailbox sweep finds everything.
pub fn run(zone: &impl Pages, cpu: u32, cpus: usize, out: &CpuCounters, all_posted: impl Fn()) {
    let mut rng =
        Rng(0x9e37_79b9_7f4a_7c15 ^ (u64::from(cpu) + 1).wrapping_mul(0xd1b5_4a32_d192_ed03));
    let mut held: [Option<(Pfn, Order)>; SLOTS] = [None; SLOTS];
    let (mut allocs, mut frees, mut remote_frees, mut failed, mut pages) = (0u64, 0, 0, 0, 0);
    let (mut local_allocs, mut vmstat_changes) = (0u64, 0u64);
    let next = (cpu as usize + 1) % cpus;
    let start = crate::sbi::rdtime();
    // Checks the pattern `owner` wrote, then frees on this CPU's lists.
    let give_back = |pfn: Pfn, order: Order, owner: u32| {
        verify(owner, pfn, order);
        if let Err(e) = zone.free(pfn, order) {
            panic!("cpu {cpu}: free of {pfn:?} order {order}: {e}");
        }
    };
    let sweep = |frees: &mut u64, remote_frees: &mut u64| {
        let (blocks, len) = collect(cpu as usize);
        for &(pfn, order, owner) in &blocks[..len] {
            give_back(pfn, order, owner);
            *frees += 1;
            *remote_frees += 1;
        }
    };
    for step in 0..STEPS {
        let r = rng.next();
        let slot = (r % SLOTS as u64) as usize;
        match held[slot].take() {
            Some((pfn, order)) => {
                let handed = cpus > 1 && r >> 32 & 7 == 0 && post(next, (pfn, order, cpu)).is_ok();
                if !handed {
                    give_back(pfn, order, cpu);
                    frees += 1;
                }
            }
            None => {
                let order = pick_order(r >> 16);
                let mt = if r >> 40 & 1 == 0 {
                    MigrateType::Movable
                } else {
                    MigrateType::Unmovable
                };
                match zone.alloc(order, mt) {
                    Ok(pfn) => {
                        fill(cpu, pfn, order);
                        held[slot] = Some((pfn, order));
                        allocs += 1;
                        local_allocs += u64::from(zone.local(cpu, pfn));
                        pages += order.pages();
                    }
                    Err(_) => failed += 1,
                }
            }
        }
        if step % 16 == 15 {
            sweep(&mut frees, &mut remote_frees);
        }
        if step % VMSTAT_EVERY == VMSTAT_EVERY - 1 {
            vmstat_changes += u64::from(zone.tick(cpu));
        }
    }
    for (pfn, order) in held.iter_mut().filter_map(Option::take) {
        give_back(pfn, order, cpu);
        frees += 1;
    }
    all_posted();
    sweep(&mut frees, &mut remote_frees);
    out.ticks
        .store(crate::sbi::rdtime() - start, Ordering::Relaxed);
    out.allocs.store(allocs, Ordering::Relaxed);
    out.local_allocs.store(local_allocs, Ordering::Relaxed);
    out.vmstat_changes.store(vmstat_changes, Ordering::Relaxed);
    out.frees.store(frees, Ordering::Relaxed);
    out.remote_frees.store(remote_frees, Ordering::Relaxed);
    out.failed.store(failed, Ordering::Relaxed);
    out.pages.store(pages, Ordering::Relaxed);
}
