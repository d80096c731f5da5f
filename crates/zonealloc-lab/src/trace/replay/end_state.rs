//! `--proc-after DIR`: the replay's end state against the kernel's, per zone: free blocks per
//! order (buddyinfo), per order and migratetype (pagetypeinfo), pageblocks per migratetype,
//! the per-CPU lists, and where `DIR/layout` exists, the kernel's free blocks at their pfns.

use zonealloc::{CpuId, FrameState, MigrateType, Pfn, Zone};

use super::layout::targets;
use super::proc_setup::{blocks_of, kernel_types, SetupFacts, TYPES};
use super::snapshot_reads::SnapFile;
use crate::procfs::{ProcSnapshot, ZoneSnapshot};

/// The end state against `--proc-after`, one zone.
#[derive(Clone, Debug, serde::Serialize)]
pub struct EndState {
    /// The zone.
    pub zone: String,
    /// How the replay's start was laid out: `kernel` (the `--proc` layout file) or
    /// `synthesised` (from the counts: the end state's free blocks then lie where the
    /// synthesis put the start's, not where the kernel's were).
    pub start_layout: &'static str,
    /// Free blocks per order: the kernel's (buddyinfo; without it, pagetypeinfo's sums).
    pub kernel_free_blocks: Vec<u64>,
    /// Free blocks per order: ours.
    pub ours_free_blocks: Vec<u64>,
    /// Free blocks per migratetype (Unmovable, Movable, Reclaimable, HighAtomic, Isolate)
    /// and order: the kernel's (pagetypeinfo).
    pub kernel_free_by_type: Vec<Vec<u64>>,
    /// The same, ours.
    pub ours_free_by_type: Vec<Vec<u64>>,
    /// Free pages per migratetype (Unmovable, Movable, Reclaimable): the kernel's, ours.
    pub free_pages_by_type: ([u64; 3], [u64; 3]),
    /// Pageblocks per migratetype: the kernel's, ours.
    pub pageblocks: ([u64; 3], [u64; 3]),
    /// PCP pages: the kernel's, ours.
    pub pcp: (u64, u64),
    /// Per CPU: `(count, high)` the kernel's, ours.
    pub pagesets: Vec<((u32, u32), (i32, i32))>,
    /// Sum over orders of |ours - kernel| free blocks over the kernel's free blocks, in %.
    pub free_blocks_off_pct: Option<f64>,
    /// Per order: |ours - kernel| over the kernel's free blocks of that order, in % (`None`
    /// where the kernel had none).
    pub order_off_pct: Vec<Option<f64>>,
    /// Per migratetype: the sum over orders of |ours - kernel| over the kernel's free blocks
    /// of that type, in %.
    pub type_off_pct: Vec<Option<f64>>,
    /// Against the after-snapshot's layout, where it has one.
    pub layout: Option<LayoutEnd>,
}

/// The end state against the kernel's layout at the after-snapshot.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LayoutEnd {
    /// The kernel's free blocks per order in the layout (the greedy split of its free runs;
    /// read a moment before buddyinfo, so it may differ from it on a busy zone).
    pub kernel_free_blocks: Vec<u64>,
    /// Per order: of those, how many are a free block of the same order at the same pfn in
    /// ours.
    pub same_place: Vec<u64>,
}

impl EndState {
    /// Takes `file`'s part of the comparison from `other` (the same zone, compared at another
    /// point of the trace: where `file` was read: `to_reads`).
    pub fn take_file(&mut self, other: &EndState, file: SnapFile) {
        match file {
            SnapFile::Zoneinfo => {
                self.pcp = other.pcp;
                self.pagesets = other.pagesets.clone();
            }
            SnapFile::Buddyinfo => {
                self.kernel_free_blocks = other.kernel_free_blocks.clone();
                self.ours_free_blocks = other.ours_free_blocks.clone();
                self.free_blocks_off_pct = other.free_blocks_off_pct;
                self.order_off_pct = other.order_off_pct.clone();
            }
            SnapFile::Pagetypeinfo => {
                self.kernel_free_by_type = other.kernel_free_by_type.clone();
                self.ours_free_by_type = other.ours_free_by_type.clone();
                self.free_pages_by_type = other.free_pages_by_type;
                self.pageblocks = other.pageblocks;
                self.type_off_pct = other.type_off_pct.clone();
            }
            SnapFile::Layout => self.layout = other.layout.clone(),
        }
    }
}

/// |a - k| summed over `k`, over the sum of `k`, in % (`None` when `k` sums to 0).
fn off(k: &[u64], a: &[u64]) -> Option<f64> {
    let total: u64 = k.iter().sum();
    let diff: u64 = (0..k.len().max(a.len()))
        .map(|i| {
            let g = |v: &[u64]| v.get(i).copied().unwrap_or(0);
            g(k).abs_diff(g(a))
        })
        .sum();
    (total > 0).then(|| 100.0 * diff as f64 / total as f64)
}

