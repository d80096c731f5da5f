//! Bringing a fresh zone to the snapshot's state ([`populate`]): the free blocks where the
//! layout (the kernel's or one synthesised) puts them, the pages in use as the pool, each
//! CPU's lists, and what was reached against the snapshot ([`SetupFacts`]).

use std::collections::HashSet;

use zonealloc::{CpuId, MigrateType, Order, PcpTuning, Pfn, Zone};

use super::super::infer::pcp_state::ListDemand;
use super::super::layout::{self, ZoneLayout};
use super::rolled::at_least_rolled;
use super::Pool;
use crate::procfs::{MigrateTypeName, ProcSnapshot, ZoneSnapshot};

/// What [`populate`] reached, against the snapshot, for the report.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SetupFacts {
    /// The zone.
    pub zone: String,
    /// Where the free blocks lie: the kernel's `layout`, or `synthesised` from the counts.
    pub layout: &'static str,
    /// Managed pages: the kernel's, ours (equal unless a kernel layout disagrees).
    pub managed: (u64, u64),
    /// Pages in use: the kernel's, ours.
    pub used: (u64, u64),
    /// Buddy free pages: the kernel's, ours.
    pub free: (u64, u64),
    /// Free blocks per order: the kernel's (pagetypeinfo), ours.
    pub free_blocks: (Vec<u64>, Vec<u64>),
    /// Free blocks a synthesised layout found no place for.
    pub unplaced: u64,
    /// Free blocks of the kernel's layout beyond pagetypeinfo's counts, taken as in use.
    pub trimmed: u64,
    /// Free blocks made from pages in use where the kernel's layout fell short of them.
    pub made_up: u64,
    /// Free blocks of pagetypeinfo's counts that the events after its read took, and those
    /// they put on the free lists: the kernel's figures here are the read's moved by them
    /// (`ZoneLayout::at_start`).
    pub moved: (u64, u64),
    /// Pages of the CPUs' lists for which no page in use was found.
    pub pcp_missing: u64,
    /// PCP pages: the kernel's, ours.
    pub pcp: (u64, u64),
    /// Pageblocks per migratetype (Unmovable, Movable, Reclaimable): the kernel's, ours.
    pub pageblocks: ([u64; 3], [u64; 3]),
    /// The first pfn of each pageblock of holes, which pagetypeinfo does not count.
    #[serde(skip)]
    pub holes: Vec<u64>,
}

pub(crate) const TYPES: [MigrateType; 3] = [
    MigrateType::Unmovable,
    MigrateType::Movable,
    MigrateType::Reclaimable,
];

/// Our zone's pageblocks of `start..end` per migratetype of [`TYPES`], those the kernel's
/// pagetypeinfo counts: `pagetypeinfo_showblockcount_print` skips a pageblock without an
/// online `struct page` (`pfn_to_online_page`: a hole such as the PCI hole below 4 GiB),
/// here those of `holes` (first pfns in the span, sorted: [`ZoneLayout::hole_blocks`]).
pub(crate) fn blocks_of(zone: &Zone, start: u64, end: u64, holes: &[u64]) -> [u64; 3] {
    let pb = 1u64 << zone.config().pageblock_order;
    let mut n = [0u64; 3];
    let mut first = start;
    while first < end {
        let next = ((first / pb) + 1) * pb;
        if holes.binary_search(&first).is_err() {
            let mt = zone.pageblock_migratetype(Pfn(first));
            if let Some(t) = TYPES.iter().position(|&x| Some(x) == mt) {
                n[t] += 1;
            }
        }
        first = next;
    }
    n
}

