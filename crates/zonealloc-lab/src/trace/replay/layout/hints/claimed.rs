//! A claimed pageblock's first line names the type it was given, not the type it had.
//!
//! From 6.10 on, a fallback that claims a whole pageblock below pageblock order (6.12's
//! `try_to_steal_block`, 7.2's `try_to_claim_block`) moves the block's free pages to the
//! requested type's lists (`__move_freepages_block`) and returns `__rmqueue_smallest(zone,
//! order, start_type)`, which prints `mm_page_alloc_zone_locked` with the new type; only then
//! does `__rmqueue_claim` print `mm_page_alloc_extfrag` for the same page, with the type the
//! pageblock had (`fallback_migratetype`). So a `zone_locked` line followed on its CPU by an
//! `extfrag` line of the same pfn is one claim, and where that `zone_locked` line was the
//! first to name the pageblock, the pageblock's type at the start is the `extfrag` line's.
//! (6.1's `__rmqueue_fallback` prints `extfrag` first and retries `__rmqueue_smallest` after
//! it; a claim at or above pageblock order and `__rmqueue_steal` print no `zone_locked`.)
//!
//! 6.12-4g-wq p_pressure: CPU 0's refill at 554.622568 takes pfn 0x1004d0 off the Movable list
//! (`migratetype=1`), and at 554.622579 `mm_page_alloc_extfrag` names it with
//! `fallback_order=8 fallback_migratetype=2`: the Movable lists had run out and the
//! Reclaimable pageblock 0x100400 was claimed (pagetypeinfo: Normal's Reclaimable pageblocks
//! 6 before, 4 after, this and 0x104c00's claim at 544.547818). Read as Movable at the start,
//! the replay's refill took 247 pages of it with no fallback and ended with 5.

/// Per CPU: the pfn of its last event if that was a `zone_locked` line that named its
/// pageblock first.
pub(super) struct Claims {
    last: Vec<Option<u64>>,
}

impl Claims {
    /// Nothing seen, on `cpus` CPUs.
    pub(super) fn new(cpus: u32) -> Claims {
        Claims {
            last: vec![None; cpus as usize],
        }
    }

    /// An event of `cpu` naming `pfn`: whether the CPU's event before it was a `zone_locked`
    /// line of `pfn` that named its pageblock first (module docs). Forgets that line.
    pub(super) fn take(&mut self, cpu: u32, pfn: u64) -> bool {
        self.last
            .get_mut(cpu as usize)
            .and_then(Option::take)
            .is_some_and(|p| p == pfn)
    }

    /// `cpu`'s `zone_locked` line of `pfn`; `typed`: it named its pageblock first.
    pub(super) fn put(&mut self, cpu: u32, pfn: u64, typed: bool) {
        if let Some(l) = self.last.get_mut(cpu as usize) {
            *l = typed.then_some(pfn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::HintCollector;
    use crate::trace::migratetype::Numbering;
    use crate::trace::parse::Parser;
    use zonealloc::MigrateType;

    /// 6.12-4g-wq p_pressure in small (module docs): the claim's `zone_locked` line names the
    /// new type first, its `extfrag` line the pageblock's type at the start. A `zone_locked`
    /// line of a pageblock named before, of another pfn, or with another event of its CPU
    /// between, is no claim of the pageblock's start type.
    #[test]
    fn a_claims_extfrag_line_types_the_pageblock_its_zone_locked_line_named_first() {
        let p = "page=(____ptrval____)";
        let line = |cpu: u32, ev: String| format!("   x-1  [{cpu:03}] .....   5.000001: {ev}\n");
        let locked = |cpu, pfn: u32| {
            line(
                cpu,
                format!("mm_page_alloc_zone_locked: {p} pfn={pfn:#x} order=0 migratetype=1 percpu_refill=1"),
            )
        };
        let extfrag = |cpu, pfn: u32| {
            line(cpu, format!("mm_page_alloc_extfrag: {p} pfn={pfn:#x} alloc_order=0 fallback_order=8 pageblock_order=9 alloc_migratetype=1 fallback_migratetype=2 fragmenting=1 change_ownership=1"))
        };
        let mut t = String::new();
        // Pageblock 8: the claim (another CPU's line between does not part them).
        t += &locked(0, 0x10d0);
        t += &locked(1, 0x1600);
        t += &extfrag(0, 0x10d0);
        // Pageblock 9: named Movable before its claim.
        t += &locked(2, 0x1200);
        t += &locked(2, 0x1210);
        t += &extfrag(2, 0x1210);
        // Pageblock 10: its CPU's free between.
        t += &locked(3, 0x1400);
        t += &line(3, format!("mm_page_free: {p} pfn=0x1e00 order=0"));
        t += &extfrag(3, 0x1400);
        let zone = 0x1000..0x2000;
        let mut c = HintCollector::new(4, std::slice::from_ref(&zone), 9, Numbering::Current);
        Parser::new()
            .read_all(t.as_bytes(), |ev| c.feed(ev))
            .unwrap();
        let h = c.finish().pop().unwrap();
        assert_eq!(
            super::super::tests::block_types(&h),
            [
                (8, MigrateType::Reclaimable),
                (9, MigrateType::Movable),
                (10, MigrateType::Movable),
                (11, MigrateType::Movable)
            ]
        );
    }
}