/// Compares `zone` (the replay's zone for kernel zone `z` of the after-snapshot `snap`) as
/// its set-up left it (`setup`: the layout, and the pageblocks of holes).
pub fn end_state(
    zone: &Zone,
    snap: &ProcSnapshot,
    z: &ZoneSnapshot,
    setup: &SetupFacts,
) -> EndState {
    let start_layout = setup.layout;
    // buddyinfo's own counts, compared where buddyinfo was read (`to_reads`); not
    // pagetypeinfo's sums (`ZoneSnapshot::free_blocks`, what a set-up takes), which are read
    // after it: on a busy zone the two differ. 6.1-2g p_pressure's DMA32 after-snapshot has
    // 308 and 211 free blocks of orders 0 and 1 in buddyinfo, 265 and 170 in pagetypeinfo.
    let kernel_free_blocks = (z.buddy_free.clone())
        .or_else(|| z.free_blocks())
        .unwrap_or_default();
    let ours = zone.snapshot(0);
    let orders = kernel_free_blocks
        .len()
        .max(usize::from(ours.max_order) + 1);
    let ours_free_blocks: Vec<u64> = (0..orders)
        .map(|o| ours.nr_free.get(o).copied().unwrap_or(0))
        .collect();
    let (kblocks, kfree) = kernel_types(snap, z);
    let ofree = TYPES.map(|mt| {
        ours.free_by_type[mt.index()]
            .iter()
            .enumerate()
            .map(|(o, n)| n << o)
            .sum::<u64>()
    });
    let oblocks = blocks_of(
        zone,
        z.start_pfn,
        z.start_pfn + z.spanned_pages,
        &setup.holes,
    );
    let kernel_free_by_type: Vec<Vec<u64>> = targets(snap, z, orders).0.to_vec();
    let ours_free_by_type: Vec<Vec<u64>> = MigrateType::ALL
        .iter()
        .map(|mt| {
            (0..orders)
                .map(|o| ours.free_by_type[mt.index()].get(o).copied().unwrap_or(0))
                .collect()
        })
        .collect();
    let order_off_pct = (0..orders)
        .map(|o| {
            let k = kernel_free_blocks.get(o).copied().unwrap_or(0);
            (k > 0).then(|| 100.0 * k.abs_diff(ours_free_blocks[o]) as f64 / k as f64)
        })
        .collect();
    let type_off_pct = kernel_free_by_type
        .iter()
        .zip(&ours_free_by_type)
        .map(|(k, o)| off(k, o))
        .collect();
    let layout = snap.layout.as_ref().map(|l| {
        let span = z.start_pfn..z.start_pfn + z.spanned_pages;
        let max = (orders - 1) as u8;
        let mut kernel_free_blocks = vec![0u64; orders];
        let mut same_place = vec![0u64; orders];
        for (pfn, order) in l.free_blocks(span, max) {
            kernel_free_blocks[usize::from(order)] += 1;
            if let Some(FrameState::Buddy(o)) = zone.frame_state(Pfn(pfn)) {
                same_place[usize::from(order)] += u64::from(o.get() == order);
            }
        }
        LayoutEnd {
            kernel_free_blocks,
            same_place,
        }
    });
    EndState {
        zone: z.label(),
        start_layout,
        free_blocks_off_pct: off(&kernel_free_blocks, &ours_free_blocks),
        kernel_free_blocks,
        ours_free_blocks,
        kernel_free_by_type,
        ours_free_by_type,
        free_pages_by_type: (kfree, ofree),
        pageblocks: (kblocks, oblocks),
        pcp: (z.pcp_pages(), zone.pcp_pages()),
        pagesets: z
            .pagesets
            .iter()
            .map(|ps| {
                let ours = zone.pcp_info(CpuId(ps.cpu));
                ((ps.count, ps.high), (ours.count, ours.high))
            })
            .collect(),
        order_off_pct,
        type_off_pct,
        layout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zonealloc::{ZoneConfig, ZoneType};

    /// buddyinfo is read a moment before pagetypeinfo (`capture-kmem`), and the per-order
    /// figure is compared where buddyinfo was read (`to_reads`): it is buddyinfo's.
    #[test]
    fn the_per_order_figure_is_buddyinfos_where_pagetypeinfo_differs() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/proc/linux-6.1-p1-before");
        let snap = ProcSnapshot::read_dir(&dir).unwrap();
        let mut z = snap.zone(0, ZoneType::Dma32).unwrap().clone();
        let mut buddy = z.free_blocks().unwrap();
        buddy[0] += 43;
        buddy[1] += 41;
        z.buddy_free = Some(buddy.clone());
        let (start, end) = (Pfn(z.start_pfn), Pfn(z.start_pfn + z.spanned_pages));
        let zone = Zone::new(ZoneType::Dma32, start, end, ZoneConfig::default()).unwrap();
        let e = end_state(&zone, &snap, &z, &SetupFacts::default());
        assert_eq!(e.kernel_free_blocks, buddy);
    }
}