/// Per migratetype of [`TYPES`]: pageblocks and free pages pagetypeinfo shows.
pub(crate) fn kernel_types(snap: &ProcSnapshot, z: &ZoneSnapshot) -> ([u64; 3], [u64; 3]) {
    let (mut blocks, mut free) = ([0u64; 3], [0u64; 3]);
    if let Some(area) = &z.free_area {
        for (i, name) in snap.migratetypes.iter().enumerate() {
            let MigrateTypeName::Known(mt) = name else {
                continue;
            };
            let Some(t) = TYPES.iter().position(|x| x == mt) else {
                continue;
            };
            blocks[t] += area.pageblocks.get(i).copied().unwrap_or(0);
            if let Some(counts) = area.free.get(i) {
                free[t] += counts
                    .iter()
                    .enumerate()
                    .map(|(o, c)| c.blocks << o)
                    .sum::<u64>();
            }
        }
    }
    (blocks, free)
}

/// Brings a fresh `zone` (spanning the kernel zone `z`, with one CPU more than the trace's:
/// the set-up CPU, see [`super::SETUP_CPUS`]) to the snapshot's state; returns the pool of pages in
/// use and what was reached. Call before recording events.
///
/// The state is the kernel's layout where the snapshot has one, else one synthesised from
/// its counts ([`ZoneLayout`]); each CPU's `count` pages (or the count the trace pins,
/// [`crate::trace::replay::start_count`]) are chosen among the pages in use and freed onto its lists, in
/// the lists the trace's first events show ([`ListDemand`]).
pub fn populate(
    zone: &Zone,
    snap: &ProcSnapshot,
    z: &ZoneSnapshot,
    demand: Option<&ListDemand>,
) -> Result<(Pool, SetupFacts), String> {
    populate_from(zone, snap, z, demand, None)
}

/// [`populate`], taking the layout `early` synthesised before the lists were known where it
/// is the one they give ([`layout::Early::fits`]).
pub fn populate_from(
    zone: &Zone,
    snap: &ProcSnapshot,
    z: &ZoneSnapshot,
    demand: Option<&ListDemand>,
    early: Option<&layout::Early>,
) -> Result<(Pool, SetupFacts), String> {
    let label = z.label();
    let err = |what: &str| format!("--proc: setting up {label}: {what}");
    if z.managed_pages == 0 {
        return Ok((Pool::default(), SetupFacts::default()));
    }
    let max_order = zone.config().max_order;
    let targets = layout::targets(snap, z, usize::from(max_order) + 1);
    let lists = cpu_lists(zone, z, demand);
    let mut l = zone_layout(zone, snap, z, demand, early, &targets, &lists);
    l.late_hints
        .retain(|h| late_fits(h, demand, zone.config().pcp.thp_order));
    let lists = at_least_rolled(lists, (&l.roll_hints, &l.late_hints), demand);
    // Room for each list's pages in pageblocks of its type (`layout::room`).
    if !l.synthesised {
        let named: HashSet<u64> = demand
            .map(|d| {
                let h = &d.hints;
                h.block_types
                    .keys()
                    .chain(h.not_types.keys())
                    .copied()
                    .collect()
            })
            .unwrap_or_default();
        l.make_room(&lists, &named);
    }
    // A block the window first frees was in use, on no list (`layout/pcp.rs`).
    let held = l.hold_freed(demand.map_or(&[][..], |d| &d.hints.freed));
    let mut ordered = by_exactness(&lists, demand, true);
    ordered.extend(by_exactness(&lists, demand, false));
    let pcp_missing = l.choose_pcp(&ordered);
    l.release(held);
    l.place_absent();
    let used = l.apply(zone).map_err(|e| err(&e))?;
    set_reserve(zone, z);
    let [u, mut m, r, h, i] = used;
    m.extend(h);
    m.extend(i);
    m.sort_unstable();
    let exact = (!l.synthesised).then(|| l.start..l.end());
    let pool = Pool::new([u, m, r], exact);
    fill_lists(zone, z, &l, demand).map_err(|e| err(&e))?;
    let facts = facts(zone, snap, z, &l, &targets, &pool, pcp_missing);
    Ok((pool, facts))
}

