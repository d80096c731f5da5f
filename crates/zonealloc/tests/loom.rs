//! Loom models of the per-CPU list (PCP) locking: every interleaving (up to a preemption bound)
//! of a few threads working one tiny zone is explored, and each must keep the invariants.
//!
//! Built only with `--cfg loom`, under which `sync.rs` swaps in loom's mutex and atomics:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=/tmp/target-loom \
//!     cargo test -p zonealloc --test loom --release
//! ```
//!
//! The zone is 16 frames (max order 2, pageblock order 1, no watermarks) with two CPUs whose
//! lists hold `batch` 2 and `high` 4 (fixed), so refills and drains happen within a handful of
//! operations. Every model ends at quiescence with [`quiesce`]: `drain_all`, `check()`, every
//! CPU's count 0 and `free_pages == managed_pages`.
//!
//! Models:
//! 1. `local_ops_vs_remote_drain_*`: order-0 allocations and frees on CPU 0 (the trylock path)
//!    racing `drain_cpu(0)` / `drain_all`; live pages are distinct and `Allocated`; the stats
//!    account for every operation (`hits + misses + frees + trylock_failures == ops`). The
//!    `chunked_free` variant (batch 1) makes a free reach `high` and drain in chunks, unlocking
//!    and re-trylocking between them, while the drainer competes.
//! 2. `two_cpus_*`: CPUs 0 and 1 refill concurrently (order 0 and order 1); all blocks
//!    disjoint; in the second variant the frees are concurrent too.
//! 3. `trylock_failure_*`: an operation that finds its CPU's lock taken goes to the buddy:
//!    deterministically under `OwnerOnly` (a handle holds the lists: exactly one failure per
//!    operation), and racily under `Spinlock` against a drainer.
//! 4. `owner_drain_*` and `owner_only_*`: the owner-drain handshake (`owned`, the drain request,
//!    `wait_owner`, `CpuHandle::{poll, drop}`): an owner frees to its lists, then polls or drops
//!    its handle, while another thread drains; the drain must return (a lost request shows as a
//!    thread spinning forever: loom's "Model exceeded maximum number of branches") and leave the
//!    page in the buddy. Also: two owners calling `CpuHandle::drain_all` at once, a handle
//!    registered while `drain_all` runs, and the owner's published count after a drain.
//!
//! Models that must observe an outcome (a trylock failure, the owner or the drainer doing the
//! drain) record it across interleavings ([`Seen`]) and assert it occurred, so that a model
//! cannot pass vacuously.
//!
//! Under loom, `sync.rs` builds `SpinLock` as a compare-and-swap flag rather than on
//! `loom::sync::Mutex`, whose `try_lock` can *block* a thread paused just before it when
//! another thread takes the mutex (tokio-rs/loom#376): with it, loom reported the allocator's
//! correct try-lock loops as livelocks and skipped trylock-failure schedules.
//!
//! Loom limitation to keep in mind when adding models: two threads spin-waiting (with
//! `yield_now`) on a third can starve it in loom's schedules, which loom reports as exceeding
//! its branch limit; keep at most one waiter per owner in a model.
//!
//! Knobs: `LOOM_MAX_PREEMPTIONS` overrides each model's preemption bound (`None` in the code is
//! exhaustive); `LOOM_LOCATION=1` adds source locations to loom's reports.
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use zonealloc::{
    AllocRequest, CpuId, DrainMode, FrameState, MigrateType, Order, PcpConfig, PcpLocking, Pfn,
    Zone, ZoneConfig, ZoneType,
};

const FRAMES: u64 = 16;
const CPUS: u32 = 2;
const M: MigrateType = MigrateType::Movable;

fn o(n: u8) -> Order {
    Order::new(n).unwrap()
}

fn on(cpu: u32) -> AllocRequest {
    AllocRequest::new(M).on_cpu(CpuId(cpu))
}

fn config(locking: PcpLocking, drain: DrainMode, batch: u32) -> ZoneConfig {
    ZoneConfig::without_watermarks()
        .with_max_order(2)
        .with_pageblock_order(1)
        .with_pcp(
            PcpConfig::new()
                .with_cpus(CPUS)
                .with_batch(Some(batch))
                .with_high_min(Some(4))
                .with_high_max(Some(4))
                .with_thp_order(None)
                .with_locking(locking)
                .with_drain(drain),
        )
}

