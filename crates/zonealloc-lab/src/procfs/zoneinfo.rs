//! `/proc/zoneinfo` (`zoneinfo_show_print` in `mm/vmstat.c`), and the kernel format family
//! it reveals.
//!
//! Per zone the kernel prints `Node %d, zone %8s`; for the node's first populated zone the
//! node's counters (`per-node stats`); then `pages free`, the watermarks, the span, present,
//! managed and cma pages and `protection: (...)`. An unpopulated zone (`present 0`) stops
//! there. A populated one goes on with its vmstat and NUMA counters (`%-12s %lu`), the
//! `pagesets` block (one `cpu:` entry per online CPU) and the trailer (`node_unreclaimable`,
//! `start_pfn`, and after 6.18 `reserved_highatomic` and `free_highatomic`).
//!
//! The file is read line by line into a zone block (`block.rs`); a finished block is checked
//! and filed (`zone.rs`); the whole file's checks come last (`whole_file.rs`).

mod block;
mod whole_file;
mod zone;

use std::collections::BTreeMap;

use zonealloc::ZoneType;

use super::error::{end_line, ErrorKind, ProcError, ProcFile};
use super::format::{ZoneinfoFeatures, ZoneinfoFormat};
use super::{UnpopulatedZone, ZoneSnapshot};
use block::{header, zone_line, ZoneBuilder};
use whole_file::finish;
use zone::finish_zone;

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
