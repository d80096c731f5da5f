//! The start-count walk's refill runs: which `mm_page_alloc_zone_locked` and
//! `mm_page_alloc_extfrag` lines on a CPU belong to one `rmqueue_bulk` batch, and the pages
//! it put on the CPU's lists.

use super::Walk;

impl Walk {
    /// An `mm_page_alloc_zone_locked` on `cpu`: a direct buddy allocation's
    /// (`percpu_refill=0`), or a page of a refill. `rmqueue_bulk` takes a batch of one order
    /// and migratetype under one zone-lock hold with interrupts off: nothing else runs on the
    /// CPU meanwhile, so a refill of the run's order and migratetype continues it (other
    /// CPUs' events interleave in the merged trace, and touch only their own runs). Each run
    /// is one `nr_pcp_alloc`, which may raise the tuned `high` once. A run that straddles the
    /// window's start is one run too: its raise came before the marker (and, the snapshot
    /// being read before, may not be in zoneinfo's `high`: the bound keeps it).
    pub(super) fn refill(
        &mut self,
        zone: usize,
        cpu: u32,
        pfn: u64,
        order: u8,
        mt: u8,
        refill: bool,
    ) {
        let was = self.at(zone, cpu).and_then(|c| c.in_refill);
        self.other(cpu);
        if !refill {
            self.direct[cpu as usize] = true;
            return;
        }
        let same = |r: Option<(u8, u8, u64)>| r.is_some_and(|(o, m, _)| (o, m) == (order, mt));
        let node = self.geo.zones.get(zone).map_or(0, |z| z.node);
        let reclaim = self.reclaim.get(node as usize).copied().unwrap_or(false);
        let scale_max = self.scale_max;
        let Some(c) = self.at(zone, cpu) else {
            return;
        };
        // nr_pcp_alloc raises `high`: the walk of the start's goes on through the raise
        // where it can size it, not under kswapd's pass (`ZONE_BELOW_HIGH` may be set: no
        // raise, and frees lower `high`).
        if reclaim {
            c.start_high.close();
            c.reach.drop_set();
        } else {
            c.start_high.refill(order, !same(was));
            c.reach.refill(order, !same(was), &c.high, scale_max);
        }
        if !same(was) {
            // nr_pcp_alloc: each refill may raise the tuned high, by `batch <<
            // alloc_factor` for order 0 (at most `grow`), by the base `batch` alone for a
            // higher order (`if (order) batch = base_batch;`, before the order scaling).
            let grow = if order == 0 {
                c.high.grow
            } else {
                c.high.grow.min(c.high.batch)
            };
            c.high.hi = (c.high.hi + grow).min(c.high.max);
            c.refill_may_pass_high(order);
        }
        c.in_refill = Some((order, mt, pfn));
        self.add(zone, cpu, 1i64 << order);
    }

    /// An `mm_page_alloc_extfrag` on `cpu`. Inside a refill run of its order and
    /// migratetype it is one of the run's pages falling back (`__rmqueue_claim`,
    /// `__rmqueue_steal` from `rmqueue_bulk`'s `__rmqueue`): the run goes on. From 6.15 it
    /// names the page taken, which goes onto the list; a claim below `pageblock_order`
    /// printed it as `zone_locked` just before, a steal or a whole pageblock's claim did not.
    /// Before 6.15 it names the block fallen back to, and the retry's `zone_locked` the page.
    ///
    /// Outside a run, where it names the page, of an order the lists hold and not after a
    /// direct allocation's `zone_locked` (a claim below `pageblock_order` prints that
    /// first): the first page of a refill (`rmqueue_bulk` -> `__rmqueue`), which starts the
    /// run as its `zone_locked` would, whether or not one follows. 6.12-4g-wq p_pressure,
    /// Normal CPU 2: `kmem-phases-1209`'s THP refill at 544.547818 is two extfrag lines
    /// (0x104c00, 0x105800: `nr_pcp_alloc`'s batch of 2 at order 9) and no `zone_locked`,
    /// then the allocations of both. Read as taken off the lists, they bounded the count at
    /// the file's start at 2101 or more (2160 with 0x105000's at 544.554362), where
    /// zoneinfo's rolled back to 1210: the kernel's count at the free that drained at
    /// 503.548858 was `high_min`, 1281.
    pub(super) fn fallback(
        &mut self,
        zone: usize,
        cpu: u32,
        (pfn, order, mt): (u64, u8, u8),
        direct: bool,
    ) {
        let (names_page, scale_max) = (self.extfrag_names_page, self.scale_max);
        let run = self.at(zone, cpu).and_then(|c| c.in_refill);
        match run {
            Some((o, m, last)) if (o, m) == (order, mt) => {
                if names_page && last != pfn {
                    if let Some(c) = self.at(zone, cpu) {
                        c.in_refill = Some((o, m, pfn));
                        // One of the run's pages: its size sizes `nr_pcp_alloc`'s raise.
                        c.start_high.refill(order, false);
                        c.reach.refill(order, false, &c.high, scale_max);
                    }
                    self.add(zone, cpu, 1i64 << order);
                }
            }
            _ if names_page && !direct && self.pcp_order(order) => {
                self.refill(zone, cpu, pfn, order, mt, true);
            }
            _ => {
                self.other(cpu);
                // The direct allocation's page: the buddy hands it out (`rmqueue_buddy`).
                self.direct[cpu as usize] = direct;
            }
        }
    }
}
