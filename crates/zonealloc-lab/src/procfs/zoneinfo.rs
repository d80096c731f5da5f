//! `/proc/zoneinfo` (`zoneinfo_show_print` in `mm/vmstat.c`), and the kernel format family
//! it reveals.
//!
//! Per zone the kernel prints `Node %d, zone %8s`; for the node's first populated zone the
//! node's counters (`per-node stats`); then `pages free`, the watermarks, the span, present,
//! managed and cma pages and `protection: (...)`. An unpopulated zone (`present 0`) stops
//! there. A populated one goes on with its vmstat and NUMA counters (`%-12s %lu`), the
//! `pagesets` block (one `cpu:` entry per online CPU) and the trailer (`node_unreclaimable`,
//! `start_pfn`, and after 6.18 `reserved_highatomic` and `free_highatomic`).

use std::collections::BTreeMap;

use zonealloc::ZoneType;

use super::error::{end_line, number, ErrorKind, ProcError, ProcFile};
use super::format::{ZoneinfoFeatures, ZoneinfoFormat};
use super::names::{node_id, zone_label, zone_type};
use super::{PagesetSnapshot, SourceLines, UnpopulatedZone, WatermarkSnapshot, ZoneSnapshot};

const FILE: ProcFile = ProcFile::Zoneinfo;

/// What `/proc/zoneinfo` alone says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zoneinfo {
    /// The format family ([`infer_format`](super::infer_format)'s rule).
    pub format: ZoneinfoFormat,
    /// The optional lines it printed.
    pub features: ZoneinfoFeatures,
    /// Populated zones in file order (node by node, zone index within a node); their free
    /// state from pagetypeinfo and buddyinfo is not filled in.
    pub zones: Vec<ZoneSnapshot>,
    /// Zones printed without pagesets because they have no present pages.
    pub unpopulated: Vec<UnpopulatedZone>,
    /// The online CPUs, as the pagesets list them.
    pub cpus: Vec<u32>,
    /// Each node's `per-node stats` (`node_stat_name`), by node.
    pub node_counters: BTreeMap<u32, BTreeMap<String, u64>>,
}

/// Which part of a zone block the parser is in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    NodeStats,
    Zone,
    Pagesets,
    Trailer,
}

/// One `cpu:` entry being read.
struct PagesetBuilder {
    line: usize,
    cpu: u32,
    count: Option<u32>,
    high: Option<u32>,
    batch: Option<u32>,
    high_min: Option<u32>,
    high_max: Option<u32>,
    stat_threshold: Option<u32>,
}

/// One zone block being read: every field optional until the block ends.
struct ZoneBuilder {
    header_line: usize,
    node: u32,
    zone: ZoneType,
    section: Section,
    fields: BTreeMap<&'static str, (u64, usize)>,
    protection: Option<(Vec<u64>, usize)>,
    pagesets: Vec<PagesetBuilder>,
    saw_pagesets: bool,
    counters: BTreeMap<String, u64>,
}

/// The zone-level `name value` and `name: value` fields the parser knows, by the name printed.
const ZONE_FIELDS: &[&str] = &[
    "pages free",
    "boost",
    "min",
    "low",
    "high",
    "promo",
    "spanned",
    "present",
    "managed",
    "cma",
];
const TRAILER_FIELDS: &[&str] = &[
    "node_unreclaimable",
    "start_pfn",
    "reserved_highatomic",
    "free_highatomic",
];

impl ZoneBuilder {
    fn label(&self) -> String {
        zone_label(self.node, self.zone)
    }

    fn set(&mut self, field: &'static str, value: u64, line: usize) -> Result<(), ProcError> {
        if self.fields.insert(field, (value, line)).is_some() {
            return Err(ProcError::new(
                FILE,
                line,
                ErrorKind::Duplicate {
                    field: field.to_owned(),
                },
            ));
        }
        Ok(())
    }

    fn get(&self, field: &'static str) -> Option<u64> {
        self.fields.get(field).map(|&(v, _)| v)
    }

    /// `field`, or a `MissingField` error placed at `end` (where the block ended).
    fn need(&self, field: &'static str, end: usize) -> Result<u64, ProcError> {
        self.get(field).ok_or_else(|| {
            let kind = ErrorKind::MissingField {
                field,
                zone: self.label(),
            };
            ProcError::new(FILE, end, kind)
        })
    }

    fn line_of(&self, field: &'static str) -> usize {
        self.fields.get(field).map_or(self.header_line, |&(_, l)| l)
    }
}

