//! The per-CPU list hit path against the buddy, side by side.
//!
//! Every case measures one *pair*: allocate a block, then free it, on CPU 0 of a zone of 2^18
//! frames (1 GiB of 4 KiB pages) with two CPUs' lists, `Movable` requests. After the first
//! iteration's refill the pair never leaves the PCP: the free pushes the block at the head of
//! its list and the next allocation takes it back (`count` never reaches `high`, and the
//! allocation halves `free_count`, so neither `high` nor `free_high` drains). Each case checks
//! that afterwards: at most one refill, no trylock failure, `Zone::check` passes.
//!
//! Group `order0_pair`:
//! - `handle_spinlock`: a [`CpuHandle`] under [`PcpLocking::Spinlock`] (the default): each
//!   operation try-locks the CPU's list lock, as the kernel's `pcp_spin_trylock` does.
//! - `zone_on_cpu`: the same through the zone, `alloc_with(.., AllocRequest::new(Movable)
//!   .on_cpu(CpuId(0)))` and `free_on(CpuId(0), ..)`.
//! - `zone_this_cpu`: `Zone::alloc` / `Zone::free`, which ask `sched_getcpu` for the CPU.
//! - `handle_owner_only`: a [`CpuHandle`] under [`PcpLocking::OwnerOnly`] with
//!   [`DrainMode::Owner`]: the handle holds its lists for its whole life, so an operation
//!   takes no lock at all (the kernel before seed 002).
//! - `handle_spinlock_wmarks`: `handle_spinlock` with the default (auto) watermarks instead of
//!   zero ones, to see what the lock-free watermark check costs when the marks are real.
//! - `buddy_only`: a handle on a zone built with [`ZoneConfig::without_pcp`]: every operation
//!   takes the zone lock, splits on allocation and merges on free.
//!
//! Group `order3_pair`: `handle_spinlock` and `buddy_only` for order-3 blocks.
//!
//! All zones but `handle_spinlock_wmarks` use [`ZoneConfig::without_watermarks`].
//!
//! Run: `CARGO_TARGET_DIR=/tmp/target-pcpbench cargo bench -p zonealloc --bench pcp`. Medians
//! are in `$CARGO_TARGET_DIR/criterion/<group>/<case>/new/estimates.json`.

// `criterion_group!` generates an undocumented `pub fn`, which the workspace's `missing_docs`
// lint would flag in this bench crate.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, SamplingMode};
use zonealloc::{
    AllocRequest, CpuHandle, CpuId, DrainMode, MigrateType, Order, PcpConfig, PcpLocking, Pfn,
    Zone, ZoneConfig, ZoneType,
};

/// Frames each zone manages.
const ZONE_FRAMES: u64 = 1 << 18;
/// CPUs with lists (the machine the figures were taken on has two cores).
const CPUS: u32 = 2;
/// The CPU every case runs on.
const CPU: CpuId = CpuId(0);
const MT: MigrateType = MigrateType::Movable;

fn zone(cfg: ZoneConfig) -> Zone {
    let zone = Zone::new(ZoneType::Normal, Pfn(0), Pfn(ZONE_FRAMES), cfg).expect("zone config");
    zone.add_free_range(Pfn(0), Pfn(ZONE_FRAMES))
        .expect("add frames");
    zone
}

/// Zero watermarks, `CPUS` CPUs' lists, spinlocked.
fn spinlock_cfg() -> ZoneConfig {
    ZoneConfig::without_watermarks().with_cpus(CPUS)
}

/// Default (auto) watermarks, otherwise as [`spinlock_cfg`].
fn wmark_cfg() -> ZoneConfig {
    ZoneConfig::default().with_cpus(CPUS)
}

/// Owner-only lists, drained by their owner.
fn owner_only_cfg() -> ZoneConfig {
    ZoneConfig::without_watermarks().with_pcp(
        PcpConfig::new()
            .with_cpus(CPUS)
            .with_locking(PcpLocking::OwnerOnly)
            .with_drain(DrainMode::Owner),
    )
}

