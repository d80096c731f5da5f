//! zonealloc's [`Zone`], buddy only and with per-CPU lists, against
//! `buddy_system_allocator::FrameAllocator`, side by side.
//!
//! Every case measures one *pair*: allocate a block of the given order, then free it. Both
//! allocators manage the same 2^18 frames (1 GiB of 4 KiB pages), `2^18..2^19`, added as one
//! range. The range does not start at frame 0 because `FrameAllocator::add_frame` special-cases
//! frame 0 (it caps the first block at 32 frames, leaving blocks of 32, 32, 64, .., 2^17 frames
//! and a lone order-9 block at frame 512 whose buddy is never an order-9 block, so an order-9
//! pair there costs no split and no merge, until an order-0 free merges everything back).
//!
//! - `zonealloc`: the buddy allocator alone, a [`Zone`] built with
//!   `ZoneConfig::without_watermarks().without_pcp()` (zero watermarks, no per-CPU lists,
//!   mainline geometry `MAX_PAGE_ORDER` 10, `pageblock_order` 9), `Zone::alloc` / `Zone::free`
//!   with `Movable` requests. Every operation takes the zone lock.
//! - `zonealloc_pcp`: the same zone with its per-CPU lists on (default `PcpConfig`, one CPU;
//!   orders 0..=3 and the THP order 9 have lists), every operation on CPU 0
//!   (`alloc_with(.., AllocRequest::new(Movable).on_cpu(CpuId(0)))`, `free_on(CpuId(0), ..)`).
//!   This is the path a caller gets by default; `benches/pcp.rs` looks at it in detail.
//! - `bsa32`: `FrameAllocator::<32>`, the crate's default order limit, without a lock. Its
//!   order limit cannot be lowered to the zone's 10: a merge that reaches order `ORDER`
//!   silently drops the merged block (0.11 `dealloc_power_of_two`), so `FrameAllocator::<11>`
//!   over 2^18 frames loses memory on the first free.
//!
//! Two states:
//! - `fresh`: everything free, as after boot.
//! - `steady`: half the frames allocated in a fragmenting pattern, done identically on each
//!   allocator: allocate every frame at order 0, then free every other frame of the lower half
//!   (the free order-0 frames all have allocated buddies, so they cannot merge) and all of the
//!   third quarter (which merges back into max-order blocks, so that order-9 requests can still
//!   succeed); the top quarter stays allocated. 50% of the frames stay allocated.
//!
//! Run: `cargo bench -p zonealloc --bench zone`. See `benches/README.md` for recorded results.

use std::hint::black_box;
use std::time::Duration;

use buddy_system_allocator::FrameAllocator;
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};
use zonealloc::{AllocRequest, CpuId, MigrateType, Order, Pfn, Zone, ZoneConfig, ZoneType};

/// Frames each allocator manages.
const ZONE_FRAMES: u64 = 1 << 18;
/// The first of them, aligned to `ZONE_FRAMES`.
const ZONE_BASE: u64 = ZONE_FRAMES;

/// The operations the benchmark needs, over frame numbers and orders.
trait FrameAlloc {
    fn alloc_order(&mut self, order: u8) -> u64;
    fn free_order(&mut self, pfn: u64, order: u8);
}

/// A buddy-only zone: `Zone::alloc` / `Zone::free`.
struct BuddyOnly(Zone);

impl FrameAlloc for BuddyOnly {
    #[inline]
    fn alloc_order(&mut self, order: u8) -> u64 {
        let order = Order::new(order).expect("order within MAX_ORDER_LIMIT");
        self.0
            .alloc(order, MigrateType::Movable)
            .expect("zonealloc: allocation failed")
            .get()
    }

    #[inline]
    fn free_order(&mut self, pfn: u64, order: u8) {
        let order = Order::new(order).expect("order within MAX_ORDER_LIMIT");
        self.0
            .free(Pfn(pfn), order)
            .expect("zonealloc: free failed");
    }
}

/// A zone with per-CPU lists, every operation on [`PCP_CPU`].
struct WithPcp(Zone);

const PCP_CPU: CpuId = CpuId(0);

