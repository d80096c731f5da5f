//! The layout rolled forward to the window's start (`roll.rs`): crafted traces between the
//! layout's read and the start marker, on a crafted layout of the 6.1 snapshot's DMA zone.

use zonealloc::{MigrateType, ZoneType};

use super::*;
use crate::procfs::{parse_layout, ProcSnapshot};
use crate::trace::migratetype::Numbering;
use crate::trace::parse::Parser;
use crate::trace::replay::layout::{targets, Page, StartHints, Targets, ZoneLayout};

fn snap() -> ProcSnapshot {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/proc/linux-6.1-p1-before");
    ProcSnapshot::read_dir(&dir).unwrap()
}

/// DMA as the kernel's layout read it: the free blocks are pagetypeinfo's (Unmovable order 6
/// at 192 and 7 at 256, Movable 9 at 512 and three of 10), twelve flagless pages below them;
/// 3840 pages managed, as zoneinfo says.
const LAYOUT: &str = "# zonealloc pfn layout 1: start_pfn count class; max_order 10\n\
    0 1 R\n1 24 M\n25 155 R\n180 12 F\n192 192 B\n384 28 S\n412 100 R\n512 3584 B\n\
    4096 520192 R\nend 524288\n";

/// [`LAYOUT`] with pfn 192 flagless (on a list when read): the rest of its order-6 block
/// splits into orders 0 to 5.
const LAYOUT_192_LISTED: &str = "# zonealloc pfn layout 1: start_pfn count class; max_order 10\n\
    0 1 R\n1 24 M\n25 155 R\n180 13 F\n193 191 B\n384 28 S\n412 100 R\n512 3584 B\n\
    4096 520192 R\nend 524288\n";

fn line(cpu: u32, ts: &str, ev: &str) -> String {
    format!("            x-1     [{cpu:03}] .....    {ts}: {ev}\n")
}

const P: &str = "page=(____ptrval____)";

/// The roll of `events` written after the layout's read marker (and one event before it,
/// which the roll must not read), in DMA (pfns 0..4096) on 4 CPUs.
fn roll(events: &str) -> Roll {
    roll_parts(&[events])
}

/// [`roll`] of the events of `parts`, the before-snapshot's counts read between each part
/// and the next ([`RollWalk::counts_read`]).
fn roll_parts(parts: &[&str]) -> Roll {
    roll_parts_with(parts, false)
}

/// [`roll_parts`], with 7.2's contiguous-range frees read where `contig`.
fn roll_parts_with(parts: &[&str], contig: bool) -> Roll {
    let mut t = line(
        0,
        "1.000000",
        &format!("mm_page_free: {P} pfn=0x100 order=0"),
    );
    t += &line(
        0,
        "1.500000",
        "tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN p",
    );
    let dma = 0..4096;
    let mut walk = RollWalk::new(std::slice::from_ref(&dma), 4, Numbering::Current, Some(9));
    walk.set_contig_free(contig);
    let mut parser = Parser::new();
    for (k, events) in parts.iter().enumerate() {
        if k > 0 {
            walk.counts_read();
        }
        let text = match k {
            0 => t.clone() + events,
            _ => events.to_string(),
        };
        let text = match k {
            0 => after_layout_read(text.as_bytes(), false).unwrap().to_vec(),
            _ => text.into_bytes(),
        };
        for l in text.split_inclusive(|&b| b == b'\n') {
            if let Some(ev) = parser.feed(l) {
                walk.feed(&ev, &[]);
            }
        }
    }
    walk.finish().pop().unwrap()
}

/// CPU 3's `event` of the page at 192, Unmovable, at 2 s (`rest`: the fields after).
fn cpu3_at_192(event: &str, rest: &str) -> String {
    let ev = format!("{event}: {P} pfn=0xc0 order=0 migratetype=0{rest}");
    line(3, "2.000000", &ev)
}

/// pagetypeinfo's targets of DMA as read.
fn read_targets() -> Targets {
    let s = snap();
    let z = s.zone(0, ZoneType::Dma).unwrap();
    targets(&s, z, 11)
}

/// Targets of DMA with Unmovable free blocks of orders 0 to 5 and 7 (192's block split, its
/// first page gone), Movable's as pagetypeinfo has them.
fn split_targets() -> Targets {
    let mut t = read_targets();
    let u = MigrateType::Unmovable.index();
    t.0[u] = vec![1, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0];
    t
}

/// The layout of `text` for DMA with `targets`, rolled by `roll` where given.
fn layout(text: &str, t: &Targets, roll: Option<Roll>) -> ZoneLayout {
    layout_freed(text, t, roll, Vec::new())
}

