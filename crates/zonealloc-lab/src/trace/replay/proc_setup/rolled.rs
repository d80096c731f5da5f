//! Each CPU's lists as long as the layout's roll to the window's start shows them, at least.

use std::collections::HashMap;

use super::super::layout;
use crate::trace::replay::infer::pcp_state::ListDemand;

/// `lists` with each list the trace does not show exactly holding at least the blocks the
/// layout's roll to the window's start leaves on it (`roll`, [`layout::Roll`]): the last
/// event before the start of each of those put it on that list (a refill, `rmqueue_bulk`,
/// or a free, `free_frozen_page_commit`) and none took it off, so the list held it at the
/// start, whatever the window's first events show. The pages come off the order-0 lists
/// that hold the rest of the count ([`ListDemand::fit`]), the longest first; the count stays
/// as it was. 7.2-4g-2node p_idle: node 1 Normal's CPU 3 held 3357 pages, the window shows
/// its Unmovable order-0 list at 41 and never empty; the roll leaves 98 Unmovable order-0
/// and 60 Reclaimable order-0 blocks there, and the after-snapshot's reads (cat-961)
/// allocate Unmovable pages on CPU 3 that our list, given the rest as Movable, did not
/// hold: it refilled from the buddy 26 order-0 blocks the kernel kept free.
///
/// The blocks the text after the window shows on a list from the start (`late`,
/// [`layout::StartHints::late`]) are held there too, beyond the window's lower bound: the
/// window never names them, so none of them is among the blocks its events took off the
/// list. 6.12-4g p_thp: CPU 0's order-1 and order-2 Unmovable lists held 12 and 9 blocks
/// that `cat-648` drains after the window (trace lines 40683-40705); the window never
/// touches either list, and the count went to order 0.
pub(super) fn at_least_rolled(
    mut lists: Vec<layout::CpuLists>,
    (roll, late): (&[layout::PcpHint], &[layout::PcpHint]),
    demand: Option<&ListDemand>,
) -> Vec<layout::CpuLists> {
    let mut want: HashMap<(u32, u8, usize), u64> = HashMap::new();
    for h in roll {
        *want.entry((h.cpu, h.order, h.mt)).or_default() += 1;
    }
    let mut beyond: HashMap<(u32, u8, usize), u64> = HashMap::new();
    for h in late {
        *beyond.entry((h.cpu, h.order, h.mt)).or_default() += 1;
    }
    for ((cpu, order, mt), n) in beyond {
        let shown = demand.map_or(0, |d| d.at_least(cpu, order, mt));
        let w = want.entry((cpu, order, mt)).or_default();
        *w = (*w).max(shown) + n;
    }
    let mut keys: Vec<_> = want.iter().map(|(&k, &n)| (k, n)).collect();
    keys.sort_unstable();
    for ((cpu, order, mt), n) in keys {
        let exact = |o: u8, t: usize| demand.is_some_and(|d| d.is_exact(cpu, o, t));
        // What a list must keep: the trace's lower bound, and the roll's blocks.
        let floor = |o: u8, t: usize| {
            let shown = demand.map_or(0, |d| d.at_least(cpu, o, t));
            shown.max(want.get(&(cpu, o, t)).copied().unwrap_or(0))
        };
        let Some((_, ls)) = lists.iter_mut().find(|(c, _)| *c == cpu) else {
            continue;
        };
        if exact(order, mt) {
            continue;
        }
        let have = ls
            .iter()
            .find(|l| (l.0, l.1) == (order, mt))
            .map_or(0, |l| l.2);
        let mut lack = n.saturating_sub(have) << order;
        let mut got = 0u64;
        while lack > 0 {
            // The order-0 list with the most pages beyond what it must keep (the rest of the
            // count, which `fit` put there), other than this one.
            let Some(from) = ls
                .iter_mut()
                .filter(|l| l.0 == 0 && (l.0, l.1) != (order, mt) && !exact(0, l.1))
                .map(|l| {
                    let spare = l.2.saturating_sub(floor(0, l.1));
                    (spare, l)
                })
                .filter(|(spare, _)| *spare > 0)
                .max_by_key(|(spare, _)| *spare)
            else {
                break;
            };
            let take = from.0.min(lack);
            from.1 .2 -= take;
            lack -= take;
            got += take;
        }
        let add = got >> order;
        // What a higher order's whole block could not use goes back to an order-0 list of
        // the rest (the first not shown exactly): the CPU's count stays.
        let back = got - (add << order);
        if back > 0 {
            if let Some(l) = ls.iter_mut().find(|l| l.0 == 0 && !exact(0, l.1)) {
                l.2 += back;
            }
        }
        if add > 0 {
            match ls.iter_mut().find(|l| (l.0, l.1) == (order, mt)) {
                Some(l) => l.2 += add,
                None => ls.push((order, mt, add)),
            }
        }
        ls.retain(|l| l.2 > 0);
    }
    lists
}
