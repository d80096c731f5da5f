//! The lists read on past the window (`Head::past`): a CPU the window shows nothing of takes
//! its lists from the text after it; a CPU the window shows keeps the window's reading.

use super::*;

fn alloc(cpu: u32, ts: u32, pfn: u64, mt: u8) -> String {
    line(
        cpu,
        ts,
        &format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype={mt} gfp_flags=GFP_KERNEL"),
    )
}

fn refill(cpu: u32, ts: u32, pfn: u64, mt: u8) -> String {
    line(
        cpu,
        ts,
        &format!("mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order=0 migratetype={mt} percpu_refill=1"),
    )
}

/// The window's head and the head read on through `after`, each of `window` then `after`
/// fed to one walk (two CPUs, one zone of 4 GiB, pageblock and THP order 9).
fn heads(window: &str, after: &str) -> (Head, Head) {
    let zone = 0..1u64 << 20;
    let mut c = Collector::new(
        2,
        std::slice::from_ref(&zone),
        9,
        Some(9),
        Numbering::Current,
    );
    Parser::new()
        .read_all(window.as_bytes(), |ev| c.feed(ev))
        .unwrap();
    let at_end = c.clone();
    Parser::new()
        .read_all(after.as_bytes(), |ev| c.feed(ev))
        .unwrap();
    (at_end.finish(), c.finish())
}

/// The window: CPU 0 takes three Unmovable pages off its list; CPU 1 does nothing. After it:
/// CPU 1 takes two Movable pages, then refills its Movable list (7.2-4g-6cpu p_idle's
/// `cat-945`), and CPU 0 takes 40 more Unmovable pages without a refill.
fn window_and_after() -> (String, String) {
    let window: String = (0..3).map(|i| alloc(0, 1, 0x1000 + i, 0)).collect();
    let mut after = alloc(1, 2, 0x2000, 1) + &alloc(1, 2, 0x2001, 1);
    after += &refill(1, 3, 0x3000, 1);
    after += &alloc(1, 3, 0x3000, 1);
    after += &(0..40)
        .map(|i| alloc(0, 4, 0x1100 + i, 0))
        .collect::<String>();
    (window, after)
}

#[test]
fn a_cpu_the_window_leaves_alone_takes_its_lists_from_the_text_after_it() {
    let (window, after) = window_and_after();
    let (w, on) = heads(&window, &after);
    let d = w.clone().past(on).zones.swap_remove(0);
    // CPU 1: its Movable list held exactly the two pages taken before the refill.
    assert_eq!(d.at_least(1, 0, MOVABLE), 2);
    assert!(d.is_exact(1, 0, MOVABLE));
    // Shown empty only past the window: a block that text shows there from the start was.
    assert!(!d.is_exact_in_window(1, 0, MOVABLE));
    // Its count's rest goes to the first order-0 list not shown empty: Unmovable.
    assert_eq!(d.fit(1, 10), vec![(0, 1, 2), (0, 0, 8)]);
    // Read in the window alone, all ten were Movable.
    let alone = w.zones[0].clone();
    assert!(!alone.is_exact(1, 0, MOVABLE));
    assert_eq!(alone.fit(1, 10), vec![(0, MOVABLE, 10)]);
}

#[test]
fn a_cpu_the_window_shows_keeps_the_windows_reading() {
    let (window, after) = window_and_after();
    let (w, on) = heads(&window, &after);
    // Read on, CPU 0's Unmovable list needed 43 pages; the window shows 3, and keeps them.
    assert_eq!(on.zones[0].at_least(0, 0, 0), 43);
    let d = w.past(on).zones.swap_remove(0);
    assert_eq!(d.at_least(0, 0, 0), 3);
    assert!(!d.is_exact(0, 0, 0));
    assert_eq!(d.fit(0, 10), vec![(0, 0, 3), (0, MOVABLE, 7)]);
}

#[test]
fn what_only_the_window_says_stays_the_windows() {
    let (window, after) = window_and_after();
    let (w, on) = heads(&window, &after);
    // The text after names pageblocks the window does not (0x2000's, 0x3000's): the pass
    // seeds its types from the window's.
    assert!(on.first_named.len() > w.first_named.len());
    let past = w.clone().past(on);
    assert_eq!(past.first_named, w.first_named);
    assert_eq!(past.held_frees, w.held_frees);
}

/// A replay of `trace` on the shipped 6.1 snapshot (DMA32: CPU 1's count 771), before and
/// after alike, with `lists-after` as `on` gives it (`None`: the default): CPU 1's DMA32
/// pages per list (by pindex) at the window's end.
fn cpu1_lists(trace: &str, on: Option<bool>) -> Vec<u32> {
    use crate::trace::replay::infer::crafted_tests::{cpu1_after_with, snap_dir};
    let snap = snap_dir();
    let opts = crate::trace::replay::ReplayOptions {
        samples: 10,
        proc: Some(snap.clone()),
        proc_after: Some(snap),
        infer_lists_after: on,
        ..Default::default()
    };
    cpu1_after_with(trace, &opts).list_pages.to_vec()
}

/// CPU 1 has no event in the window; past it (the after-snapshot's reads) it takes two
/// Movable pages and refills its Movable list. With the walk reading on, its 771 pages are
/// two Movable and 769 Unmovable at the start; without, all Movable.
#[test]
fn a_replay_sets_a_quiet_cpus_lists_up_from_the_text_after_the_window() {
    let mark = |what: &str| line(0, 1, &format!("tracing_mark_write: {what} t"));
    let mut t = String::from("# tracer: nop\n");
    t += &mark("KT_SNAPSHOT_BEFORE_END");
    t += &alloc(2, 2, 0x20000, 1);
    t += &mark("KT_SNAPSHOT_AFTER_BEGIN");
    t += &alloc(1, 3, 0x30000, 1);
    t += &alloc(1, 3, 0x30001, 1);
    t += &(0..63)
        .map(|i| refill(1, 4, 0x40000 + i, 1))
        .collect::<String>();
    t += &alloc(1, 4, 0x40000, 1);
    t += &mark("KT_SNAPSHOT_AFTER_END");
    let (unmovable, movable) = (0, MOVABLE);
    for on in [None, Some(true)] {
        let l = cpu1_lists(&t, on);
        assert_eq!((l[unmovable], l[movable]), (769, 2), "{on:?}");
    }
    let l = cpu1_lists(&t, Some(false));
    assert_eq!((l[unmovable], l[movable]), (0, 771));
}
