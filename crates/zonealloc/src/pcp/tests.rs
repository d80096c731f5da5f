use super::*;
extern crate std;
use std::{vec, vec::Vec};

fn pcp(batch: i32, hmin: i32, hmax: i32) -> PerCpuPages {
    let mut p = PerCpuPages::new();
    p.batch = batch;
    p.high_min = hmin;
    p.high_max = hmax;
    p
}

const POLICY: PcpPolicy = PcpPolicy {
    thp_order: Some(9),
    thp_list_order: 9,
    scale: 5,
    free_high: FreeHigh::Current,
    free_scaling: FreeScaling::FreeCount,
    alloc_scaling: true,
    drain_in_batches: true,
    decay: true,
    highatomic_no_refill: true,
    drain_migratetype: DrainMigratetype::AtDrain,
    drain_batch_free: false,
};

/// Debian 6.1.192's policy.
const POLICY_61: PcpPolicy = PcpPolicy {
    thp_order: Some(9),
    thp_list_order: 9,
    scale: 5,
    free_high: FreeHigh::FreeFactor,
    free_scaling: FreeScaling::FreeFactor,
    alloc_scaling: false,
    drain_in_batches: false,
    decay: false,
    highatomic_no_refill: false,
    drain_migratetype: DrainMigratetype::AtFree,
    drain_batch_free: false,
};

#[test]
fn v61_drains_double_per_drain_up_to_batch_shl_5() {
    // docs/kernel-versions.md §3.6: 6.1 drain bursts 63, 126, 252, 504, 1008, 2016 and no
    // further (Debian's CONFIG_PCP_BATCH_SCALE_MAX cap), batch 63, fixed high 3492.
    let mut p = pcp(63, 3492, 3492);
    p.high = 3492;
    p.count = 3492;
    let got: Vec<i32> = (0..8)
        .map(|_| p.nr_pcp_free(3492, false, &POLICY_61))
        .collect();
    assert_eq!(got, [63, 126, 252, 504, 1008, 2016, 2016, 2016]);
    assert_eq!(p.free_count, 5);
    // An allocation halves free_factor (rmqueue_pcplist): the next drain is 63 << 2.
    p.free_count >>= 1;
    assert_eq!(p.nr_pcp_free(3492, false, &POLICY_61), 252);
    // Upstream 6.1.0 had no cap: with scale 6 the drain stops at high - batch instead.
    let uncapped = PcpPolicy {
        scale: 6,
        ..POLICY_61
    };
    p.free_count = 6;
    assert_eq!(p.nr_pcp_free(3492, false, &uncapped), 3429);
}

#[test]
fn v61_free_factor_does_not_grow_on_frees() {
    let mut p = pcp(63, 3492, 3492);
    for _ in 0..100 {
        p.note_free(Order::from_raw(0), &POLICY_61);
    }
    assert_eq!(p.free_count, 0);
}

#[test]
fn v61_free_high_needs_a_drain_since_the_last_allocations() {
    // 6.1: free_high = free_factor && 1 <= order <= 3, and it drains everything.
    let mut p = pcp(63, 3492, 3492);
    p.high = 3492;
    p.count = 700;
    p.flags = PcpFlags::PREV_FREE_HIGH_ORDER;
    assert!(!p.note_free(Order::from_raw(1), &POLICY_61)); // free_factor 0: no matter the streak
    p.free_count = 1; // one drain since
    assert!(!p.note_free(Order::from_raw(0), &POLICY_61));
    assert!(!p.note_free(Order::from_raw(4), &POLICY_61));
    assert!(p.note_free(Order::from_raw(3), &POLICY_61));
    assert_eq!(p.nr_pcp_high(true, false, false, &POLICY_61), 0);
    assert_eq!(p.high, 3492, "6.1 leaves high alone");
    assert_eq!(p.nr_pcp_free(0, true, &POLICY_61), 700);
}

