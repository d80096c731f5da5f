//! The list pages' choice: the tiers walked as taken against a reference, and its corners.

use super::*;
use zonealloc::{LayoutBlock, Order, Pfn};

/// The choice as it was made before the tiers were walked as taken: every tier's heads
/// listed up front, the free buddies looked up in a map.
fn listed_up_front(l: &mut ZoneLayout, lists: &[CpuLists]) -> u64 {
    let free: HashMap<u64, u8> = l.free.iter().map(|b| (b.pfn.0, b.order.get())).collect();
    let mut tiers: HashMap<(u8, usize, u8), (Vec<u64>, usize)> = HashMap::default();
    let mut missing = 0u64;
    let mut heads = Vec::new();
    // Every list's hinted blocks first.
    let hinted: Vec<Vec<_>> = (lists.iter())
        .map(|(cpu, ls)| {
            (ls.iter())
                .map(|&(order, mt, n)| {
                    let mut left = n;
                    let (tail, head) = l.hinted(*cpu, order, mt, &mut left, Hints::Window);
                    (tail, head, left)
                })
                .collect()
        })
        .collect();
    for ((cpu, cpu_lists), hinted) in lists.iter().zip(hinted) {
        for (&(order, mt, _), (tail, head, left)) in cpu_lists.iter().zip(hinted) {
            let mut left = left;
            for &pfn in &tail {
                l.pcp.push((*cpu, pfn, order));
            }
            for tier in [0u8, 2, 1, 3] {
                if left == 0 {
                    break;
                }
                let size = 1u64 << order;
                let class = if tier < 2 { Page::Flagless } else { Page::Used };
                let t = tiers.entry((order, mt, tier)).or_insert_with(|| {
                    let typed = tier.is_multiple_of(2);
                    let want = MigrateType::from_index(mt).unwrap_or(MigrateType::Movable);
                    let (mut first, mut rest) = (Vec::new(), Vec::new());
                    let mut pfn = l.start.div_ceil(size) * size;
                    while pfn + size <= l.end() {
                        let i = (pfn - l.start) as usize;
                        let ok = (!typed || l.type_of(pfn) == want)
                            && l.pages[i..i + size as usize].iter().all(|&p| p == class);
                        if ok && typed && free.get(&(pfn ^ size)) == Some(&order) {
                            first.push(pfn);
                        } else if ok {
                            rest.push(pfn);
                        }
                        pfn += size;
                    }
                    first.extend(rest);
                    (first, 0)
                });
                while left > 0 && t.1 < t.0.len() {
                    let pfn = t.0[t.1];
                    t.1 += 1;
                    let i = (pfn - l.start) as usize;
                    if l.pages[i..i + size as usize].iter().all(|&p| p == class) {
                        l.pages[i..i + size as usize].fill(Page::Pcp);
                        l.pcp.push((*cpu, pfn, order));
                        left -= 1;
                    }
                }
            }
            if left > 0 && order > 0 {
                left -= l.take_mixed(*cpu, order, mt, left);
            }
            for &pfn in head.iter().rev() {
                heads.push((*cpu, pfn, order));
            }
            missing += left << order;
        }
    }
    l.pcp.extend(heads);
    missing
}

/// A layout of `len` pages from an unaligned `start`, pageblocks of 32 pages of three
/// types, pages in runs of every class, free blocks of orders 0 to 3 (one pfn named twice),
/// and hints; all drawn from `seed`.
fn drawn(seed: u64, start: u64, len: usize) -> ZoneLayout {
    let mut x = seed | 1;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let classes = [Page::Used, Page::Flagless, Page::Free, Page::Absent];
    let mut pages = Vec::with_capacity(len);
    while pages.len() < len {
        let c = classes[next(4) as usize];
        let run = 1 + next(24) as usize;
        pages.extend(std::iter::repeat_n(c, run.min(len - pages.len())));
    }
    let pb_order = 5;
    let nblocks = (start + len as u64).div_ceil(32) - start / 32;
    let types = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
    ];
    let blocks = (0..nblocks).map(|_| types[next(3) as usize]).collect();
    let mut free: Vec<LayoutBlock> = (0..len / 16)
        .map(|_| {
            let order = next(4) as u8;
            let pfn = (start + next(len as u64)) >> order << order;
            LayoutBlock {
                pfn: Pfn(pfn),
                order: Order::new(order).unwrap(),
                list: MigrateType::Movable,
            }
        })
        .collect();
    free.sort_by_key(|b| b.pfn);
    free.dedup_by_key(|b| b.pfn);
    let twice = LayoutBlock {
        order: Order::new(1).unwrap(),
        ..free[free.len() / 2]
    };
    free.insert(free.len() / 2 + 1, twice);
    let pcp_hints = (0..40)
        .map(|_| {
            let order = next(2) as u8;
            super::super::hints::PcpHint {
                cpu: next(3) as u32,
                pfn: (start + next(len as u64)) >> order << order,
                order,
                mt: next(3) as usize,
                drained: next(2) == 0,
            }
        })
        .collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/proc/linux-6.1-p1-before");
    let snap = crate::procfs::ProcSnapshot::read_dir(&dir).unwrap();
    let mut z = snap.zones[0].clone();
    (z.start_pfn, z.spanned_pages) = (start, len as u64);
    let mut l = ZoneLayout::empty(&z, pb_order, 6, false);
    assert_eq!(l.blocks.len() as u64, nblocks);
    (l.pages, l.blocks, l.free, l.pcp_hints) = (pages, blocks, free, pcp_hints);
    l
}

