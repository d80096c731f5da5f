//! The start-count walk's free path: a free reaches its CPU's list at its commit
//! (`mm_page_free_batched` for a batch's page, the CPU's next other event for a single free),
//! bounds the count below `high` if nothing drains after it, and starts the drain run it
//! triggers otherwise (pinned at the run's end, `start_count/pin.rs`).

use super::{Free, Run, Walk};

/// A drained line's timestamp, and whether a worker printed it.
type Decay = (Option<u64>, bool);

impl Walk {
    /// Any event on `cpu` but a drain: the last free drained nothing, a refill run ended.
    pub(super) fn other(&mut self, cpu: u32) {
        let first_ns = self.first_ns;
        for z in 0..self.zones {
            let Some(c) = self.at(z, cpu) else {
                continue;
            };
            c.in_refill = None;
            c.start_high.other();
            // (Most CPUs hold no free: nothing moved out then.)
            if c.free.is_none() {
                continue;
            }
            let Some(f) = c.free.take() else {
                continue;
            };
            // free_*_page_commit: no drain, so count < high (the fallen one, for a free
            // after kswapd's wake).
            if f.open_hi.is_none() && !f.high_fell {
                let since_start = f.ts.zip(first_ns).map_or(0, |(t, s)| t.saturating_sub(s));
                c.start_high.no_drain(f.delta, since_start);
            }
            c.high_fell &= !f.high_fell;
            match f.open_hi {
                Some(open) => self.hold(z, cpu, &f, open),
                None => self.bound(z, cpu, i64::MIN, f.no_drain_below() - 1 - f.delta),
            }
        }
    }

    /// A deferred free of `pfn` goes on the lists (a PCP order), or to the buddy.
    pub(super) fn commit(&mut self, zone: usize, cpu: u32, pfn: u64, order: u8) {
        if self.pcp_order(order) {
            self.free(zone, cpu, pfn, order);
        } else {
            self.other(cpu);
        }
    }

    /// Every deferred free of `cpu`, in order.
    pub(super) fn commit_all(&mut self, cpu: u32) {
        let c = cpu as usize;
        self.batching[c] = false;
        // Most events find nothing deferred: no list taken then.
        if self.deferred[c].is_empty() {
            return;
        }
        let mut list = std::mem::take(&mut self.deferred[c]);
        if self.contig_free {
            self.commit_contig(cpu, &list);
        } else {
            for &(pfn, z, order, ..) in &list {
                self.commit(z, cpu, pfn, order);
            }
        }
        // The list goes back, empty, its allocation kept for the CPU's next frees (the
        // commits defer nothing).
        if self.deferred[c].is_empty() {
            list.clear();
            self.deferred[c] = list;
        }
    }

    fn free(&mut self, zone: usize, cpu: u32, pfn: u64, order: u8) {
        self.other(cpu);
        self.add(zone, cpu, 1i64 << order);
        let reclaim = self.reclaim_on(zone);
        let below_high = !reclaim && self.below_high(zone);
        let (ts, scale_max, rule) = (self.now, self.scale_max, self.free_high);
        if let Some(c) = self.at(zone, cpu) {
            c.freed_since_candidate(pfn);
            let h = (c.high.lo, c.high.batch, c.high.batch << scale_max);
            let free_high = c.flags.freed(order, rule, h);
            c.start_free.freed(order);
            // The values `high` can have: the last refill's raise, `free_count`; kswapd's
            // pass and ZONE_BELOW_HIGH lower it at each free (nr_pcp_high) by what the
            // trace does not show.
            c.reach.settle(&c.high, scale_max);
            c.reach.freed(order, &c.high, scale_max);
            if reclaim || below_high {
                c.reach.drop_set();
            }
            let mut h = (c.high.lo, c.high.hi);
            let mut open_hi = None;
            if reclaim {
                // nr_pcp_high with ZONE_RECLAIM_ACTIVE: at most batch << 2.
                let cap = c.high.batch << 2;
                open_hi = (h.1 > cap).then_some(h.1);
                h = (h.0.min(cap), h.1.min(cap));
            }
            c.free = Some(Free {
                order,
                delta: c.delta,
                high_lo: h.0,
                high_hi: h.1,
                open_hi,
                ts,
                high_fell: c.high_fell,
                // nr_pcp_high's `high_min == high_max` case returns `high`.
                below_high: below_high && c.high.lo != c.high.max,
                free_high,
            });
        }
    }

