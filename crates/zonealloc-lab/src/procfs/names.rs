//! Zone and migratetype names as the kernel prints them, and the `Node N, zone NAME` prefix
//! that all three files share.

use std::fmt;

use zonealloc::{MigrateType, ZoneType};

use super::error::{number, ErrorKind, ProcError, ProcFile};

/// The zone type named `name` (`zone_names[]` in `mm/page_alloc.c`), or an `UnknownZone`
/// error on `line`.
pub(crate) fn zone_type(file: ProcFile, line: usize, name: &str) -> Result<ZoneType, ProcError> {
    ZoneType::ALL
        .into_iter()
        .find(|z| z.name() == name)
        .ok_or_else(|| {
            ProcError::new(
                file,
                line,
                ErrorKind::UnknownZone {
                    name: name.to_owned(),
                },
            )
        })
}

/// A migratetype as `/proc/pagetypeinfo` names it (`migratetype_names[]`). Which types exist
/// depends on the kernel's configuration (`CMA` only with `CONFIG_CMA`, `Isolate` only with
/// `CONFIG_MEMORY_ISOLATION`) and version (`Reserve` before 4.4), so the columns of a file are
/// kept in its order, and a name zonealloc does not model is kept as it was printed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MigrateTypeName {
    /// One of zonealloc's migratetypes.
    Known(MigrateType),
    /// `MIGRATE_CMA` (`CONFIG_CMA`): its presence shifts `MIGRATE_ISOLATE` from 4 to 5 in the
    /// tracepoints' numbering.
    Cma,
    /// Any other name (e.g. `Reserve` before Linux 4.4).
    Other(String),
}

impl MigrateTypeName {
    /// The migratetype printed as `name`.
    pub fn parse(name: &str) -> MigrateTypeName {
        match MigrateType::ALL.into_iter().find(|m| m.name() == name) {
            Some(m) => MigrateTypeName::Known(m),
            None if name == "CMA" => MigrateTypeName::Cma,
            None => MigrateTypeName::Other(name.to_owned()),
        }
    }

    /// The name as the kernel prints it.
    pub fn name(&self) -> &str {
        match self {
            MigrateTypeName::Known(m) => m.name(),
            MigrateTypeName::Cma => "CMA",
            MigrateTypeName::Other(s) => s,
        }
    }

    /// zonealloc's migratetype, where it has one.
    pub fn known(&self) -> Option<MigrateType> {
        match self {
            MigrateTypeName::Known(m) => Some(*m),
            _ => None,
        }
    }
}

impl fmt::Display for MigrateTypeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Splits `Node %d, zone %8s REST` (buddyinfo, the block-count table of pagetypeinfo) into the
/// node, the zone and the rest. `Node %4d` (pagetypeinfo's free table) parses too.
pub(crate) fn zone_prefix(
    file: ProcFile,
    line: usize,
    text: &str,
) -> Result<(u32, ZoneType, &str), ProcError> {
    let bad = || {
        ProcError::new(
            file,
            line,
            ErrorKind::Unexpected {
                expected: "`Node N, zone NAME ...`",
                found: text.trim().to_owned(),
            },
        )
    };
    let rest = text.strip_prefix("Node").ok_or_else(bad)?;
    let (node, rest) = rest.split_once(',').ok_or_else(bad)?;
    let node = node_id(file, line, node.trim())?;
    let rest = rest.trim_start().strip_prefix("zone").ok_or_else(bad)?;
    let rest = rest.trim_start();
    let end = rest
        .find(|c: char| c.is_whitespace() || c == ',')
        .unwrap_or(rest.len());
    let (name, rest) = rest.split_at(end);
    if name.is_empty() {
        return Err(bad());
    }
    Ok((node, zone_type(file, line, name)?, rest))
}

/// A NUMA node number, below [`MAX_NODES`](super::MAX_NODES).
pub(crate) fn node_id(file: ProcFile, line: usize, text: &str) -> Result<u32, ProcError> {
    let node: u32 = number(file, line, "node", text)?;
    if node >= super::MAX_NODES {
        return Err(ProcError::inconsistent(
            file,
            line,
            format!(
                "node {node}: node numbers are 0..={} (MAX_NUMNODES is at most {})",
                super::MAX_NODES - 1,
                super::MAX_NODES
            ),
        ));
    }
    Ok(node)
}

/// `Node N, zone NAME`, as messages name a zone.
pub(crate) fn zone_label(node: u32, zone: ZoneType) -> String {
    format!("Node {node}, zone {}", zone.name())
}