#[test]
fn v612_free_high_threshold_is_batch() {
    let pol = PcpPolicy {
        free_high: FreeHigh::Batch,
        ..POLICY
    };
    let mut p = pcp(63, 1000, 62500);
    p.count = 100;
    p.flags = PcpFlags::PREV_FREE_HIGH_ORDER;
    p.free_count = 62;
    assert!(!p.note_free(Order::from_raw(1), &pol));
    p.flags = PcpFlags::PREV_FREE_HIGH_ORDER;
    p.free_count = 63;
    assert!(p.note_free(Order::from_raw(1), &pol));
    // Without the streak flag there is no free_high.
    p.flags = PcpFlags::empty();
    assert!(!p.note_free(Order::from_raw(1), &pol));
    // Its drain is 6.7+'s: min(count, batch << 5), and high drops by batch << 5.
    p.count = 5000;
    p.high = 4000;
    p.high_max = 62500;
    assert_eq!(p.nr_pcp_high(true, false, false, &pol), 0);
    assert_eq!(p.high, 4000 - 2016);
    assert_eq!(p.nr_pcp_free(0, true, &pol), 2016);
}

#[test]
fn v61_refills_are_always_batch() {
    // §3.6: 6.1 refill bursts are 63 every time; high is not grown.
    let mut p = pcp(63, 3492, 3492);
    p.high = 3492;
    let got: Vec<i32> = (0..6)
        .map(|_| p.refill_size(Order::from_raw(0), false, &POLICY_61))
        .collect();
    assert_eq!(got, [63; 6]);
    assert_eq!(p.alloc_factor, 0);
    assert_eq!(p.refill_size(Order::from_raw(3), false, &POLICY_61), 7);
    assert_eq!(p.refill_size(Order::from_raw(9), false, &POLICY_61), 2);
    let mut boot = PerCpuPages::new();
    assert_eq!(boot.refill_size(Order::from_raw(0), false, &POLICY_61), 1);
}

#[test]
fn refills_double_up_to_the_scale_cap() {
    // Spec test vector: high_min 1000, high_max 62500, batch 63; no frees in between.
    let mut p = pcp(63, 1000, 62500);
    let mut got = vec![];
    let mut highs = vec![];
    for _ in 0..7 {
        let n = p.nr_pcp_alloc(Order::from_raw(0), false, 5);
        got.push(n);
        highs.push(p.high);
        // the refill is consumed before the next one
    }
    assert_eq!(got, [63, 126, 252, 504, 1008, 2016, 2016]);
    assert_eq!(&highs[..3], &[1063, 1189, 1441]);
}

#[test]
fn scale_zero_keeps_refills_at_batch() {
    let mut p = pcp(63, 1000, 62500);
    let got: Vec<i32> = (0..4)
        .map(|_| p.nr_pcp_alloc(Order::from_raw(0), false, 0))
        .collect();
    assert_eq!(got, [63, 63, 63, 63]);
}

#[test]
fn high_order_refills_fetch_batch_in_blocks() {
    let mut p = pcp(63, 1000, 62500);
    assert_eq!(p.nr_pcp_alloc(Order::from_raw(3), false, 5), 7); // 63 >> 3
    assert_eq!(p.nr_pcp_alloc(Order::from_raw(9), false, 5), 2); // THP: max(63 >> 9, 2)
}

#[test]
fn boot_pageset_refills_one_block() {
    let mut p = PerCpuPages::new(); // high 0, batch 1
    assert_eq!(p.nr_pcp_alloc(Order::from_raw(0), false, 5), 1);
}

#[test]
fn drain_amount_is_free_count_clamped_to_batch_and_high_minus_batch() {
    // Spec §6.4: high 1000, count 1000, free_count 300 -> 300.
    let mut p = pcp(63, 1000, 62500);
    p.count = 1000;
    p.free_count = 300;
    assert_eq!(p.nr_pcp_free(1000, false, &POLICY), 300);
    p.free_count = 10;
    assert_eq!(p.nr_pcp_free(1000, false, &POLICY), 63);
    p.free_count = 1500;
    assert_eq!(p.nr_pcp_free(1000, false, &POLICY), 937);
}

