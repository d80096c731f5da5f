//! The reference the list inference's walk is held to: every event of a zone kept, then
//! balanced in one go.

use super::*;

/// The list inference over `events` as it ran before: every event of a zone kept, then
/// balanced in one go ([`reference_balance`]).
pub(super) fn reference(
    events: &[crate::trace::parse::Event<'_>],
    cpus: u32,
    zones: &[std::ops::Range<u64>],
    pageblock_order: u8,
    thp_order: Option<u8>,
    numbering: Numbering,
) -> Head {
    let mt_of = |m: u8| usize::from(numbering.to_current(m));
    let pb = |pfn: u64| pfn >> pageblock_order;
    let cpus = cpus.max(1);
    let mut first: HashMap<u64, u8> = HashMap::default();
    let mut kept = Vec::new();
    for ev in events {
        let (rec, named) = reduce(ev, numbering);
        if let Some((pfn, m)) = named {
            first.entry(pb(pfn)).or_insert(m);
        }
        let pfn = ev.kind.pfn();
        if let (Some(r), Some(z)) = (rec, zones.iter().position(|z| z.contains(&pfn))) {
            let cpu = ev.cpu.unwrap_or(0) % cpus;
            kept.push((z, cpu, r, named.map(|(pfn, m)| (pb(pfn), mt_of(m)))));
        }
    }
    let mut first_named: Vec<(u64, u8)> = first
        .into_iter()
        .map(|(b, m)| (b << pageblock_order, m))
        .collect();
    first_named.sort_unstable();
    let named = |block: u64| {
        first_named
            .binary_search_by_key(&(block << pageblock_order), |&(p, _)| p)
            .ok()
            .map(|i| mt_of(first_named[i].1))
    };
    let zones = (0..zones.len())
        .map(|z| {
            let of_zone = kept.iter().filter(|e| e.0 == z).map(|e| (e.1, e.2, e.3));
            reference_balance(of_zone, cpus, pageblock_order, thp_order, &named)
        })
        .collect();
    Head {
        zones,
        first_named,
        held_frees: Vec::new(),
    }
}

/// The balances of one zone's lists over its events, all at once, as the inference ran
/// before it kept them event by event ([`balance::ZoneBalance`]); `first_named` gives a
/// pageblock's first named migratetype (current numbering). The tests hold the walk to it.
fn reference_balance(
    events: impl Iterator<Item = (u32, Rec, Option<(u64, usize)>)>,
    cpus: u32,
    pageblock_order: u8,
    thp_order: Option<u8>,
    first_named: &dyn Fn(u64) -> Option<usize>,
) -> ListDemand {
    let pb = |pfn: u64| pfn >> pageblock_order;

    let mut balance = vec![[[0i64; TYPES]; SLOTS]; cpus as usize];
    let mut low = vec![[[0i64; TYPES]; SLOTS]; cpus as usize];
    let mut direct = vec![false; cpus as usize];
    let mut exact = vec![[[false; TYPES]; SLOTS]; cpus as usize];
    let mut refilled = exact.clone();
    let mut at_refill = vec![[[0i64; TYPES]; SLOTS]; cpus as usize];
    // Per CPU: the list of its last event, if that was a drain.
    let mut last_drain: Vec<Option<(usize, usize)>> = vec![None; cpus as usize];
    let mut named: HashMap<u64, usize> = HashMap::default();
    // Frames whose last event was their `mm_page_free`.
    let mut pending_batched: std::collections::HashSet<u64> = Default::default();
    // The list each block a refill of the head put on one went on (by its first pfn).
    let mut on_list: HashMap<u64, usize> = HashMap::default();
    // Per order-0 frame the walk put on a list and nothing took off since: the CPU, the
    // type, and whether a refill put it there.
    let mut listed: HashMap<u64, (u32, usize, bool)> = HashMap::default();
    let forget = |listed: &mut HashMap<u64, (u32, usize, bool)>, pfn: u64, order: u8| {
        for f in pfn..pfn + (1u64 << order) {
            listed.remove(&f);
        }
    };
    // Per CPU: the first order-0 refill run (pages so far), and whether it is over (or a
    // free came first, which leaves it unknown).
    let mut first_refill: Vec<Option<u64>> = vec![None; cpus as usize];
    let mut first_done = vec![false; cpus as usize];
    let mut frees_before: Vec<Vec<u64>> = vec![Vec::new(); cpus as usize];
    let mut n = 0;
    let mut cpu_events = vec![0u64; cpus as usize];
    // The drains' word on the lists' start, which holds where the balance shows none: every
    // block in its hash map (an empty span), where the walk's keeps its zone's in an array.
    let mut shown = shown::Shown::new(0..0, cpus, thp_order);
    for (cpu, rec, name) in events {
        n += 1;
        // An allocation of a block another CPU's refill listed ran on that CPU.
        let cpu = match rec {
            Rec::Alloc(pfn, ..) => shown.refill_listed(pfn).unwrap_or(cpu),
            _ => cpu,
        };
        shown.step(cpu, rec);
        let c = cpu as usize;
        cpu_events[c] += 1;
        if !first_done[c] {
            match rec {
                Rec::ZoneLocked(_, 0, _, true) => *first_refill[c].get_or_insert(0) += 1,
                Rec::Free(pfn, _) | Rec::FreeBatched(pfn, _) if first_refill[c].is_none() => {
                    let f = &mut frees_before[c];
                    if f.len() < FREES_BEFORE_REFILL && !f.contains(&pfn) {
                        f.push(pfn);
                    }
                }
                _ => first_done[c] = first_refill[c].is_some(),
            }
        }
        if let Some((block, mt)) = name {
            named.insert(block, mt);
        }
        let rec = match rec {
            Rec::Drain(pfn, order, mt) => {
                Rec::Drain(pfn, order, on_list.remove(&pfn).unwrap_or(mt))
            }
            r => r,
        };
        // The list is empty here: it held exactly what was taken from it before, less what
        // was put on it; and never less than the most it served before (a free read onto
        // this list that went to another in the kernel must not undo an allocation the list
        // did serve). The first time the head shows it empty counts.
        let mut empty_here = |s: usize, mt: usize| {
            if !exact[c][s][mt] {
                exact[c][s][mt] = true;
                at_refill[c][s][mt] = balance[c][s][mt].min(low[c][s][mt]).min(0);
            }
        };
        match rec {
            // A refill runs only on an empty list (`__rmqueue_pcplist`).
            Rec::ZoneLocked(_, order, mt, true) => {
                if let (Some(s), true) = (slot_of(order, thp_order), mt < TYPES) {
                    empty_here(s, mt);
                    refilled[c][s][mt] = true;
                }
            }
            Rec::Drain(_, order, mt) => {
                if let (Some(s), Some((ps, pmt))) = (slot_of(order, thp_order), last_drain[c]) {
                    if drained_empty((ps, pmt), (s, mt)) {
                        empty_here(ps, pmt);
                    }
                }
            }
            _ => {}
        }
        last_drain[c] = match rec {
            Rec::Drain(_, order, mt) => slot_of(order, thp_order).map(|s| (s, mt)),
            _ => None,
        };
        let mut take_on = |c: usize, slot: Option<usize>, mt: usize, d: i64| {
            if let (Some(s), true) = (slot, mt < TYPES) {
                let b = &mut balance[c][s][mt];
                *b += d;
                low[c][s][mt] = low[c][s][mt].min(*b);
            }
        };
        let mut take = |slot: Option<usize>, mt: usize, d: i64| take_on(c, slot, mt, d);
        match rec {
            Rec::ZoneLocked(pfn, order, mt, refill) => {
                if refill {
                    take(slot_of(order, thp_order), mt, 1);
                    on_list.insert(pfn, mt);
                } else {
                    direct[c] = true;
                }
                forget(&mut listed, pfn, order);
                pending_batched.remove(&pfn);
                if refill && order == 0 && mt < TYPES {
                    listed.insert(pfn, (cpu, mt, true));
                }
            }
            Rec::Alloc(pfn, order, mt) => {
                if !std::mem::take(&mut direct[c]) {
                    take(slot_of(order, thp_order), mt, -1);
                }
                forget(&mut listed, pfn, order);
                pending_batched.remove(&pfn);
            }
            Rec::Drain(pfn, order, mt) => {
                take(slot_of(order, thp_order), mt, -1);
                forget(&mut listed, pfn, order);
                pending_batched.remove(&pfn);
            }
            Rec::Free(pfn, order) | Rec::FreeBatched(pfn, order) => {
                if matches!(rec, Rec::Free(..)) {
                    pending_batched.insert(pfn);
                } else if pending_batched.remove(&pfn) {
                    // The `mm_page_free` of the same page came first: counted there.
                    continue;
                }
                // A page the walk put on a list, freed with nothing traced on it since,
                // was taken off that list untraced first (`alloc_pages_bulk`).
                let again = listed.remove(&pfn);
                forget(&mut listed, pfn, order);
                if let Some((by, mt, refilled)) = again.filter(|_| order == 0) {
                    if refilled || matches!(rec, Rec::Free(..)) {
                        take_on(by as usize, Some(0), mt, -1);
                    }
                }
                let block = pb(pfn);
                let now = named.get(&block).copied();
                let mt = now.or_else(|| first_named(block)).unwrap_or(MOVABLE);
                take_on(c, slot_of(order, thp_order), mt, 1);
                if let (Some(mt), 0) = (now, order) {
                    if mt < TYPES {
                        listed.insert(pfn, (cpu, mt, false));
                    }
                }
                on_list.remove(&pfn);
            }
        }
    }
    let blocks = (0..cpus as usize)
        .map(|c| {
            let mut b = [[0u64; TYPES]; SLOTS];
            for s in 0..SLOTS {
                for t in 0..TYPES {
                    let l = if exact[c][s][t] {
                        at_refill[c][s][t]
                    } else {
                        low[c][s][t]
                    };
                    b[s][t] = l.unsigned_abs();
                }
            }
            b
        })
        .collect();
    let mut demand = ListDemand {
        exact,
        refilled,
        empty_past: Vec::new(),
        blocks,
        thp_order,
        events: n,
        cpu_events,
        start_count: Vec::new(),
        start_floor: Vec::new(),
        start_high: Vec::new(),
        hints: Default::default(),
        first_refill: first_refill
            .iter()
            .zip(&frees_before)
            .map(|(r, f)| r.map(|n| (n, f.len() as u8)))
            .collect(),
    };
    shown::apply(&mut demand, &shown.finish());
    demand
}
