//! Model-based property tests of [`Zone`] and [`Node`] against a small reference model written
//! here, independent of the crate's internals.
//!
//! The model knows only which frames were handed to the allocator (as coalesced intervals),
//! which blocks are allocated, and how many pages are free. It does not predict which frame an
//! allocation returns, but it can say whether a free, aligned run of `2^order` frames exists:
//! with zero watermarks and no HighAtomic reserve, Linux's buddy allocator fails an order-`n`
//! request only when no such run exists (every such run lies inside one free block, because
//! `__free_one_page` merges buddies as far as they go: invariant Z6). It also knows the
//! canonical decomposition of the managed frames into maximal aligned blocks, which is what the
//! zone's free lists hold at boot and again once everything is freed.
//!
//! Zones are small (a few thousand frames, `max_order` 5..=10, any `pageblock_order`), may
//! start anywhere, and may have holes: only some sub-ranges of the span are added, in random
//! order. Operations cover every order and the three requestable migratetypes, plus refused
//! operations (double frees, wrong orders, tail frames, holes, frames outside the zone,
//! misaligned frames, orders above the maximum, invalid migratetypes) that must return the exact
//! error and change nothing.
//!
//! The node tests check zone limits and the zonelist fallback Normal -> DMA32, including
//! `lowmem_reserve` and `ALLOC_NOFRAGMENT` (spec §4.4, §5.1, §5.2).

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use zonealloc::{
    AllocError, AllocRequest, FrameState, FreeError, MigrateType, MobilityGrouping, Node, Order,
    Pfn, Zone, ZoneConfig, ZoneType,
};

const GFP_TYPES: [MigrateType; 3] = [
    MigrateType::Unmovable,
    MigrateType::Movable,
    MigrateType::Reclaimable,
];

fn o(n: u8) -> Order {
    Order::new(n).unwrap()
}

/// Zero watermarks, the given geometry and mobility grouping.
fn config(max_order: u8, pageblock_order: u8, grouping: MobilityGrouping) -> ZoneConfig {
    ZoneConfig::without_watermarks()
        .with_max_order(max_order)
        .with_pageblock_order(pageblock_order)
        .with_mobility_grouping(grouping)
        .without_pcp()
}

/// Whether the kernel stops grouping by mobility: `MobilityGrouping::Auto` disables it when
/// the pages above the high watermark (here: all managed pages) are fewer than
/// `pageblock_nr_pages * MIGRATE_TYPES`.
fn mobility_disabled(grouping: MobilityGrouping, managed: u64, pageblock_order: u8) -> bool {
    match grouping {
        MobilityGrouping::Enabled => false,
        MobilityGrouping::Disabled => true,
        MobilityGrouping::Auto => managed < (5u64 << pageblock_order),
    }
}

fn check_failed(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(format!("check() failed: {e}"))
}

// ---------------------------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------------------------

/// One zone as the model sees it.
#[derive(Debug)]
struct Model {
    span: (u64, u64),
    max_order: u8,
    /// Managed frames: sorted, disjoint, non-adjacent `[start, end)` intervals.
    managed: Vec<(u64, u64)>,
    /// Allocated blocks: head -> order.
    live: BTreeMap<u64, u8>,
    free_pages: u64,
    /// Recently freed blocks, most recent last (candidates for double frees).
    freed: Vec<(u64, u8)>,
}

impl Model {
    fn new(span: (u64, u64), max_order: u8, ranges: &[(u64, u64)]) -> Model {
        let mut sorted = ranges.to_vec();
        sorted.sort_unstable();
        let mut managed: Vec<(u64, u64)> = Vec::new();
        for (s, e) in sorted {
            match managed.last_mut() {
                Some(last) if last.1 == s => last.1 = e,
                _ => managed.push((s, e)),
            }
        }
        let free_pages = managed.iter().map(|(s, e)| e - s).sum();
        Model {
            span,
            max_order,
            managed,
            live: BTreeMap::new(),
            free_pages,
            freed: Vec::new(),
        }
    }

    fn managed_pages(&self) -> u64 {
        self.managed.iter().map(|(s, e)| e - s).sum()
    }

    fn live_pages(&self) -> u64 {
        self.live.values().map(|&o| 1u64 << o).sum()
    }

    fn spans(&self, pfn: u64) -> bool {
        self.span.0 <= pfn && pfn < self.span.1
    }

    /// Whether `[s, e)` lies inside managed frames (one coalesced interval).
    fn is_managed(&self, s: u64, e: u64) -> bool {
        self.managed.iter().any(|&(a, b)| a <= s && e <= b)
    }

    /// The live block overlapping `[s, e)`, if any.
    fn live_overlapping(&self, s: u64, e: u64) -> Option<(u64, u8)> {
        self.live
            .range(..e)
            .next_back()
            .filter(|(&b, &o)| b + (1u64 << o) > s)
            .map(|(&b, &o)| (b, o))
    }