/// Whether the block `h` the text after the window shows on a list from the start
/// ([`layout::StartHints::late`]) can have been there: a list of a PCP order (`thp_order`
/// the THP lists', `pcp_allowed_order`) and type, that the window does not show exactly (a
/// list it shows empty, or drained to empty, held no block through it). A list only the text
/// past the window shows empty held it until then ([`ListDemand::empty_past`]).
fn late_fits(h: &layout::PcpHint, demand: Option<&ListDemand>, thp_order: Option<u8>) -> bool {
    let pcp_order = h.order <= 3 || Some(h.order) == thp_order;
    let shown = |d: &ListDemand| d.is_exact_in_window(h.cpu, h.order, h.mt);
    pcp_order && h.mt < TYPES.len() && !demand.is_some_and(shown)
}

/// Each CPU's lists (order, migratetype, blocks) for its start count: the count at the
/// trace's start where the trace pins it, else zoneinfo's, split as the trace's first events
/// show ([`ListDemand::fit`]); without them all on order 0 Movable.
fn cpu_lists(zone: &Zone, z: &ZoneSnapshot, demand: Option<&ListDemand>) -> Vec<layout::CpuLists> {
    // The set-up CPU is one past the trace's; a traced CPU `c` is `c % cpus`.
    let setup_cpu = zone.cpus() - 1;
    z.pagesets
        .iter()
        .map(|ps| {
            let cpu = ps.cpu % setup_cpu.max(1);
            let left = demand
                .and_then(|d| d.start_count.get(ps.cpu as usize).copied().flatten())
                .unwrap_or(u64::from(ps.count));
            let lists = demand.map_or_else(|| vec![(0, 1, left)], |d| d.fit(cpu, left));
            (cpu, lists)
        })
        .collect()
}

/// Where the free blocks lie: the kernel's layout, hinted by the trace, where the snapshot has
/// one; else `early`'s where it fits, else one synthesised around the lists' pages per type.
fn zone_layout(
    zone: &Zone,
    snap: &ProcSnapshot,
    z: &ZoneSnapshot,
    demand: Option<&ListDemand>,
    early: Option<&layout::Early>,
    targets: &layout::Targets,
    lists: &[layout::CpuLists],
) -> ZoneLayout {
    let (pb_order, max_order) = (zone.config().pageblock_order, zone.config().max_order);
    let mut pcp = [0u64; 5];
    for (_, cpu_lists) in lists {
        for &(order, mt, n) in cpu_lists {
            if let Some(p) = pcp.get_mut(mt) {
                *p += n << order;
            }
        }
    }
    match &snap.layout {
        Some(k) => {
            let none = layout::StartHints::default();
            let hints = demand.map_or(&none, |d| &d.hints);
            ZoneLayout::from_kernel_hinted(k, z, targets, pb_order, max_order, hints)
        }
        None => match early.and_then(|e| e.fits(z, targets, pcp, pb_order, max_order)) {
            Some(l) => l,
            None => ZoneLayout::synthesise(z, targets, pcp, pb_order, max_order),
        },
    }
}

/// The lists the trace shows exactly (`want`) or the others, every CPU's. Those choose first,
/// then the others (lower bounds, and the rest of a count, which is a guess): where the pages
/// of a type run short, the guess takes another type's, not the known list. 6.12-2g p_thp:
/// CPU 3's Movable list held 196 blocks (the kernel served 262 allocations and 74 frees before
/// its first refill); chosen after CPUs 0 and 1's counts, put on Movable by guess, it was left
/// none.
fn by_exactness(
    lists: &[layout::CpuLists],
    demand: Option<&ListDemand>,
    want: bool,
) -> Vec<layout::CpuLists> {
    lists
        .iter()
        .map(|(cpu, ls)| {
            let known = |&&(o, mt, _): &&(u8, usize, u64)| {
                demand.is_some_and(|d| d.is_exact(*cpu, o, mt)) == want
            };
            (*cpu, ls.iter().filter(known).copied().collect())
        })
        .collect()
}

/// Lowmem protection as zoneinfo printed it (`protection: (...)`); set after the pages came
/// online, which recomputes the zone's own.
fn set_reserve(zone: &Zone, z: &ZoneSnapshot) {
    let mut reserve = [0u64; zonealloc::ZoneType::ALL.len()];
    for &(t, pages) in &z.protection {
        if let Some(r) = reserve.get_mut(t.index()) {
            *r = pages;
        }
    }
    zone.set_lowmem_reserve(reserve);
}

