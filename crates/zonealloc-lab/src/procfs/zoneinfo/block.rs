//! A zone block of `/proc/zoneinfo` read line by line: its header, its fields, counters and
//! pagesets, each checked as far as one line allows (a duplicate, a CPU out of order).

use std::collections::BTreeMap;

use zonealloc::ZoneType;

use super::{unexpected, Parsed, FILE};
use crate::procfs::error::{number, ErrorKind, ProcError};
use crate::procfs::names::{node_id, zone_label, zone_type};
use crate::procfs::MAX_CPUS;

/// Which part of a zone block the parser is in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Section {
    NodeStats,
    Zone,
    Pagesets,
    Trailer,
}

/// One `cpu:` entry being read.
pub(super) struct PagesetBuilder {
    pub(super) line: usize,
    pub(super) cpu: u32,
    pub(super) count: Option<u32>,
    pub(super) high: Option<u32>,
    pub(super) batch: Option<u32>,
    pub(super) high_min: Option<u32>,
    pub(super) high_max: Option<u32>,
    pub(super) stat_threshold: Option<u32>,
}

/// One zone block being read: every field optional until the block ends.
pub(super) struct ZoneBuilder {
    pub(super) header_line: usize,
    pub(super) node: u32,
    pub(super) zone: ZoneType,
    pub(super) section: Section,
    pub(super) fields: BTreeMap<&'static str, (u64, usize)>,
    pub(super) protection: Option<(Vec<u64>, usize)>,
    pub(super) pagesets: Vec<PagesetBuilder>,
    pub(super) saw_pagesets: bool,
    pub(super) counters: BTreeMap<String, u64>,
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
    pub(super) fn label(&self) -> String {
        zone_label(self.node, self.zone)
    }

    pub(super) fn set(
        &mut self,
        field: &'static str,
        value: u64,
        line: usize,
    ) -> Result<(), ProcError> {
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

    pub(super) fn get(&self, field: &'static str) -> Option<u64> {
        self.fields.get(field).map(|&(v, _)| v)
    }

    /// `field`, or a `MissingField` error placed at `end` (where the block ended).
    pub(super) fn need(&self, field: &'static str, end: usize) -> Result<u64, ProcError> {
        self.get(field).ok_or_else(|| {
            let kind = ErrorKind::MissingField {
                field,
                zone: self.label(),
            };
            ProcError::new(FILE, end, kind)
        })
    }

    pub(super) fn line_of(&self, field: &'static str) -> usize {
        self.fields.get(field).map_or(self.header_line, |&(_, l)| l)
    }
}
/// `Node %d, zone %8s`.
pub(super) fn header(raw: &str, line: usize) -> Result<ZoneBuilder, ProcError> {
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
pub(super) fn zone_line(
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

/// The CPU of a `cpu:` line: below [`MAX_CPUS`], and above the block's
/// previous one (`zoneinfo_show_print` walks `for_each_online_cpu`, in increasing order), so
/// a CPU listed twice is refused where it is listed again.
fn cpu_id(z: &ZoneBuilder, value: &str, line: usize) -> Result<u32, ProcError> {
    let cpu: u32 = number(FILE, line, "cpu", value)?;
    if cpu >= MAX_CPUS {
        return Err(ProcError::inconsistent(
            FILE,
            line,
            format!(
                "cpu {cpu}: CPU ids are 0..={} (NR_CPUS is at most {})",
                MAX_CPUS - 1,
                MAX_CPUS
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