    /// `mm_page_free_batched` of `pfn` on `cpu`: the commit of a page `mm_page_free` printed
    /// (`free_unref_page_list`, `free_unref_folios`), or of one the walk did not see freed.
    /// `irq`: the commit's line is an interrupt's.
    pub(super) fn free_batched(
        &mut self,
        zone: usize,
        cpu: u32,
        pfn: u64,
        (batching, irq): (bool, bool),
    ) {
        let list = &mut self.deferred[cpu as usize];
        match list.iter().position(|d| d.0 == pfn) {
            Some(i) => {
                // The batch's first commit: the frees before its pages were single ones,
                // committed at once, and so were an interrupt's among them.
                let mut before = Vec::new();
                if !batching {
                    before.extend(list.drain(..i));
                    if !irq {
                        before.extend(interrupts_within(list));
                    }
                }
                let (p, z, order, ..) = list.remove(if batching { i } else { 0 });
                for (bp, bz, border, ..) in before {
                    self.commit(bz, cpu, bp, border);
                }
                self.batching[cpu as usize] = true;
                self.commit(z, cpu, p, order);
            }
            None => {
                self.commit_all(cpu);
                self.free(zone, cpu, pfn, 0);
            }
        }
    }

    /// A drained block of `order` seen on `cpu`: off its owner's lists; a drain on the CPU
    /// right after a free there begins (or continues) the run that free triggered.
    /// `worker`: the line is a worker's (`decay_pcp_high` on a zone of the CPU's node).
    pub(super) fn drain(&mut self, zone: usize, cpu: u32, order: u8, (ts, worker): Decay) {
        let (owner, explained) = self.kernel.last_drain.unwrap_or((cpu, false));
        let pages = 1i64 << order;
        let local = self.geo.zones.get(zone).map(|z| z.node) == Some(self.geo.cpu_node(cpu));
        let decay = worker && !explained && owner == cpu && local;
        let since_start = ts
            .zip(self.first_ns)
            .map_or(0, |(t, f)| t.saturating_sub(f));
        if let Some(c) = self.at(zone, owner) {
            c.in_refill = None;
            if decay {
                c.start_high.worker_drain(c.delta, pages, since_start);
            } else {
                // The first line of a run a free triggered (not `free_high`, not under
                // kswapd's pass): the count after that free was at least `high`.
                let by_free = c.free.as_ref().filter(|f| {
                    owner == cpu
                        && explained
                        && !(1..=3).contains(&f.order)
                        && f.open_hi.is_none()
                        && !f.high_fell
                });
                if let Some(delta) = by_free.map(|f| f.delta) {
                    c.start_high.free_drain(delta, since_start);
                }
                c.start_high.close();
            }
            if owner == cpu && explained {
                if let Some(free) = c.free.take() {
                    // Another drain before the candidate's allocation: no pin.
                    c.drop_candidate();
                    c.run = Some(Run {
                        free,
                        drained: 0,
                        block: 0,
                        ts,
                    });
                }
                if let Some(r) = &mut c.run {
                    r.drained += pages;
                    r.block = r.block.max(pages);
                }
            }
        }
        if owner == cpu && explained {
            // free_*_page_commit clears ZONE_BELOW_HIGH after its drain, if it may.
            self.free_drained(zone);
            // A run may be open on the CPU now (`Walk::runs_on`).
            if let Some(on) = self
                .runs_on
                .get_mut(super::super::fold::fold(cpu, self.cpus) as usize)
            {
                *on = true;
            }
        }
        self.add(zone, owner, -pages);
    }
}

/// The interrupts' frees held in `list` after its first (the batch's page being committed),
/// taken out of it. A task prepares its batch (`free_unref_folios`: every page's
/// `mm_page_free`) before it takes the lists' lock for the commits, so an interrupt that
/// frees a page in between commits it at once (`free_frozen_pages` ->
/// `free_frozen_page_commit`, its `mm_page_free` printed just before): on the list before the
/// batch's first commit, not held past the batch's drain. 7.2-6g-12cpu p_fork, CPU 7: 24
/// softirq frees (`..s4.`, 167.347147-167.347580) inside `kmem-phases-994`'s batch (its first
/// `mm_page_free` at 167.345774, its commits from 167.347614) come back off CPU 7's lists,
/// last freed first, from 167.347999; its commits drain at 167.347635. Held past that drain,
/// they left the count 24 short of `high` there, and the start bounded at 802 where the
/// drains before it allow 778.
fn interrupts_within(list: &mut Vec<super::contig::Held>) -> Vec<super::contig::Held> {
    list.extract_if(1.., |d| d.4).collect()
}
