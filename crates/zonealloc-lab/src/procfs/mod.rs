//! Reading a kernel's page-allocator state from `/proc`: `zoneinfo`, `pagetypeinfo` and
//! `buddyinfo`, as `cat /proc/X > DIR/X` saved them.
//!
//! A [`ProcSnapshot`] holds, per populated zone, what a replay needs to start where the kernel
//! was: the zone's type, node, start pfn and spanned/present/managed pages; its watermarks,
//! boost and lowmem protection; every online CPU's pageset (count, high, batch, and
//! high_min/high_max from 6.7 on); the free blocks per order and migratetype, the pageblocks
//! per migratetype, and the free blocks per order. It knows nothing of the replay.
//!
//! The three files are parsed separately ([`parse_zoneinfo`], [`parse_pagetypeinfo`],
//! [`parse_buddyinfo`]) and then checked against each other. Every error names the file and
//! line ([`ProcError`]).
//!
//! # Where the free pages are
//!
//! The kernel counts a page in `nr_free_pages` (zoneinfo's `pages free`) only while it sits on
//! a buddy free list: `rmqueue_bulk` moves pages to a PCP list and subtracts them
//! (`account_freepages` from 6.10, `__mod_zone_page_state` before), and `free_pcppages_bulk`
//! adds them back. So the buddy free lists hold `pages free` pages, the PCP lists hold the sum
//! of the pagesets' `count`, neither file lists the other's, and
//! `managed = buddy free + PCP + in use` ([`ZoneSnapshot::used_pages`]). The real snapshots
//! of 6.1 and 7.2 agree: buddyinfo's pages equal `pages free` exactly, or within the vmstat
//! drift below.
//!
//! # Consistency checks
//!
//! - C1: the populated zones of zoneinfo are exactly the zones of pagetypeinfo and buddyinfo
//!   (which print only populated zones, `walk_zones_in_node(.., assert_populated = true)`),
//!   and every file prints the same number of orders.
//! - C2: for every zone and order, buddyinfo's `nr_free` equals the sum over migratetypes of
//!   pagetypeinfo's free counts; where a count was capped (`>100000`) the sum is a lower bound.
//! - C3: the buddy free pages differ from zoneinfo's `pages free` by at most
//!   `vm stats threshold × CPUs`: `zone_page_state` reads the global counter without the
//!   per-CPU diffs, each of which stays below the threshold (`calculate_normal_threshold`).
//! - C4: the pageblocks of a zone number at most `ceil(spanned / pageblock)`, the blocks
//!   `pagetypeinfo_showblockcount_print` walks.
//! - C5: buddy free pages plus PCP pages do not exceed managed pages.
//!
//! Within zoneinfo: min ≤ low ≤ high ≤ promo, managed ≤ present ≤ spanned, free ≤ managed,
//! the same CPUs in every zone, one `protection` entry per zone of the node.
//!
//! The three files are read one after the other, so on a live machine they describe slightly
//! different moments, and pages move between the buddy and the PCP lists in between. Of the
//! 36 captures in `shared/kernel` (6.1 and 7.2, QEMU, 2 to 4 CPUs), 30 agree up to vmstat
//! drift and 6 do not: in four, `pages free` is above buddyinfo's pages by 63 (three captures
//! with 2 CPUs, drift bound 32) or 124 (4 CPUs, drift bound 120), one PCP batch of 63 moved
//! between the reads; in two, buddyinfo and pagetypeinfo differ by 2 and by 64 pages (the
//! latter over orders 1, 2, 3 and 5). [`Tolerance::Live`]
//! (the default) therefore accepts up to one PCP batch per CPU of moved pages per zone and
//! records what it accepted in [`ProcSnapshot::skews`]; [`Tolerance::Exact`] accepts only what
//! the formats allow.

mod buddyinfo;
mod check;
mod error;
mod format;
mod layout;
mod names;
mod nodes;
mod pagetypeinfo;
mod read;
mod same;
#[cfg(test)]
mod tests;
mod zoneinfo;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

use zonealloc::ZoneType;