/// [`layout`], with the blocks the window first frees.
fn layout_freed(text: &str, t: &Targets, roll: Option<Roll>, freed: Vec<(u64, u8)>) -> ZoneLayout {
    let s = snap();
    let z = s.zone(0, ZoneType::Dma).unwrap();
    let layout = parse_layout(text).unwrap();
    let hints = StartHints {
        roll,
        freed,
        ..StartHints::default()
    };
    ZoneLayout::from_kernel_hinted(&layout, z, t, 9, 10, &hints)
}

/// The page at 192 allocated on CPU 2 after the layout's read, then freed on CPU `cpu`.
fn allocated_and_freed_on(cpu: u32) -> String {
    let mut ev = line(
        2,
        "2.000000",
        &format!("mm_page_alloc: {P} pfn=0xc0 order=0 migratetype=0 gfp_flags=GFP_KERNEL"),
    );
    ev += &line(
        cpu,
        "3.000000",
        &format!("mm_page_free: {P} pfn=0xc0 order=0"),
    );
    ev
}

#[test]
fn a_page_freed_onto_a_list_after_the_layouts_read_is_not_free_at_the_start() {
    // `od` allocates the page at 192 after the walk read it free, `cat` frees it onto CPU 1's
    // list (6.12-4g p_prodcons: pfn 0x10b136, freed by cat-351 at 122.621816).
    let r = roll(&allocated_and_freed_on(1));
    let t = split_targets();
    let mut rolled = layout(LAYOUT, &t, Some(r));
    assert_eq!(rolled.page(192), Page::Flagless);
    // The split block agrees with the counts as it is: nothing trimmed or made up.
    assert_eq!((rolled.trimmed, rolled.made_up, rolled.rolled), (0, 0, 1));
    assert_eq!(rolled.free_by_type(), t.0);
    // It is CPU 1's first choice for its Unmovable order-0 list.
    assert_eq!(rolled.choose_pcp(&[(1, vec![(0, 0, 1)])]), 0);
    assert_eq!(rolled.pcp, [(1, 192, 0)]);
    // Without the roll the counts take the order-6 block apart and make it up again at the
    // lowest pfn where pages are in use: 192 is free at the start.
    let mut stale = layout(LAYOUT, &t, None);
    assert_eq!(stale.page(192), Page::Free);
    assert_eq!(stale.choose_pcp(&[(1, vec![(0, 0, 1)])]), 0);
    assert_ne!(stale.pcp, [(1, 192, 0)]);
}

#[test]
fn a_page_drained_after_the_layouts_read_is_free_at_the_start() {
    // Read on a list (flagless), drained to the buddy before the marker: the order-6 block
    // at 192 is whole again, as pagetypeinfo (read after the drain) counts it.
    let ev = cpu3_at_192("mm_page_pcpu_drain", "");
    let t = read_targets();
    let mut rolled = layout(LAYOUT_192_LISTED, &t, Some(roll(&ev)));
    assert_eq!(rolled.page(192), Page::Free);
    assert_eq!((rolled.trimmed, rolled.made_up), (0, 0));
    assert_eq!(rolled.free_by_type(), t.0);
    assert!(rolled
        .free
        .iter()
        .any(|b| b.pfn.0 == 192 && b.order.get() == 6));
    // The drained page is no list's: CPU 3's one page comes from the other flagless pages.
    assert_eq!(rolled.choose_pcp(&[(3, vec![(0, 0, 1)])]), 0);
    assert_ne!(rolled.pcp[0].1, 192);
    // Without the roll the split is trimmed (orders 0 to 5) and an order-6 block made up.
    let stale = layout(LAYOUT_192_LISTED, &t, None);
    assert_eq!((stale.trimmed, stale.made_up), (6, 1));
}

#[test]
fn a_page_refilled_after_the_layouts_read_is_on_that_cpus_list_at_the_start() {
    // CPU 3's refill takes 192 off the buddy onto its Unmovable list; nothing allocates it.
    let ev = cpu3_at_192("mm_page_alloc_zone_locked", " percpu_refill=1");
    let r = roll(&ev);
    let listed = r.listed();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (
            listed[0].cpu,
            listed[0].head,
            listed[0].mt,
            listed[0].refilled
        ),
        (3, 192, Some(0), true)
    );
    let t = split_targets();
    let mut rolled = layout(LAYOUT, &t, Some(r));
    assert_eq!(
        (rolled.page(192), rolled.trimmed, rolled.made_up),
        (Page::Flagless, 0, 0)
    );
    assert_eq!(rolled.roll_hints.len(), 1);
    assert_eq!(rolled.choose_pcp(&[(3, vec![(0, 0, 1)])]), 0);
    assert_eq!(rolled.pcp, [(3, 192, 0)]);
    let mut stale = layout(LAYOUT, &t, None);
    assert_eq!(stale.choose_pcp(&[(3, vec![(0, 0, 1)])]), 0);
    assert_ne!(stale.pcp, [(3, 192, 0)]);
}