    /// Whether some aligned run of `2^order` managed frames holds no allocated frame.
    fn has_free_block(&self, order: u8) -> bool {
        let size = 1u64 << order;
        for &(s, e) in &self.managed {
            let mut p = s.next_multiple_of(size);
            while p + size <= e {
                match self.live_overlapping(p, p + size) {
                    None => return true,
                    // Every aligned window starting inside that block overlaps it.
                    Some((b, bo)) => p = (b + (1u64 << bo)).next_multiple_of(size),
                }
            }
        }
        false
    }

    /// Free blocks per order when every managed frame is free and fully merged: each interval
    /// cut greedily into the largest aligned blocks that fit.
    fn canonical_nr_free(&self, slots: usize) -> Vec<u64> {
        let mut nr = vec![0u64; slots];
        for &(s, e) in &self.managed {
            let mut p = s;
            while p < e {
                let mut k = self.max_order;
                while p % (1u64 << k) != 0 || p + (1u64 << k) > e {
                    k -= 1;
                }
                nr[k as usize] += 1;
                p += 1u64 << k;
            }
        }
        nr
    }

    /// Frames in the span that were never added.
    fn holes(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut p = self.span.0;
        for &(s, e) in &self.managed {
            if p < s {
                out.push((p, s));
            }
            p = e;
        }
        if p < self.span.1 {
            out.push((p, self.span.1));
        }
        out
    }

    /// Asserts that a block the allocator just returned is one it may return.
    fn validate_new_block(&self, pfn: u64, order: u8) -> Result<(), TestCaseError> {
        let end = pfn + (1u64 << order);
        prop_assert!(
            pfn % (1u64 << order) == 0,
            "{pfn:#x} not aligned to {order}"
        );
        prop_assert!(
            self.span.0 <= pfn && end <= self.span.1,
            "{pfn:#x}+2^{order} outside the span {:?}",
            self.span
        );
        prop_assert!(
            self.is_managed(pfn, end),
            "{pfn:#x}+2^{order} not inside added frames {:?}",
            self.managed
        );
        prop_assert_eq!(
            self.live_overlapping(pfn, end),
            None,
            "overlaps a live block"
        );
        Ok(())
    }

    fn insert(&mut self, pfn: u64, order: u8) {
        self.live.insert(pfn, order);
        self.free_pages -= 1u64 << order;
    }

    fn remove(&mut self, pfn: u64) -> u8 {
        let order = self.live.remove(&pfn).unwrap();
        self.free_pages += 1u64 << order;
        self.freed.push((pfn, order));
        if self.freed.len() > 16 {
            self.freed.remove(0);
        }
        order
    }

    fn nth_live(&self, i: usize) -> Option<(u64, u8)> {
        if self.live.is_empty() {
            return None;
        }
        self.live
            .iter()
            .nth(i % self.live.len())
            .map(|(&p, &o)| (p, o))
    }
}

/// What a refused operation must leave unchanged.
fn counts(z: &Zone) -> (Vec<u64>, u64, u64) {
    (z.nr_free().to_vec(), z.free_pages(), z.managed_pages())
}