pub use buddyinfo::{parse_buddyinfo, BuddyZone};
pub use check::{Skew, Tolerance};
pub use error::{ErrorKind, ProcError, ProcFile};
pub use format::{infer_format, ZoneinfoFeatures, ZoneinfoFormat};
pub use layout::{free_blocks, parse_layout, Layout, LayoutRun, PageClass, MAX_LAYOUT_BYTES};
pub use names::MigrateTypeName;
pub use nodes::{numastat_fields, numastat_since, read_nodes, NodeSnapshot};
pub use pagetypeinfo::{parse_pagetypeinfo, FreeArea, FreeCount, PagetypeZone, Pagetypeinfo};
pub use read::MAX_FILE_BYTES;
pub use zoneinfo::{parse_zoneinfo, Zoneinfo};

use check::check_zone;
use error::end_line;
use names::zone_label;
use read::read_file;

/// NUMA nodes a snapshot may name: `MAX_NUMNODES` is `1 << NODES_SHIFT`, and `NODES_SHIFT`
/// is at most 10 on every architecture.
pub const MAX_NODES: u32 = 1 << 10;

/// CPU ids a snapshot may name: `NR_CPUS` is at most 8192 (x86's `MAXSMP`). A zone's pagesets
/// list each CPU once, in increasing order, so a zone has at most this many.
pub const MAX_CPUS: u32 = 8192;

/// One past the largest pfn a zone may span: physical addresses have at most 52 bits
/// (`MAX_PHYSMEM_BITS`) and pages at least 4 KiB, so pfns stay below 2^40. Bounding spans by
/// it keeps `start_pfn + spanned` and the replay's pfn arithmetic far from wrapping.
pub const MAX_PFN: u64 = 1 << 40;

/// The watermarks of a zone as zoneinfo prints them (`wmark_pages`: each includes the boost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatermarkSnapshot {
    /// `min` (`WMARK_MIN`), pages.
    pub min: u64,
    /// `low` (`WMARK_LOW`), pages.
    pub low: u64,
    /// `high` (`WMARK_HIGH`), pages.
    pub high: u64,
    /// `promo` (`WMARK_PROMO`), pages, where printed.
    pub promo: Option<u64>,
    /// `boost` (`watermark_boost`), pages, where printed.
    pub boost: Option<u64>,
}

impl fmt::Display for WatermarkSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "min {} low {} high {}", self.min, self.low, self.high)?;
        if let Some(p) = self.promo {
            write!(f, " promo {p}")?;
        }
        Ok(())
    }
}

/// One CPU's `per_cpu_pages` of a zone (the `pagesets` block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagesetSnapshot {
    /// The CPU.
    pub cpu: u32,
    /// `count`: pages on this CPU's lists.
    pub count: u32,
    /// `high`: the current high mark, pages.
    pub high: u32,
    /// `batch`: pages moved per refill or drain step.
    pub batch: u32,
    /// `high_min` (6.7 on): the lower bound of auto-tuned `high`.
    pub high_min: Option<u32>,
    /// `high_max` (6.7 on): its upper bound.
    pub high_max: Option<u32>,
    /// `vm stats threshold` (`CONFIG_SMP`): the per-CPU vmstat drift bound.
    pub stat_threshold: Option<u32>,
}

/// A zone that zoneinfo printed without pagesets because it has no present pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnpopulatedZone {
    /// NUMA node.
    pub node: u32,
    /// Zone.
    pub zone: ZoneType,
    /// `lowmem_reserve[]`, named by zone.
    pub protection: Vec<(ZoneType, u64)>,
}

/// Where a zone was printed, for errors found after parsing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SourceLines {
    zoneinfo_header: usize,
    pages_free: usize,
    pagetype_free: usize,
    pagetype_blocks: usize,
    buddyinfo: usize,
}

