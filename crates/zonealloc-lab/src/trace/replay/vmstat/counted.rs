//! Which traced events move a vmstat counter: `need_update` (`mm/vmstat.c`) asks whether a
//! CPU's `vm_stat_diff` or `vm_node_stat_diff` is not zero, and `vmstat_update` re-queues
//! itself only when `refresh_cpu_vm_stats` folded one.
//!
//! A pipe buffer's page moves none. `pipe_write` allocates it with
//! `alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT)` (`fs/pipe.c`): charged to the memcg's own
//! per-CPU counters (`__memcg_kmem_charge_page`), in no vmstat item, and on no LRU; the reader
//! frees it with `put_page` (`anon_pipe_buf_release`). Both take and give the page on the
//! CPU's list (`NR_FREE_PAGES` counts only the buddy's pages): only a refill or a drain, traced
//! lines of their own, moves a counter. In the `*-4g-wq` captures (every `vmstat_update`
//! traced) the CPUs that only moved pipe pages (`od` writing the layout files' text, `awk`
//! reading it) show no run for up to 114 s, where after a refill or a drain the CPU's next
//! run came within 2.2 s 743 times in 758 (one refill or drain a
//! fifth of a second, per CPU).

use crate::trace::parse::EventKind;

/// The gfp flags of `pipe_write`'s page as the trace prints them (6.1 to 7.2).
const PIPE_GFP: &str = "GFP_HIGHUSER|__GFP_ACCOUNT";

/// Pfns at or above this are not kept (a 1 TiB machine; the set's words stay under 32 MiB):
/// their events count as moving a counter.
const PFN_LIMIT: u64 = 1 << 28;

/// The pfns whose last traced allocation was a pipe buffer's page.
#[derive(Clone, Debug, Default)]
pub(super) struct PipePages {
    bits: Vec<u64>,
}

impl PipePages {
    /// Whether an event of `kind` moves a vmstat counter of its CPU. An order-0 allocation
    /// with the pipe's flags marks its page, any other allocation unmarks it; a free of a
    /// marked page moves none. (Idempotent: the replay may ask twice for one event.)
    #[inline(always)]
    pub(super) fn counts(&mut self, kind: &EventKind<'_>) -> bool {
        match *kind {
            EventKind::Alloc {
                pfn,
                order,
                gfp_flags,
                ..
            } => {
                let pipe = order == 0 && gfp_flags == PIPE_GFP;
                self.set(pfn, pipe);
                !pipe
            }
            EventKind::Free { pfn, order: 0 } | EventKind::FreeBatched { pfn } => !self.get(pfn),
            _ => true,
        }
    }

    #[inline(always)]
    fn get(&self, pfn: u64) -> bool {
        let i = (pfn / 64) as usize;
        self.bits.get(i).is_some_and(|w| w & (1 << (pfn % 64)) != 0)
    }

    #[inline(always)]
    fn set(&mut self, pfn: u64, on: bool) {
        if pfn >= PFN_LIMIT {
            return;
        }
        let i = (pfn / 64) as usize;
        if i >= self.bits.len() {
            if !on {
                return;
            }
            self.bits.resize(i + 1, 0);
        }
        let bit = 1u64 << (pfn % 64);
        if on {
            self.bits[i] |= bit;
        } else {
            self.bits[i] &= !bit;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alloc(pfn: u64, order: u8, gfp_flags: &str) -> EventKind<'_> {
        EventKind::Alloc {
            pfn,
            order,
            migratetype: 0,
            gfp_flags,
        }
    }

    #[test]
    fn a_pipe_page_moves_no_counter_until_its_pfn_is_taken_for_else() {
        let mut p = PipePages::default();
        let free = EventKind::Free {
            pfn: 0x1000,
            order: 0,
        };
        assert!(p.counts(&free));
        assert!(!p.counts(&alloc(0x1000, 0, PIPE_GFP)));
        assert!(!p.counts(&free));
        assert!(!p.counts(&free), "asked twice, the same answer");
        assert!(!p.counts(&EventKind::FreeBatched { pfn: 0x1000 }));
        // A refill or a drain of it moves `NR_FREE_PAGES`.
        let drain = EventKind::PcpuDrain {
            pfn: 0x1000,
            order: 0,
            migratetype: 0,
        };
        assert!(p.counts(&drain));
        // Anon pages move node counters; an order-1 page is not the pipe's.
        assert!(p.counts(&alloc(0x1000, 0, "GFP_HIGHUSER_MOVABLE|__GFP_ZERO")));
        assert!(p.counts(&free));
        assert!(p.counts(&alloc(0x2000, 1, PIPE_GFP)));
        assert!(p.counts(&EventKind::Free {
            pfn: 0x2000,
            order: 1
        }));
        // Past the pfns kept: the allocation moves none, its free counts.
        assert!(!p.counts(&alloc(PFN_LIMIT, 0, PIPE_GFP)));
        assert!(p.counts(&EventKind::Free {
            pfn: PFN_LIMIT,
            order: 0
        }));
    }
}