/// Invariants and model agreement after every step.
fn check_zone(z: &Zone, m: &Model) -> Result<(), TestCaseError> {
    let facts = z.check().map_err(check_failed)?;
    prop_assert_eq!(z.free_pages(), m.free_pages);
    prop_assert_eq!(facts.free_pages, m.free_pages);
    prop_assert_eq!(facts.allocated_pages, m.live_pages());
    prop_assert_eq!(facts.allocated_blocks, m.live.len() as u64);
    prop_assert_eq!(z.managed_pages(), m.managed_pages());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// One zone
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct ZoneLayout {
    max_order: u8,
    pageblock_order: u8,
    grouping: MobilityGrouping,
    span: (u64, u64),
    /// Handed to `add_free_range` in this order.
    ranges: Vec<(u64, u64)>,
}

fn grouping() -> impl Strategy<Value = MobilityGrouping> {
    prop_oneof![
        Just(MobilityGrouping::Auto),
        Just(MobilityGrouping::Enabled),
        Just(MobilityGrouping::Disabled),
    ]
}

/// A deterministic shuffle (xorshift-driven Fisher-Yates), so the add order shrinks with `seed`.
fn shuffle<T>(v: &mut [T], mut seed: u64) {
    for i in (1..v.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.swap(i, (seed % (i as u64 + 1)) as usize);
    }
}

fn zone_layout() -> impl Strategy<Value = ZoneLayout> {
    (
        5u8..=10,
        0u8..=10,
        grouping(),
        prop_oneof![
            2 => Just(0u64),
            2 => 1u64..3000,
            1 => (1u64..=4).prop_map(|k| k << 12),
        ],
        1000u64..5000,
        prop::collection::vec(0u64..5000, 0..6),
        prop::collection::vec(prop::bool::weighted(0.7), 7),
        any::<u64>(),
    )
        .prop_map(|(max_order, pb, grouping, start, len, cuts, keep, seed)| {
            let end = start + len;
            let mut points: Vec<u64> = cuts.iter().map(|c| start + c % len).collect();
            points.retain(|&p| p > start);
            points.sort_unstable();
            points.dedup();
            let mut pieces = Vec::new();
            let mut prev = start;
            for p in points {
                pieces.push((prev, p));
                prev = p;
            }
            pieces.push((prev, end));
            let mut ranges: Vec<(u64, u64)> = pieces
                .iter()
                .zip(&keep)
                .filter(|(_, &k)| k)
                .map(|(&r, _)| r)
                .collect();
            if ranges.is_empty() {
                ranges.push(*pieces.iter().max_by_key(|(s, e)| e - s).unwrap());
            }
            shuffle(&mut ranges, seed | 1);
            ZoneLayout {
                max_order,
                pageblock_order: pb % (max_order + 1),
                grouping,
                span: (start, end),
                ranges,
            }
        })
}

/// Refused operations.
#[derive(Clone, Copy, Debug)]
enum Bad {
    DoubleFree,
    WrongOrder,
    TailFrame,
    Hole,
    OutOfZone,
    Misaligned,
    FreeOrderTooLarge,
    AllocOrderTooLarge,
    InvalidMigrateType,
}

#[derive(Clone, Debug)]
enum Op {
    /// `order` is reduced modulo `max_order + 1`; `mt` indexes `GFP_TYPES`.
    Alloc {
        order: u8,
        mt: usize,
    },
    /// Frees the live block at this index.
    Free(usize),
    Bad {
        kind: Bad,
        pick: usize,
        extra: u64,
    },
}

fn bad() -> impl Strategy<Value = Bad> {
    prop_oneof![
        Just(Bad::DoubleFree),
        Just(Bad::WrongOrder),
        Just(Bad::TailFrame),
        Just(Bad::Hole),
        Just(Bad::OutOfZone),
        Just(Bad::Misaligned),
        Just(Bad::FreeOrderTooLarge),
        Just(Bad::AllocOrderTooLarge),
        Just(Bad::InvalidMigrateType),
    ]
}

fn alloc_order() -> impl Strategy<Value = u8> {
    prop_oneof![3 => 0u8..=3, 1 => 0u8..=10]
}

fn zone_op(alloc: u32, free: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        alloc => (alloc_order(), 0usize..3).prop_map(|(order, mt)| Op::Alloc { order, mt }),
        free => any::<usize>().prop_map(Op::Free),
        2 => (bad(), any::<usize>(), any::<u64>())
            .prop_map(|(kind, pick, extra)| Op::Bad { kind, pick, extra }),
    ]
}

/// Balanced sequences, and sequences that mostly allocate, to run zones full and fragmented.
fn zone_ops() -> impl Strategy<Value = Vec<Op>> {
    prop_oneof![
        prop::collection::vec(zone_op(6, 4), 1..200),
        prop::collection::vec(zone_op(12, 3), 1..250),
    ]
}