fn zone_with(locking: PcpLocking, drain: DrainMode, batch: u32) -> Arc<Zone> {
    let z = Zone::new(
        ZoneType::Normal,
        Pfn(0),
        Pfn(FRAMES),
        config(locking, drain, batch),
    )
    .unwrap();
    assert_eq!(z.add_free_range(Pfn(0), Pfn(FRAMES)).unwrap(), FRAMES);
    Arc::new(z)
}

fn zone(locking: PcpLocking, drain: DrainMode) -> Arc<Zone> {
    zone_with(locking, drain, 2)
}

/// Stack of every model thread, in machine words (loom passes it to `generator`, whose unit is
/// words whatever loom's documentation says). Loom's default, 32 KiB, is too small to build a
/// `Zone` (7.5 KiB, moved a few times) under loom's instrumentation.
const STACK_WORDS: usize = 1 << 17;

/// `loom::thread::spawn` with a stack big enough for zone operations.
fn spawn<F, T>(f: F) -> thread::JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    thread::Builder::new()
        .stack_size(STACK_WORDS)
        .spawn(f)
        .unwrap()
}

/// Runs `f` under loom with `preemptions` as the bound (`None`: exhaustive) unless
/// `LOOM_MAX_PREEMPTIONS` is set. The model's main thread has loom's small fixed stack, so `f`
/// runs on a spawned thread (one of loom's five; the models use at most three more).
fn model<F: Fn() + Sync + Send + 'static>(preemptions: Option<usize>, f: F) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = preemptions;
    }
    // Zone operations are dozens of atomic accesses each; the default (1000) is close.
    b.max_branches = b.max_branches.max(20_000);
    let f = std::sync::Arc::new(f);
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let r = runs.clone();
    b.check(move || {
        r.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let f = f.clone();
        spawn(move || f()).join().unwrap();
    });
    eprintln!(
        "explored {} interleavings (preemption bound {:?})",
        runs.load(std::sync::atomic::Ordering::Relaxed),
        b.preemption_bound
    );
}

/// Spins (yielding to loom) until `flag` is set.
fn wait_for(flag: &AtomicBool) {
    while !flag.load(Ordering::Acquire) {
        thread::yield_now();
    }
}

fn assert_allocated(z: &Zone, p: Pfn, order: u8) {
    match z.frame_state(p) {
        Some(FrameState::Allocated(got, _)) if got == o(order) => {}
        s => panic!("{p:?} handed out but its frame is {s:?}"),
    }
}

/// Everything allocated has been freed: drain, then the zone must be whole again.
fn quiesce(z: &Zone) {
    z.drain_all();
    z.check().unwrap();
    for c in 0..CPUS {
        assert_eq!(
            z.pcp_info(CpuId(c)).count,
            0,
            "CPU {c} not empty after drain_all"
        );
    }
    assert_eq!(z.free_pages(), z.managed_pages());
    assert_eq!(z.managed_pages(), FRAMES);
}

/// Operations that reached CPU `c`'s lists or found them locked: each PCP alloc is a hit, a
/// miss or a trylock failure, each PCP free a `frees` or a trylock failure.
fn pcp_ops(z: &Zone, c: u32) -> u64 {
    let s = z.pcp_info(CpuId(c)).stats;
    s.alloc_hits + s.alloc_misses + s.frees + s.trylock_failures
}

/// Outcomes seen across a model's interleavings (a bitmask), to show a model is not vacuous:
/// e.g. that the trylock failure it is about did happen in some interleaving. Lives outside
/// loom (a plain std atomic), so it survives from one interleaving to the next.
struct Seen(std::sync::atomic::AtomicU32);

impl Seen {
    const fn new() -> Self {
        Seen(std::sync::atomic::AtomicU32::new(0))
    }
    fn mark(&self, bit: u32) {
        self.0.fetch_or(bit, std::sync::atomic::Ordering::Relaxed);
    }
    fn assert_all(&self, bits: u32, what: &str) {
        let got = self.0.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(
            got & bits,
            bits,
            "{what}: outcomes seen {got:#b}, expected all of {bits:#b}"
        );
    }
}

