//! Refills (`mm_page_alloc_zone_locked` with `percpu_refill=1`): the blocks a refill lists on
//! its CPU, and the refill runs, one `rmqueue_bulk` batch each, that an untraced
//! `alloc_pages_bulk` takes pages from ([`super::bulk`]).

use super::bulk::{irq_level, Awaited};
use super::pfn_map::Shown;
use super::KernelSide;
use crate::trace::parse::{Event, EventKind};

impl KernelSide {
    /// Accounts a block `rmqueue` took from the buddy (`mm_page_alloc_zone_locked`) on `cpu`
    /// at timestamp tick `tick`: a refill's block (`percpu_refill`) goes onto `cpu`'s lists,
    /// and an order-0 one is the refill's until a traced event takes it (else
    /// `alloc_pages_bulk` did, untraced); any other was handed out by the buddy and is on no
    /// CPU's lists. (Its place in the refill run: [`KernelSide::refill_run`].)
    #[inline(always)]
    pub(super) fn on_zone_locked(
        &mut self,
        pfn: u64,
        order: u8,
        migratetype: u8,
        percpu_refill: bool,
        cpu: u32,
        tick: u32,
    ) {
        let f = self.pfns.get_mut(pfn);
        f.set_shown(Shown::More);
        if percpu_refill {
            // The block goes onto this CPU's lists (unless the allocation takes it).
            f.set_refill_listed(cpu, tick);
            if order == 0 {
                f.set_refilled(Some((cpu, migratetype)));
            }
        } else {
            // Handed out by the buddy: on no CPU's lists.
            f.clear_refill_listed();
        }
    }

    /// The refill side of [`KernelSide::bulk`], before the event's frame is accounted: an
    /// order-0 refill onto this CPU's list of a migratetype extends the list's run, or starts
    /// a new one if the event before on this CPU was not such a refill.
    ///
    /// `rmqueue_bulk` calls `__rmqueue` once per page with the zone lock held and interrupts
    /// off, so nothing else runs on the CPU until the batch is done; the trace, merged from
    /// the per-CPU buffers by timestamp, interleaves other CPUs' events (runs are per CPU) and,
    /// on the refilling CPU, only the refill's own fallbacks: `mm_page_alloc_extfrag` of
    /// order 0 and the run's migratetype (`__rmqueue_claim` / `__rmqueue_steal` in 6.15 on,
    /// `__rmqueue_fallback` before) continues the run. From 6.15 it names a page of the batch
    /// (the one taken; a claim below `pageblock_order` printed its `zone_locked` just before,
    /// a claim of a whole pageblock or a steal did not), which joins the run; before, it names
    /// the block fallen back to, and the retry's `mm_page_alloc_zone_locked` the page taken.
    /// A fallback first in a batch starts the run as a refill page would. An order-0 fallback
    /// outside a refill (`rmqueue_buddy` when the lists' lock is contended) reads as one.
    #[inline(always)]
    pub(super) fn refill_run(&mut self, ev: &Event<'_>, zone: usize, cpu: u32, tick: u32) {
        let c = cpu as usize;
        let (pfn, refill, page) = match ev.kind {
            EventKind::ZoneLocked {
                pfn,
                order: 0,
                migratetype,
                percpu_refill: true,
            } => (pfn, Some(migratetype), true),
            EventKind::Extfrag {
                pfn,
                alloc_order: 0,
                alloc_migratetype,
                ..
            } => (pfn, Some(alloc_migratetype), self.extfrag_names_page),
            _ => (0, None, false),
        };
        let zone = super::super::fold::fold(zone, self.zones);
        let was = std::mem::replace(&mut self.in_refill[c], refill.map(|mt| (zone, mt)));
        let Some(mt) = refill else {
            if self.awaiting[c].is_some() {
                self.bulk_refill(ev, cpu);
            }
            return;
        };
        let mut first = None;
        if let Some(w) = self.awaiting[c] {
            if was == Some((zone, mt)) {
                first = w.first;
            } else {
                self.bulk_refill_before(ev, cpu, zone, mt);
            }
        }
        let list = self.list(zone, cpu, mt);
        if was != Some((zone, mt)) {
            // A new batch: the list was empty, what was left of the last run is gone.
            // `__rmqueue_pcplist` refills only an empty list: the freed pages above were
            // taken untraced.
            if self.bulk_takes_head {
                self.under_tops(0, zone, cpu, mt, true, false);
            }
            let n = self.runs[list].len();
            self.take_untraced(list, n, cpu, mt);
        }
        // A claim below pageblock_order prints zone_locked, then extfrag, of the same page.
        if page && self.runs[list].back() != Some(&pfn) {
            if matches!(ev.kind, EventKind::Extfrag { .. }) {
                // The page goes onto this CPU's list, as a refilled block does.
                let f = self.pfns.get_mut(pfn);
                f.set_refill_listed(cpu, tick);
                f.set_refilled(Some((cpu, mt)));
            }
            self.runs[list].push_back(pfn);
            first = first.or(Some(pfn));
        }
        self.awaiting[c] = Some(Awaited {
            zone,
            mt,
            pid: ev.who.pid(),
            level: irq_level(ev.who.ctx()),
            first,
        });
    }

    /// The run of zone `zone`'s list of `migratetype` on `cpu` (`runs`' index). Zones past the
    /// ones counted (a frame outside the geometry's zones, read as zone 0 elsewhere) fold.
    #[inline(always)]
    pub(super) fn list(&self, zone: usize, cpu: u32, migratetype: u8) -> usize {
        (super::super::fold::fold(zone, self.zones) * self.cpus as usize + cpu as usize) * 8
            + usize::from(migratetype & 7)
    }
}
