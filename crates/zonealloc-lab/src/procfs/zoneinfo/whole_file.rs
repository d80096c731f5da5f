//! The whole file's checks, once every zone block is read: protection lengths, no two zones
//! over one pfn, the same CPUs and pageset lines in every zone; and the format they reveal.

use super::{Parsed, Zoneinfo, FILE};
use crate::procfs::error::{ErrorKind, ProcError};
use crate::procfs::format::{ZoneinfoFeatures, ZoneinfoFormat};
use crate::procfs::names::zone_label;
use crate::procfs::ZoneSnapshot;

/// No two populated zones span a common pfn: a frame belongs to one zone (`page_zone`), and
/// a replay reads the kernel's zone choice off the pfn. Sorted by start, each zone must end
/// before the next begins.
fn no_overlap(zones: &[ZoneSnapshot]) -> Result<(), ProcError> {
    let mut by_start: Vec<&ZoneSnapshot> = zones.iter().collect();
    by_start.sort_by_key(|z| (z.start_pfn, z.spanned_pages));
    for w in by_start.windows(2) {
        let (a, b) = (w[0], w[1]);
        // `finish_zone` bounded `start_pfn + spanned_pages` by MAX_PFN.
        let a_end = a.start_pfn + a.spanned_pages;
        if b.start_pfn < a_end {
            return Err(ProcError::inconsistent(
                FILE,
                b.lines.zoneinfo_header,
                format!(
                    "{} (pfns {:#x}..{:#x}) overlaps {} (pfns {:#x}..{a_end:#x}, line {}); \
                     zones of one snapshot cannot share pfns",
                    b.label(),
                    b.start_pfn,
                    b.start_pfn + b.spanned_pages,
                    a.label(),
                    a.start_pfn,
                    a.lines.zoneinfo_header
                ),
            ));
        }
    }
    Ok(())
}

/// Whole-file checks: protection lengths, the same CPUs in every zone, one pageset layout.
pub(super) fn finish(parsed: Parsed) -> Result<Zoneinfo, ProcError> {
    let Parsed {
        mut zones,
        mut unpopulated,
        node_counters,
        node_zones,
        zone_protection,
        unpopulated_protection,
    } = parsed;
    // `protection` has one entry per zone of the node (`lowmem_reserve[MAX_NR_ZONES]`), and
    // zoneinfo prints every zone, so the node's zone list names the entries.
    let name = |node: u32, raw: Vec<u64>, line: usize| {
        let kernel_zones = &node_zones[&node];
        if raw.len() != kernel_zones.len() {
            return Err(ProcError::inconsistent(
                FILE,
                line,
                format!(
                    "node {node}: protection has {} entries but the node prints {} zones",
                    raw.len(),
                    kernel_zones.len()
                ),
            ));
        }
        Ok(kernel_zones.iter().copied().zip(raw).collect::<Vec<_>>())
    };
    for (z, (raw, line)) in zones.iter_mut().zip(zone_protection) {
        z.protection = name(z.node, raw, line)?;
    }
    for (z, (raw, line)) in unpopulated.iter_mut().zip(unpopulated_protection) {
        z.protection = name(z.node, raw, line)?;
    }

    no_overlap(&zones)?;
    let first = &zones.first().ok_or_else(|| {
        let expected = "a populated zone (one with present pages)".to_owned();
        ProcError::new(FILE, 1, ErrorKind::UnexpectedEnd { expected })
    })?;
    let cpus: Vec<u32> = first.pagesets.iter().map(|p| p.cpu).collect();
    let high_min_max = first.pagesets[0].high_min.is_some();
    let stat_threshold = first.pagesets[0].stat_threshold.is_some();
    for z in &zones {
        let these: Vec<u32> = z.pagesets.iter().map(|p| p.cpu).collect();
        if these != cpus {
            return Err(ProcError::inconsistent(
                FILE,
                z.lines.zoneinfo_header,
                format!(
                    "{}: pagesets list CPUs {these:?}, the first zone {cpus:?}",
                    zone_label(z.node, z.zone)
                ),
            ));
        }
        for p in &z.pagesets {
            if p.high_min.is_some() != high_min_max || p.stat_threshold.is_some() != stat_threshold
            {
                return Err(ProcError::inconsistent(
                    FILE,
                    z.lines.zoneinfo_header,
                    format!(
                        "{} cpu {}: pageset lines differ from the first zone's",
                        zone_label(z.node, z.zone),
                        p.cpu
                    ),
                ));
            }
        }
    }
    let features = ZoneinfoFeatures {
        boost: zones.iter().all(|z| z.watermarks.boost.is_some()),
        promo: zones.iter().all(|z| z.watermarks.promo.is_some()),
        high_min_max,
        stat_threshold,
        highatomic: zones
            .iter()
            .all(|z| z.reserved_highatomic.is_some() && z.free_highatomic.is_some()),
    };
    let format = if high_min_max {
        ZoneinfoFormat::HighMinMax
    } else {
        ZoneinfoFormat::Pre6_7
    };
    Ok(Zoneinfo {
        format,
        features,
        zones,
        unpopulated,
        cpus,
        node_counters,
    })
}
