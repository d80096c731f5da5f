//! Compaction's free scanner taking a free block off the free lists: `__isolate_free_page`
//! as `isolate_freepages_block` calls it (mm/compaction.c), which prints no `mm_page_alloc`.
//! An embedder replaying a trace's `mm_compaction_isolate_freepages` line takes the blocks the
//! line names with [`Zone::isolate_free_block`].

use crate::error::RangeError;
use crate::meta::FrameState;
use crate::platform::Platform;
use crate::types::{MigrateType, Order, Pfn};

use super::Zone;

impl<P: Platform> Zone<P> {
    /// Takes the free block whose head is `pfn` off its free list, as `__isolate_free_page`
    /// does (the trace says the kernel's watermark check passed, so none is made here), and
    /// leaves its pages in use as order-0 pages of `Movable` (`split_map_pages`: 6.1's
    /// compaction splits each isolated block into order-0 pages, and `compaction_alloc`
    /// hands out order-0 targets for order-0 folios in 6.12 and 7.2). A block of at least
    /// half a pageblock makes its mergeable pageblocks `Movable` (`__isolate_free_page`;
    /// 7.2 with `move_freepages_block`, moving the pageblock's other free blocks too).
    /// Returns the block's order; refused with nothing changed
    /// ([`RangeError::Overlap`]) where `pfn` is no free block's head.
    pub fn isolate_free_block(&self, pfn: Pfn) -> Result<Order, RangeError> {
        let t = &self.table;
        let idx = match self.spans(pfn).then(|| t.index_of(pfn)).flatten() {
            Some(i) => i,
            None => return Err(RangeError::OutOfZone { pfn }),
        };
        let mut z = self.lock();
        let FrameState::Buddy(order) = t.state(idx) else {
            return Err(RangeError::Overlap { pfn });
        };
        let list = t.buddy_list(idx);
        z.del_from_free_list(t, idx, order, list);
        z.account_freepages(-(1i64 << order.get()), list);
        let pb = self.config().pageblock_order;
        if order.get() + 1 >= pb {
            let moves = !self.config().lists_may_differ_from_blocks();
            let n = 1u32 << order.get();
            let mut b = z.block_start(idx);
            while b < idx + n {
                if z.block_mt(t, b).is_mergeable() {
                    if moves {
                        z.move_freepages_block(t, b, MigrateType::Movable);
                    }
                    z.set_block_mt(t, b, MigrateType::Movable);
                }
                b += 1u32 << pb;
            }
        }
        for i in idx..idx + (1u32 << order.get()) {
            t.set_state(i, FrameState::Allocated(Order::ZERO, MigrateType::Movable));
        }
        drop(z);
        self.debug_check("isolate_free_block");
        Ok(order)
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use crate::config::ZoneConfig;
    use crate::types::{MigrateType, Order, Pfn, ZoneType};
    use crate::Zone;

    /// A free order-4 block taken whole leaves sixteen order-0 pages in use, each freed on
    /// its own; a frame that is no free head (a tail, a block taken) is refused.
    #[test]
    fn an_isolated_block_is_order_0_pages_in_use() {
        let mut cfg = ZoneConfig {
            max_order: 4,
            pageblock_order: 3,
            ..ZoneConfig::without_watermarks()
        };
        cfg.pcp.enabled = false;
        let z: Zone = Zone::new(ZoneType::Normal, Pfn(64), Pfn(128), cfg).unwrap();
        z.add_free_range(Pfn(64), Pfn(128)).unwrap();
        let a = z
            .alloc(Order::new(2).unwrap(), MigrateType::Movable)
            .unwrap();
        z.free(a, Order::new(2).unwrap()).unwrap();
        let before = z.free_pages();
        // The 64-page range is four order-4 blocks: take the one at 80.
        assert!(z.isolate_free_block(Pfn(81)).is_err());
        assert_eq!(z.isolate_free_block(Pfn(80)), Ok(Order::new(4).unwrap()));
        assert_eq!(z.free_pages(), before - 16);
        assert!(z.isolate_free_block(Pfn(80)).is_err());
        for p in 80..96 {
            z.free(Pfn(p), Order::ZERO).unwrap();
        }
        assert_eq!(z.free_pages(), before);
        z.check().unwrap();
    }
}