#[test]
fn the_last_event_of_each_page_decides_and_only_events_after_the_marker_count() {
    let mut ev = String::new();
    // An order-3 block freed onto CPU 0's list, then split: its first page allocated.
    ev += &line(
        0,
        "2.000000",
        &format!("mm_page_free: {P} pfn=0x200 order=3"),
    );
    ev += &line(
        0,
        "2.100000",
        &format!("mm_page_alloc: {P} pfn=0x200 order=0 migratetype=1 gfp_flags=GFP_USER"),
    );
    // An order-4 free goes straight to the buddy (no list takes order 4).
    ev += &line(
        1,
        "2.200000",
        &format!("mm_page_free: {P} pfn=0x400 order=4"),
    );
    // An order-9 free goes onto the THP order's list.
    ev += &line(
        2,
        "2.300000",
        &format!("mm_page_free: {P} pfn=0x600 order=9"),
    );
    // A batched free onto CPU 3's list, then drained.
    ev += &line(
        3,
        "2.400000",
        &format!("mm_page_free_batched: {P} pfn=0x800"),
    );
    ev += &line(
        3,
        "2.500000",
        &format!("mm_page_pcpu_drain: {P} pfn=0x800 order=0 migratetype=1"),
    );
    // A drain at the timestamp of another CPU's refill of the page, printed after it: the
    // refill came after the drain (the merged buffers' order), the page is CPU 1's.
    ev += &line(
        1,
        "2.600000",
        &format!("mm_page_alloc_zone_locked: {P} pfn=0x900 order=0 migratetype=1 percpu_refill=1"),
    );
    ev += &line(
        2,
        "2.600000",
        &format!("mm_page_pcpu_drain: {P} pfn=0x900 order=0 migratetype=1"),
    );
    let r = roll(&ev);
    assert_eq!(r.get(0x100), None, "before the marker");
    assert_eq!(r.get(0x200), Some(After::InUse));
    assert!(matches!(r.get(0x201), Some(After::Listed(l)) if l.cpu == 0 && l.order == 3));
    assert_eq!(r.get(0x40f), Some(After::Free));
    assert!(matches!(r.get(0x7ff), Some(After::Listed(l)) if l.order == 9));
    assert_eq!(r.get(0x800), Some(After::Free));
    assert!(matches!(r.get(0x900), Some(After::Listed(l)) if l.cpu == 1));
    // The order-3 block is no longer whole on the list; the others are.
    let heads: Vec<u64> = r.listed().iter().map(|l| l.head).collect();
    assert_eq!(heads, [0x600, 0x900]);
    assert_eq!(
        r.events, 7,
        "the drain read as before the refill sets nothing"
    );
}

#[test]
fn without_the_layout_marker_only_a_cut_text_rolls() {
    let t = line(0, "1.0", &format!("mm_page_free: {P} pfn=0x100 order=0"));
    assert_eq!(after_layout_read(t.as_bytes(), false), None);
    assert_eq!(after_layout_read(t.as_bytes(), true), Some(t.as_bytes()));
}

#[test]
fn a_span_set_again_in_part_keeps_the_rest() {
    let mut r = Roll::default();
    r.set(0..16, After::Free);
    r.set(4..8, After::InUse);
    r.set(6..20, After::Free);
    let spans: Vec<_> = r.spans().collect();
    assert_eq!(
        spans,
        [
            (0..4, After::Free),
            (4..6, After::InUse),
            (6..20, After::Free)
        ]
    );
    r.set(0..32, After::InUse);
    assert_eq!(r.spans().count(), 1);
    assert_eq!(r.get(31), Some(After::InUse));
    assert_eq!(r.get(32), None);
}