/// One populated zone as the kernel had it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneSnapshot {
    /// NUMA node.
    pub node: u32,
    /// Zone type.
    pub zone: ZoneType,
    /// `zone_start_pfn`.
    pub start_pfn: u64,
    /// `spanned_pages`: pfns from start to end, holes included.
    pub spanned_pages: u64,
    /// `present_pages`: pages that exist.
    pub present_pages: u64,
    /// `managed_pages`: pages the buddy allocator manages.
    pub managed_pages: u64,
    /// `cma` pages, where printed.
    pub cma_pages: Option<u64>,
    /// `pages free` (`NR_FREE_PAGES`): pages on the buddy free lists, up to vmstat drift.
    pub free_pages: u64,
    /// Watermarks and boost.
    pub watermarks: WatermarkSnapshot,
    /// `lowmem_reserve[]`: pages kept back from requests that could use a higher zone of the
    /// node, named by that zone (every zone of the node, populated or not, in kernel order).
    pub protection: Vec<(ZoneType, u64)>,
    /// `nr_reserved_highatomic`, where printed (kernels after 6.18).
    pub reserved_highatomic: Option<u64>,
    /// `nr_free_highatomic`, where printed (kernels after 6.18).
    pub free_highatomic: Option<u64>,
    /// `node_unreclaimable`, where printed.
    pub node_unreclaimable: Option<u64>,
    /// The pagesets, one per online CPU in CPU order.
    pub pagesets: Vec<PagesetSnapshot>,
    /// The zone's vmstat and NUMA counters (`nr_free_pages`, `nr_free_cma`, `numa_hit`, ...)
    /// and any trailer field of another kernel, by name.
    pub counters: BTreeMap<String, u64>,
    /// Free counts per migratetype and order, and pageblocks per migratetype
    /// (pagetypeinfo), where read.
    pub free_area: Option<FreeArea>,
    /// Free blocks per order (buddyinfo), where read.
    pub buddy_free: Option<Vec<u64>>,
    lines: SourceLines,
}

impl ZoneSnapshot {
    /// Free blocks per order, as a replay should set them up: the sum of pagetypeinfo's
    /// counts over migratetypes (the free state with migratetypes), except where a count was
    /// capped and buddyinfo has the exact total; buddyinfo's alone without pagetypeinfo.
    pub fn free_blocks(&self) -> Option<Vec<u64>> {
        let Some(area) = &self.free_area else {
            return self.buddy_free.clone();
        };
        let orders = area.free.first().map_or(0, Vec::len);
        Some(
            (0..orders)
                .map(|o| {
                    let sum = area
                        .free
                        .iter()
                        .map(|counts| counts[o].blocks)
                        .fold(0, u64::saturating_add);
                    let capped = area.free.iter().any(|counts| counts[o].capped);
                    match &self.buddy_free {
                        Some(b) if capped => b[o].max(sum),
                        _ => sum,
                    }
                })
                .collect(),
        )
    }

    /// Pages on the buddy free lists, from [`free_blocks`](Self::free_blocks).
    pub fn buddy_free_pages(&self) -> Option<u64> {
        let blocks = self.free_blocks()?;
        Some(
            blocks
                .iter()
                .enumerate()
                .map(|(order, &n)| n.saturating_mul(1 << order))
                .fold(0, u64::saturating_add),
        )
    }

    /// Pages on all CPUs' PCP lists.
    pub fn pcp_pages(&self) -> u64 {
        self.pagesets
            .iter()
            .map(|p| u64::from(p.count))
            .sum::<u64>()
    }

    /// Pages in use: managed pages neither on a buddy free list nor on a PCP list.
    pub fn used_pages(&self) -> Option<u64> {
        let free = self.buddy_free_pages()?;
        Some(
            self.managed_pages
                .saturating_sub(free)
                .saturating_sub(self.pcp_pages()),
        )
    }

    /// `Node N, zone NAME`.
    pub fn label(&self) -> String {
        zone_label(self.node, self.zone)
    }
}

