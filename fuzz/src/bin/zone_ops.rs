//! Operations against a reference model: a small zone (random geometry, start, holes, per-CPU
//! lists or none) and a random sequence of allocations, frees (through the zone, another
//! CPU's lists or a CPU handle), refused frees, drains and ticks, with `check()` after each.
//!
//! The model, written against the public API only (like `crates/zonealloc/tests/model.rs`),
//! knows the managed frames and the allocated blocks. After every operation it checks that
//! allocations are aligned, managed and disjoint from every live block, that refused
//! operations change nothing, that pages are conserved (buddy + per-CPU + allocated =
//! managed, G1), and that an order-`n` allocation fails only when, with every per-CPU list
//! drained, no free aligned run of `2^n` managed frames exists (zero watermarks, no atomic
//! reserve: Linux's `__rmqueue` then falls back across migratetypes until none is left).
//!
//! `cargo +nightly fuzz run zone_ops -- -max_total_time=60`

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use zonealloc::{
    AllocError, CpuId, MigrateType, Order, Pfn, Zone, ZoneConfig, ZoneType, MAX_ORDER_LIMIT,
};

fuzz_target!(|data: &[u8]| {
    // Running out of input ends the case; everything else is checked by assertions.
    let _ = run(&mut Unstructured::new(data));
});

struct Model {
    /// Managed frames: sorted, disjoint, non-adjacent `[start, end)` intervals.
    managed: Vec<(u64, u64)>,
    /// Allocated blocks: head -> order.
    live: BTreeMap<u64, u8>,
    max_order: u8,
    cpus: u32,
}

impl Model {
    fn managed_pages(&self) -> u64 {
        self.managed.iter().map(|&(s, e)| e - s).sum()
    }

    fn live_pages(&self) -> u64 {
        self.live.values().map(|&o| 1u64 << o).sum()
    }

    fn is_managed(&self, s: u64, e: u64) -> bool {
        self.managed.iter().any(|&(ms, me)| ms <= s && e <= me)
    }

    /// Whether `[s, e)` overlaps a live block.
    fn overlaps_live(&self, s: u64, e: u64) -> bool {
        if let Some((&h, &o)) = self.live.range(..=s).next_back() {
            if h + (1 << o) > s {
                return true;
            }
        }
        self.live.range(s..e).next().is_some()
    }

    /// Whether a free, managed, aligned run of `2^order` frames exists.
    fn has_free_run(&self, order: u8) -> bool {
        let n = 1u64 << order;
        self.managed.iter().any(|&(s, e)| {
            let mut p = s.next_multiple_of(n);
            while p + n <= e {
                if !self.overlaps_live(p, p + n) {
                    return true;
                }
                p += n;
            }
            false
        })
    }

    /// Checks an allocation the zone returned and records it.
    fn allocated(&mut self, pfn: Pfn, order: u8) {
        let (s, e) = (pfn.get(), pfn.get() + (1 << order));
        assert_eq!(
            s % (1 << order),
            0,
            "order-{order} block at {s:#x} misaligned"
        );
        assert!(self.is_managed(s, e), "block {s:#x}+{order} not managed");
        assert!(
            !self.overlaps_live(s, e),
            "block {s:#x}+{order} handed out twice"
        );
        self.live.insert(s, order);
    }

    fn pick_live(&self, u: &mut Unstructured<'_>) -> Result<Option<(u64, u8)>> {
        if self.live.is_empty() {
            return Ok(None);
        }
        let i = u.choose_index(self.live.len())?;
        Ok(self.live.iter().nth(i).map(|(&p, &o)| (p, o)))
    }

    fn cpu(&self, u: &mut Unstructured<'_>) -> Result<CpuId> {
        Ok(CpuId(u.int_in_range(0..=self.cpus.max(1) - 1)?))
    }
}

fn order(o: u8) -> Order {
    Order::new(o).expect("order within the limit")
}

/// Conservation (G1) and the zone's own invariants.
fn verify(zone: &Zone, m: &Model) {
    if let Err(e) = zone.check() {
        panic!("check() failed: {e}");
    }
    assert_eq!(zone.managed_pages(), m.managed_pages());
    assert_eq!(
        zone.free_pages() + zone.pcp_pages() + m.live_pages(),
        m.managed_pages(),
        "pages not conserved"
    );
}

