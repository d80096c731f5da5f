//! Text of `/proc/buddyinfo`, `/proc/pagetypeinfo` and the debugfs `extfrag/unusable_index` and
//! `extfrag/extfrag_index` files, byte for byte as `mm/vmstat.c` prints them.
//!
//! Mirrors `frag_show` / `frag_show_print`, `pagetypeinfo_show`, `pagetypeinfo_showfree`,
//! `pagetypeinfo_showfree_print`, `pagetypeinfo_showblockcount`,
//! `pagetypeinfo_showblockcount_print`, `unusable_show` / `unusable_show_print` and
//! `extfrag_show` / `extfrag_show_print`, with `walk_zones_in_node` replaced by a walk over the
//! snapshots.
//!
//! Every writer takes one [`FreeAreaSnapshot`] per populated zone, in zone order; zones of one
//! node must be consecutive (a node is a run of snapshots with the same `node`). Orders run over
//! `0..=max_order` of each snapshot (clamped to the per-order arrays). The `Number of mixed
//! blocks` table that `pagetypeinfo_showmixedcount` adds under `CONFIG_PAGE_OWNER` is not
//! printed: zonealloc has no page owner tracking.

use core::fmt::{self, Write};

use super::frag::{last_order, shl};
use super::{fragmentation_index, unusable_free_index, FreeAreaSnapshot};
use crate::types::MigrateType;

/// `pagetypeinfo_showfree_print` stops walking a free list after this many entries and prints
/// the count with a `>` prefix.
const FREE_LIST_WALK_CAP: u64 = 100_000;

/// `"Node %d, zone %8s "`: the prefix of a buddyinfo, block-count, unusable or extfrag line.
fn write_zone_prefix<W: Write>(w: &mut W, s: &FreeAreaSnapshot) -> fmt::Result {
    write!(w, "Node {}, zone {:>8} ", s.node, s.zone_name)
}

/// `"%d.%03d "` / `"%2d.%03d "` of an index in thousandths, with C's truncating `/` and `%`
/// (which Rust's `i32` operators share): -1000 prints `-1.000`, -500 prints `0.-500`.
fn write_thousandths<W: Write>(w: &mut W, index: i32, int_width: usize) -> fmt::Result {
    write!(
        w,
        "{:iw$}.{:03} ",
        index / 1000,
        index % 1000,
        iw = int_width
    )
}

/// Writes `/proc/buddyinfo` (`frag_show_print` for each zone): per zone,
/// `"Node %d, zone %8s "`, then `"%6lu "` with `nr_free` for each order `0..=max_order`, then a
/// newline. There is no header line, and each line ends with a space before the newline.
pub fn write_buddyinfo<W: Write>(w: &mut W, zones: &[FreeAreaSnapshot]) -> fmt::Result {
    for s in zones {
        write_zone_prefix(w, s)?;
        for order in 0..=last_order(s) {
            write!(w, "{:6} ", s.nr_free[usize::from(order)])?;
        }
        w.write_char('\n')?;
    }
    Ok(())
}

/// Writes `/proc/pagetypeinfo` (`pagetypeinfo_show`), once per node:
///
/// ```text
/// Page block order: %d\n
/// Pages per block:  %lu\n
/// \n
/// %-43s "Free pages count per migrate type at order", then "%6d " per order, \n
/// per zone, per migratetype: "Node %4d, zone %8s, type %12s ", then "%s%6lu " per order, \n
/// \n%-23s "Number of blocks type ", then "%12s " per migratetype name, \n
/// per zone: "Node %d, zone %8s ", then "%12lu " pageblocks per migratetype, \n
/// ```
///
/// Free counts are list entries (blocks); a count of 100,000 or more prints as `>100000`, as
/// the kernel's capped list walk does. The page-block order and the order columns of the
/// headers come from the node's first snapshot.
pub fn write_pagetypeinfo<W: Write>(w: &mut W, zones: &[FreeAreaSnapshot]) -> fmt::Result {
    for node_zones in zones.chunk_by(|a, b| a.node == b.node) {
        let Some(first) = node_zones.first() else {
            continue;
        };
        writeln!(w, "Page block order: {}", first.pageblock_order)?;
        writeln!(w, "Pages per block:  {}", shl(1, first.pageblock_order))?;
        w.write_char('\n')?;
        write_free_counts(w, first, node_zones)?;
        write_block_counts(w, node_zones)?;
    }
    Ok(())
}

