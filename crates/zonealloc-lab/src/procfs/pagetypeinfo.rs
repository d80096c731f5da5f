//! `/proc/pagetypeinfo` (`pagetypeinfo_show` in `mm/vmstat.c`), once per node:
//!
//! ```text
//! Page block order: 9
//! Pages per block:  512
//!
//! Free pages count per migrate type at order       0      1 ...
//! Node    0, zone      DMA, type    Unmovable      0      0 ...      (one line per type)
//!
//! Number of blocks type     Unmovable      Movable ...
//! Node 0, zone      DMA            1            7 ...                (one line per zone)
//! ```
//!
//! followed, under `CONFIG_PAGE_OWNER`, by a `Number of mixed blocks` table (skipped here).
//! `pagetypeinfo_showfree_print` stops counting a free list at 100,000 entries and prints
//! `>100000`; such a count is kept with `capped` set. Only populated zones are printed.

use zonealloc::types::ORDER_SLOTS;
use zonealloc::{ZoneType, MAX_ORDER_LIMIT};

use super::error::{end_line, number, ErrorKind, ProcError, ProcFile};
use super::names::{zone_label, zone_prefix, MigrateTypeName};

const FILE: ProcFile = ProcFile::Pagetypeinfo;

/// One count of the free table: free blocks (list entries) of one order and migratetype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeCount {
    /// Free blocks on the list (not pages).
    pub blocks: u64,
    /// Printed as `>100000`: the list holds at least `blocks` entries.
    pub capped: bool,
}

/// One zone of `/proc/pagetypeinfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreeArea {
    /// `pageblock_order` of the node's block.
    pub pageblock_order: u8,
    /// Free blocks per migratetype (in [`Pagetypeinfo::migratetypes`] order), then per order.
    pub free: Vec<Vec<FreeCount>>,
    /// Pageblocks per migratetype, in [`Pagetypeinfo::migratetypes`] order.
    pub pageblocks: Vec<u64>,
}

/// A zone of the file with where it was printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagetypeZone {
    /// NUMA node.
    pub node: u32,
    /// Zone.
    pub zone: ZoneType,
    /// Its counts.
    pub area: FreeArea,
    /// Line of its first free-table line.
    pub free_line: usize,
    /// Line of its block-count line.
    pub blocks_line: usize,
}

/// What `/proc/pagetypeinfo` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pagetypeinfo {
    /// `pageblock_order` (the same in every node's block).
    pub pageblock_order: u8,
    /// Number of orders printed (`NR_PAGE_ORDERS`, `MAX_PAGE_ORDER + 1`).
    pub orders: usize,
    /// The migratetypes in the kernel's `enum migratetype` order (the column order).
    pub migratetypes: Vec<MigrateTypeName>,
    /// The populated zones, in file order.
    pub zones: Vec<PagetypeZone>,
}

/// Lines with their 1-based numbers, blank lines skipped.
struct Lines<'a> {
    inner: std::iter::Peekable<std::iter::Enumerate<std::str::Lines<'a>>>,
    end: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Lines<'a> {
        Lines {
            inner: text.lines().enumerate().peekable(),
            end: end_line(text),
        }
    }

    fn skip_blank(&mut self) {
        while self.inner.next_if(|(_, l)| l.trim().is_empty()).is_some() {}
    }

    fn peek(&mut self) -> Option<&'a str> {
        self.skip_blank();
        self.inner.peek().map(|&(_, l)| l)
    }

    /// The next non-blank line, or an `UnexpectedEnd` saying `expected`.
    fn next(&mut self, expected: &str) -> Result<(usize, &'a str), ProcError> {
        self.skip_blank();
        match self.inner.next() {
            Some((i, l)) => Ok((i + 1, l)),
            None => Err(ProcError::new(
                FILE,
                self.end,
                ErrorKind::UnexpectedEnd {
                    expected: expected.to_owned(),
                },
            )),
        }
    }
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

/// `KEY VALUE` after a fixed prefix.
fn prefixed<T: std::str::FromStr>(
    line: usize,
    text: &str,
    prefix: &'static str,
    expected: &'static str,
) -> Result<T, ProcError> {
    let value = text
        .strip_prefix(prefix)
        .ok_or_else(|| unexpected(line, expected, text))?;
    number(FILE, line, prefix.trim_end_matches(':'), value.trim())
}

const FREE_HEADER: &str = "Free pages count per migrate type at order";
const BLOCKS_HEADER: &str = "Number of blocks type";
const MIXED_HEADER: &str = "Number of mixed blocks";