#[test]
fn a_page_the_window_frees_first_was_in_use_at_the_start_not_on_the_list_it_was_freed_to() {
    // Freed onto CPU 2's list after the read, then taken off it untraced (alloc_pages_bulk):
    // the window's first event naming it is another free (6.1-4g-2node p_prodcons 0x106273).
    let ev = allocated_and_freed_on(2);
    let t = split_targets();
    let mut l = layout_freed(LAYOUT, &t, Some(roll(&ev)), vec![(0xc0, 0)]);
    assert_eq!((l.page(192), l.trimmed, l.made_up), (Page::Used, 0, 0));
    assert!(l.roll_hints.is_empty());
    assert_eq!(l.choose_pcp(&[(2, vec![(0, 0, 1)])]), 0);
    assert_ne!(l.pcp, [(2, 192, 0)]);
    // Without the window's word, the roll puts it on CPU 2's list.
    let mut listed = layout(LAYOUT, &t, Some(roll(&ev)));
    assert_eq!(listed.choose_pcp(&[(2, vec![(0, 0, 1)])]), 0);
    assert_eq!(listed.pcp, [(2, 192, 0)]);
}

#[test]
fn a_block_refilled_after_pagetypeinfos_read_is_taken_off_its_counts_not_made_up() {
    // pagetypeinfo counts the order-6 block at 192 whole; CPU 3's refill then takes 192 onto
    // its list before the start marker (6.1-4g-loads p_fork: dash-188's refill at 81.344274,
    // after pagetypeinfo's cat-303 at 81.322914, takes five order-0 and 29 order-1 Unmovable
    // blocks pagetypeinfo counted).
    let ev = cpu3_at_192("mm_page_alloc_zone_locked", " percpu_refill=1");
    let t = read_targets();
    let read_first = roll_parts(&["", &ev]);
    assert_eq!(read_first.at_counts.as_ref().map(|r| r.events), Some(0));
    let l = layout(LAYOUT, &t, Some(read_first));
    assert_eq!((l.page(192), l.trimmed, l.made_up), (Page::Flagless, 0, 0));
    assert_eq!(l.free_by_type(), split_targets().0);
    // The counts at the start: the order-6 block taken, its six remains put on the free
    // lists (`expand`).
    assert_eq!(l.at_start, Some(split_targets().0));
    // Matched to the counts as read (no read found), the split block is trimmed and an
    // order-6 block made up from pages in use: free at the start, where the kernel had none.
    let stale = layout(LAYOUT, &t, Some(roll(&ev)));
    assert_eq!((stale.trimmed, stale.made_up), (6, 1));
    // Read after the refill, the counts are the start's as they are.
    let read_after = roll_parts(&[&ev, ""]);
    let l = layout(LAYOUT, &split_targets(), Some(read_after));
    assert_eq!((l.trimmed, l.made_up), (0, 0));
}

#[test]
fn a_block_drained_after_pagetypeinfos_read_is_added_to_its_counts_not_trimmed() {
    // Read on a list, the page at 192 is drained after pagetypeinfo's read: pagetypeinfo
    // counts the rest of its block split (orders 0 to 5), the start has the block whole.
    let ev = cpu3_at_192("mm_page_pcpu_drain", "");
    let t = split_targets();
    let l = layout(LAYOUT_192_LISTED, &t, Some(roll_parts(&["", &ev])));
    assert_eq!((l.page(192), l.trimmed, l.made_up), (Page::Free, 0, 0));
    assert_eq!(l.free_by_type(), read_targets().0);
    assert_eq!(l.at_start, Some(read_targets().0));
    let stale = layout(LAYOUT_192_LISTED, &t, Some(roll(&ev)));
    assert_eq!((stale.trimmed, stale.made_up), (1, 6));
}

/// A pageblock the window never names takes the type the events before it last named:
/// a refill's free list (CPU 3's Unmovable refill of 0x200, pageblock 1), a fallback that
/// stole without claiming the type fallen back to (pageblock 2 stays Reclaimable, as its
/// extfrag line says, after a Movable take's line), and a claim the type its take named
/// (pageblock 3, Unmovable). The layout types pageblock 1 by it, where the counts alone
/// made it Movable (7.2-3g-16cpu-wq p_compact: `dash-1320`'s Unmovable refills at
/// 122.829505-506, after pagetypeinfo's read, in pageblocks the layout had typed Movable).
#[test]
fn the_events_before_the_window_type_the_pageblocks_it_does_not_name() {
    let take = |cpu, pfn: u64, mt| {
        let ev = format!(
            "mm_page_alloc_zone_locked: {P} pfn={pfn:#x} order=0 migratetype={mt} percpu_refill=1"
        );
        line(cpu, "2.000000", &ev)
    };
    let fallback = |pfn: u64, own: u8| {
        let ev = format!("mm_page_alloc_extfrag: {P} pfn={pfn:#x} alloc_order=0 fallback_order=0 pageblock_order=9 alloc_migratetype=1 fallback_migratetype=2 fragmenting=1 change_ownership={own}");
        line(1, "2.000001", &ev)
    };
    let mut ev = take(3, 0x200, 0);
    ev += &take(1, 0x400, 1);
    ev += &fallback(0x400, 0);
    ev += &take(1, 0x600, 0);
    ev += &fallback(0x600, 1);
    let r = roll(&ev);
    let mut types: Vec<_> = r.block_types(9).into_iter().collect();
    types.sort_unstable();
    use MigrateType::{Reclaimable, Unmovable};
    assert_eq!(types, [(1, Unmovable), (2, Reclaimable), (3, Unmovable)]);
    let t = read_targets();
    assert_eq!(layout(LAYOUT, &t, Some(r)).blocks[1], Unmovable);
    assert_eq!(layout(LAYOUT, &t, None).blocks[1], MigrateType::Movable);
}

