//! 7.2's contiguous-range frees in the lists' walk (`contig.rs`).

use super::*;

/// CPU 1's order-0 and order-2 Unmovable lists' start blocks after `x-1` takes the order-2
/// block 0x1000, `kworker/1:1` frees its four pages (ctx `ctx`, then `tail` on CPU 1), and
/// `x-1` takes 0x1000 at order 2 again and 0x1010, 0x1011 at order 0; the reading `on` or off.
fn starts(on: bool, ctx: &str, tail: &str) -> (u64, u64) {
    let x = |ev: &str| format!("             x-1       [001] .....    10.000001: {ev}\n");
    let alloc = |pfn: u32, order: u8| {
        x(&format!("mm_page_alloc: page=(____ptrval____) pfn={pfn:#x} order={order} migratetype=0 gfp_flags=GFP_KERNEL"))
    };
    let mut head = alloc(0x1000, 2);
    for pfn in 0x1000..0x1004u32 {
        head += &format!("     kworker/1:1-40      [001] {ctx}    10.000002: mm_page_free: page=(____ptrval____) pfn={pfn:#x} order=0\n");
    }
    head += tail;
    head += &alloc(0x1000, 2);
    head += &alloc(0x1010, 0);
    head += &alloc(0x1011, 0);
    let d = collect(&head, |c| c.set_contig_free(on));
    (d.blocks[1][0][0], d.blocks[1][2][0])
}

#[test]
fn a_kworkers_run_of_order_0_frees_goes_on_the_list_of_its_blocks() {
    // free_prepared_contig_range: one order-2 block, which the second order-2 allocation
    // takes; both order-0 pages were on the list at the start.
    assert_eq!(starts(true, ".....", ""), (2, 1));
    // Read page by page, the four pages served the order-0 allocations.
    assert_eq!(starts(false, ".....", ""), (0, 2));
}

#[test]
fn a_run_in_softirq_or_of_a_folio_batch_goes_page_by_page() {
    // vfree in interrupt context defers to vfree_atomic: no range there.
    assert_eq!(starts(true, "..s1.", ""), (0, 2));
    // free_unref_folios prints mm_page_free_batched after the frees: a batch's pages.
    let mut batched = String::new();
    for pfn in 0x1000..0x1004u32 {
        batched += &format!("     kworker/1:1-40      [001] ...2.    10.000003: mm_page_free_batched: page=(____ptrval____) pfn={pfn:#x} order=0\n");
    }
    assert_eq!(starts(true, ".....", &batched), (0, 2));
}