/// Parses `/proc/pagetypeinfo` text.
pub fn parse_pagetypeinfo(text: &str) -> Result<Pagetypeinfo, ProcError> {
    let mut lines = Lines::new(text);
    let mut out: Option<Pagetypeinfo> = None;
    loop {
        let (line, t) = lines.next("`Page block order: N`")?;
        let order: u8 = prefixed(line, t, "Page block order:", "`Page block order: N`")?;
        if order > MAX_ORDER_LIMIT {
            return Err(ProcError::inconsistent(
                FILE,
                line,
                format!("page block order {order} is above the largest order, {MAX_ORDER_LIMIT}"),
            ));
        }
        let (line, t) = lines.next("`Pages per block: N`")?;
        let pages: u64 = prefixed(line, t, "Pages per block:", "`Pages per block: N`")?;
        if pages != 1 << order {
            return Err(ProcError::inconsistent(
                FILE,
                line,
                format!("{pages} pages per block, but the block order is {order}"),
            ));
        }
        let node = parse_node_block(&mut lines, order)?;
        match out.as_mut() {
            None => out = Some(node),
            Some(all) => {
                let first_line = node.zones.first().map_or(lines.end, |z| z.free_line);
                if (node.pageblock_order, node.orders, &node.migratetypes)
                    != (all.pageblock_order, all.orders, &all.migratetypes)
                {
                    return Err(ProcError::inconsistent(
                        FILE,
                        first_line,
                        "a later node's block differs in page block order, orders or \
                         migratetypes"
                            .to_owned(),
                    ));
                }
                all.zones.extend(node.zones);
            }
        }
        if lines.peek().is_none() {
            break;
        }
    }
    Ok(out.expect("the loop ran once"))
}

/// One node's free table and block-count table (and a mixed-block table if present).
fn parse_node_block(lines: &mut Lines<'_>, pageblock_order: u8) -> Result<Pagetypeinfo, ProcError> {
    let n_orders = order_columns(lines)?;
    let (mut zones, migratetypes) = free_table(lines, n_orders, pageblock_order)?;
    block_table(lines, &mut zones, &migratetypes)?;
    if lines.peek().is_some_and(|l| l.starts_with(MIXED_HEADER)) {
        lines.next(MIXED_HEADER)?;
        while lines.peek().is_some_and(|l| l.starts_with("Node")) {
            lines.next("a mixed-block line")?;
        }
    }
    Ok(Pagetypeinfo {
        pageblock_order,
        orders: n_orders,
        migratetypes,
        zones,
    })
}

/// The free table's header: its order columns, 0, 1, .. in order; how many.
fn order_columns(lines: &mut Lines<'_>) -> Result<usize, ProcError> {
    let (line, t) = lines.next(FREE_HEADER)?;
    let orders = t
        .strip_prefix(FREE_HEADER)
        .ok_or_else(|| unexpected(line, "`Free pages count per migrate type at order ...`", t))?;
    let mut n_orders = 0usize;
    for (i, o) in orders.split_whitespace().enumerate() {
        let o: usize = number(FILE, line, "order", o)?;
        if o != i {
            return Err(ProcError::inconsistent(
                FILE,
                line,
                format!("order column {i} is headed {o}"),
            ));
        }
        n_orders += 1;
    }
    if n_orders == 0 {
        return Err(unexpected(line, "order columns", t));
    }
    if n_orders > ORDER_SLOTS {
        return Err(ProcError::inconsistent(
            FILE,
            line,
            format!("{n_orders} orders; at most {ORDER_SLOTS} are supported"),
        ));
    }
    Ok(n_orders)
}

/// The free table's lines, `Node N, zone NAME, type TYPE counts...`: the zones with their
/// free counts, and the migratetypes every zone lists (the same, in the same order).
fn free_table(
    lines: &mut Lines<'_>,
    n_orders: usize,
    pageblock_order: u8,
) -> Result<(Vec<PagetypeZone>, Vec<MigrateTypeName>), ProcError> {
    let mut zones: Vec<PagetypeZone> = Vec::new();
    let mut migratetypes: Vec<MigrateTypeName> = Vec::new();
    let mut current_types: Vec<MigrateTypeName> = Vec::new();
    while lines
        .peek()
        .is_some_and(|l| l.starts_with("Node") && l.contains(", type "))
    {
        let (line, t) = lines.next("a free-count line")?;
        let (node, zone, mt, counts) = free_line(line, t, n_orders)?;
        let same_zone = zones
            .last()
            .is_some_and(|z| (z.node, z.zone) == (node, zone));
        if !same_zone {
            close_zone(&mut current_types, &mut migratetypes, zones.last())?;
            if zones.iter().any(|z| (z.node, z.zone) == (node, zone)) {
                let field = zone_label(node, zone);
                return Err(ProcError::new(FILE, line, ErrorKind::Duplicate { field }));
            }
            zones.push(PagetypeZone {
                node,
                zone,
                area: FreeArea {
                    pageblock_order,
                    free: Vec::new(),
                    pageblocks: Vec::new(),
                },
                free_line: line,
                blocks_line: 0,
            });
        }
        if current_types.contains(&mt) {
            let field = format!("{} type {mt}", zone_label(node, zone));
            return Err(ProcError::new(FILE, line, ErrorKind::Duplicate { field }));
        }
        current_types.push(mt);
        if let Some(z) = zones.last_mut() {
            z.area.free.push(counts);
        }
    }
    close_zone(&mut current_types, &mut migratetypes, zones.last())?;
    if zones.is_empty() {
        let (line, t) = lines.next("a free-count line")?;
        return Err(unexpected(line, "`Node N, zone NAME, type TYPE ...`", t));
    }
    Ok((zones, migratetypes))
}