/// `task`'s order-0 free of `pfn` on CPU 3 at `ts`.
fn free_by(task: &str, ts: &str, pfn: u64) -> String {
    format!("     {task:>16} [003] .....    {ts}: mm_page_free: {P} pfn={pfn:#x} order=0\n")
}

/// The blocks `events` leave listed, as (head, order, cpu), with 7.2's contiguous-range frees
/// read where `contig`.
fn listed_with(events: &str, contig: bool) -> Vec<(u64, u8, u32)> {
    let r = roll_parts_with(&[events], contig);
    let mut l: Vec<_> = r
        .listed()
        .iter()
        .map(|l| (l.head, l.order, l.cpu))
        .collect();
    l.sort_unstable();
    l
}

/// 7.2-4g-6cpu p_idle: `kworker/3:1` frees 0x126430-0x126433 (an order-2 `vmalloc` block)
/// page by page at 280.944894-900; `__free_contig_range` puts them on CPU 3's order-2 list
/// as one block. Here 0x40-0x46: an order-2 block at 0x40, an order-1 at 0x44, a page at
/// 0x46, each on CPU 3's list of its order.
#[test]
fn a_kworkers_run_of_consecutive_frees_is_listed_as_aligned_blocks() {
    let k = "kworker/3:1-80";
    let run: String = (0..7u64)
        .map(|i| free_by(k, "2.000000", 0x40 + i))
        .collect();
    assert_eq!(
        listed_with(&run, true),
        vec![(0x40, 2, 3), (0x44, 1, 3), (0x46, 0, 3)]
    );
    // Read page by page (6.1 and 6.12, or `--no-contig-free`): seven order-0 pages.
    let pages: Vec<_> = (0..7u64).map(|i| (0x40 + i, 0, 3)).collect();
    assert_eq!(listed_with(&run, false), pages);
    // Another task's frees of consecutive pages go one by one (pages a refill listed in pfn
    // order, `replayer/contig_free.rs`).
    let other: String = (0..7u64)
        .map(|i| free_by("cat-9", "2.000000", 0x40 + i))
        .collect();
    assert_eq!(listed_with(&other, true), pages);
}

/// A run a `mm_page_free_batched` ends is a folio batch's: its pages go one by one; a run
/// that a page in use since breaks stays as its frees left it.
#[test]
fn a_batchs_frees_and_a_run_taken_from_since_stay_pages() {
    let k = "kworker/3:1-80";
    let mut batch: String = (0..4u64)
        .map(|i| free_by(k, "2.000000", 0x40 + i))
        .collect();
    batch += &format!(
        "     {k:>16} [003] .....    2.000001: mm_page_free_batched: {P} pfn=0x40 order=0\n"
    );
    let pages: Vec<_> = (0..4u64).map(|i| (0x40 + i, 0, 3)).collect();
    assert_eq!(listed_with(&batch, true), pages);
    // CPU 2 allocates 0x41 while the run is open (remote: the run goes on), and the run's
    // end finds it in use: nothing is re-listed.
    let mut taken: String = (0..2u64)
        .map(|i| free_by(k, "2.000000", 0x40 + i))
        .collect();
    taken += &line(
        2,
        "2.000001",
        &format!("mm_page_alloc: {P} pfn=0x41 order=0 migratetype=0 gfp_flags=GFP_KERNEL"),
    );
    taken += &free_by(k, "2.000002", 0x42);
    taken += &free_by(k, "2.000002", 0x43);
    assert_eq!(
        listed_with(&taken, true),
        vec![(0x40, 0, 3), (0x42, 0, 3), (0x43, 0, 3)]
    );
}
