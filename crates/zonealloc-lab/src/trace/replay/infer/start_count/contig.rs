//! 7.2's free of a contiguous range in the walk (`vfree` -> `free_pages_bulk` ->
//! `__free_contig_range`, read as the replay reads it: `replayer::contig_free`): a kworker's
//! order-0 frees of consecutive pfns reach the CPU's lists as the aligned blocks
//! `free_prepared_contig_range` frees them as, each through `free_frozen_page_commit` at its
//! order. A block of orders 1..=3 may take the `free_high` path, which drains whatever the
//! count is: its drain pins nothing, where an order-0 free's would.
//!
//! 7.2-4g-2node p_idle: `kworker/0:0` frees 0x101788-0x10178b at 546.609411-546.609417 (one
//! order-2 block of node 1's Normal zone on CPU 0's lists, a remote pageset that its frees
//! fill and no allocation empties) and 63 pages drain after it, 7 order-2 blocks and 35
//! order-0 pages: the count was 63, `free_high`'s `min(count, batch << 5)`. Read as an
//! order-0 free's drain it pinned the count at the file's start at 3550, where zoneinfo's
//! rolls back to 59 and the worker's expiry drains (63, then 23 pages) show a few dozen.

use super::Walk;
use crate::trace::parse::{Event, Who};
use crate::trace::replay::replayer::{contig_blocks, extends_range, range_freer};

/// A free the walk holds until its commit: pfn, zone, order, the kworker that freed it, if
/// one did, and whether an interrupt freed it.
pub(super) type Held = (u64, usize, u8, Option<Who>, bool);

impl Walk {
    /// Reads 7.2's contiguous-range frees (the 7.2 preset with the inferences, as the
    /// replay: `replayer::contig_free_on`).
    pub fn set_contig_free(&mut self, on: bool) {
        self.contig_free = on;
    }

    /// `mm_page_free` of `f` (pfn, zone, order) on `cpu`, by `ev`'s task: committed later
    /// ([`Walk::commit_all`]), with the kworker that freed it where it can be a range's page
    /// ([`range_freer`]: in task context).
    pub(super) fn defer(&mut self, ev: &Event<'_>, cpu: u32, (pfn, zone, order): (u64, usize, u8)) {
        let by = range_freer(ev.who).then_some(ev.who);
        let irq = ev.who.ctx().softirq() || ev.who.ctx().hardirq();
        self.deferred[cpu as usize].push((pfn, zone, order, by, irq));
    }

    /// Commits `list`, `cpu`'s deferred frees, in trace order: runs of one kworker's order-0
    /// frees of consecutive pfns in one zone and memory section as aligned blocks, the rest
    /// one by one.
    pub(super) fn commit_contig(&mut self, cpu: u32, list: &[Held]) {
        let mut i = 0;
        while i < list.len() {
            let (first, zone, order, by, _) = list[i];
            let mut n = 1;
            while order == 0
                && by.is_some()
                && list.get(i + n).is_some_and(|&(p, z, o, b, _)| {
                    o == 0 && z == zone && b == by && extends_range(first + n as u64 - 1, p)
                })
            {
                n += 1;
            }
            i += n;
            if n < 2 {
                self.commit(zone, cpu, first, order);
                continue;
            }
            for (p, o) in contig_blocks(first, n as u64) {
                self.commit(zone, cpu, p, o);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::cpu1_on_7_2;
    use super::super::Found;
    use crate::trace::replay::first_events::Which;

    /// In the window of the 7.2 snapshot (DMA32 CPU 1: 1294 pages, `high` 3492 =
    /// `high_min`), `kworker/1:2` frees 0x50000-0x50003 and 63 pages drain (the free path:
    /// preempt depth 3); DMA32 CPU 1's start count with the contiguous-range reading `on`.
    fn cpu1_after_a_vfree(on: bool) -> (u64, Found) {
        let line = |flags: &str, us: u32, ev: &str| {
            format!("     kworker/1:2-40      [001] {flags}    10.{us:06}: {ev}\n")
        };
        let mark = |us: u32, m: &str| {
            format!("            dash-7     [000] .....    10.{us:06}: tracing_mark_write: {m} t\n")
        };
        let mut t = String::from("# tracer: nop\n");
        t += &mark(1, "KT_SNAPSHOT_BEFORE_END");
        for pfn in 0x50000..0x50004u64 {
            let ev = format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0");
            t += &line(".....", 10, &ev);
        }
        for pfn in 0x60000..0x6003fu64 {
            let ev = format!(
                "mm_page_pcpu_drain: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1"
            );
            t += &line("d..3.", 20, &ev);
        }
        t += &mark(100_000, "KT_SNAPSHOT_AFTER_BEGIN");
        let c = cpu1_on_7_2(&t, |w| Which {
            contig_free: on,
            ..w
        });
        (c.inferred, c.found)
    }

    #[test]
    fn a_kworkers_contiguous_frees_drain_as_a_block_that_pins_nothing() {
        // One order-2 block (free_prepared_contig_range): free_high may have drained
        // whatever the count was, so zoneinfo's count stands.
        assert_eq!(cpu1_after_a_vfree(true), (1294, Found::Zoneinfo));
        // Read as four order-0 frees, the last met `high`: 3492 - 4 at the start.
        assert_eq!(cpu1_after_a_vfree(false), (3488, Found::Pinned));
    }
}