/// A kernel's page-allocator state, read from its `/proc` files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcSnapshot {
    /// The zoneinfo format family, which tells the kernel generation.
    pub format: ZoneinfoFormat,
    /// The optional zoneinfo lines the kernel printed.
    pub features: ZoneinfoFeatures,
    /// Populated zones, node by node, in zone order.
    pub zones: Vec<ZoneSnapshot>,
    /// Zones printed without pages.
    pub unpopulated: Vec<UnpopulatedZone>,
    /// The online CPUs.
    pub cpus: Vec<u32>,
    /// Each node's `per-node stats` counters.
    pub node_counters: BTreeMap<u32, BTreeMap<String, u64>>,
    /// `pageblock_order`, where pagetypeinfo was read.
    pub pageblock_order: Option<u8>,
    /// Number of orders printed (`NR_PAGE_ORDERS`).
    pub orders: usize,
    /// The migratetypes in the kernel's enum order, where pagetypeinfo was read. `CMA` among
    /// them means traces number `Isolate` 5, not 4.
    pub migratetypes: Vec<MigrateTypeName>,
    /// Disagreements between the files that [`Tolerance::Live`] accepted.
    pub skews: Vec<Skew>,
    /// What the reader accepted but a user should be told: an optional file that is absent
    /// (and what the replay then lacks), a drift [`Tolerance::Busy`] let through. One
    /// sentence each, for `warning:` lines.
    pub warnings: Vec<String>,
    /// The pfn layout (`layout` beside the three files, [`parse_layout`]), where there is one:
    /// where the free blocks lie. Without it a replay synthesises one.
    pub layout: Option<Layout>,
    /// The NUMA nodes (`nodes/nodeN/`, [`read_nodes`]) where the snapshot has them, in id
    /// order; empty for a machine without them (every CPU then node 0's).
    pub nodes: Vec<NodeSnapshot>,
}

impl ProcSnapshot {
    /// Reads `zoneinfo` and `pagetypeinfo` and/or `buddyinfo` from `dir` with
    /// [`Tolerance::Live`]. `zoneinfo` is required, and at least one of the other two. Errors
    /// carry the full path.
    pub fn read_dir(dir: &Path) -> Result<ProcSnapshot, ProcError> {
        ProcSnapshot::read_dir_with(dir, Tolerance::Live)
    }