/// Buddy only: no per-CPU lists.
fn buddy_cfg() -> ZoneConfig {
    spinlock_cfg().without_pcp()
}

fn order(n: u8) -> Order {
    Order::new(n).expect("order within MAX_ORDER_LIMIT")
}

/// After a case: the pairs were PCP hits (when the zone has lists), and the zone is intact.
fn verify(name: &str, zone: &Zone) {
    let s = zone.pcp_stats();
    if zone.config().pcp.enabled {
        assert!(
            s.alloc_misses <= 1 && s.trylock_failures == 0,
            "{name}: not a PCP-hit loop: {s:?}"
        );
    }
    zone.check().expect("invariants after the benchmark");
}

fn handle_pair(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, cfg: ZoneConfig, o: Order) {
    let zone = zone(cfg);
    {
        let mut h: CpuHandle<'_> = zone.cpu_handle(CPU).expect("cpu handle");
        g.bench_function(name, |b| {
            b.iter(|| {
                let pfn = h.alloc(black_box(o), MT).expect("alloc");
                h.free(black_box(pfn), o).expect("free");
            })
        });
    } // the handle goes before `check`, which owner-only lists require
    verify(name, &zone);
}

fn zone_on_cpu_pair(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, cfg: ZoneConfig, o: Order) {
    let zone = zone(cfg);
    let req = AllocRequest::new(MT).on_cpu(CPU);
    g.bench_function(name, |b| {
        b.iter(|| {
            let pfn = zone.alloc_with(black_box(o), req).expect("alloc");
            zone.free_on(CPU, black_box(pfn), o).expect("free");
        })
    });
    verify(name, &zone);
}

fn zone_this_cpu_pair(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, cfg: ZoneConfig, o: Order) {
    let zone = zone(cfg);
    g.bench_function(name, |b| {
        b.iter(|| {
            let pfn = zone.alloc(black_box(o), MT).expect("alloc");
            zone.free(black_box(pfn), o).expect("free");
        })
    });
    // The thread may run on either CPU, so this case checks only the invariants.
    zone.check().expect("invariants after the benchmark");
}

/// 2 s per case, in many short samples: 1000 samples of equal iteration counts (flat
/// sampling), about 2 ms each. On a machine shared with other work, a sample that spans a
/// preemption is inflated by the other task's time slice; with samples shorter than a time
/// slice most samples are clean and the median reports the allocator, not the scheduler.
fn short(g: &mut BenchmarkGroup<'_, WallTime>) {
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(2));
    g.sample_size(1000);
    g.sampling_mode(SamplingMode::Flat);
    g.nresamples(20_000);
}

fn order0(c: &mut Criterion) {
    let o = order(0);
    let mut g = c.benchmark_group("order0_pair");
    short(&mut g);
    handle_pair(&mut g, "handle_spinlock", spinlock_cfg(), o);
    zone_on_cpu_pair(&mut g, "zone_on_cpu", spinlock_cfg(), o);
    zone_this_cpu_pair(&mut g, "zone_this_cpu", spinlock_cfg(), o);
    handle_pair(&mut g, "handle_owner_only", owner_only_cfg(), o);
    handle_pair(&mut g, "handle_spinlock_wmarks", wmark_cfg(), o);
    handle_pair(&mut g, "buddy_only", buddy_cfg(), o);
    g.finish();
}

fn order3(c: &mut Criterion) {
    let o = order(3);
    let mut g = c.benchmark_group("order3_pair");
    short(&mut g);
    handle_pair(&mut g, "handle_spinlock", spinlock_cfg(), o);
    handle_pair(&mut g, "buddy_only", buddy_cfg(), o);
    g.finish();
}

criterion_group!(benches, order0, order3);
criterion_main!(benches);