/// An allocation through `alloc`, checked against the model: the error is the one the
/// request deserves, and out of memory only when no free run is left once lists are drained.
fn alloc(
    zone: &Zone,
    m: &mut Model,
    o: u8,
    mt: MigrateType,
    alloc: impl Fn() -> core::result::Result<Pfn, AllocError>,
) {
    match alloc() {
        Ok(pfn) => {
            assert!(o <= m.max_order && mt.index() < 3, "{o} {mt:?} served");
            m.allocated(pfn, o);
        }
        Err(AllocError::OrderTooLarge { .. }) => assert!(o > m.max_order),
        Err(AllocError::InvalidMigrateType(_)) => assert!(mt.index() >= 3),
        Err(e @ AllocError::OutOfMemory { .. }) => {
            assert!(o <= m.max_order && mt.index() < 3);
            zone.drain_all();
            match zone.alloc(order(o), mt) {
                Ok(pfn) => m.allocated(pfn, o),
                Err(_) => assert!(!m.has_free_run(o), "{e} with a free order-{o} run"),
            }
        }
        Err(e) => panic!("unexpected {e}"),
    }
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let max_order: u8 = u.int_in_range(0..=6)?;
    let pageblock_order: u8 = u.int_in_range(0..=max_order)?;
    let cpus: u32 = u.int_in_range(0..=3)?;
    let start: u64 = u.int_in_range(0..=1 << 40)?;
    let len =
        (u.int_in_range(1..=8u64)? << max_order) + u.int_in_range(0..=(1 << max_order) - 1)?;
    let end = start + len;
    let mut cfg = ZoneConfig::without_watermarks()
        .with_max_order(max_order)
        .with_pageblock_order(pageblock_order);
    cfg = if cpus == 0 {
        cfg.without_pcp()
    } else {
        let mut c = cfg.with_cpus(cpus);
        let batch = u.int_in_range(1..=4)?;
        let high = u.int_in_range(batch..=4 * batch)?;
        c.pcp.batch = Some(batch);
        c.pcp.high_min = Some(high);
        c.pcp.high_max = Some(high + u.int_in_range(0..=8)?);
        c
    };
    let Ok(zone) = Zone::new(ZoneType::Normal, Pfn(start), Pfn(end), cfg) else {
        return Ok(());
    };

    // Holes: the span cut in up to four pieces, each added or not.
    let mut cuts = vec![start, end];
    for _ in 0..u.int_in_range(0..=3)? {
        cuts.push(u.int_in_range(start..=end)?);
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut m = Model {
        managed: Vec::new(),
        live: BTreeMap::new(),
        max_order,
        cpus,
    };
    for w in cuts.windows(2) {
        if u.arbitrary::<bool>()? {
            assert_eq!(zone.add_free_range(Pfn(w[0]), Pfn(w[1])), Ok(w[1] - w[0]));
            match m.managed.last_mut() {
                Some(last) if last.1 == w[0] => last.1 = w[1], // adjacent pieces are one run
                _ => m.managed.push((w[0], w[1])),
            }
        }
    }
    verify(&zone, &m);

    while !u.is_empty() {
        match u.int_in_range(0..=9u8)? {
            0..=2 => {
                let o = u.int_in_range(0..=max_order + 1)?.min(MAX_ORDER_LIMIT);
                let mt = MigrateType::from_index(u.int_in_range(0..=4)?).unwrap();
                alloc(&zone, &mut m, o, mt, || zone.alloc(order(o), mt));
            }
            3 | 4 => {
                if let Some((pfn, o)) = m.pick_live(u)? {
                    let r = if cpus > 0 && u.arbitrary()? {
                        zone.free_on(m.cpu(u)?, Pfn(pfn), order(o))
                    } else {
                        zone.free(Pfn(pfn), order(o))
                    };
                    assert_eq!(r, Ok(()), "free of live block {pfn:#x}+{o}");
                    m.live.remove(&pfn);
                }
            }
            5 => {
                // A free the zone must refuse (double free, tail, wrong order, hole, outside,
                // misaligned, order too large), changing nothing.
                let pfn = u.int_in_range(start.saturating_sub(4)..=end + 4)?;
                let o = u.int_in_range(0..=max_order + 1)?.min(MAX_ORDER_LIMIT);
                if m.live.get(&pfn) != Some(&o) {
                    let before = (
                        zone.free_pages(),
                        zone.pcp_pages(),
                        zone.frame_state(Pfn(pfn)),
                    );
                    assert!(
                        zone.free(Pfn(pfn), order(o)).is_err(),
                        "bogus free {pfn:#x}+{o}"
                    );
                    let after = (
                        zone.free_pages(),
                        zone.pcp_pages(),
                        zone.frame_state(Pfn(pfn)),
                    );
                    assert_eq!(before, after, "a refused free changed the zone");
                }
            }
            6 => zone.drain_all(),
            7 => zone.drain_cpu(m.cpu(u)?),
            8 => {
                zone.tick();
            }
            _ => {
                // A CPU handle: an allocation or a free through the owner's fast path.
                let Ok(mut h) = zone.cpu_handle(m.cpu(u)?) else {
                    assert_eq!(cpus, 0, "no handle on a zone with per-CPU lists");
                    continue;
                };
                if u.arbitrary()? {
                    let o = u.int_in_range(0..=max_order)?;
                    let mt = MigrateType::from_index(u.int_in_range(0..=2)?).unwrap();
                    let r = h.alloc(order(o), mt);
                    drop(h);
                    alloc(&zone, &mut m, o, mt, || r);
                } else if let Some((pfn, o)) = m.pick_live(u)? {
                    assert_eq!(h.free(Pfn(pfn), order(o)), Ok(()));
                    m.live.remove(&pfn);
                }
            }
        }
        verify(&zone, &m);
    }

    // Everything back: the zone is whole again.
    for (&pfn, &o) in &m.live {
        assert_eq!(zone.free(Pfn(pfn), order(o)), Ok(()));
    }
    m.live.clear();
    zone.drain_all();
    verify(&zone, &m);
    assert_eq!(zone.free_pages(), m.managed_pages());
    Ok(())
}