/// A drawn layout of 256 pages from pfn 1024, all free, with no hint; the index of a pfn.
fn all_free() -> (ZoneLayout, impl Fn(u64) -> usize) {
    let mut l = drawn(7, 1024, 256);
    l.pcp_hints.clear();
    l.pages.fill(Page::Free);
    (l, |pfn: u64| (pfn - 1024) as usize)
}

#[test]
fn a_block_of_pages_flagless_and_in_use_mixed_is_the_last_choice_of_a_short_list() {
    let (mut l, at) = all_free();
    // One aligned order-2 block read half in use, half flagless (a THP freed onto a list
    // while the layout was read), and one flagless page alone.
    l.pages[at(1040)..at(1044)].copy_from_slice(&[
        Page::Used,
        Page::Flagless,
        Page::Used,
        Page::Flagless,
    ]);
    l.pages[at(1100)] = Page::Flagless;
    // Two order-2 blocks wanted: the mixed one is found, the other is missing.
    let missing = l.choose_pcp(&[(0, vec![(2, 1, 2)])]);
    assert_eq!(missing, 4);
    assert_eq!(l.pcp, vec![(0, 1040, 2)]);
    assert!(l.pages[at(1040)..at(1044)].iter().all(|&p| p == Page::Pcp));
    // Order 0 takes no mixed block (a page is one class): the lone page, then nothing.
    let missing = l.choose_pcp(&[(1, vec![(0, 1, 2)])]);
    assert_eq!((missing, l.pcp.last()), (1, Some(&(1, 1100, 0))));
}

/// 6.12-3g-16cpu-wq p_pressure: `dash-1809` takes 0x60c2 off CPU 15's Unmovable list at
/// 220.993316, the window's first event naming it. The Movable list took 0x1fc6 of an
/// Unmovable pageblock (an untyped tier), recorded after 0x60c2; the set-up freed it onto
/// the exact Unmovable list, at its head, and the replay handed it out first. The blocks the
/// trace shows at a list's head are recorded after every other block.
#[test]
fn the_blocks_shown_at_a_lists_head_are_recorded_after_every_other_block() {
    let (mut l, at) = all_free();
    l.blocks.fill(MigrateType::Unmovable);
    l.pages[at(1100)] = Page::Flagless;
    l.pages[at(1200)] = Page::Flagless;
    l.pcp_hints = vec![PcpHint {
        cpu: 0,
        pfn: 1100,
        order: 0,
        mt: 0,
        drained: false,
    }];
    let missing = l.choose_pcp(&[(0, vec![(0, 0, 1), (0, 1, 1)])]);
    assert_eq!(missing, 0);
    assert_eq!(l.pcp, vec![(0, 1200, 0), (0, 1100, 0)]);
    assert_eq!(l.pcp_list.get(&1200), Some(&MigrateType::Movable));
}

/// 6.1-2g/p_pressure line 6181: a page the window first frees was in use at the start,
/// so the lists take the next page of the tier, and it keeps its class after.
#[test]
fn a_page_the_window_first_frees_goes_on_no_list() {
    let (mut l, at) = all_free();
    l.pages[at(1100)] = Page::Flagless;
    l.pages[at(1101)] = Page::Flagless;
    let held = l.hold_freed(&[(1100, 0)]);
    let missing = l.choose_pcp(&[(0, vec![(0, 1, 1)])]);
    l.release(held);
    assert_eq!((missing, l.pcp.clone()), (0, vec![(0, 1101, 0)]));
    assert_eq!(l.pages[at(1100)], Page::Flagless);
}

#[test]
fn the_tiers_walked_as_taken_choose_what_listing_them_up_front_chose() {
    let mut short = 0;
    for seed in 1..40u64 {
        let mut l = drawn(seed * 0x9e37_79b9, 1000 + seed, 6000);
        if seed.is_multiple_of(4) {
            // No page in use with a flag, as in a synthesised layout.
            for p in l.pages.iter_mut().filter(|p| **p == Page::Used) {
                *p = Page::Flagless;
            }
        }
        // Lists of every order to 3 and type, some longer than any tier holds.
        let lists: Vec<CpuLists> = (0..3u32)
            .map(|cpu| {
                let mut v = Vec::new();
                for order in 0..4u8 {
                    for mt in 0..3usize {
                        let n =
                            (u64::from(cpu) * 7 + u64::from(order) * 5 + mt as u64 * 3 + seed) % 23;
                        v.push((
                            order,
                            mt,
                            if (seed + mt as u64).is_multiple_of(5) {
                                900
                            } else {
                                n
                            },
                        ));
                    }
                }
                (cpu, v)
            })
            .collect();
        let (mut a, mut b) = (l.clone(), l);
        let walked = a.choose_pcp(&lists);
        let listed = listed_up_front(&mut b, &lists);
        assert_eq!(walked, listed, "seed {seed}");
        assert_eq!(a.pcp, b.pcp, "seed {seed}");
        assert_eq!(a.pages, b.pages, "seed {seed}");
        assert!(!a.pcp.is_empty(), "seed {seed}");
        short += usize::from(walked > 0);
    }
    // Some lists ran out of every tier.
    assert!(short > 5, "{short}");
}