/// The free a refused operation attempts and the error it must get, or `None` when the model
/// has no candidate (for example no live block to free with a wrong order).
fn bad_free(m: &Model, kind: Bad, pick: usize, extra: u64) -> Option<(u64, u8, FreeError)> {
    let max = m.max_order;
    let (lo, hi) = (extra & 0xffff_ffff, extra >> 32);
    let len = m.span.1 - m.span.0;
    let p = Pfn;
    match kind {
        Bad::DoubleFree => {
            // A recently freed block none of whose frames was allocated again.
            let cands: Vec<_> = m
                .freed
                .iter()
                .filter(|&&(s, o)| m.live_overlapping(s, s + (1u64 << o)).is_none())
                .copied()
                .collect();
            if cands.is_empty() {
                return None;
            }
            let (s, order) = cands[pick % cands.len()];
            let given = if lo % 2 == 0 { order } else { 0 };
            Some((s, given, FreeError::DoubleFree { pfn: p(s) }))
        }
        Bad::WrongOrder => {
            let (s, order) = m.nth_live(pick)?;
            let cands: Vec<u8> = (0..=max)
                .filter(|&g| g != order && s % (1u64 << g) == 0)
                .collect();
            if cands.is_empty() {
                return None;
            }
            let given = cands[(lo % cands.len() as u64) as usize];
            Some((
                s,
                given,
                FreeError::WrongOrder {
                    pfn: p(s),
                    given: o(given),
                    allocated: o(order),
                },
            ))
        }
        Bad::TailFrame => {
            let big: Vec<(u64, u8)> = m
                .live
                .iter()
                .filter(|(_, &o)| o > 0)
                .map(|(&s, &o)| (s, o))
                .collect();
            if big.is_empty() {
                return None;
            }
            let (s, order) = big[pick % big.len()];
            let k = 1 + lo % ((1u64 << order) - 1);
            let pfn = s + k;
            // Any order the tail frame is aligned to (necessarily below the block's).
            let given = (hi % (pfn.trailing_zeros() as u64 + 1)) as u8;
            Some((
                pfn,
                given,
                FreeError::NotBlockHead {
                    pfn: p(pfn),
                    head: p(s),
                },
            ))
        }
        Bad::Hole => {
            let holes = m.holes();
            let total: u64 = holes.iter().map(|(s, e)| e - s).sum();
            if total == 0 {
                return None;
            }
            let mut n = lo % total;
            let mut pfn = 0;
            for (s, e) in holes {
                if n < e - s {
                    pfn = s + n;
                    break;
                }
                n -= e - s;
            }
            let align = pfn.trailing_zeros().min(max as u32) as u64;
            let given = (hi % (align + 1)) as u8;
            Some((pfn, given, FreeError::NotManaged { pfn: p(pfn) }))
        }
        Bad::OutOfZone => {
            let pfn = if m.span.0 > 0 && lo % 2 == 0 {
                (lo >> 1) % m.span.0
            } else {
                m.span.1 + (lo >> 1) % 10_000
            };
            // The span is checked before alignment, so any order up to the maximum.
            let given = (hi % (max as u64 + 1)) as u8;
            Some((pfn, given, FreeError::OutOfZone { pfn: p(pfn) }))
        }
        Bad::Misaligned => {
            let given = 1 + (hi % max as u64) as u8;
            let mut pfn = m.span.0 + lo % len;
            if pfn % 2 == 0 {
                pfn += 1;
            }
            if pfn >= m.span.1 {
                pfn -= 2;
            }
            Some((
                pfn,
                given,
                FreeError::Misaligned {
                    pfn: p(pfn),
                    order: o(given),
                },
            ))
        }
        Bad::FreeOrderTooLarge => {
            if max == zonealloc::MAX_ORDER_LIMIT {
                return None;
            }
            let given = max + 1 + (hi % (zonealloc::MAX_ORDER_LIMIT - max) as u64) as u8;
            let pfn = match m.nth_live(pick) {
                Some((s, _)) if lo % 2 == 0 => s,
                _ => m.span.0 + lo % len,
            };
            Some((
                pfn,
                given,
                FreeError::OrderTooLarge {
                    pfn: p(pfn),
                    order: o(given),
                },
            ))
        }
        Bad::AllocOrderTooLarge | Bad::InvalidMigrateType => None,
    }
}

/// A refused allocation and its error.
fn bad_alloc(max: u8, kind: Bad, extra: u64) -> Option<(u8, MigrateType, AllocError)> {
    match kind {
        Bad::AllocOrderTooLarge if max < zonealloc::MAX_ORDER_LIMIT => {
            let order = max + 1 + (extra % (zonealloc::MAX_ORDER_LIMIT - max) as u64) as u8;
            let mt = GFP_TYPES[(extra >> 32) as usize % 3];
            Some((
                order,
                mt,
                AllocError::OrderTooLarge {
                    order: o(order),
                    max: o(max),
                },
            ))
        }
        Bad::InvalidMigrateType => {
            let mt = if extra % 2 == 0 {
                MigrateType::HighAtomic
            } else {
                MigrateType::Isolate
            };
            let order = ((extra >> 32) % (max as u64 + 1)) as u8;
            Some((order, mt, AllocError::InvalidMigrateType(mt)))
        }
        _ => None,
    }
}

