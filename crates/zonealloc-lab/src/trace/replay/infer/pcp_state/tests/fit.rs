//! The lists' fit to a CPU's count (`ListDemand::fit`): what the trace shows against the
//! count the set-up has.

use super::*;

#[test]
fn a_start_count_of_the_traces_own_puts_what_no_order_0_list_holds_on_unshown_lists() {
    // 7.2-4g-2node p_idle, Node 1 Normal CPU 3 (as CPU 0 here): every order-0 list
    // refills, the head shows 155 pages on them and on order 2's Unmovable list, and the
    // count at the file's start is 3275.
    let mut blocks = [[0u64; TYPES]; SLOTS];
    blocks[0] = [126, 5, 0];
    blocks[2][0] = 6;
    let mut shown = [[false; TYPES]; SLOTS];
    shown[0] = [true; TYPES];
    shown[2][0] = true;
    let mut d = ListDemand {
        blocks: vec![blocks],
        exact: vec![shown],
        refilled: vec![shown],
        thp_order: Some(9),
        start_count: vec![None],
        ..ListDemand::default()
    };
    let shown_lists = vec![(0, 0, 126), (0, 1, 5), (2, 0, 6)];
    // zoneinfo's count, older than the trace's start: the rest is dropped.
    assert_eq!(d.fit(0, 3275), shown_lists);
    // The trace's own count: the rest (3120) on the THP order's Movable list (six blocks),
    // then order 3's (six), which the head never shows.
    d.start_count = vec![Some(3275)];
    d.start_floor = vec![Some(3275)];
    let mut want = shown_lists.clone();
    want.extend([(9, 1, 6), (3, 1, 6)]);
    assert_eq!(d.fit(0, 3275), want);
    let pages: u64 = want.iter().map(|&(o, _, n)| n << o).sum();
    assert_eq!(pages, 3275);
    // A count the trace bounds loosely proves only its floor: 1000 pages beyond the lists.
    d.start_floor = vec![Some(1155)];
    let mut want = shown_lists.clone();
    want.extend([(9, 1, 1), (3, 1, 61)]);
    assert_eq!(d.fit(0, 3275), want);
}

#[test]
fn a_count_below_the_lists_the_trace_shows_loses_its_excess_off_the_lowest_order() {
    // 7.2-4g-wq p_idle, Normal CPU 1 at the file's start: 8 Unmovable and 47 Movable order-0
    // pages, 7 order-3 Unmovable blocks and a THP block, 623 pages, into a count of 609.
    let mut blocks = [[0u64; TYPES]; SLOTS];
    blocks[0] = [8, 47, 0];
    blocks[3][0] = 7;
    blocks[4][1] = 1;
    let d = ListDemand {
        blocks: vec![blocks],
        exact: vec![[[false; TYPES]; SLOTS]],
        refilled: vec![[[false; TYPES]; SLOTS]],
        thp_order: Some(9),
        start_count: vec![Some(609)],
        ..ListDemand::default()
    };
    // Scaled in proportion, the THP block went (1 * 609 / 623 == 0) with an order-3 block.
    let want = vec![(0, 0, 8), (0, 1, 33), (3, 0, 7), (9, 1, 1)];
    assert_eq!(d.fit(0, 609), want);
    // An excess beyond the order-0 lists takes the fewest blocks of the next order.
    let d = ListDemand {
        start_count: vec![Some(560)],
        ..d
    };
    assert_eq!(d.fit(0, 560), vec![(3, 0, 6), (9, 1, 1)]);
    // zoneinfo's count, older than the lists: scaled in proportion, the rest on Movable.
    let d = ListDemand {
        start_count: vec![None],
        ..d
    };
    assert_eq!(d.fit(0, 609), vec![(0, 0, 7), (0, 1, 554), (3, 0, 6)]);
}

#[test]
fn the_traces_own_count_keeps_a_list_a_drain_showed_empty_to_its_reading() {
    // 7.2-4g-loads p_fork (`--whole-file`), Normal's CPU 0: every order-0 list shown empty,
    // Reclaimable's by a drain only (13 pages drained at 14.842076, then order 1's list),
    // order 2's Unmovable list exact at 24; 8 pages of the count beyond the lists shown.
    let mut blocks = [[0u64; TYPES]; SLOTS];
    blocks[0] = [644, 87, 13];
    blocks[2][0] = 24;
    let mut exact = [[false; TYPES]; SLOTS];
    exact[0] = [true; TYPES];
    exact[2][0] = true;
    let mut refilled = [[false; TYPES]; SLOTS];
    refilled[0] = [true, true, false];
    let mut d = ListDemand {
        blocks: vec![blocks],
        exact: vec![exact],
        refilled: vec![refilled],
        thp_order: Some(9),
        start_count: vec![None],
        start_floor: vec![Some(848)],
        ..ListDemand::default()
    };
    let shown = vec![(0, 0, 644), (0, 1, 87), (0, 2, 13), (2, 0, 24)];
    // zoneinfo's count: the rest goes to the list the drain showed empty, as before.
    let mut want = shown.clone();
    want[2].2 += 8;
    assert_eq!(d.fit(0, 848), want);
    // The trace's own count: the drain's reading holds, the rest goes to a list the head
    // never shows (one order-3 Movable block).
    d.start_count = vec![Some(848)];
    let mut want = shown.clone();
    want.push((3, 1, 1));
    assert_eq!(d.fit(0, 848), want);
    // An odd page no list of a higher order holds stays on the drained list, and so does
    // what the trace's least count does not prove.
    (d.start_count, d.start_floor) = (vec![Some(853)], vec![Some(849)]);
    want[2].2 += 5;
    assert_eq!(d.fit(0, 853), want);
}