/// Some operation found its CPU's lock taken.
const TRYLOCK_FAILED: u32 = 1;
/// No operation did.
const TRYLOCK_NEVER_FAILED: u32 = 2;
/// A free reached `high` and drained (the chunked path).
const DRAINED_ON_HIGH: u32 = 4;
/// CPU 1's page was drained by its owner (an operation, `poll` or the handle's drop).
const OWNER_DRAINED: u32 = 8;
/// CPU 1's page was drained by the drainer (`Route::Remote`, or `wait_owner` after the owner
/// went away).
const DRAINER_DRAINED: u32 = 16;

fn note_trylock(seen: &Seen, z: &Zone, cpu: u32) {
    let s = z.pcp_info(CpuId(cpu)).stats;
    seen.mark(if s.trylock_failures > 0 {
        TRYLOCK_FAILED
    } else {
        TRYLOCK_NEVER_FAILED
    });
    if s.drain_high_pages > 0 {
        seen.mark(DRAINED_ON_HIGH);
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Local alloc/free on CPU 0 racing a remote drain.

/// Thread A: `n` order-0 allocations on CPU 0 (all live at once, distinct, `Allocated`), then
/// their frees on CPU 0. Returns the operations issued.
fn local_worker(z: &Zone, n: usize) -> u64 {
    let mut live: Vec<Pfn> = Vec::with_capacity(n);
    for _ in 0..n {
        let p = z.alloc_with(o(0), on(0)).expect("16 frames are plenty");
        assert!(!live.contains(&p), "{p:?} handed out twice: {live:?}");
        assert_allocated(z, p, 0);
        live.push(p);
    }
    for &p in &live {
        assert_allocated(z, p, 0);
    }
    for p in live {
        z.free_on(CpuId(0), p, o(0)).unwrap();
    }
    2 * n as u64
}

fn local_ops_vs(
    seen: &'static Seen,
    drain: fn(&Zone),
    allocs: usize,
    batch: u32,
    preemptions: Option<usize>,
) {
    model(preemptions, move || {
        let z = zone_with(PcpLocking::Spinlock, DrainMode::Remote, batch);
        let a = {
            let z = z.clone();
            spawn(move || local_worker(&z, allocs))
        };
        let b = {
            let z = z.clone();
            spawn(move || drain(&z))
        };
        let ops = a.join().unwrap();
        b.join().unwrap();
        z.check().unwrap();
        assert_eq!(
            pcp_ops(&z, 0),
            ops,
            "an operation on CPU 0 went unaccounted"
        );
        assert!(z.pcp_info(CpuId(0)).stats.trylock_failures <= ops);
        note_trylock(seen, &z, 0);
        quiesce(&z);
    });
}

#[test]
fn local_ops_vs_remote_drain_cpu() {
    static SEEN: Seen = Seen::new();
    local_ops_vs(&SEEN, |z| z.drain_cpu(CpuId(0)), 2, 2, Some(4));
    SEEN.assert_all(TRYLOCK_FAILED | TRYLOCK_NEVER_FAILED, "drain_cpu");
}

#[test]
fn local_ops_vs_remote_drain_all() {
    static SEEN: Seen = Seen::new();
    local_ops_vs(&SEEN, |z| z.drain_all(), 2, 2, Some(4));
    SEEN.assert_all(TRYLOCK_FAILED | TRYLOCK_NEVER_FAILED, "drain_all");
}

/// batch 1, high 4: four frees make the fourth reach `high`, and the free drains 3 pages in
/// batch-sized chunks, unlocking and re-trylocking between chunks while the drainer competes.
#[test]
fn local_ops_vs_remote_drain_chunked_free() {
    static SEEN: Seen = Seen::new();
    local_ops_vs(&SEEN, |z| z.drain_cpu(CpuId(0)), 4, 1, Some(3));
    SEEN.assert_all(
        TRYLOCK_FAILED | TRYLOCK_NEVER_FAILED | DRAINED_ON_HIGH,
        "chunked free",
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Two CPUs refilling from one zone.

fn refill_worker(z: &Zone, cpu: u32, orders: &[u8]) -> Vec<(Pfn, u8)> {
    let mut got = Vec::new();
    for &order in orders {
        let p = z
            .alloc_with(o(order), on(cpu))
            .expect("16 frames are plenty");
        assert!(p.is_aligned(o(order)));
        assert_allocated(z, p, order);
        got.push((p, order));
    }
    got
}

#[test]
fn two_cpus_refill_from_one_zone() {
    model(Some(2), || {
        let z = zone(PcpLocking::Spinlock, DrainMode::Remote);
        let hs: Vec<_> = (0..CPUS)
            .map(|c| {
                let z = z.clone();
                spawn(move || refill_worker(&z, c, &[0, 0, 1]))
            })
            .collect();
        let per_cpu: Vec<Vec<(Pfn, u8)>> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let mut owner = [None::<u32>; FRAMES as usize];
        for (c, blocks) in per_cpu.iter().enumerate() {
            for &(p, order) in blocks {
                for f in p.0..p.0 + (1u64 << order) {
                    assert_eq!(owner[f as usize], None, "frame {f} handed out twice");
                    owner[f as usize] = Some(c as u32);
                }
            }
        }
        z.check().unwrap();
        for (c, blocks) in per_cpu.iter().enumerate() {
            for &(p, order) in blocks {
                z.free_on(CpuId(c as u32), p, o(order)).unwrap();
            }
        }
        z.check().unwrap();
        quiesce(&z);
    });
}

/// The same (one order-0 and one order-1 block per CPU), with the frees concurrent too: each
/// CPU frees its own blocks, merging in the buddy as the other CPU's refills run.
#[test]
fn two_cpus_alloc_and_free_concurrently() {
    model(Some(1), || {
        let z = zone(PcpLocking::Spinlock, DrainMode::Remote);
        let hs: Vec<_> = (0..CPUS)
            .map(|c| {
                let z = z.clone();
                spawn(move || {
                    let got = refill_worker(&z, c, &[0, 1]);
                    for &(p, order) in &got {
                        z.free_on(CpuId(c), p, o(order)).unwrap();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        z.check().unwrap();
        quiesce(&z);
    });
}

// ---------------------------------------------------------------------------------------------
// 3. Trylock failure falls back to the buddy.

/// `OwnerOnly`: a handle holds CPU 0's lists; another thread's allocation and free on CPU 0
/// find the lock taken, count one trylock failure each and go to the buddy.
#[test]
fn trylock_failure_owner_held_lists_go_to_buddy() {
    model(None, || {
        let z = zone(PcpLocking::OwnerOnly, DrainMode::Owner);
        let held = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let owner = {
            let (z, held, done) = (z.clone(), held.clone(), done.clone());
            spawn(move || {
                let h = z.cpu_handle(CpuId(0)).unwrap();
                held.store(true, Ordering::Release);
                wait_for(&done);
                drop(h);
            })
        };
        wait_for(&held);
        let free_before = z.free_pages();
        let p = z.alloc_with(o(0), on(0)).unwrap();
        assert_allocated(&z, p, 0);
        assert_eq!(z.free_pages(), free_before - 1, "not served by the buddy");
        z.free_on(CpuId(0), p, o(0)).unwrap();
        assert_eq!(z.free_pages(), free_before, "not freed to the buddy");
        done.store(true, Ordering::Release);
        owner.join().unwrap();
        let info = z.pcp_info(CpuId(0));
        assert_eq!(info.stats.trylock_failures, 2);
        assert_eq!(pcp_ops(&z, 0), 2);
        assert_eq!(info.count, 0);
        quiesce(&z);
    });
}

/// `Spinlock`: one allocation and one free on CPU 0 race a drainer holding CPU 0's lock; each
/// succeeds whether its trylock does or not, and is counted exactly once.
#[test]
fn trylock_failure_racing_drainer() {
    static SEEN: Seen = Seen::new();
    model(None, || {
        let z = zone(PcpLocking::Spinlock, DrainMode::Remote);
        // Something for the drainer to drain, so that it holds the lock across a zone-lock hold.
        let q = z.alloc_with(o(0), on(0)).unwrap();
        z.free_on(CpuId(0), q, o(0)).unwrap();
        let base = pcp_ops(&z, 0);
        let b = {
            let z = z.clone();
            spawn(move || z.drain_cpu(CpuId(0)))
        };
        let p = z.alloc_with(o(0), on(0)).unwrap();
        assert_allocated(&z, p, 0);
        z.free_on(CpuId(0), p, o(0)).unwrap();
        b.join().unwrap();
        let s = z.pcp_info(CpuId(0)).stats;
        assert!(s.trylock_failures <= 2);
        assert_eq!(pcp_ops(&z, 0) - base, 2);
        note_trylock(&SEEN, &z, 0);
        z.check().unwrap();
        quiesce(&z);
    });
    SEEN.assert_all(TRYLOCK_FAILED | TRYLOCK_NEVER_FAILED, "racing drainer");
}

// ---------------------------------------------------------------------------------------------
// 4. The owner-drain handshake.

/// How the owner of CPU 1 lets a drain in.
#[derive(Clone, Copy, Debug)]
enum Owner {
    /// Frees, then drops its handle (the drainer must drain the lists itself, or the drop does).
    Drops,
    /// Frees, then polls until the drainer is done, then drops.
    Polls,
}

/// The owner of CPU 1 frees a page (allocated beforehand elsewhere) to its lists, then behaves
/// as `how` says; the drainer waits until the page is on CPU 1's lists (when `ordered`), then
/// `drain_all`s. `drain_all` must return (a lost request would leave it spinning: loom reports
/// "exceeded maximum number of branches"), and, when ordered, the page must be back in the
/// buddy when it returns.
fn owner_drain(
    seen: &'static Seen,
    locking: PcpLocking,
    how: Owner,
    ordered: bool,
    preemptions: Option<usize>,
) {
    model(preemptions, move || {
        let z = zone(locking, DrainMode::Owner);
        let p = z.alloc_with(o(0), on(0)).unwrap();
        z.drain_cpu(CpuId(0)); // CPU 0's refill leftovers: keep the drainer's work to CPU 1
        assert_eq!(z.free_pages(), FRAMES - 1);
        let freed = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let owner = {
            let (z, freed, done) = (z.clone(), freed.clone(), done.clone());
            spawn(move || {
                let mut h = z.cpu_handle(CpuId(1)).unwrap();
                h.free(p, o(0)).unwrap();
                freed.store(true, Ordering::Release);
                if let Owner::Polls = how {
                    while !done.load(Ordering::Acquire) {
                        h.poll();
                        thread::yield_now();
                    }
                }
                drop(h);
            })
        };
        if ordered {
            wait_for(&freed);
        }
        z.drain_all();
        if ordered {
            assert_eq!(
                z.free_pages(),
                FRAMES,
                "drain_all returned before CPU 1 was drained"
            );
        }
        done.store(true, Ordering::Release);
        owner.join().unwrap();
        let info = z.pcp_info(CpuId(1));
        if ordered {
            assert_eq!(info.count, 0, "drain_all left CPU 1's page");
        }
        if info.stats.drain_local_pages > 0 {
            seen.mark(OWNER_DRAINED);
        }
        if info.stats.drain_remote_pages > 0 {
            seen.mark(DRAINER_DRAINED);
        }
        z.check().unwrap();
        quiesce(&z);
    });
}

#[test]
fn owner_drain_owner_only_drop() {
    static SEEN: Seen = Seen::new();
    owner_drain(&SEEN, PcpLocking::OwnerOnly, Owner::Drops, true, None);
    SEEN.assert_all(OWNER_DRAINED | DRAINER_DRAINED, "owner-only drop");
}

#[test]
fn owner_drain_owner_only_poll() {
    static SEEN: Seen = Seen::new();
    owner_drain(&SEEN, PcpLocking::OwnerOnly, Owner::Polls, true, None);
    SEEN.assert_all(OWNER_DRAINED, "owner-only poll");
}

#[test]
fn owner_drain_spinlock_drop() {
    static SEEN: Seen = Seen::new();
    owner_drain(&SEEN, PcpLocking::Spinlock, Owner::Drops, true, None);
    SEEN.assert_all(OWNER_DRAINED | DRAINER_DRAINED, "spinlock drop");
}

#[test]
fn owner_drain_spinlock_poll() {
    static SEEN: Seen = Seen::new();
    owner_drain(&SEEN, PcpLocking::Spinlock, Owner::Polls, true, None);
    SEEN.assert_all(OWNER_DRAINED, "spinlock poll");
}

/// The drain races the free itself (it may find CPU 1 empty and skip it): it must still return,
/// and the zone must be whole once everything is drained.
#[test]
fn owner_drain_owner_only_racing_free() {
    static SEEN: Seen = Seen::new();
    owner_drain(&SEEN, PcpLocking::OwnerOnly, Owner::Drops, false, None);
}

#[test]
fn owner_drain_spinlock_racing_free() {
    static SEEN: Seen = Seen::new();
    owner_drain(&SEEN, PcpLocking::Spinlock, Owner::Polls, false, None);
}

/// `OwnerOnly` + `Owner`: two owners call `CpuHandle::drain_all` at once. One takes the drain
/// mutex and waits for the other's CPU; the other must serve that request while it waits for
/// the mutex (rule 2 of `drain.rs`), or the two deadlock.
#[test]
fn owner_only_two_owners_drain_all_at_once() {
    model(Some(3), || {
        let z = zone(PcpLocking::OwnerOnly, DrainMode::Owner);
        let p = z.alloc_with(o(0), on(0)).unwrap();
        let q = z.alloc_with(o(0), on(0)).unwrap();
        z.drain_cpu(CpuId(0));
        z.free_on(CpuId(0), p, o(0)).unwrap(); // both CPUs hold a page: both get visited
        z.free_on(CpuId(1), q, o(0)).unwrap();
        let hs: Vec<_> = (0..CPUS)
            .map(|c| {
                let z = z.clone();
                spawn(move || {
                    let mut h = z.cpu_handle(CpuId(c)).unwrap();
                    h.drain_all();
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(z.free_pages(), FRAMES, "a page survived both drains");
        quiesce(&z);
    });
}

/// `OwnerOnly` + `Owner`: a handle registered for CPU 1 *while* `drain_all` runs. `drain_all`
/// may read `owned == false` and go for CPU 1's lock just as `cpu_handle` takes it for the
/// handle's whole life; it must then fall back to asking the owner (`lock_unless_owned`), whose
/// polls serve it. (With a blocking `lock` there, `drain_all` waited for the handle's drop.)
///
#[test]
fn owner_only_handle_registered_during_drain_all() {
    model(None, || {
        let z = zone(PcpLocking::OwnerOnly, DrainMode::Owner);
        let p = z.alloc_with(o(0), on(0)).unwrap();
        z.drain_cpu(CpuId(0));
        z.free_on(CpuId(1), p, o(0)).unwrap(); // CPU 1 holds a page: drain_all will visit it
        let done = Arc::new(AtomicBool::new(false));
        let owner = {
            let (z, done) = (z.clone(), done.clone());
            spawn(move || {
                let mut h = z.cpu_handle(CpuId(1)).unwrap();
                while !done.load(Ordering::Acquire) {
                    h.poll();
                    thread::yield_now();
                }
            })
        };
        z.drain_all();
        done.store(true, Ordering::Release);
        owner.join().unwrap();
        quiesce(&z);
    });
}

/// `OwnerOnly` + `Owner`: when `drain_all` returns after the owner served its request in
/// `poll`, the owner-held CPU's reported count (`count_hint`, what `pcp_info` and `drain_all`'s
/// empty-CPU skip read) is already 0: the count is published before the request is cleared
/// (else a later `drain_all` would raise a needless request and wait for the next poll).
#[test]
fn owner_only_count_hint_fresh_after_owner_drain() {
    model(None, || {
        let z = zone(PcpLocking::OwnerOnly, DrainMode::Owner);
        let p = z.alloc_with(o(0), on(0)).unwrap();
        z.drain_cpu(CpuId(0));
        let freed = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let owner = {
            let (z, freed, done) = (z.clone(), freed.clone(), done.clone());
            spawn(move || {
                let mut h = z.cpu_handle(CpuId(1)).unwrap();
                h.free(p, o(0)).unwrap();
                freed.store(true, Ordering::Release);
                while !done.load(Ordering::Acquire) {
                    h.poll();
                    thread::yield_now();
                }
            })
        };
        wait_for(&freed);
        z.drain_all();
        assert_eq!(z.free_pages(), FRAMES);
        let reported = z.pcp_info(CpuId(1)).count; // the handle holds the lists: count_hint
        done.store(true, Ordering::Release);
        owner.join().unwrap();
        assert_eq!(
            reported, 0,
            "CPU 1 drained, but reported with {reported} pages"
        );
        quiesce(&z);
    });
}