/// What the set-up reached against the snapshot.
fn facts(
    zone: &Zone,
    snap: &ProcSnapshot,
    z: &ZoneSnapshot,
    l: &ZoneLayout,
    targets: &layout::Targets,
    pool: &Pool,
    pcp_missing: u64,
) -> SetupFacts {
    let max_order = usize::from(zone.config().max_order);
    let (kblocks, _) = kernel_types(snap, z);
    let holes = l.hole_blocks();
    let start = z.start_pfn;
    // The kernel's counts at the start: pagetypeinfo's, moved by the events after its read.
    let counts = l.at_start.as_ref().unwrap_or(&targets.0);
    let (moved, pages) = moved(&targets.0, counts);
    let shift = |n: u64| (n + pages.1).saturating_sub(pages.0);
    SetupFacts {
        zone: z.label(),
        layout: if l.synthesised {
            "synthesised"
        } else {
            "kernel"
        },
        managed: (z.managed_pages, zone.managed_pages()),
        used: (
            (z.used_pages().unwrap_or(0) + pages.0).saturating_sub(pages.1),
            pool.len() as u64,
        ),
        free: (
            shift(z.buddy_free_pages().unwrap_or(z.free_pages)),
            zone.free_pages(),
        ),
        free_blocks: (
            (0..=max_order)
                .map(|o| counts.iter().map(|f| f.get(o).copied().unwrap_or(0)).sum())
                .collect(),
            zone.nr_free()[..=max_order].to_vec(),
        ),
        unplaced: l.unplaced,
        trimmed: l.trimmed,
        made_up: l.made_up,
        moved,
        pcp_missing,
        pcp: (z.pcp_pages(), zone.pcp_pages()),
        pageblocks: (
            kblocks,
            blocks_of(zone, start, start + z.spanned_pages, &holes),
        ),
        holes,
    }
}

/// Free blocks of `read` (per migratetype index and order) that `start` lacks and has
/// beyond it, and their pages.
fn moved(read: &[Vec<u64>; 5], start: &[Vec<u64>; 5]) -> ((u64, u64), (u64, u64)) {
    let (mut blocks, mut pages) = ((0, 0), (0, 0));
    for (r, s) in read.iter().zip(start) {
        for (o, (&r, &s)) in r.iter().zip(s).enumerate() {
            blocks.0 += r.saturating_sub(s);
            blocks.1 += s.saturating_sub(r);
            pages.0 += r.saturating_sub(s) << o;
            pages.1 += s.saturating_sub(r) << o;
        }
    }
    (blocks, pages)
}