fn run_zone(layout: &ZoneLayout, ops: &[Op]) -> Result<(), TestCaseError> {
    let (max, pb) = (layout.max_order, layout.pageblock_order);
    let cfg = config(max, pb, layout.grouping);
    let zone = Zone::new(
        ZoneType::Normal,
        Pfn(layout.span.0),
        Pfn(layout.span.1),
        cfg,
    )
    .unwrap();
    for &(s, e) in &layout.ranges {
        prop_assert_eq!(zone.add_free_range(Pfn(s), Pfn(e)), Ok(e - s));
    }
    let mut m = Model::new(layout.span, max, &layout.ranges);
    let initial = zone.nr_free();
    prop_assert_eq!(
        initial.to_vec(),
        m.canonical_nr_free(initial.len()),
        "boot decomposition is not the maximal one"
    );
    check_zone(&zone, &m)?;
    let disabled = mobility_disabled(layout.grouping, m.managed_pages(), pb);

    for op in ops {
        match *op {
            Op::Alloc { order, mt } => {
                let order = order % (max + 1);
                let mt = GFP_TYPES[mt];
                let before = counts(&zone);
                match zone.alloc(o(order), mt) {
                    Ok(pfn) => {
                        m.validate_new_block(pfn.0, order)?;
                        let eff = if disabled { MigrateType::Unmovable } else { mt };
                        prop_assert_eq!(
                            zone.frame_state(pfn),
                            Some(FrameState::Allocated(o(order), eff))
                        );
                        m.insert(pfn.0, order);
                    }
                    Err(e) => {
                        prop_assert_eq!(
                            e,
                            AllocError::OutOfMemory {
                                order: o(order),
                                migratetype: mt
                            }
                        );
                        prop_assert_eq!(counts(&zone), before);
                        // Zero watermarks: a failure means no free aligned run exists; in
                        // particular order 0 fails only when no page is free.
                        prop_assert!(
                            !m.has_free_block(order),
                            "order-{} {:?} failed although a free aligned run exists",
                            order,
                            mt
                        );
                        if order == 0 {
                            prop_assert_eq!(m.free_pages, 0);
                        }
                    }
                }
            }
            Op::Free(i) => {
                let Some((pfn, order)) = m.nth_live(i) else {
                    continue;
                };
                prop_assert_eq!(zone.free(Pfn(pfn), o(order)), Ok(()));
                m.remove(pfn);
                prop_assert!(matches!(
                    zone.frame_state(Pfn(pfn)),
                    Some(FrameState::Buddy(_) | FrameState::Tail)
                ));
            }
            Op::Bad { kind, pick, extra } => {
                let before = counts(&zone);
                if let Some((pfn, given, expected)) = bad_free(&m, kind, pick, extra) {
                    let state = zone.frame_state(Pfn(pfn));
                    prop_assert_eq!(zone.free(Pfn(pfn), o(given)), Err(expected));
                    prop_assert_eq!(zone.frame_state(Pfn(pfn)), state);
                    prop_assert_eq!(m.spans(pfn), state.is_some());
                } else if let Some((order, mt, expected)) = bad_alloc(max, kind, extra) {
                    prop_assert_eq!(zone.alloc(o(order), mt), Err(expected));
                }
                prop_assert_eq!(
                    counts(&zone),
                    before,
                    "a refused operation changed the zone"
                );
            }
        }
        check_zone(&zone, &m)?;
    }

    // Free everything: the zone is back to its boot decomposition.
    let live: Vec<(u64, u8)> = m.live.iter().map(|(&p, &o)| (p, o)).collect();
    for (pfn, order) in live {
        prop_assert_eq!(zone.free(Pfn(pfn), o(order)), Ok(()));
        m.remove(pfn);
    }
    check_zone(&zone, &m)?;
    prop_assert_eq!(zone.nr_free(), initial);
    prop_assert_eq!(zone.free_pages(), m.managed_pages());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn zone_agrees_with_the_model_and_returns_to_its_boot_state(
        layout in zone_layout(),
        ops in zone_ops(),
    ) {
        run_zone(&layout, &ops)?;
    }
}

#[test]
fn zone_with_holes_not_starting_at_zero_survives_a_fixed_workload() {
    // A hand-picked layout that the strategy also produces, run deterministically so that a
    // regression shows up without proptest's randomness.
    let layout = ZoneLayout {
        max_order: 7,
        pageblock_order: 4,
        grouping: MobilityGrouping::Enabled,
        span: (1000, 4100),
        ranges: vec![(2500, 4100), (1003, 1900), (1900, 2100)],
    };
    let mut ops = Vec::new();
    for round in 0..6u64 {
        for (i, &order) in [0u8, 3, 7, 1, 5, 0, 2, 6].iter().enumerate() {
            ops.push(Op::Alloc {
                order,
                mt: (i + round as usize) % 3,
            });
        }
        for k in 0..4 {
            ops.push(Op::Free((round * 7 + k * 3) as usize));
        }
        ops.push(Op::Bad {
            kind: Bad::DoubleFree,
            pick: round as usize,
            extra: round,
        });
        ops.push(Op::Bad {
            kind: Bad::TailFrame,
            pick: round as usize,
            extra: round * 11,
        });
        ops.push(Op::Bad {
            kind: Bad::Hole,
            pick: 0,
            extra: round * 97,
        });
    }
    run_zone(&layout, &ops).unwrap();
}

// ---------------------------------------------------------------------------------------------
// A node with DMA32 and Normal
// ---------------------------------------------------------------------------------------------

/// A node of DMA32 `[dma32.0, dma32.1)` and Normal `[normal.0, normal.1)`, nothing added.
fn node(dma32: (u64, u64), normal: (u64, u64), cfg: ZoneConfig) -> Node {
    let d = Zone::new(ZoneType::Dma32, Pfn(dma32.0), Pfn(dma32.1), cfg).unwrap();
    let n = Zone::new(ZoneType::Normal, Pfn(normal.0), Pfn(normal.1), cfg).unwrap();
    Node::new(0, [d, n]).unwrap()
}

fn in_span(z: &Zone, pfn: Pfn, order: u8) -> bool {
    let (s, e) = z.span();
    s <= pfn && pfn.0 + (1u64 << order) <= e.0
}

#[derive(Clone, Copy, Debug)]
enum Limit {
    Dma32,
    Normal,
    /// `AllocRequest::new`: Normal, or Movable for Movable requests.
    Default,
}

impl Limit {
    fn request(self, mt: MigrateType) -> AllocRequest {
        match self {
            Limit::Dma32 => AllocRequest::new(mt).zone_limit(ZoneType::Dma32),
            Limit::Normal => AllocRequest::new(mt).zone_limit(ZoneType::Normal),
            Limit::Default => AllocRequest::new(mt),
        }
    }
}