impl FrameAlloc for WithPcp {
    #[inline]
    fn alloc_order(&mut self, order: u8) -> u64 {
        let order = Order::new(order).expect("order within MAX_ORDER_LIMIT");
        let req = AllocRequest::new(MigrateType::Movable).on_cpu(PCP_CPU);
        self.0
            .alloc_with(order, req)
            .expect("zonealloc: allocation failed")
            .get()
    }

    #[inline]
    fn free_order(&mut self, pfn: u64, order: u8) {
        let order = Order::new(order).expect("order within MAX_ORDER_LIMIT");
        self.0
            .free_on(PCP_CPU, Pfn(pfn), order)
            .expect("zonealloc: free failed");
    }
}

impl<const ORDER: usize> FrameAlloc for FrameAllocator<ORDER> {
    #[inline]
    fn alloc_order(&mut self, order: u8) -> u64 {
        self.alloc(1 << order)
            .expect("buddy_system_allocator: allocation failed") as u64
    }

    #[inline]
    fn free_order(&mut self, pfn: u64, order: u8) {
        self.dealloc(pfn as usize, 1 << order);
    }
}

fn new_zone(cfg: ZoneConfig) -> Zone {
    let zone = Zone::new(
        ZoneType::Normal,
        Pfn(ZONE_BASE),
        Pfn(ZONE_BASE + ZONE_FRAMES),
        cfg,
    )
    .expect("zone config");
    zone.add_free_range(Pfn(ZONE_BASE), Pfn(ZONE_BASE + ZONE_FRAMES))
        .expect("add frames");
    zone
}

fn new_bsa<const ORDER: usize>() -> FrameAllocator<ORDER> {
    let mut a = FrameAllocator::<ORDER>::new();
    a.add_frame(ZONE_BASE as usize, (ZONE_BASE + ZONE_FRAMES) as usize);
    a
}

/// Brings `a` from all-free to the `steady` state described in the module docs.
fn fragment<A: FrameAlloc>(a: &mut A) {
    let mut pfns: Vec<u64> = (0..ZONE_FRAMES).map(|_| a.alloc_order(0)).collect();
    pfns.sort_unstable();
    assert!(
        pfns.iter().copied().eq(ZONE_BASE..ZONE_BASE + ZONE_FRAMES),
        "every frame is allocated exactly once"
    );
    let half = ZONE_BASE + ZONE_FRAMES / 2;
    let three_quarters = half + ZONE_FRAMES / 4;
    for pfn in pfns {
        let lower_half_odd = pfn < half && pfn % 2 == 1;
        let third_quarter = (half..three_quarters).contains(&pfn);
        if lower_half_odd || third_quarter {
            a.free_order(pfn, 0);
        }
    }
}

/// One alloc + free pair of `order`, as one criterion iteration.
fn bench_pair<A: FrameAlloc>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    mut a: A,
    order: u8,
) {
    g.bench_function(name, |b| {
        b.iter(|| {
            let pfn = a.alloc_order(black_box(order));
            a.free_order(black_box(pfn), order);
        })
    });
}

fn pairs(c: &mut Criterion) {
    for (state, steady) in [("fresh", false), ("steady", true)] {
        for order in [0u8, 9] {
            let mut g = c.benchmark_group(format!("order{order}_pair/{state}"));
            g.warm_up_time(Duration::from_secs(1));
            g.measurement_time(Duration::from_secs(2));

            let base = ZoneConfig::without_watermarks();
            let mut zone = BuddyOnly(new_zone(base.without_pcp()));
            let mut zone_pcp = WithPcp(new_zone(base.with_cpus(1)));
            let mut bsa32 = new_bsa::<32>();
            if steady {
                fragment(&mut zone);
                fragment(&mut zone_pcp);
                fragment(&mut bsa32);
            }
            bench_pair(&mut g, "zonealloc", zone, order);
            bench_pair(&mut g, "zonealloc_pcp", zone_pcp, order);
            bench_pair(&mut g, "bsa32", bsa32, order);
            g.finish();
        }
    }
}

// `criterion_main!` without `criterion_group!`, whose generated `pub fn` has no doc comment
// and so trips the workspace's `missing_docs` lint.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    pairs(&mut c);
    c.final_summary();
}