#[test]
fn a_full_list_raises_high_for_the_next_free() {
    // Spec §6.4: free_count 1500 with count >= high: high becomes 1563 next time.
    let mut p = pcp(63, 1000, 62500);
    p.high = 1000;
    p.count = 1000;
    p.free_count = 1500;
    assert_eq!(p.nr_pcp_high(false, false, false, &POLICY), 1000);
    assert_eq!(p.high, 1563);
}

#[test]
fn decay_lowers_high_by_an_eighth() {
    // Spec: high 1563 -> 1368 with count 600.
    let mut p = pcp(63, 1000, 62500);
    p.high = 1563;
    p.count = 600;
    let (todo, to_drain) = p.decay_high(5);
    assert_eq!(p.high, 1368);
    assert!(todo);
    assert!(to_drain < 0);
}

#[test]
fn free_high_threshold_is_batch_plus_half_high_min() {
    // Spec: threshold 63 + 1000/2 = 563, after a previous high-order free.
    let mut p = pcp(63, 1000, 62500);
    p.count = 100;
    p.flags = PcpFlags::PREV_FREE_HIGH_ORDER;
    p.free_count = 562;
    assert!(!p.note_free(Order::from_raw(1), &POLICY));
    p.free_count = 563;
    assert!(p.note_free(Order::from_raw(1), &POLICY));
    // An order-0 free resets the streak.
    p.note_free(Order::from_raw(0), &POLICY);
    assert_eq!(p.flags & PcpFlags::PREV_FREE_HIGH_ORDER, PcpFlags::empty());
}

#[test]
fn free_high_drains_up_to_batch_scaled() {
    let mut p = pcp(63, 1000, 62500);
    p.count = 5000;
    assert_eq!(p.nr_pcp_free(0, true, &POLICY), 2016);
    let orig = PcpPolicy {
        free_high: FreeHigh::Original,
        ..POLICY
    };
    assert_eq!(p.nr_pcp_free(0, true, &orig), 5000);
}

#[test]
fn free_count_is_capped_at_batch_scaled() {
    let mut p = pcp(63, 1000, 62500);
    p.free_count = 2015;
    p.note_free(Order::from_raw(3), &POLICY);
    assert_eq!(p.free_count, 2023); // may overshoot by < 2^order
    p.note_free(Order::from_raw(0), &POLICY);
    assert_eq!(p.free_count, 2023);
}

#[test]
fn pindex_layout_matches_the_kernel() {
    let pol = POLICY;
    assert_eq!(pol.pindex(MigrateType::Unmovable, Order::from_raw(0)), 0);
    assert_eq!(pol.pindex(MigrateType::Reclaimable, Order::from_raw(3)), 11);
    assert_eq!(pol.pindex(MigrateType::Movable, Order::from_raw(9)), 13);
    assert_eq!(pol.pindex(MigrateType::Unmovable, Order::from_raw(9)), 12);
    assert_eq!(pol.order_of(11), Order::from_raw(3));
    assert_eq!(pol.order_of(13), Order::from_raw(9));
    assert!(pol.allowed_order(Order::from_raw(9)) && !pol.allowed_order(Order::from_raw(4)));
}

/// A set without slots (caller storage over an empty slice): its lists are off, and the
/// checked forms answer `None` for any id, the wrapped ones included.
fn slotless() -> PcpSet {
    let cfg = crate::config::PcpConfig::new().with_cpus(4);
    let empty: &'static [PcpSlot] = &[];
    PcpSet::with_slots(
        cfg,
        Order::from_raw(10),
        crate::sync::StaticSlice::borrowed(empty),
    )
}

#[test]
fn a_set_without_slots_is_off_and_its_checked_forms_answer_none() {
    let set = slotless();
    assert!(!set.enabled());
    assert_eq!(set.cpus(), 0);
    for cpu in [0, 1, 7, u32::MAX as usize] {
        assert!(set.slot_of(cpu).is_none(), "cpu {cpu}");
        assert!(set.slot_at(cpu).is_none(), "cpu {cpu}");
    }
}

/// `slot` states its precondition (a slot exists) where debug assertions are on: the old
/// code divided by the slot count there (a remainder by zero).
#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "on a set without slots")]
fn slot_of_a_set_without_slots_names_its_precondition() {
    let _ = slotless().slot(3);
}