#[derive(Clone, Debug)]
struct NodeLayout {
    max_order: u8,
    pageblock_order: u8,
    grouping: MobilityGrouping,
    dma32: (u64, u64),
    normal: (u64, u64),
    /// Handed to `Node::add_free_range` in this order (a range may cross the zone boundary).
    ranges: Vec<(u64, u64)>,
}

/// `span` minus an optional hole at fractions `(a, b)` of its length.
fn with_hole(span: (u64, u64), hole: Option<(u64, u64)>) -> Vec<(u64, u64)> {
    match hole {
        None => vec![span],
        Some((a, b)) => {
            let len = span.1 - span.0;
            let hs = span.0 + 1 + a % (len / 2);
            let he = (hs + 1 + b % 300).min(span.1 - 1);
            vec![(span.0, hs), (he, span.1)]
        }
    }
}

fn node_layout() -> impl Strategy<Value = NodeLayout> {
    (
        5u8..=10,
        0u8..=10,
        grouping(),
        prop_oneof![Just(0u64), 1u64..500],
        800u64..3000,
        prop_oneof![Just(0u64), 1u64..700],
        800u64..4000,
        prop::option::weighted(0.4, (any::<u64>(), any::<u64>())),
        prop::option::weighted(0.4, (any::<u64>(), any::<u64>())),
        any::<bool>(),
    )
        .prop_map(
            |(max_order, pb, grouping, ds, dlen, gap, nlen, dhole, nhole, one)| {
                let dma32 = (ds, ds + dlen);
                let normal = (dma32.1 + gap, dma32.1 + gap + nlen);
                let ranges = if gap == 0 && dhole.is_none() && nhole.is_none() && one {
                    vec![(dma32.0, normal.1)]
                } else {
                    let mut r = with_hole(normal, nhole);
                    r.extend(with_hole(dma32, dhole));
                    r
                };
                NodeLayout {
                    max_order,
                    pageblock_order: pb % (max_order + 1),
                    grouping,
                    dma32,
                    normal,
                    ranges,
                }
            },
        )
}

#[derive(Clone, Debug)]
enum NodeOp {
    Alloc { order: u8, mt: usize, limit: Limit },
    Free(usize),
}

fn node_op(alloc: u32) -> impl Strategy<Value = NodeOp> {
    prop_oneof![
        alloc => (
            alloc_order(),
            0usize..3,
            prop_oneof![Just(Limit::Dma32), Just(Limit::Normal), Just(Limit::Default)],
        )
            .prop_map(|(order, mt, limit)| NodeOp::Alloc { order, mt, limit }),
        4 => any::<usize>().prop_map(NodeOp::Free),
    ]
}