/// Frees each CPU's chosen blocks onto its lists, at the kernel's current `high`.
fn fill_lists(
    zone: &Zone,
    z: &ZoneSnapshot,
    l: &ZoneLayout,
    demand: Option<&ListDemand>,
) -> Result<(), String> {
    let setup_cpu = zone.cpus() - 1;
    let pcp_cfg = zone.config().pcp;
    let by_list = pcp_cfg.drain_migratetype == zonealloc::DrainMigratetype::AtFree;
    for ps in &z.pagesets {
        let cpu = ps.cpu % setup_cpu.max(1);
        // The kernel's current `high` (printed from 6.7 on; clamped into high_min..=high_max),
        // set back after the frees. During them `high` is as high as nr_pcp_high lets it be
        // (high_max), so that they do not drain what the kernel kept: a CPU whose count was
        // its `high` (7.2-4g p_idle after: CPU 1, 1283 of 1283) drained 1220 pages on its
        // last free (`count >= high`) and started the replay with 63.
        let mut high = tuning(
            ps,
            zone.config().pcp.high_mode != zonealloc::HighMode::Fixed,
        );
        // `--whole-file` from 6.7 on: `high` at the file's start, as the trace bounds it
        // (`start_count::start_high`), not zoneinfo's at its read.
        let start_high = demand.and_then(|d| d.start_high.get(cpu as usize).copied().flatten());
        if let (Some(h), Some(_)) = (start_high, high.high) {
            high.high = Some(i32::try_from(h).unwrap_or(i32::MAX));
        }
        let filling = PcpTuning {
            high: high.high.map(|_| i32::MAX),
            ..high
        };
        zone.set_pcp_tuning(CpuId(cpu), filling);
        let mut blocks: Vec<(u64, u8)> = l
            .pcp
            .iter()
            .filter(|b| b.0 == cpu)
            .map(|b| (b.1, b.2))
            .collect();
        // Higher orders first, and `free_count` back at 0 before each free of orders 1..=3:
        // the set-up's frees are no streak of the kernel's. A second order-1..3 free once
        // `free_count` reached `batch` is a `free_high` one (6.12 `free_unref_page_commit`,
        // 7.2 `free_frozen_page_commit`; 6.1's `free_factor`), and `nr_pcp_high` returns 0
        // for it: the lists drained `min(count, batch << 5)` pages to the buddy. 6.12-8g
        // p_idle's Normal set-up ended 196 PCP pages short so, p_thp's 324.
        blocks.sort_by_key(|&(_, order)| std::cmp::Reverse(order));
        for (p, order) in blocks {
            let order = Order::new(order).ok_or("PCP order out of range")?;
            if (1..=3).contains(&order.get()) {
                zone.set_pcp_tuning(
                    CpuId(cpu),
                    PcpTuning {
                        free_count: Some(0),
                        ..PcpTuning::default()
                    },
                );
            }
            // A block taken for a list of another type than its pageblock's
            // (`ZoneLayout::pcp_list`) goes on that list where the trace names lists: 6.1's
            // drain prints the type the page was listed under (`free_pcppages_bulk`'s
            // `get_pcppage_migratetype`). From 6.10 it prints the pageblock's type now, which
            // the head cannot tell from a list's; there the block goes on the list it was
            // taken for only where its pageblock's list is one the trace shows exactly,
            // which it would make longer than the kernel's. (On every list, 7.2-8g p_thp's
            // refill events went 1.4% -> 45% off: CPU 2 refilled 2016 pages the kernel did
            // not.) 6.12-8g p_pressure: CPU 2's Unmovable list, exact at 300 pages, got 1280.
            let over = l.pcp_list.get(&p).copied().filter(|_| {
                by_list
                    || demand.is_some_and(|d| d.is_exact(cpu, order.get(), l.type_of(p).index()))
            });
            match over {
                Some(list) => zone.free_on_list(CpuId(cpu), Pfn(p), order, list),
                None => zone.free_on(CpuId(cpu), Pfn(p), order),
            }
            .map_err(|e| e.to_string())?;
        }
        // The set-up's frees are not the kernel's history: its free scaling restarts from
        // zero, its refill scaling is what the CPU's first refill shows (else zero: zoneinfo
        // prints neither), `high` is the kernel's again.
        let alloc_factor = demand
            .filter(|_| pcp_cfg.alloc_scaling)
            .and_then(|d| d.alloc_factor(cpu, u64::from(ps.batch), pcp_cfg.batch_scale_max))
            .unwrap_or(0);
        zone.set_pcp_tuning(
            CpuId(cpu),
            PcpTuning {
                alloc_factor: Some(alloc_factor),
                free_count: Some(0),
                prev_free_high_order: Some(false),
                ..high
            },
        );
    }
    Ok(())
}

/// The tuning state a pageset line of zoneinfo gives: its current `high` where the zone
/// auto-tunes it (`auto`: 6.7 on; 0 on a CPU that has not used the zone since boot,
/// `per_cpu_pages_init`, clamped on first use); with a fixed `high` (before 6.7) it is the
/// zone's one value, which the zone config already holds.
fn tuning(ps: &crate::procfs::PagesetSnapshot, auto: bool) -> PcpTuning {
    PcpTuning {
        high: auto.then_some(ps.high as i32),
        ..PcpTuning::default()
    }
}