/// `pagetypeinfo_showfree` and `pagetypeinfo_showfree_print` for the zones of one node.
fn write_free_counts<W: Write>(
    w: &mut W,
    first: &FreeAreaSnapshot,
    node_zones: &[FreeAreaSnapshot],
) -> fmt::Result {
    write!(w, "{:<43} ", "Free pages count per migrate type at order")?;
    for order in 0..=last_order(first) {
        write!(w, "{order:6} ")?;
    }
    w.write_char('\n')?;

    for s in node_zones {
        for mt in MigrateType::ALL {
            write!(
                w,
                "Node {:4}, zone {:>8}, type {:>12} ",
                s.node,
                s.zone_name,
                mt.name()
            )?;
            let counts = &s.free_by_type[mt.index()];
            for order in 0..=last_order(s) {
                let count = counts[usize::from(order)];
                if count >= FREE_LIST_WALK_CAP {
                    write!(w, ">{FREE_LIST_WALK_CAP:6} ")?;
                } else {
                    write!(w, "{count:6} ")?;
                }
            }
            w.write_char('\n')?;
        }
    }
    Ok(())
}

/// `pagetypeinfo_showblockcount` and `pagetypeinfo_showblockcount_print` for the zones of one
/// node.
fn write_block_counts<W: Write>(w: &mut W, node_zones: &[FreeAreaSnapshot]) -> fmt::Result {
    write!(w, "\n{:<23}", "Number of blocks type ")?;
    for mt in MigrateType::ALL {
        write!(w, "{:>12} ", mt.name())?;
    }
    w.write_char('\n')?;

    for s in node_zones {
        write_zone_prefix(w, s)?;
        for mt in MigrateType::ALL {
            write!(w, "{:12} ", s.pageblocks_by_type[mt.index()])?;
        }
        w.write_char('\n')?;
    }
    Ok(())
}

/// Writes debugfs `extfrag/unusable_index` (`unusable_show_print` for each zone): per zone,
/// `"Node %d, zone %8s "`, then `"%d.%03d "` with [`unusable_free_index`] for each order, then a
/// newline (e.g. `0.277` for 277 thousandths).
pub fn write_unusable_index<W: Write>(w: &mut W, zones: &[FreeAreaSnapshot]) -> fmt::Result {
    for s in zones {
        write_zone_prefix(w, s)?;
        for order in 0..=last_order(s) {
            // The kernel keeps the index in an `int`.
            let index = unusable_free_index(s, order) as i32;
            write_thousandths(w, index, 0)?;
        }
        w.write_char('\n')?;
    }
    Ok(())
}