fn run_node(layout: &NodeLayout, ops: &[NodeOp]) -> Result<(), TestCaseError> {
    let (max, pb) = (layout.max_order, layout.pageblock_order);
    let node = node(
        layout.dma32,
        layout.normal,
        config(max, pb, layout.grouping),
    );
    for &(s, e) in &layout.ranges {
        prop_assert_eq!(node.add_free_range(Pfn(s), Pfn(e)), Ok(e - s));
    }
    let clip = |span: (u64, u64)| -> Vec<(u64, u64)> {
        layout
            .ranges
            .iter()
            .map(|&(s, e)| (s.max(span.0), e.min(span.1)))
            .filter(|&(s, e)| s < e)
            .collect()
    };
    let mut dm = Model::new(layout.dma32, max, &clip(layout.dma32));
    let mut nm = Model::new(layout.normal, max, &clip(layout.normal));
    let zd = node.zone(ZoneType::Dma32).unwrap();
    let zn = node.zone(ZoneType::Normal).unwrap();
    let (init_d, init_n) = (zd.nr_free(), zn.nr_free());
    prop_assert_eq!(init_d.to_vec(), dm.canonical_nr_free(init_d.len()));
    prop_assert_eq!(init_n.to_vec(), nm.canonical_nr_free(init_n.len()));
    // lowmem_reserve of DMA32 against requests that may use Normal (ratio 256; no zones above
    // Normal, so the same for a Movable request's highest zone).
    let reserve = nm.managed_pages() / 256;
    let disabled = mobility_disabled(layout.grouping, dm.managed_pages() + nm.managed_pages(), pb);
    let check = |dm: &Model, nm: &Model| -> Result<(), TestCaseError> {
        node.check().map_err(check_failed)?;
        check_zone(zd, dm)?;
        check_zone(zn, nm)
    };
    check(&dm, &nm)?;

    for op in ops {
        match *op {
            NodeOp::Alloc { order, mt, limit } => {
                let order = order % (max + 1);
                let mt = GFP_TYPES[mt];
                // What the model says before the request.
                let normal_has_unfragmenting = nm.has_free_block(order.max(pb));
                let normal_has = nm.has_free_block(order);
                let dma32_ok =
                    dm.has_free_block(order) && dm.free_pages + 1 > (1u64 << order) + reserve;
                let dma32_has = dm.has_free_block(order);
                match node.alloc_with(o(order), limit.request(mt)) {
                    Ok(pfn) => {
                        let eff = if disabled { MigrateType::Unmovable } else { mt };
                        let (z, m) = if in_span(zd, pfn, order) {
                            (zd, &mut dm)
                        } else {
                            prop_assert!(in_span(zn, pfn, order), "{pfn:?} in no zone");
                            prop_assert!(
                                !matches!(limit, Limit::Dma32),
                                "DMA32-limited request got Normal frame {:?}",
                                pfn
                            );
                            (zn, &mut nm)
                        };
                        if z.zone_type() == ZoneType::Dma32 && !matches!(limit, Limit::Dma32) {
                            // ALLOC_NOFRAGMENT: Normal is left only when it cannot serve the
                            // request without fragmenting a pageblock.
                            prop_assert!(
                                !normal_has_unfragmenting,
                                "fell back to DMA32 while Normal had a free order-{} block",
                                order.max(pb)
                            );
                        }
                        m.validate_new_block(pfn.0, order)?;
                        prop_assert_eq!(
                            z.frame_state(pfn),
                            Some(FrameState::Allocated(o(order), eff))
                        );
                        m.insert(pfn.0, order);
                    }
                    Err(e) => {
                        prop_assert_eq!(
                            e,
                            AllocError::OutOfMemory {
                                order: o(order),
                                migratetype: mt
                            }
                        );
                        if matches!(limit, Limit::Dma32) {
                            prop_assert!(!dma32_has, "DMA32 had a free order-{} run", order);
                        } else {
                            prop_assert!(!normal_has, "Normal had a free order-{} run", order);
                            prop_assert!(
                                !dma32_ok,
                                "DMA32 had a free order-{} run above its reserve",
                                order
                            );
                        }
                    }
                }
            }
            NodeOp::Free(i) => {
                let total = dm.live.len() + nm.live.len();
                if total == 0 {
                    continue;
                }
                let k = i % total;
                let (m, k) = if k < dm.live.len() {
                    (&mut dm, k)
                } else {
                    let d = dm.live.len();
                    (&mut nm, k - d)
                };
                let (&pfn, &order) = m.live.iter().nth(k).unwrap();
                prop_assert_eq!(node.free(Pfn(pfn), o(order)), Ok(()));
                m.remove(pfn);
            }
        }
        check(&dm, &nm)?;
    }

    for m in [&mut dm, &mut nm] {
        let live: Vec<(u64, u8)> = m.live.iter().map(|(&p, &o)| (p, o)).collect();
        for (pfn, order) in live {
            prop_assert_eq!(node.free(Pfn(pfn), o(order)), Ok(()));
            m.remove(pfn);
        }
    }
    check(&dm, &nm)?;
    prop_assert_eq!(zd.nr_free(), init_d);
    prop_assert_eq!(zn.nr_free(), init_n);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn node_respects_zone_limits_and_falls_back_as_the_model_allows(
        layout in node_layout(),
        ops in prop_oneof![
            prop::collection::vec(node_op(6), 1..200),
            prop::collection::vec(node_op(16), 1..250),
        ],
    ) {
        run_node(&layout, &ops)?;
    }
}

// Deterministic node tests: DMA32 [0, 2048), a gap, Normal [4096, 8192); zero watermarks,
// max_order 10, pageblock_order 9. Mobility grouping stays on (6144 pages >= 5 * 512).

const DMA32: (u64, u64) = (0, 2048);
const NORMAL: (u64, u64) = (4096, 8192);

fn dma32_normal_node() -> Node {
    let node = node(
        DMA32,
        NORMAL,
        ZoneConfig::without_watermarks().without_pcp(),
    );
    assert_eq!(node.add_free_range(Pfn(DMA32.0), Pfn(DMA32.1)), Ok(2048));
    assert_eq!(node.add_free_range(Pfn(NORMAL.0), Pfn(NORMAL.1)), Ok(4096));
    node.check().unwrap();
    node
}

#[test]
fn dma32_limited_requests_always_land_in_dma32() {
    let node = dma32_normal_node();
    let (zd, zn) = (
        node.zone(ZoneType::Dma32).unwrap(),
        node.zone(ZoneType::Normal).unwrap(),
    );
    let mut got = 0u64;
    let mut i = 0usize;
    // Orders 3, 0, 2, 1, ... over all three types until DMA32 cannot serve order 0 any more.
    loop {
        let order = [3u8, 0, 2, 1][i % 4];
        let mt = GFP_TYPES[i % 3];
        i += 1;
        let req = AllocRequest::new(mt).zone_limit(ZoneType::Dma32);
        match node.alloc_with(o(order), req) {
            Ok(pfn) => {
                assert!(in_span(zd, pfn, order), "{pfn:?} outside DMA32");
                got += 1u64 << order;
            }
            Err(e) => {
                assert_eq!(
                    e,
                    AllocError::OutOfMemory {
                        order: o(order),
                        migratetype: mt
                    }
                );
                if order == 0 {
                    break;
                }
            }
        }
        assert!(i < 10_000, "DMA32 never filled up");
    }
    // DMA32's own requests have no lowmem reserve: the whole zone is usable; Normal untouched.
    assert_eq!(got, 2048);
    assert_eq!(zd.free_pages(), 0);
    assert_eq!(zn.free_pages(), 4096);
    node.check().unwrap();
}

