//! A refilled block only an `mm_page_alloc_extfrag` names (`runs.rs`).

use super::*;

/// CPU 0's THP list (order 9, Movable): empty at the start (its first allocation refills),
/// then refills whose claimed whole blocks print only `extfrag` (6.15 on, and Debian's
/// 6.12), one inside a batch and one first in a batch; a drain of a refilled block then
/// shows what the list held at the start (`shown.rs`).
fn thp_head() -> String {
    let refill = |pfn: u32| {
        format!("mm_page_alloc_zone_locked: page=(____ptrval____) pfn={pfn:#x} order=9 migratetype=1 percpu_refill=1")
    };
    let claim = |pfn: u32| {
        format!("mm_page_alloc_extfrag: page=(____ptrval____) pfn={pfn:#x} alloc_order=9 fallback_order=10 pageblock_order=9 alloc_migratetype=1 fallback_migratetype=0 fragmenting=0 change_ownership=1")
    };
    let alloc = |pfn: u32| {
        format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order=9 migratetype=1 gfp_flags=GFP_TRANSHUGE_LIGHT")
    };
    let mut head = String::new();
    for (ts, ev) in [
        (1, refill(0x10000)),
        (1, alloc(0x10000)),
        // 7.2-4g-wq p_pressure, Normal CPU 3 at 474.195559: zone_locked, then extfrag.
        (2, refill(0x20000)),
        (2, claim(0x30000)),
        (2, alloc(0x20000)),
        (2, alloc(0x30000)),
        // The batch's first page is the claim.
        (3, claim(0x50000)),
        (3, refill(0x50200)),
        (3, alloc(0x50000)),
        (3, alloc(0x50200)),
        (4, refill(0x40000)),
        (
            4,
            "mm_page_pcpu_drain: page=(____ptrval____) pfn=0x40000 order=9 migratetype=1".into(),
        ),
    ] {
        head += &line(0, ts, &ev);
    }
    head
}

/// The THP list's start blocks, reading `extfrag` as naming the page taken or not.
fn thp_start(names_page: bool) -> u64 {
    let zone = 0..1 << 20;
    let mut c = Collector::new(
        2,
        std::slice::from_ref(&zone),
        9,
        Some(9),
        Numbering::Current,
    );
    c.set_extfrag_names_page(names_page);
    let text = thp_head();
    Parser::new()
        .read_all(text.as_bytes(), |ev| c.feed(ev))
        .unwrap();
    c.finish().zones[0].blocks[0][4][1]
}

#[test]
fn a_refilled_block_only_extfrag_names_was_not_on_the_list_at_the_start() {
    // Read as pages of the refills, the list held nothing at the start (fails on the old
    // code, which read 0x30000 and 0x50000 as start blocks).
    assert_eq!(thp_start(true), 0);
    // Before 6.15 the line names the block fallen back to, not a page of the batch.
    assert_eq!(thp_start(false), 2);
}
