//! The walk's state of each zone's CPUs at its start, from zoneinfo's pagesets.

use super::{free_high, reach, start_free, start_high, Cpu, ZoneHigh};
use crate::procfs::ProcSnapshot;
use crate::trace::replay::geometry::Geometry;

/// Each zone's CPUs as `snap` printed them, at `zone * cpus + cpu` (`None` where the zone or
/// the pageset is not there); `fixed_high` for kernels before 6.7, `scale_max`
/// `CONFIG_PCP_BATCH_SCALE_MAX`.
pub(super) fn per_cpu(
    geo: &Geometry,
    snap: &ProcSnapshot,
    fixed_high: bool,
    scale_max: u8,
) -> Vec<Option<Cpu>> {
    let cpus = geo.cpus.max(1);
    let mut per = vec![None; geo.zones.len() * cpus as usize];
    for (z, span) in geo.zones.iter().enumerate() {
        let Some(kz) = snap.zone(span.node, span.zone_type) else {
            continue;
        };
        let zone = ZoneHigh {
            zone: kz,
            split: (0..cpus)
                .filter(|&c| geo.cpu_node(c) == span.node)
                .count()
                .max(1) as u32,
            fixed_high,
            scale_max,
        };
        for ps in &kz.pagesets {
            // A folded CPU would mix two CPUs' counts: zoneinfo's count stays.
            if ps.cpu >= cpus {
                continue;
            }
            let high = zone.of(ps);
            per[z * cpus as usize + ps.cpu as usize] = Some(Cpu {
                zone_name: span.zone_type.name().to_owned(),
                node: span.node,
                zoneinfo: i64::from(ps.count),
                // A pageset whose high is below batch keeps no pages (nr_pcp_free's
                // boot-pageset check): nothing to wait for.
                wanted: i64::from(ps.high) >= high.batch,
                high,
                delta: 0,
                lo: 0,
                hi: i64::MAX,
                free: None,
                run: None,
                in_refill: None,
                pin: None,
                after: None,
                candidate: None,
                since_candidate: Vec::new(),
                high_fell: at_high(ps, fixed_high),
                start_high: start_high::StartHigh::default(),
                reach: reach::Reach::new(high.hi, &high, scale_max),
                allowed: None,
                flags: free_high::Flags::default(),
                start_free: start_free::StartFree::default(),
            });
        }
    }
    per
}

/// Whether zoneinfo printed the count at or above `high`, which from 6.7 on is what
/// `decay_pcp_high` (7.2 `mm/page_alloc.c`) leaves when it drains: `count - high` pages, down
/// to `high` exactly. The next free then finds the count at `high` already, not below it, so
/// its drain bounds the count from below only ([`Cpu::high_fell`]) until a free that drains
/// nothing shows it below. 7.2-3g-16cpu p_prodcons DMA32 CPU 1: zoneinfo's 875 of `high` 875,
/// nothing on the CPU until its free at 31.809195 drains 63; read as a crossing, the pin put
/// the start at 874 and every later drain of the CPU one free late.
fn at_high(ps: &crate::procfs::PagesetSnapshot, fixed_high: bool) -> bool {
    !fixed_high && ps.high > 0 && ps.count >= ps.high
}
