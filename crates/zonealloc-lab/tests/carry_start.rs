//! The default window starts from zoneinfo's counts carried forward from zoneinfo's read to
//! the start marker (`trace::replay::carry_start`): the events between them are the
//! kernel's, after the counts were printed.

mod common;

use common::{replay_experiment, trace_line, PROC_61};

/// zoneinfo's count of DMA32's CPU 1.
const COUNT: u64 = 771;
/// Pages CPU 1 frees onto its lists after zoneinfo's print, before the start marker.
const FREED: u64 = 40;

fn alloc(pfn: u64) -> String {
    format!(
        "mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype=1 \
         gfp_flags=GFP_KERNEL"
    )
}

fn free(pfn: u64) -> String {
    format!("mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0")
}

/// `cat-10` reads zoneinfo on CPU 0 (its last allocation), then CPU 1 frees [`FREED`] pages
/// (another task's exit, say) before `KT_SNAPSHOT_BEFORE_END`; the window allocates 10 pages
/// on CPU 1, which bound nothing. `splice`: the reader prints into 16 pages it took off CPU
/// 0's list untraced (`copy_splice_read`'s `alloc_pages_bulk`) and gives them back before its
/// last allocation: frees of pages `sh-8`'s refill listed there, which no traced allocation
/// took.
fn trace(splice: bool) -> String {
    let mark = |m: &str| ("dash-7", 0, format!("tracing_mark_write: {m} p"));
    let mut ev = vec![mark("KT_SNAPSHOT_BEFORE_BEGIN")];
    for i in 0..16 {
        let what = format!(
            "mm_page_alloc_zone_locked: page=(____ptrval____) pfn={:#x} order=0 migratetype=1 \
             percpu_refill=1",
            0x52000 + i
        );
        ev.push(("sh-8", 0, what));
    }
    ev.push(("cat-10", 0, alloc(0x51000)));
    if splice {
        ev.extend((0..16).map(|i| ("cat-10", 0, free(0x52000 + i))));
    }
    ev.push(("cat-10", 0, alloc(0x51001)));
    ev.extend((0..FREED).map(|i| ("sh-9", 1, free(0x50000 + i))));
    ev.push(mark("KT_SNAPSHOT_BEFORE_END"));
    ev.extend((0..10).map(|i| ("work-20", 1, alloc(0x60000 + i))));
    let head = "# tracer: nop\n#\n# entries-in-buffer/entries-written: 0/0   #P:4\n";
    let lines = ev
        .iter()
        .enumerate()
        .map(|(i, (task, cpu, what))| trace_line(task, *cpu, 10_000_000 + 10 * i as u64, what));
    std::iter::once(head.to_owned()).chain(lines).collect()
}

/// DMA32's CPU 1 start count in the replay of `trace(splice)`.
fn cpu1(dir: &std::path::Path, splice: bool) -> serde_json::Value {
    let name = if splice { "splice" } else { "plain" };
    let c = replay_experiment(dir, name, trace(splice).as_bytes(), &["--proc", PROC_61]);
    common::dma32_cpu1(&c["config"])
}

#[test]
fn the_window_starts_from_zoneinfos_counts_carried_from_the_print_to_the_marker() {
    let dir = tempfile::tempdir().unwrap();
    let carried = cpu1(dir.path(), true);
    assert_eq!(carried["zoneinfo"], COUNT, "{carried}");
    // Fails on the old code: 771, the count as printed.
    assert_eq!(carried["inferred"], COUNT + FREED, "{carried}");
    assert_eq!(carried["found"], "carried", "{carried}");
    // No re-frees, no print to carry from: zoneinfo's count as printed.
    let plain = cpu1(dir.path(), false);
    assert_eq!(plain["inferred"], COUNT, "{plain}");
    assert_eq!(plain["found"], "zoneinfo", "{plain}");
}