/// Writes debugfs `extfrag/extfrag_index` (`extfrag_show_print` for each zone): per zone,
/// `"Node %d, zone %8s "`, then `"%2d.%03d "` with [`fragmentation_index`] for each order, then
/// a newline. An order that a free block can satisfy prints `-1.000`; the negative values of a
/// zone whose only free block is too small print as C does, e.g. -500 as ` 0.-500`.
pub fn write_extfrag_index<W: Write>(w: &mut W, zones: &[FreeAreaSnapshot]) -> fmt::Result {
    for s in zones {
        write_zone_prefix(w, s)?;
        for order in 0..=last_order(s) {
            write_thousandths(w, fragmentation_index(s, order), 2)?;
        }
        w.write_char('\n')?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::types::{MIGRATE_TYPES, ORDER_SLOTS};
    use std::string::String;

    fn snap(
        node: u32,
        zone_name: &'static str,
        max_order: u8,
        nr_free: &[u64],
    ) -> FreeAreaSnapshot {
        let mut counts = [0u64; ORDER_SLOTS];
        counts[..nr_free.len()].copy_from_slice(nr_free);
        FreeAreaSnapshot {
            node,
            zone_name,
            max_order,
            pageblock_order: max_order.min(9),
            nr_free: counts,
            free_by_type: [[0; ORDER_SLOTS]; MIGRATE_TYPES],
            pageblocks_by_type: [0; MIGRATE_TYPES],
        }
    }

    fn render(
        f: fn(&mut String, &[FreeAreaSnapshot]) -> fmt::Result,
        zones: &[FreeAreaSnapshot],
    ) -> String {
        let mut out = String::new();
        f(&mut out, zones).unwrap();
        out
    }

    #[test]
    fn buddyinfo_normal_zone_golden() {
        let s = snap(
            0,
            "Normal",
            10,
            &[3311, 1402, 700, 245, 98, 40, 17, 9, 4, 2, 512],
        );
        assert_eq!(
            render(write_buddyinfo, &[s]),
            "Node 0, zone   Normal   3311   1402    700    245     98     40     17      9      4      2    512 \n"
        );
    }

    #[test]
    fn buddyinfo_several_zones_and_wide_counts() {
        let zones = [
            snap(0, "DMA", 10, &[1, 0, 2, 0, 0, 0, 0, 0, 0, 1, 3]),
            snap(0, "DMA32", 10, &[1234567]),
            snap(1, "Normal", 3, &[0, 0, 0, 999999]),
        ];
        assert_eq!(
            render(write_buddyinfo, &zones),
            concat!(
                "Node 0, zone      DMA      1      0      2      0      0      0      0      0      0      1      3 \n",
                "Node 0, zone    DMA32 1234567      0      0      0      0      0      0      0      0      0      0 \n",
                "Node 1, zone   Normal      0      0      0 999999 \n",
            )
        );
    }

    #[test]
    fn empty_input_prints_nothing() {
        for f in [
            write_buddyinfo::<String>,
            write_pagetypeinfo::<String>,
            write_unusable_index::<String>,
            write_extfrag_index::<String>,
        ] {
            assert_eq!(render(f, &[]), "");
        }
    }

    #[test]
    fn pagetypeinfo_one_zone_golden() {
        let mut s = snap(0, "Normal", 2, &[7, 3, 1]);
        s.pageblock_order = 2;
        s.free_by_type[MigrateType::Unmovable.index()][..3].copy_from_slice(&[1, 0, 0]);
        s.free_by_type[MigrateType::Movable.index()][..3].copy_from_slice(&[5, 3, 1]);
        s.free_by_type[MigrateType::Reclaimable.index()][..3].copy_from_slice(&[1, 0, 0]);
        s.pageblocks_by_type = [2, 9, 1, 0, 0];
        assert_eq!(
            render(write_pagetypeinfo, &[s]),
            concat!(
                "Page block order: 2\n",
                "Pages per block:  4\n",
                "\n",
                "Free pages count per migrate type at order       0      1      2 \n",
                "Node    0, zone   Normal, type    Unmovable      1      0      0 \n",
                "Node    0, zone   Normal, type      Movable      5      3      1 \n",
                "Node    0, zone   Normal, type  Reclaimable      1      0      0 \n",
                "Node    0, zone   Normal, type   HighAtomic      0      0      0 \n",
                "Node    0, zone   Normal, type      Isolate      0      0      0 \n",
                "\n",
                "Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate \n",
                "Node 0, zone   Normal            2            9            1            0            0 \n",
            )
        );
    }

    #[test]
    fn pagetypeinfo_x86_header_lines() {
        // x86-64 defaults: MAX_PAGE_ORDER 10, pageblock_order 9 (512 pages).
        let s = snap(0, "DMA32", 10, &[]);
        let out = render(write_pagetypeinfo, &[s]);
        let lines: std::vec::Vec<&str> = out.split('\n').collect();
        assert_eq!(lines[0], "Page block order: 9");
        assert_eq!(lines[1], "Pages per block:  512");
        assert_eq!(lines[2], "");
        assert_eq!(
            lines[3],
            "Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10 "
        );
        assert_eq!(
            lines[4],
            "Node    0, zone    DMA32, type    Unmovable      0      0      0      0      0      0      0      0      0      0      0 "
        );
        // 3 header lines, order header, 5 type lines, blank, block header, 1 zone line, and the
        // empty remainder after the final newline.
        assert_eq!(lines.len(), 13);
        assert_eq!(lines[12], "");
    }

    #[test]
    fn pagetypeinfo_caps_free_counts_at_100000() {
        let mut s = snap(0, "Normal", 3, &[]);
        s.free_by_type[MigrateType::Movable.index()][..4].copy_from_slice(&[
            100_000,
            99_999,
            123_456,
            u64::MAX,
        ]);
        let out = render(write_pagetypeinfo, &[s]);
        assert!(
            out.contains(
                "Node    0, zone   Normal, type      Movable >100000  99999 >100000 >100000 \n"
            ),
            "{out}"
        );
    }

    #[test]
    fn pagetypeinfo_repeats_the_block_per_node() {
        let mut dma = snap(0, "DMA", 0, &[]);
        dma.pageblock_order = 0;
        dma.free_by_type[MigrateType::Unmovable.index()][0] = 3;
        dma.pageblocks_by_type = [3, 0, 0, 0, 0];
        let mut normal0 = snap(0, "Normal", 0, &[]);
        normal0.pageblock_order = 0;
        normal0.free_by_type[MigrateType::Movable.index()][0] = 12;
        normal0.pageblocks_by_type = [1, 40, 0, 0, 0];
        let mut normal1 = snap(1, "Normal", 0, &[]);
        normal1.pageblock_order = 0;
        normal1.free_by_type[MigrateType::HighAtomic.index()][0] = 1;
        normal1.pageblocks_by_type = [0, 0, 0, 1, 0];
        assert_eq!(
            render(write_pagetypeinfo, &[dma, normal0, normal1]),
            concat!(
                "Page block order: 0\n",
                "Pages per block:  1\n",
                "\n",
                "Free pages count per migrate type at order       0 \n",
                "Node    0, zone      DMA, type    Unmovable      3 \n",
                "Node    0, zone      DMA, type      Movable      0 \n",
                "Node    0, zone      DMA, type  Reclaimable      0 \n",
                "Node    0, zone      DMA, type   HighAtomic      0 \n",
                "Node    0, zone      DMA, type      Isolate      0 \n",
                "Node    0, zone   Normal, type    Unmovable      0 \n",
                "Node    0, zone   Normal, type      Movable     12 \n",
                "Node    0, zone   Normal, type  Reclaimable      0 \n",
                "Node    0, zone   Normal, type   HighAtomic      0 \n",
                "Node    0, zone   Normal, type      Isolate      0 \n",
                "\n",
                "Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate \n",
                "Node 0, zone      DMA            3            0            0            0            0 \n",
                "Node 0, zone   Normal            1           40            0            0            0 \n",
                "Page block order: 0\n",
                "Pages per block:  1\n",
                "\n",
                "Free pages count per migrate type at order       0 \n",
                "Node    1, zone   Normal, type    Unmovable      0 \n",
                "Node    1, zone   Normal, type      Movable      0 \n",
                "Node    1, zone   Normal, type  Reclaimable      0 \n",
                "Node    1, zone   Normal, type   HighAtomic      1 \n",
                "Node    1, zone   Normal, type      Isolate      0 \n",
                "\n",
                "Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate \n",
                "Node 1, zone   Normal            0            0            0            1            0 \n",
            )
        );
    }

    /// The worked example of `frag.rs`: nr_free = [10, 5, 2, 1], 36 free pages in 18 blocks.
    fn worked() -> FreeAreaSnapshot {
        snap(0, "Normal", 10, &[10, 5, 2, 1])
    }

    #[test]
    fn unusable_index_golden() {
        // Indices 0, 277, 555, 777, then 1000 for orders 4..=10 (see frag.rs).
        assert_eq!(
            render(write_unusable_index, &[worked()]),
            "Node 0, zone   Normal 0.000 0.277 0.555 0.777 1.000 1.000 1.000 1.000 1.000 1.000 1.000 \n"
        );
    }

    #[test]
    fn unusable_index_empty_zone_is_all_unusable() {
        assert_eq!(
            render(write_unusable_index, &[snap(2, "DMA", 2, &[])]),
            "Node 2, zone      DMA 1.000 1.000 1.000 \n"
        );
    }

    #[test]
    fn extfrag_index_golden() {
        // Orders 0..=3 have a suitable block (-1000). For order o >= 4, with 36 free pages in
        // 18 blocks: 1000 - (1000 + 36000 / 2^o) / 18:
        //   4: 1000 - 3250/18 = 820    5: 1000 - 2125/18 = 882    6: 1000 - 1562/18 = 914
        //   7: 1000 - 1281/18 = 929    8: 1000 - 1140/18 = 937    9: 1000 - 1070/18 = 941
        //  10: 1000 - 1035/18 = 943
        assert_eq!(
            render(write_extfrag_index, &[worked()]),
            "Node 0, zone   Normal -1.000 -1.000 -1.000 -1.000  0.820  0.882  0.914  0.929  0.937  0.941  0.943 \n"
        );
    }

    #[test]
    fn extfrag_index_prints_negative_values_as_c_does() {
        // One free order-0 page: index -1000 at order 0, then -(1000 >> o): -500, -250, -125,
        // -62, -31, -15, -7, -3, -1, 0. C prints index / 1000 = 0 and index % 1000 = -500 with
        // "%2d.%03d ", i.e. " 0.-500 ", and -7 as " 0.-07 ".
        assert_eq!(
            render(write_extfrag_index, &[snap(0, "Normal", 10, &[1])]),
            "Node 0, zone   Normal -1.000  0.-500  0.-250  0.-125  0.-62  0.-31  0.-15  0.-07  0.-03  0.-01  0.000 \n"
        );
    }

    #[test]
    fn extfrag_index_empty_zone_is_zero() {
        assert_eq!(
            render(write_extfrag_index, &[snap(0, "Movable", 1, &[])]),
            "Node 0, zone  Movable  0.000  0.000 \n"
        );
    }

    #[test]
    fn writer_errors_propagate() {
        struct Failing;
        impl Write for Failing {
            fn write_str(&mut self, _: &str) -> fmt::Result {
                Err(fmt::Error)
            }
        }
        let zones = [worked()];
        assert!(write_buddyinfo(&mut Failing, &zones).is_err());
        assert!(write_pagetypeinfo(&mut Failing, &zones).is_err());
        assert!(write_unusable_index(&mut Failing, &zones).is_err());
        assert!(write_extfrag_index(&mut Failing, &zones).is_err());
    }

    #[test]
    fn no_panic_on_extreme_snapshots() {
        let mut wild = snap(
            u32::MAX,
            "A-very-long-zone-name",
            255,
            &[u64::MAX; ORDER_SLOTS],
        );
        wild.pageblock_order = 255;
        wild.free_by_type = [[u64::MAX; ORDER_SLOTS]; MIGRATE_TYPES];
        wild.pageblocks_by_type = [u64::MAX; MIGRATE_TYPES];
        let zones = [
            wild,
            snap(0, "", 0, &[]),
            snap(0, "Normal", 20, &[u64::MAX; ORDER_SLOTS]),
        ];
        for f in [
            write_buddyinfo::<String>,
            write_pagetypeinfo::<String>,
            write_unusable_index::<String>,
            write_extfrag_index::<String>,
        ] {
            let out = render(f, &zones);
            assert!(out.ends_with('\n'));
        }
        // A max_order above the array length prints ORDER_SLOTS columns.
        let out = render(write_buddyinfo, &zones[..1]);
        assert_eq!(out.matches("18446744073709551615 ").count(), ORDER_SLOTS);
    }
}