/// The zone and node blocks read so far.
#[derive(Default)]
struct Parsed {
    zones: Vec<ZoneSnapshot>,
    unpopulated: Vec<UnpopulatedZone>,
    node_counters: BTreeMap<u32, BTreeMap<String, u64>>,
    /// Per node: the zones printed (populated or not), which index `protection`.
    node_zones: BTreeMap<u32, Vec<ZoneType>>,
    /// `protection` as printed and its line, parallel to `zones`; named once the node's zone
    /// list is complete.
    zone_protection: Vec<(Vec<u64>, usize)>,
    /// The same, parallel to `unpopulated`.
    unpopulated_protection: Vec<(Vec<u64>, usize)>,
}

/// Parses `/proc/zoneinfo` text. Errors name the line; a block cut short names the line where
/// it ended.
pub fn parse_zoneinfo(text: &str) -> Result<Zoneinfo, ProcError> {
    let mut parsed = Parsed::default();
    let mut current: Option<ZoneBuilder> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        if raw.starts_with("Node ") {
            if let Some(z) = current.take() {
                finish_zone(z, line, &mut parsed)?;
            }
            current = Some(header(raw, line)?);
            continue;
        }
        let Some(z) = current.as_mut() else {
            return Err(unexpected(line, "a `Node N, zone NAME` header", raw));
        };
        zone_line(z, raw.trim(), line, &mut parsed)?;
    }
    let end = end_line(text);
    match current {
        Some(z) => finish_zone(z, end, &mut parsed)?,
        None => {
            let expected = "a `Node N, zone NAME` header".to_owned();
            return Err(ProcError::new(
                FILE,
                end,
                ErrorKind::UnexpectedEnd { expected },
            ));
        }
    }
    finish(parsed)
}

fn unexpected(line: usize, expected: &'static str, found: &str) -> ProcError {
    ProcError::new(
        FILE,
        line,
        ErrorKind::Unexpected {
            expected,
            found: found.trim().to_owned(),
        },
    )
}

/// `Node %d, zone %8s`.
fn header(raw: &str, line: usize) -> Result<ZoneBuilder, ProcError> {
    let bad = || unexpected(line, "`Node N, zone NAME`", raw);
    let rest = raw.strip_prefix("Node ").ok_or_else(bad)?;
    let (node, name) = rest.split_once(", zone ").ok_or_else(bad)?;
    let node = node_id(FILE, line, node.trim())?;
    let name = name.trim();
    if name.contains(char::is_whitespace) {
        return Err(bad());
    }
    Ok(ZoneBuilder {
        header_line: line,
        node,
        zone: zone_type(FILE, line, name)?,
        section: Section::Zone,
        fields: BTreeMap::new(),
        protection: None,
        pagesets: Vec::new(),
        saw_pagesets: false,
        counters: BTreeMap::new(),
    })
}

/// One line inside a zone block, already trimmed.
fn zone_line(
    z: &mut ZoneBuilder,
    text: &str,
    line: usize,
    parsed: &mut Parsed,
) -> Result<(), ProcError> {
    match text {
        "per-node stats" => {
            z.section = Section::NodeStats;
            return Ok(());
        }
        "pagesets" => {
            if z.saw_pagesets {
                let field = "pagesets".to_owned();
                return Err(ProcError::new(FILE, line, ErrorKind::Duplicate { field }));
            }
            z.section = Section::Pagesets;
            z.saw_pagesets = true;
            return Ok(());
        }
        _ => {}
    }
    if let Some(list) = text.strip_prefix("protection:") {
        if z.protection.is_some() {
            let field = "protection".to_owned();
            return Err(ProcError::new(FILE, line, ErrorKind::Duplicate { field }));
        }
        z.protection = Some((protection(list, line)?, line));
        return Ok(());
    }
    if let Some(value) = text.strip_prefix("pages free") {
        z.section = Section::Zone;
        return z.set(
            "pages free",
            number(FILE, line, "pages free", value.trim())?,
            line,
        );
    }
    if let Some((key, value)) = text.split_once(':') {
        return colon_field(z, key.trim(), value.trim(), line);
    }
    // `%-12s %lu` counters and the `name value` zone fields.
    let mut words = text.split_whitespace();
    let (Some(key), Some(value), None) = (words.next(), words.next(), words.next()) else {
        return Err(unexpected(line, "`NAME VALUE` or `NAME: VALUE`", text));
    };
    let value: u64 = number(FILE, line, key, value)?;
    match z.section {
        Section::NodeStats => {
            let counters = parsed.node_counters.entry(z.node).or_default();
            if counters.insert(key.to_owned(), value).is_some() {
                let field = key.to_owned();
                return Err(ProcError::new(FILE, line, ErrorKind::Duplicate { field }));
            }
            Ok(())
        }
        _ => match ZONE_FIELDS.iter().find(|&&f| f == key) {
            Some(&field) if z.section == Section::Zone && z.protection.is_none() => {
                z.set(field, value, line)
            }
            _ => {
                if z.counters.insert(key.to_owned(), value).is_some() {
                    let field = key.to_owned();
                    return Err(ProcError::new(FILE, line, ErrorKind::Duplicate { field }));
                }
                Ok(())
            }
        },
    }
}

