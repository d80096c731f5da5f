//! `--proc DIR`: replay zones set up as the kernel's were, from its `/proc` snapshot
//! ([`crate::procfs`]), and `--proc-after DIR`: the end state against the kernel's.
//!
//! One replay zone per populated kernel zone, with its type, start pfn and span; a traced
//! frame belongs to the kernel zone that spans it, so the kernel's zone choice (a fallback
//! into DMA, a `GFP_DMA32` request) is read off the pfn it handed out. Per zone:
//! - watermarks fixed at zoneinfo's `min`/`low`/`high` less the printed `boost`
//!   (`wmark_pages` adds the boost);
//! - `batch` from the pagesets; `high_min = high_max = high` on kernels with one fixed
//!   `high` (before 6.7, `pageset_update`), zoneinfo's `high_min`/`high_max` where it prints
//!   them (7.2), else (6.7 to 6.14, e.g. 6.12.117) the preset's `zone_highsize` range with
//!   each CPU's printed `high` as its current value;
//! - where the free blocks lie, which pages are in use or absent and each pageblock's
//!   migratetype: the kernel's pfn layout (`DIR/layout`) where the snapshot has one, else
//!   one synthesised with pagetypeinfo's free blocks per order and migratetype exactly
//!   ([`super::layout`]), put in place with `Zone::add_free_blocks` and its siblings, so
//!   that a zone the trace never touches ends exactly as it began;
//! - the pages in use form the zone's *pool*, kept per pageblock type, from which a traced
//!   free of a page allocated before the trace frees a block of its order (as order-0 frees:
//!   the kernel's block was allocated before we could see its order); with the kernel's
//!   layout, the kernel's own page where it is still in use here and its pageblock has the
//!   type the trace names for the kernel's, else a page of that type, so that the free goes
//!   to the list the kernel's went to ([`Pool::take_at`]);
//! - each CPU's PCP `count`: pages in use chosen for its lists ([`super::layout::ZoneLayout::choose_pcp`]),
//!   in pageblocks of each list's type, whose types a kernel layout swaps to make room
//!   ([`super::layout::ZoneLayout::make_room`]), and freed onto them (with `--infer start-count=on`, the
//!   count the trace pins at the start marker, [`super::start_count`], where zoneinfo's was
//!   read before it);
//! - each CPU's current `high` where zoneinfo prints an auto-tuned one (6.7 on), and which
//!   lists its `count` pages are on as the trace's first events show ([`super::pcp_state`]).
//!
//! What is not reproduced, and said in the report: without a layout, where the free blocks
//! lie (the counts per order and migratetype are the kernel's, the pfns ours); with one, the
//! pageblock migratetypes and which flagless pages were on the lists are inferred (kpageflags
//! records no migratetype: where the trace later shows a pageblock of another type than
//! ours, a free there frees a page of the trace's type elsewhere, not the kernel's pfn); the
//! per-CPU state zoneinfo does not print (6.1's `free_factor`, 6.7+'s `free_count`,
//! `alloc_factor` and `PCPF_*` flags) starts at zero.
//!
//! Lowmem protection is zoneinfo's `protection:` line ([`zonealloc::Zone::set_lowmem_reserve`]): a
//! request lands in the zone the trace names, and its gfp zone (`__GFP_DMA`, `__GFP_DMA32`, else
//! Normal or Movable) picks the entry its watermark checks add.

use zonealloc::{WatermarkConfig, ZoneConfig};

use super::geometry::{Geometry, Online, ZoneSpan, MAX_CPUS};
use super::preset::Kernel;
use crate::procfs::{ProcSnapshot, ZoneSnapshot};
use crate::trace::migratetype::Numbering;

mod pool;
mod populate;
mod rolled;

pub use pool::Pool;
pub(super) use populate::{blocks_of, kernel_types, TYPES};
pub use populate::{populate, populate_from, SetupFacts};

/// Extra CPUs a `--proc` zone has: the set-up allocates on its own CPU, so that no traced
/// CPU's auto-tuned `high` grows from it; its lists are empty when the replay starts and no
/// traced event runs on it.
pub const SETUP_CPUS: u32 = 1;

