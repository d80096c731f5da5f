//! Pageblock types a refill rules out: a page freed onto a per-CPU list sits on the list of
//! its pageblock's type (6.1 and 6.12 `free_unref_page` and 7.2 `free_frozen_pages` read
//! `get_pfnblock_migratetype` and `free_unref_page_commit` / `free_frozen_page_commit` list
//! it there), and a CPU refills a list only when it is empty (`__rmqueue_pcplist` calls
//! `rmqueue_bulk` on `list_empty`). A page freed on a CPU that no event names again (no
//! allocation, drain or refill takes it) before that CPU refills its list of the page's order
//! and type `T` was not on that list: its pageblock was not of type `T` at the free.
//!
//! 6.12-8g p_pressure: an RCU free puts 0x100606 on CPU 1's lists at 1734.082101 (line
//! 76109), in pageblock 0x803, which no event names; CPU 1 refills its Unmovable list at
//! 1736.762018 (line 138767) and no event names the page in between: pageblock 0x803 was
//! not Unmovable.
//!
//! A page `alloc_pages_bulk` took off the list is not named either; the trace shows it freed
//! again with no allocation between (`infer/kernel/bulk.rs`), which withdraws what its
//! earlier free ruled out.

use std::collections::HashMap;

use crate::trace::parse::EventKind;

/// A list: `(zone, cpu, order)`.
type List = (usize, u32, u8);

/// Frees still on a list, and the types the refills since have ruled out.
#[derive(Debug, Default)]
pub(super) struct NotListed {
    /// Per pfn freed onto a list and not named since: its list (an index into `lists`) and
    /// how many refills that list had had at the free.
    listed: crate::trace::stats::HashMap<u64, (usize, usize)>,
    /// The lists seen, and per list the type index of each of its refills, in order.
    lists: Vec<(List, Vec<usize>)>,
    /// Per pfn that left its list: `(zone, types ruled out)`, a bit per migratetype index.
    ruled_out: HashMap<u64, (usize, u8)>,
    /// Per CPU: the list of the refill its last event was part of, and its type.
    refilling: Vec<Option<(List, usize)>>,
}

impl NotListed {
    /// Nothing seen yet, on `cpus` CPUs.
    pub(super) fn new(cpus: u32) -> NotListed {
        NotListed {
            refilling: vec![None; cpus as usize],
            ..NotListed::default()
        }
    }

    /// Takes one event of zone `z` on `cpu`; `pcp_order` says which orders a list takes,
    /// `mt_of` a migratetype in the current numbering's index.
    pub(super) fn feed(
        &mut self,
        z: usize,
        cpu: u32,
        kind: &EventKind,
        pcp_order: impl Fn(u8) -> bool,
        mt_of: impl Fn(u8) -> usize,
    ) {
        let pfn = kind.pfn();
        match *kind {
            EventKind::ZoneLocked {
                order,
                migratetype,
                percpu_refill: true,
                ..
            } => {
                self.leave(pfn);
                self.refill((z, cpu, order), mt_of(migratetype));
                return;
            }
            // A free of a list's order goes on the list. Freed again with no event naming
            // it between: taken untraced (`alloc_pages_bulk`), so the earlier free rules
            // nothing out.
            EventKind::Free { order, .. } if pcp_order(order) => {
                let l = self.list((z, cpu, order));
                self.listed.insert(pfn, (l, self.lists[l].1.len()));
            }
            // The batched free's own line follows its `mm_page_free`.
            EventKind::FreeBatched { .. } => {}
            // Anything else naming the page: it is off any list, if it was on one.
            _ => self.leave(pfn),
        }
        if let Some(slot) = self.refilling.get_mut(cpu as usize) {
            *slot = None;
        }
    }

    /// The index of `list` in `lists`, added if new (a handful per CPU).
    fn list(&mut self, list: List) -> usize {
        match self.lists.iter().position(|(l, _)| *l == list) {
            Some(i) => i,
            None => {
                self.lists.push((list, Vec::new()));
                self.lists.len() - 1
            }
        }
    }

    /// `list` refills with type index `mt`; the first block of a run counts.
    fn refill(&mut self, list: List, mt: usize) {
        let Some(slot) = self.refilling.get_mut(list.1 as usize) else {
            return;
        };
        if slot.replace((list, mt)) == Some((list, mt)) || mt >= 8 {
            return;
        }
        let l = self.list(list);
        self.lists[l].1.push(mt);
    }

    /// `pfn` leaves its list, if it is on one: every refill of its list since its free rules
    /// that refill's type out for it.
    fn leave(&mut self, pfn: u64) {
        if let Some((l, since)) = self.listed.remove(&pfn) {
            self.rule_out(pfn, l, since);
        }
    }

    fn rule_out(&mut self, pfn: u64, l: usize, since: usize) {
        let ((z, ..), refills) = &self.lists[l];
        let mask = refills[since..].iter().fold(0u8, |m, &t| m | 1 << t);
        if mask != 0 {
            self.ruled_out.entry(pfn).or_insert((*z, 0)).1 |= mask;
        }
    }

    /// Per zone (of `zones`), per pageblock (`pfn >> pageblock_order`): the types ruled out.
    pub(super) fn finish(mut self, zones: usize, pageblock_order: u8) -> Vec<HashMap<u64, u8>> {
        for (pfn, (l, since)) in std::mem::take(&mut self.listed) {
            self.rule_out(pfn, l, since);
        }
        let mut out = vec![HashMap::new(); zones];
        for (pfn, (z, mask)) in self.ruled_out {
            if let Some(m) = out.get_mut(z) {
                *m.entry(pfn >> pageblock_order).or_insert(0) |= mask;
            }
        }
        out
    }
}
