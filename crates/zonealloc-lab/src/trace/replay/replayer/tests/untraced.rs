//! The untraced allocations the kernel's side hands the replayer
//! ([`Replayer::feed_inferred`]).

use super::*;
use crate::trace::replay::infer::kernel::Untraced;

/// A traced allocation that shows pages taken untraced before it (`KernelSide::under_tops`)
/// commits its CPU's deferred frees first, as it would before itself: a single free commits
/// in the call that printed it (`free_unref_page_commit`), so the bulk take found the freed
/// page on the list's head. Fails on the old code: the freed page was still ours in use at
/// the take, which was skipped, and the allocation then took the page the kernel's take did.
#[test]
fn a_bulk_take_an_allocation_shows_follows_the_frees_before_it() {
    let g = one_cpu_zone(1 << 16);
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
    r.commit_at_batched = true;
    r.feed(&at(0, None, alloc0(0x100, 0, "GFP_KERNEL")), Inferred::None)
        .unwrap();
    let held = r.zones[0].pcp_info(CpuId(0)).list_pages[0];
    assert!(held > 1, "{held} held");
    let free = EventKind::Free {
        pfn: 0x100,
        order: 0,
    };
    r.feed(&at(0, None, free), Inferred::None).unwrap();
    // The kernel's side: the allocation of 0x200 passed over 0x100, freed onto the head.
    let alloc = at(0, None, alloc0(0x200, 0, "GFP_KERNEL"));
    r.feed_inferred(&alloc, Inferred::None, &[Untraced::new(0x100, 0, 0)])
        .unwrap();
    assert_eq!(r.counts.untraced_allocs, 1);
    assert!(r.frames.is_live(0x100) && r.frames.is_live(0x200));
    // The free put one page back, the take and the allocation took two.
    assert_eq!(r.zones[0].pcp_info(CpuId(0)).list_pages[0], held - 1);
}

/// `alloc_pages_bulk` takes through `__rmqueue_pcplist`: the CPU's `free_count` stays as the
/// frees left it, where a traced allocation (`rmqueue_pcplist`) halves it. Fails on the old
/// code (halved at each take).
#[test]
fn a_bulk_take_leaves_the_free_count_as_it_was() {
    let g = one_cpu_zone(1 << 16);
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
    for pfn in 0x100..0x108 {
        r.feed(&at(0, None, alloc0(pfn, 0, "GFP_KERNEL")), Inferred::None)
            .unwrap();
    }
    for pfn in 0x100..0x108 {
        let free = EventKind::Free { pfn, order: 0 };
        r.feed(&at(0, None, free), Inferred::None).unwrap();
    }
    let free_count = |r: &Replayer| r.zones[0].pcp_info(CpuId(0)).free_count;
    let before = free_count(&r);
    assert!(before >= 8, "{before}");
    let ev = at(0, None, alloc0(0x200, 0, "GFP_KERNEL"));
    r.untraced_allocs(
        &ev,
        &[Untraced::new(0x300, 0, 0), Untraced::new(0x301, 0, 0)],
    )
    .unwrap();
    assert_eq!(r.counts.untraced_allocs, 2);
    assert_eq!(free_count(&r), before);
    // A traced allocation halves it.
    r.feed(&ev, Inferred::None).unwrap();
    assert_eq!(free_count(&r), before >> 1);
}

/// A bulk refill's first page whose free came before the inference
/// (`KernelSide::bulk_refill_before`, [`Untraced::freed`]) is taken now only while that free
/// waits, deferred: once committed, the free's own inference took it (6.1-4g p_pressure:
/// `kworker/0:1` frees 0x10265a at 853.630570, before `dash-1007`'s next refill). Fails on the
/// old code (taken either way: an extra refill of our list).
#[test]
fn a_freed_bulk_page_is_taken_only_while_its_free_waits() {
    let g = one_cpu_zone(1 << 16);
    let free = free0(0x900);
    let page = bulk_page(0x800, true);
    let mut r = Replayer::new(Variant::parse("upstream").unwrap(), &g, None).unwrap();
    r.untraced_allocs(&free, &[page]).unwrap();
    assert_eq!((r.ours.get(0, 0).refills, r.counts.untraced_allocs), (0, 0));
    assert!(!r.frames.is_live(0x800));
    r.frames.set_deferred_at(0x800, Some(0));
    r.untraced_allocs(&free, &[page]).unwrap();
    assert!(r.frames.is_live(0x800));
    assert!(r.ours.get(0, 0).refills > 0);
}

/// An order-0 free of `pfn` on CPU 0.
pub(super) fn free0(pfn: u64) -> Event<'static> {
    at(0, None, EventKind::Free { pfn, order: 0 })
}

/// Page `pfn` taken untraced first from a bulk refill on CPU 0's Unmovable list, its free
/// before the inference or (`freed`) not.
pub(super) fn bulk_page(pfn: u64, freed: bool) -> Untraced {
    Untraced {
        bulk_refill: true,
        freed,
        ..Untraced::new(pfn, 0, 0)
    }
}
