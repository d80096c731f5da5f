//! `/proc/buddyinfo` (`frag_show_print` in `mm/vmstat.c`): per populated zone,
//! `Node %d, zone %8s ` and `free_area[order].nr_free` for every order, read under the zone
//! lock in one pass.

use zonealloc::types::ORDER_SLOTS;
use zonealloc::ZoneType;

use super::error::{end_line, number, ErrorKind, ProcError, ProcFile};
use super::names::{zone_label, zone_prefix};

const FILE: ProcFile = ProcFile::Buddyinfo;

/// One zone of `/proc/buddyinfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuddyZone {
    /// NUMA node.
    pub node: u32,
    /// Zone.
    pub zone: ZoneType,
    /// Free blocks per order, over all migratetypes.
    pub nr_free: Vec<u64>,
    /// Its line.
    pub line: usize,
}

/// Parses `/proc/buddyinfo` text: one line per populated zone, all with the same number of
/// orders.
pub fn parse_buddyinfo(text: &str) -> Result<Vec<BuddyZone>, ProcError> {
    let mut zones: Vec<BuddyZone> = Vec::new();
    for (i, t) in text.lines().enumerate() {
        let line = i + 1;
        if t.trim().is_empty() {
            continue;
        }
        let (node, zone, rest) = zone_prefix(FILE, line, t)?;
        let nr_free = rest
            .split_whitespace()
            .map(|w| number(FILE, line, "nr_free", w))
            .collect::<Result<Vec<u64>, _>>()?;
        if nr_free.is_empty() {
            return Err(ProcError::new(
                FILE,
                line,
                ErrorKind::Unexpected {
                    expected: "free block counts after the zone name",
                    found: t.trim().to_owned(),
                },
            ));
        }
        if nr_free.len() > ORDER_SLOTS {
            return Err(ProcError::inconsistent(
                FILE,
                line,
                format!(
                    "{} orders; at most {ORDER_SLOTS} are supported",
                    nr_free.len()
                ),
            ));
        }
        if let Some(first) = zones.first() {
            if first.nr_free.len() != nr_free.len() {
                return Err(ProcError::inconsistent(
                    FILE,
                    line,
                    format!(
                        "{} orders, line {} has {}",
                        nr_free.len(),
                        first.line,
                        first.nr_free.len()
                    ),
                ));
            }
        }
        if zones.iter().any(|z| (z.node, z.zone) == (node, zone)) {
            let field = zone_label(node, zone);
            return Err(ProcError::new(FILE, line, ErrorKind::Duplicate { field }));
        }
        zones.push(BuddyZone {
            node,
            zone,
            nr_free,
            line,
        });
    }
    if zones.is_empty() {
        let expected = "a `Node N, zone NAME ...` line".to_owned();
        return Err(ProcError::new(
            FILE,
            end_line(text),
            ErrorKind::UnexpectedEnd { expected },
        ));
    }
    Ok(zones)
}