/// `(%ld, %ld, ...)`: `lowmem_reserve[]`, one entry per zone of the node.
fn protection(list: &str, line: usize) -> Result<Vec<u64>, ProcError> {
    let inner = list
        .trim()
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| unexpected(line, "`protection: (N, N, ...)`", list))?;
    inner
        .split(',')
        .map(|v| number(FILE, line, "protection", v.trim()))
        .collect()
}

/// A `name: value` line: a pageset field or a trailer field.
fn colon_field(z: &mut ZoneBuilder, key: &str, value: &str, line: usize) -> Result<(), ProcError> {
    if key == "cpu" {
        if z.section != Section::Pagesets {
            return Err(unexpected(line, "`cpu:` only inside `pagesets`", key));
        }
        let cpu = cpu_id(z, value, line)?;
        z.pagesets.push(PagesetBuilder {
            line,
            cpu,
            count: None,
            high: None,
            batch: None,
            high_min: None,
            high_max: None,
            stat_threshold: None,
        });
        return Ok(());
    }
    if let Some(&field) = TRAILER_FIELDS.iter().find(|&&f| f == key) {
        z.section = Section::Trailer;
        return z.set(field, number(FILE, line, field, value)?, line);
    }
    let slot = match (z.section, z.pagesets.last_mut()) {
        (Section::Pagesets, Some(p)) => match key {
            "count" => &mut p.count,
            "high" => &mut p.high,
            "batch" => &mut p.batch,
            "high_min" => &mut p.high_min,
            "high_max" => &mut p.high_max,
            "vm stats threshold" => &mut p.stat_threshold,
            _ => return Err(unexpected(line, "a pageset field", key)),
        },
        (Section::Pagesets, None) => {
            return Err(unexpected(line, "`cpu: N` opening a pageset", key))
        }
        // Fields of other kernels' trailers (e.g. `all_unreclaimable`, `inactive_ratio`)
        // are kept as counters.
        _ => {
            let v = number(FILE, line, key, value)?;
            if z.counters.insert(key.to_owned(), v).is_some() {
                let field = key.to_owned();
                return Err(ProcError::new(FILE, line, ErrorKind::Duplicate { field }));
            }
            return Ok(());
        }
    };
    if slot.is_some() {
        let field = key.to_owned();
        return Err(ProcError::new(FILE, line, ErrorKind::Duplicate { field }));
    }
    *slot = Some(number(FILE, line, key, value)?);
    Ok(())
}

/// The CPU of a `cpu:` line: below [`MAX_CPUS`](super::MAX_CPUS), and above the block's
/// previous one (`zoneinfo_show_print` walks `for_each_online_cpu`, in increasing order), so
/// a CPU listed twice is refused where it is listed again.
fn cpu_id(z: &ZoneBuilder, value: &str, line: usize) -> Result<u32, ProcError> {
    let cpu: u32 = number(FILE, line, "cpu", value)?;
    if cpu >= super::MAX_CPUS {
        return Err(ProcError::inconsistent(
            FILE,
            line,
            format!(
                "cpu {cpu}: CPU ids are 0..={} (NR_CPUS is at most {})",
                super::MAX_CPUS - 1,
                super::MAX_CPUS
            ),
        ));
    }
    if let Some(prev) = z.pagesets.last() {
        if prev.cpu == cpu {
            let field = format!("{} cpu {cpu}", z.label());
            return Err(ProcError::new(FILE, line, ErrorKind::Duplicate { field }));
        }
        if prev.cpu > cpu {
            return Err(ProcError::inconsistent(
                FILE,
                line,
                format!(
                    "{}: cpu {cpu} after cpu {} (line {}); pagesets are printed in CPU order",
                    z.label(),
                    prev.cpu,
                    prev.line
                ),
            ));
        }
    }
    Ok(cpu)
}

/// Checks a finished zone block (`end` is the line after it) and files it.
fn finish_zone(z: ZoneBuilder, end: usize, parsed: &mut Parsed) -> Result<(), ProcError> {
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
    let start_pfn = z.need("start_pfn", end)?;
    if start_pfn
        .checked_add(spanned)
        .is_none_or(|e| e > super::MAX_PFN)
    {
        return Err(ProcError::inconsistent(
            FILE,
            z.line_of("start_pfn"),
            format!(
                "{}: start_pfn {start_pfn:#x} with {spanned} spanned pages ends past pfn \
                 {:#x}, beyond any machine's physical address space",
                z.label(),
                super::MAX_PFN
            ),
        ));
    }
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
fn finish(parsed: Parsed) -> Result<Zoneinfo, ProcError> {
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