#[test]
fn normal_limited_requests_fall_back_to_dma32_only_when_normal_is_exhausted() {
    // lowmem_reserve[DMA32][Normal] = 4096 / 256 = 16 pages kept back from Normal requests.
    let reserve = 4096 / 256;
    for order in [0u8, 3] {
        let node = dma32_normal_node();
        let (zd, zn) = (
            node.zone(ZoneType::Dma32).unwrap(),
            node.zone(ZoneType::Normal).unwrap(),
        );
        let req = AllocRequest::new(MigrateType::Movable).zone_limit(ZoneType::Normal);
        let size = 1u64 << order;
        // Normal serves every request until it is empty.
        for _ in 0..4096 / size {
            let pfn = node.alloc_with(o(order), req).unwrap();
            assert!(in_span(zn, pfn, order), "{pfn:?} left Normal too early");
            assert_eq!(zd.free_pages(), 2048);
        }
        assert_eq!(zn.free_pages(), 0);
        // Then DMA32, down to its reserve: order-n succeeds while free - (2^n - 1) > 16.
        let mut n = 0;
        let err = loop {
            match node.alloc_with(o(order), req) {
                Ok(pfn) => {
                    assert!(in_span(zd, pfn, order));
                    n += 1;
                }
                Err(e) => break e,
            }
        };
        assert_eq!(
            err,
            AllocError::OutOfMemory {
                order: o(order),
                migratetype: MigrateType::Movable
            }
        );
        assert_eq!(n, (2048 - reserve) / size);
        assert_eq!(zd.free_pages(), reserve);
        // DMA32's own requests may use the reserve.
        let own = AllocRequest::new(MigrateType::Movable).zone_limit(ZoneType::Dma32);
        for _ in 0..reserve / size {
            assert!(in_span(zd, node.alloc_with(o(order), own).unwrap(), order));
        }
        assert_eq!(zd.free_pages(), 0);
        node.check().unwrap();
    }
}

#[test]
fn normal_request_takes_dma32_before_fragmenting_a_normal_pageblock() {
    // ALLOC_NOFRAGMENT (spec §5.1): with DMA32 present, a request preferring Normal first
    // refuses to steal from a pageblock of another type below pageblock order.
    let node = node(
        DMA32,
        (4096, 5120),
        ZoneConfig::without_watermarks().without_pcp(),
    );
    node.add_free_range(Pfn(DMA32.0), Pfn(DMA32.1)).unwrap();
    node.add_free_range(Pfn(4096), Pfn(5120)).unwrap();
    let (zd, zn) = (
        node.zone(ZoneType::Dma32).unwrap(),
        node.zone(ZoneType::Normal).unwrap(),
    );
    let normal = |mt| AllocRequest::new(mt).zone_limit(ZoneType::Normal);
    // Normal's order-10 block splits: Movable gets 4096, then the order-9 half at 4608.
    assert_eq!(
        node.alloc_with(o(0), normal(MigrateType::Movable)),
        Ok(Pfn(4096))
    );
    assert_eq!(
        node.alloc_with(o(9), normal(MigrateType::Movable)),
        Ok(Pfn(4608))
    );
    assert_eq!(zn.free_pages(), 511);
    // Normal has 511 free Movable pages, but only in blocks below pageblock order. An
    // Unmovable request claims DMA32's first whole pageblock (its order-10 block at 0).
    assert_eq!(
        node.alloc_with(o(0), normal(MigrateType::Unmovable)),
        Ok(Pfn(0))
    );
    assert_eq!(zn.free_pages(), 511);
    assert_eq!(
        zd.pageblock_migratetype(Pfn(0)),
        Some(MigrateType::Unmovable)
    );
    // A Movable request still comes from Normal's Movable pages.
    let p = node.alloc_with(o(0), normal(MigrateType::Movable)).unwrap();
    assert!(in_span(zn, p, 0));
    // Once DMA32 is full, the Unmovable request does fragment Normal.
    let dma32_only = AllocRequest::new(MigrateType::Movable).zone_limit(ZoneType::Dma32);
    while node.alloc_with(o(0), dma32_only).is_ok() {}
    assert_eq!(zd.free_pages(), 0);
    let q = node
        .alloc_with(o(0), normal(MigrateType::Unmovable))
        .unwrap();
    assert!(in_span(zn, q, 0));
    assert_eq!(zn.free_pages(), 509);
    node.check().unwrap();
}
