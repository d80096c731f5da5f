//! A finished zone block checked and filed: its required fields, its place in its node, its
//! span, pagesets and sizes.

use super::block::ZoneBuilder;
use super::{Parsed, FILE};
use crate::procfs::error::{ErrorKind, ProcError};
use crate::procfs::{
    PagesetSnapshot, SourceLines, UnpopulatedZone, WatermarkSnapshot, ZoneSnapshot, MAX_PFN,
};

/// Checks a finished zone block (`end` is the line after it) and files it.
pub(super) fn finish_zone(
    z: ZoneBuilder,
    end: usize,
    parsed: &mut Parsed,
) -> Result<(), ProcError> {
    let free = z.need("pages free", end)?;
    let min = z.need("min", end)?;
    let low = z.need("low", end)?;
    let high = z.need("high", end)?;
    let spanned = z.need("spanned", end)?;
    let present = z.need("present", end)?;
    let managed = z.need("managed", end)?;
    let Some((protection, protection_line)) = z.protection.clone() else {
        let kind = ErrorKind::MissingField {
            field: "protection",
            zone: z.label(),
        };
        return Err(ProcError::new(FILE, end, kind));
    };
    in_node_order(&z, parsed)?;
    if present == 0 {
        // `zoneinfo_show_print`: "If unpopulated, no other information is useful".
        parsed.unpopulated.push(UnpopulatedZone {
            node: z.node,
            zone: z.zone,
            protection: Vec::new(),
        });
        parsed
            .unpopulated_protection
            .push((protection, protection_line));
        return Ok(());
    }
    if !z.saw_pagesets || z.pagesets.is_empty() {
        let kind = ErrorKind::MissingField {
            field: "pagesets",
            zone: z.label(),
        };
        return Err(ProcError::new(FILE, end, kind));
    }
    let start_pfn = start_pfn(&z, spanned, end)?;
    let pagesets = pagesets(&z, end)?;
    let watermarks = WatermarkSnapshot {
        min,
        low,
        high,
        promo: z.get("promo"),
        boost: z.get("boost"),
    };
    sizes_agree(&z, &watermarks, [free, managed, present, spanned])?;
    parsed.zone_protection.push((protection, protection_line));
    let lines = SourceLines {
        zoneinfo_header: z.header_line,
        pages_free: z.line_of("pages free"),
        ..SourceLines::default()
    };
    parsed.zones.push(ZoneSnapshot {
        node: z.node,
        zone: z.zone,
        start_pfn,
        spanned_pages: spanned,
        present_pages: present,
        managed_pages: managed,
        cma_pages: z.get("cma"),
        free_pages: free,
        watermarks,
        protection: Vec::new(),
        reserved_highatomic: z.get("reserved_highatomic"),
        free_highatomic: z.get("free_highatomic"),
        node_unreclaimable: z.get("node_unreclaimable"),
        pagesets,
        counters: z.counters,
        free_area: None,
        buddy_free: None,
        lines,
    });
    Ok(())
}

/// Files `z` in its node's zone list, which zoneinfo prints in zone order
/// (`walk_zones_in_node` walks `node_zones[]` in index order).
fn in_node_order(z: &ZoneBuilder, parsed: &mut Parsed) -> Result<(), ProcError> {
    parsed.node_zones.entry(z.node).or_default().push(z.zone);
    if let Some(zones) = parsed.node_zones.get(&z.node) {
        if zones.len() > 1 && zones[zones.len() - 2] >= z.zone {
            return Err(ProcError::inconsistent(
                FILE,
                z.header_line,
                format!(
                    "{} follows zone {} of its node",
                    z.label(),
                    zones[zones.len() - 2]
                ),
            ));
        }
    }
    Ok(())
}

/// The zone's `start_pfn`, its span ending within [`MAX_PFN`].
fn start_pfn(z: &ZoneBuilder, spanned: u64, end: usize) -> Result<u64, ProcError> {
    let start_pfn = z.need("start_pfn", end)?;
    if start_pfn.checked_add(spanned).is_none_or(|e| e > MAX_PFN) {
        return Err(ProcError::inconsistent(
            FILE,
            z.line_of("start_pfn"),
            format!(
                "{}: start_pfn {start_pfn:#x} with {spanned} spanned pages ends past pfn \
                 {:#x}, beyond any machine's physical address space",
                z.label(),
                MAX_PFN
            ),
        ));
    }
    Ok(start_pfn)
}

/// A populated zone's `pagesets` entries, each with its `count`, `high` and `batch`.
fn pagesets(z: &ZoneBuilder, end: usize) -> Result<Vec<PagesetSnapshot>, ProcError> {
    let mut pagesets = Vec::with_capacity(z.pagesets.len());
    for p in &z.pagesets {
        let missing = |field| {
            let zone = format!("{} cpu {} (line {})", z.label(), p.cpu, p.line);
            ProcError::new(FILE, end, ErrorKind::MissingField { field, zone })
        };
        if p.high_min.is_some() != p.high_max.is_some() {
            return Err(ProcError::inconsistent(
                FILE,
                p.line,
                format!("cpu {}: `high_min` and `high_max` come together", p.cpu),
            ));
        }
        pagesets.push(PagesetSnapshot {
            cpu: p.cpu,
            count: p.count.ok_or_else(|| missing("count"))?,
            high: p.high.ok_or_else(|| missing("high"))?,
            batch: p.batch.ok_or_else(|| missing("batch"))?,
            high_min: p.high_min,
            high_max: p.high_max,
            stat_threshold: p.stat_threshold,
        });
    }
    Ok(pagesets)
}

/// A zone's sizes as the kernel keeps them: `wmark_pages` makes each mark
/// `_watermark[i] + watermark_boost`, and `__setup_per_zone_wmarks` makes
/// min <= low <= high <= promo; managed <= present <= spanned; free <= managed.
fn sizes_agree(
    z: &ZoneBuilder,
    watermarks: &WatermarkSnapshot,
    [free, managed, present, spanned]: [u64; 4],
) -> Result<(), ProcError> {
    let WatermarkSnapshot { min, low, high, .. } = *watermarks;
    if !(min <= low && low <= high && watermarks.promo.is_none_or(|p| high <= p)) {
        return Err(ProcError::inconsistent(
            FILE,
            z.line_of("min"),
            format!("{}: watermarks out of order: {watermarks}", z.label()),
        ));
    }
    if !(managed <= present && present <= spanned) {
        return Err(ProcError::inconsistent(
            FILE,
            z.line_of("managed"),
            format!(
                "{}: managed {managed} <= present {present} <= spanned {spanned} does not hold",
                z.label()
            ),
        ));
    }
    if free > managed {
        return Err(ProcError::inconsistent(
            FILE,
            z.line_of("pages free"),
            format!("{}: {free} free pages exceed {managed} managed", z.label()),
        ));
    }
    Ok(())
}