/// One free-count line (`line` its number, `t` its text): node, zone, migratetype and the
/// `n_orders` counts (`>100000`: capped).
fn free_line(
    line: usize,
    t: &str,
    n_orders: usize,
) -> Result<(u32, ZoneType, MigrateTypeName, Vec<FreeCount>), ProcError> {
    let (node, zone, rest) = zone_prefix(FILE, line, t)?;
    let rest = rest
        .trim_start()
        .strip_prefix(", type")
        .ok_or_else(|| unexpected(line, "`Node N, zone NAME, type TYPE ...`", t))?;
    let mut words = rest.split_whitespace();
    let mt = MigrateTypeName::parse(
        words
            .next()
            .ok_or_else(|| unexpected(line, "a migratetype name", t))?,
    );
    let mut counts = Vec::with_capacity(n_orders);
    for w in words {
        let (capped, digits) = match w.strip_prefix('>') {
            Some(d) => (true, d),
            None => (false, w),
        };
        counts.push(FreeCount {
            blocks: number(FILE, line, "free count", digits)?,
            capped,
        });
    }
    if counts.len() != n_orders {
        return Err(ProcError::inconsistent(
            FILE,
            line,
            format!("{} counts for {n_orders} orders", counts.len()),
        ));
    }
    Ok((node, zone, mt, counts))
}

/// At the end of one zone's free lines: the first zone's migratetypes become every zone's,
/// and a later zone must list the same.
fn close_zone(
    types: &mut Vec<MigrateTypeName>,
    all: &mut Vec<MigrateTypeName>,
    zone: Option<&PagetypeZone>,
) -> Result<(), ProcError> {
    if let Some(z) = zone {
        if all.is_empty() {
            *all = std::mem::take(types);
        } else if *all != *types {
            return Err(ProcError::inconsistent(
                FILE,
                z.free_line,
                format!(
                    "{} lists other migratetypes than the first zone",
                    zone_label(z.node, z.zone)
                ),
            ));
        }
    }
    types.clear();
    Ok(())
}

/// The block-count table: its header's columns must be the free table's `migratetypes`, then
/// one line per zone of `zones`, in their order.
fn block_table(
    lines: &mut Lines<'_>,
    zones: &mut [PagetypeZone],
    migratetypes: &[MigrateTypeName],
) -> Result<(), ProcError> {
    let (line, t) = lines.next(BLOCKS_HEADER)?;
    let header = t
        .strip_prefix(BLOCKS_HEADER)
        .ok_or_else(|| unexpected(line, "`Number of blocks type ...`", t))?;
    let columns: Vec<MigrateTypeName> = header
        .split_whitespace()
        .map(MigrateTypeName::parse)
        .collect();
    if columns != migratetypes {
        return Err(ProcError::inconsistent(
            FILE,
            line,
            "the block-count columns differ from the free table's migratetypes".to_owned(),
        ));
    }
    for z in zones.iter_mut() {
        let (line, t) = lines.next("a block-count line")?;
        let (node, zone, rest) = zone_prefix(FILE, line, t)?;
        if (node, zone) != (z.node, z.zone) {
            return Err(ProcError::inconsistent(
                FILE,
                line,
                format!(
                    "block counts for {} where {} was expected",
                    zone_label(node, zone),
                    zone_label(z.node, z.zone)
                ),
            ));
        }
        let counts = rest
            .split_whitespace()
            .map(|w| number(FILE, line, "block count", w))
            .collect::<Result<Vec<u64>, _>>()?;
        if counts.len() != columns.len() {
            return Err(ProcError::inconsistent(
                FILE,
                line,
                format!(
                    "{} block counts for {} migratetypes",
                    counts.len(),
                    columns.len()
                ),
            ));
        }
        z.area.pageblocks = counts;
        z.blocks_line = line;
    }
    Ok(())
}