    /// [`read_dir`](Self::read_dir) with a chosen tolerance for C2 and C3. Each file is
    /// read bounded ([`MAX_FILE_BYTES`], regular files only, UTF-8); an absent `pagetypeinfo`
    /// or `buddyinfo` is a warning ([`ProcSnapshot::warnings`]) saying what is lost, any
    /// other failure to read one is an error naming it.
    pub fn read_dir_with(dir: &Path, tolerance: Tolerance) -> Result<ProcSnapshot, ProcError> {
        let read = |file: ProcFile| read_file(&dir.join(file.name()), file);
        let zoneinfo = read(ProcFile::Zoneinfo)?.ok_or_else(|| ProcError {
            file: ProcFile::Zoneinfo,
            path: dir.join(ProcFile::Zoneinfo.name()),
            line: 0,
            kind: ErrorKind::Io(std::io::ErrorKind::NotFound.into()),
        })?;
        let pagetypeinfo = read(ProcFile::Pagetypeinfo)?;
        let buddyinfo = read(ProcFile::Buddyinfo)?;
        if pagetypeinfo.is_none() && buddyinfo.is_none() {
            return Err(ProcError {
                file: ProcFile::Pagetypeinfo,
                path: dir.join(ProcFile::Pagetypeinfo.name()),
                line: 0,
                kind: ErrorKind::Io(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "neither pagetypeinfo nor buddyinfo is in the folder; one is needed",
                )),
            });
        }
        let (p, b) = (pagetypeinfo.as_deref(), buddyinfo.as_deref());
        let mut snap = ProcSnapshot::parse_with(&zoneinfo, p, b, tolerance).map_err(|mut e| {
            e.path = dir.join(e.file.name());
            e
        })?;
        // The parse's warnings name a file as `NAME:LINE:`; here it has a folder.
        if let Some(text) = read(ProcFile::Layout)? {
            let layout = parse_layout(&text).map_err(|mut e| {
                e.path = dir.join(ProcFile::Layout.name());
                e
            })?;
            snap.check_layout(&layout).map_err(|mut e| {
                e.path = dir.join(ProcFile::Layout.name());
                e
            })?;
            snap.layout = Some(layout);
        }
        snap.nodes = read_nodes(dir)?;
        for w in &mut snap.warnings {
            let file = [
                ProcFile::Zoneinfo,
                ProcFile::Pagetypeinfo,
                ProcFile::Buddyinfo,
            ]
            .into_iter()
            .find(|f| w.starts_with(&format!("{}:", f.name())));
            if let Some(f) = file {
                *w = format!("{}{}", dir.join(f.name()).display(), &w[f.name().len()..]);
            }
        }
        let absent = |file: ProcFile, lost: &str| {
            format!("{}: absent; {lost}", dir.join(file.name()).display())
        };
        if p.is_none() {
            snap.warnings.push(absent(
                ProcFile::Pagetypeinfo,
                "free blocks come from buddyinfo without their migratetypes, and every \
                 pageblock starts Movable",
            ));
        }
        if b.is_none() {
            snap.warnings.push(absent(
                ProcFile::Buddyinfo,
                "free blocks come from pagetypeinfo alone (a count it caps at >100000 is \
                 taken as 100000)",
            ));
        }
        Ok(snap)
    }

    /// Parses and cross-checks the three texts (module docs: C1..C5) with
    /// [`Tolerance::Live`]. At least one of `pagetypeinfo` and `buddyinfo` must be given.
    pub fn parse(
        zoneinfo: &str,
        pagetypeinfo: Option<&str>,
        buddyinfo: Option<&str>,
    ) -> Result<ProcSnapshot, ProcError> {
        ProcSnapshot::parse_with(zoneinfo, pagetypeinfo, buddyinfo, Tolerance::Live)
    }

    /// [`parse`](Self::parse) with a chosen tolerance for C2 and C3.
    pub fn parse_with(
        zoneinfo: &str,
        pagetypeinfo: Option<&str>,
        buddyinfo: Option<&str>,
        tolerance: Tolerance,
    ) -> Result<ProcSnapshot, ProcError> {
        let info = parse_zoneinfo(zoneinfo)?;
        let mut snap = ProcSnapshot {
            format: info.format,
            features: info.features,
            zones: info.zones,
            unpopulated: info.unpopulated,
            cpus: info.cpus,
            node_counters: info.node_counters,
            pageblock_order: None,
            orders: 0,
            migratetypes: Vec::new(),
            skews: Vec::new(),
            warnings: Vec::new(),
            layout: None,
            nodes: Vec::new(),
        };
        let index: HashMap<(u32, ZoneType), usize> = snap
            .zones
            .iter()
            .enumerate()
            .map(|(i, z)| ((z.node, z.zone), i))
            .collect();
        if pagetypeinfo.is_none() && buddyinfo.is_none() {
            let expected = "pagetypeinfo or buddyinfo beside zoneinfo".to_owned();
            return Err(ProcError::new(
                ProcFile::Pagetypeinfo,
                0,
                ErrorKind::UnexpectedEnd { expected },
            ));
        }
        if let Some(text) = pagetypeinfo {
            let p = parse_pagetypeinfo(text)?;
            snap.pageblock_order = Some(p.pageblock_order);
            snap.orders = p.orders;
            snap.migratetypes = p.migratetypes;
            for pz in p.zones {
                let z = snap.zone_for(
                    &index,
                    ProcFile::Pagetypeinfo,
                    pz.free_line,
                    pz.node,
                    pz.zone,
                )?;
                if z.free_area.is_some() {
                    let field = z.label();
                    let kind = ErrorKind::Duplicate { field };
                    return Err(ProcError::new(ProcFile::Pagetypeinfo, pz.free_line, kind));
                }
                z.lines.pagetype_free = pz.free_line;
                z.lines.pagetype_blocks = pz.blocks_line;
                z.free_area = Some(pz.area);
            }
            snap.all_zones_have(ProcFile::Pagetypeinfo, end_line(text), |z| {
                z.free_area.is_some()
            })?;
        }
        if let Some(text) = buddyinfo {
            for bz in parse_buddyinfo(text)? {
                let orders = snap.orders;
                if orders != 0 && bz.nr_free.len() != orders {
                    return Err(ProcError::inconsistent(
                        ProcFile::Buddyinfo,
                        bz.line,
                        format!("{} orders, pagetypeinfo has {orders}", bz.nr_free.len()),
                    ));
                }
                snap.orders = bz.nr_free.len();
                let z = snap.zone_for(&index, ProcFile::Buddyinfo, bz.line, bz.node, bz.zone)?;
                z.lines.buddyinfo = bz.line;
                z.buddy_free = Some(bz.nr_free);
            }
            snap.all_zones_have(ProcFile::Buddyinfo, end_line(text), |z| {
                z.buddy_free.is_some()
            })?;
        }
        for z in &snap.zones {
            check_zone(
                z,
                snap.pageblock_order,
                tolerance,
                &mut snap.skews,
                &mut snap.warnings,
            )?;
        }
        Ok(snap)
    }

    /// Whether `layout` can be this snapshot's: its `max_order` is the free lists' highest
    /// order, and it covers every zone's span (the capture reads pfns up to `max_pfn`
    /// rounded up to a memory section, past every zone's end).
    pub fn check_layout(&self, layout: &Layout) -> Result<(), ProcError> {
        let fail = |what: String| ProcError::inconsistent(ProcFile::Layout, 1, what);
        if self.orders != usize::from(layout.max_order) + 1 {
            return Err(fail(format!(
                "max_order {}, but the snapshot prints {} orders",
                layout.max_order, self.orders
            )));
        }
        if let Some(z) = self
            .zones
            .iter()
            .find(|z| z.start_pfn.saturating_add(z.spanned_pages) > layout.end)
        {
            return Err(fail(format!(
                "the layout ends at pfn {}, inside {} ({} + {} pages)",
                layout.end,
                z.label(),
                z.start_pfn,
                z.spanned_pages
            )));
        }
        Ok(())
    }

    /// The node of `cpu` (`nodes/nodeN/cpulist`); `None` where no node lists it (a snapshot
    /// without `nodes/`, a CPU offline when it was read).
    pub fn cpu_node(&self, cpu: u32) -> Option<u32> {
        self.nodes
            .iter()
            .find(|n| n.cpus.binary_search(&cpu).is_ok())
            .map(|n| n.id)
    }

    /// The populated zone `zone` of `node`.
    pub fn zone(&self, node: u32, zone: ZoneType) -> Option<&ZoneSnapshot> {
        self.zones.iter().find(|z| (z.node, z.zone) == (node, zone))
    }

    /// C1: the zoneinfo zone that a line of `file` names (`index`: each zone's position).
    fn zone_for(
        &mut self,
        index: &HashMap<(u32, ZoneType), usize>,
        file: ProcFile,
        line: usize,
        node: u32,
        zone: ZoneType,
    ) -> Result<&mut ZoneSnapshot, ProcError> {
        index
            .get(&(node, zone))
            .and_then(|&i| self.zones.get_mut(i))
            .ok_or_else(|| {
                ProcError::inconsistent(
                    file,
                    line,
                    format!(
                        "{} is not a populated zone of zoneinfo",
                        zone_label(node, zone)
                    ),
                )
            })
    }

    /// C1: every populated zone has a line in `file`.
    fn all_zones_have(
        &self,
        file: ProcFile,
        end: usize,
        has: impl Fn(&ZoneSnapshot) -> bool,
    ) -> Result<(), ProcError> {
        match self.zones.iter().find(|z| !has(z)) {
            None => Ok(()),
            Some(z) => Err(ProcError::new(
                file,
                end,
                ErrorKind::MissingField {
                    field: "free counts",
                    zone: format!("{} (zoneinfo line {})", z.label(), z.lines.zoneinfo_header),
                },
            )),
        }
    }
}