/// The zones of `snap`, node by node in zone order, its CPUs unless `cpus` is given, and
/// each CPU's node (`nodes/nodeN/cpulist`; node 0 where the snapshot has no `nodes/`).
pub fn geometry(
    snap: &ProcSnapshot,
    cpus: Option<u32>,
    numbering: Numbering,
) -> Result<Geometry, String> {
    let zones: Vec<ZoneSpan> = snap
        .zones
        .iter()
        .map(|z| ZoneSpan {
            node: z.node,
            zone_type: z.zone,
            start: z.start_pfn,
            pages: z.spanned_pages,
        })
        .collect();
    if zones.is_empty() {
        return Err("--proc: zoneinfo has no populated zone".to_owned());
    }
    check_nodes(snap, &zones)?;
    // Checked before anything is sized from it: the set-up's own CPU comes on top of the
    // traced ones, within the core's `MAX_CPUS`. The reader bounds CPU ids by
    // `procfs::MAX_CPUS`, so `max + 1` cannot wrap.
    let most = MAX_CPUS - SETUP_CPUS;
    let (cpus, cpus_from) = match cpus {
        Some(c) => (c, "--cpus"),
        None => (
            snap.cpus.iter().max().map_or(1, |c| c.saturating_add(1)),
            "the /proc snapshot's pagesets",
        ),
    };
    if cpus == 0 || cpus > most {
        return Err(format!(
            "--proc: {cpus} CPUs (from {cpus_from}): a replay with --proc takes 1..={most} \
             CPUs (CPU ids 0..={}), the set-up's own CPU making {MAX_CPUS}",
            most - 1
        ));
    }
    let cpu_nodes = if zones.iter().any(|z| z.node != 0) {
        (0..cpus).map(|c| snap.cpu_node(c).unwrap_or(0)).collect()
    } else {
        Vec::new()
    };
    Ok(Geometry {
        zones,
        online: Online::Snapshot,
        cpus,
        cpus_from,
        numbering,
        cpu_nodes,
    })
}

/// Several nodes need the snapshot's `nodes/` (which CPU is whose) and zones that do not
/// overlap (a traced pfn names one zone).
fn check_nodes(snap: &ProcSnapshot, zones: &[ZoneSpan]) -> Result<(), String> {
    let mut nodes: Vec<u32> = zones.iter().map(|z| z.node).collect();
    nodes.dedup();
    if nodes.len() > 1 || nodes.first().is_some_and(|&n| n != 0) {
        for n in &nodes {
            if !snap.nodes.iter().any(|x| x.id == *n) {
                return Err(format!(
                    "--proc: zoneinfo has zones on node {n}, but the snapshot's nodes/ \
                     folder has no node{n}/cpulist: which CPUs are whose is not known"
                ));
            }
        }
    }
    let mut spans: Vec<(u64, u64)> = zones.iter().map(|z| (z.start, z.end())).collect();
    spans.sort_unstable();
    if let Some(w) = spans.windows(2).find(|w| w[1].0 < w[0].1) {
        return Err(format!(
            "--proc: zones {:#x}..{:#x} and {:#x}..{:#x} overlap (node spans interleaved): \
             not replayed",
            w[0].0, w[0].1, w[1].0, w[1].1
        ));
    }
    Ok(())
}

/// The kernel family a snapshot's zoneinfo format names (docs/kernel-versions.md §6.1).
pub fn kernel_of(snap: &ProcSnapshot) -> Kernel {
    if snap.features.high_min_max {
        Kernel::V7_2
    } else if snap.features.promo {
        Kernel::V6_12
    } else {
        Kernel::V6_1
    }
}

/// `base` with zone `z`'s watermarks and PCP sizes.
pub fn zone_config(base: &ZoneConfig, z: &ZoneSnapshot, kernel: Kernel) -> ZoneConfig {
    let mut cfg = *base;
    let w = &z.watermarks;
    let boost = w.boost.unwrap_or(0);
    cfg.watermarks = WatermarkConfig::Fixed {
        min: w.min.saturating_sub(boost),
        low: w.low.saturating_sub(boost),
        high: w.high.saturating_sub(boost),
    };
    if let Some(ps) = z.pagesets.first() {
        cfg.pcp.batch = Some(ps.batch.max(1));
        match (ps.high_min, ps.high_max) {
            (Some(lo), Some(hi)) if !kernel.fixed_high() => {
                cfg.pcp.high_min = Some(lo);
                cfg.pcp.high_max = Some(hi.max(lo));
            }
            // 6.7 to 6.14 auto-tune `high` but print only the current `pcp->high` (6.12.117
            // has no high_min/high_max lines): the range is the kernel's own
            // (`zone_set_pageset_high_and_batch` -> `zone_highsize`), which the preset
            // computes from the zone's watermarks and CPUs; the printed value is each CPU's
            // current `high` ([`tuning`]). Pinning both to the printed value stopped the
            // auto-tuning: 6.12-4g p_thp drained 1921% more events than the kernel.
            _ if !kernel.fixed_high() => {
                cfg.pcp.high_min = None;
                cfg.pcp.high_max = None;
            }
            _ => {
                // pageset_update (before 6.7): one high for every CPU of the zone.
                let high = z.pagesets.iter().map(|p| p.high).max().unwrap_or(ps.high);
                cfg.pcp.high_min = Some(high);
                cfg.pcp.high_max = Some(high);
            }
        }
    }
    cfg
}

#[cfg(test)]
mod tests;
