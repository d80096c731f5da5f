//! The pfn layout `capture-kmem` writes beside a snapshot (`layout`: runs of pfn classes from
//! `/proc/kpageflags`; scripts/README.md, "The pfn layout"): where the free blocks lie, which
//! pages are in use and which could be on a per-CPU list.
//!
//! ```text
//! # zonealloc pfn layout 1: start_pfn count class; max_order 10
//! 0 1 R
//! 1 158 B
//! end 159
//! ```
//!
//! The runs are in pfn order and contiguous from pfn 0, no two neighbours of one class, and
//! `end N` closes the file (a file without it was cut short). What the kernel does not show
//! is inferred here: the free blocks of a `B` run are its greedy split into aligned blocks
//! ([`free_blocks`]), as `__free_one_page` merges two free buddies of one order. Migratetypes
//! and the per-CPU lists are not in the file; the replay's set-up assigns them.

use super::error::{ErrorKind, ProcError, ProcFile};
use super::MAX_PFN;

/// The largest `layout` read: 64 MiB. A busy, fragmented 24 GiB machine writes 171k runs in
/// 2.1 MB (4.4 MB on this session's own 24 GiB capture), so this covers some 300 GiB of the
/// same fragmentation; the runs take 16 bytes each in memory, at most 180 MB.
pub const MAX_LAYOUT_BYTES: u64 = 64 << 20;

/// The first line's fixed part; `max_order N` follows after `; `.
const HEADER: &str = "# zonealloc pfn layout 1: ";

/// What a run of pfns was (kpageflags' first matching flag; scripts/README.md's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PageClass {
    /// `N`: no online `struct page` (a hole).
    NoPage,
    /// `B`: in a free block of the buddy free lists.
    Buddy,
    /// `R`: `PG_reserved`, never in the allocator.
    Reserved,
    /// `O`: `PageOffline` (ballooned out, not onlined).
    Offline,
    /// `H`: a hugetlb page.
    Huge,
    /// `S`: slab.
    Slab,
    /// `T`: a page table.
    PageTable,
    /// `M`: user memory or page cache (LRU, mapped, anon, swap-backed, THP).
    Mapped,
    /// `U`: in use with a flag the other classes do not name.
    Used,
    /// `F`: no flag at all: on a per-CPU list, or allocated without any flag.
    Flagless,
}

impl PageClass {
    /// The class of a layout letter.
    pub fn from_letter(c: u8) -> Option<PageClass> {
        Some(match c {
            b'N' => PageClass::NoPage,
            b'B' => PageClass::Buddy,
            b'R' => PageClass::Reserved,
            b'O' => PageClass::Offline,
            b'H' => PageClass::Huge,
            b'S' => PageClass::Slab,
            b'T' => PageClass::PageTable,
            b'M' => PageClass::Mapped,
            b'U' => PageClass::Used,
            b'F' => PageClass::Flagless,
            _ => return None,
        })
    }

    /// Whether the buddy allocator manages pages of this class (`managed_pages` counts
    /// them): free, on a per-CPU list or allocated. Holes, reserved and offline pages are
    /// not (`adjust_managed_page_count` takes ballooned pages out).
    pub fn managed(self) -> bool {
        !matches!(
            self,
            PageClass::NoPage | PageClass::Reserved | PageClass::Offline
        )
    }
}

/// One line of `layout`: pfns `start..start + count`, all of `class`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutRun {
    /// First pfn.
    pub start: u64,
    /// Pfns in the run (at least 1).
    pub count: u64,
    /// Their class.
    pub class: PageClass,
}

impl LayoutRun {
    /// One past the last pfn.
    pub fn end(&self) -> u64 {
        self.start + self.count
    }
}

/// A `layout` file, read and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The highest order of the free lists the capture saw (buddyinfo's columns less one).
    pub max_order: u8,
    /// The runs, contiguous from pfn 0.
    runs: Vec<(u64, PageClass)>,
    /// The number of pfns read (the `end` line).
    pub end: u64,
}

impl Layout {
    /// The runs that meet `range`, clipped to it, in pfn order.
    pub fn runs_in(&self, range: std::ops::Range<u64>) -> impl Iterator<Item = LayoutRun> + '_ {
        // The first run that ends after `range.start`.
        let first = self.runs.partition_point(|&(s, _)| s <= range.start);
        let from = first.saturating_sub(1);
        let end = self.end;
        self.runs[from..]
            .iter()
            .enumerate()
            .map(move |(i, &(start, class))| {
                let next = self.runs.get(from + i + 1).map_or(end, |r| r.0);
                (start, next, class)
            })
            .take_while(move |&(start, _, _)| start < range.end)
            .filter_map(move |(start, next, class)| {
                let (s, e) = (start.max(range.start), next.min(range.end));
                (s < e).then_some(LayoutRun {
                    start: s,
                    count: e - s,
                    class,
                })
            })
    }

    /// The number of runs.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether there are no runs (a layout of zero pfns).
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The free blocks `(pfn, order)` in `range`: the greedy split of each `B` run clipped to
    /// it (a zone's span: the buddy merges no block across a zone's end), at most `max_order`.
    pub fn free_blocks(&self, range: std::ops::Range<u64>, max_order: u8) -> Vec<(u64, u8)> {
        let mut out = Vec::new();
        for run in self.runs_in(range) {
            if run.class == PageClass::Buddy {
                free_blocks(&run, max_order, &mut out);
            }
        }
        out
    }

    /// Free blocks per order `0..=max_order` in `range` ([`free_blocks`](Self::free_blocks)).
    pub fn free_per_order(&self, range: std::ops::Range<u64>, max_order: u8) -> Vec<u64> {
        let mut n = vec![0u64; usize::from(max_order) + 1];
        for (_, o) in self.free_blocks(range, max_order) {
            n[usize::from(o)] += 1;
        }
        n
    }

    /// Pages of each class in `range`: `(class, pages)` for the classes present.
    pub fn pages_by_class(&self, range: std::ops::Range<u64>) -> Vec<(PageClass, u64)> {
        let mut out: Vec<(PageClass, u64)> = Vec::new();
        for run in self.runs_in(range) {
            match out.iter_mut().find(|(c, _)| *c == run.class) {
                Some((_, n)) => *n += run.count,
                None => out.push((run.class, run.count)),
            }
        }
        out
    }
}

/// Appends the free blocks `(pfn, order)` of a `B` run to `out`: its greedy split into aligned
/// blocks of at most `max_order` (scripts/README.md: any other split leaves two free buddies
/// of one order side by side, which `__free_one_page` would have merged).
pub fn free_blocks(run: &LayoutRun, max_order: u8, out: &mut Vec<(u64, u8)>) {
    let (mut pfn, end) = (run.start, run.end());
    while pfn < end {
        let mut k = 0u8;
        // `end - pfn`, not `pfn + size`: no sum that could wrap.
        while k < max_order && k < 63 && pfn % (2u64 << k) == 0 && end - pfn >= 2u64 << k {
            k += 1;
        }
        out.push((pfn, k));
        pfn += 1u64 << k;
    }
}

/// Reads a `layout` text (module docs). Every error names its line; no input panics, and the
/// runs kept are at most one per line of a text the caller bounded ([`MAX_LAYOUT_BYTES`]).
pub fn parse_layout(text: &str) -> Result<Layout, ProcError> {
    let fail = |line, expected: &'static str, found: &str| {
        let found = found.trim().chars().take(80).collect();
        ProcError::new(
            ProcFile::Layout,
            line,
            ErrorKind::Unexpected { expected, found },
        )
    };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let header = lines.next().map_or("", |(_, l)| l);
    let max_order = header
        .strip_prefix(HEADER)
        .and_then(|h| h.rsplit_once("max_order "))
        .and_then(|(_, m)| m.trim_end().parse::<u8>().ok())
        .filter(|&m| m <= zonealloc::MAX_ORDER_LIMIT)
        .ok_or_else(|| {
            fail(
                1,
                "`# zonealloc pfn layout 1: ...; max_order N` (N at most the core's limit)",
                header,
            )
        })?;
    let number = |n: usize, field: &str, s: &str| -> Result<u64, ProcError> {
        super::error::number::<u64>(ProcFile::Layout, n, field, s)
    };
    let mut runs: Vec<(u64, PageClass)> = Vec::new();
    let mut next = 0u64;
    for (n, line) in lines {
        if line.starts_with('#') {
            continue;
        }
        let mut f = line.split(' ');
        let (a, b, c, rest) = (f.next(), f.next(), f.next(), f.next());
        if a == Some("end") {
            let end = match (b, c) {
                (Some(e), None) => number(n, "end", e)?,
                _ => return Err(fail(n, "`end N`", line)),
            };
            if end != next {
                let what = format!("`end {end}`, but the runs end at pfn {next}");
                return Err(ProcError::inconsistent(ProcFile::Layout, n, what));
            }
            return Ok(Layout {
                max_order,
                runs,
                end,
            });
        }
        let (Some(a), Some(b), Some(c), None) = (a, b, c, rest) else {
            return Err(fail(n, "`start_pfn count class`", line));
        };
        let (start, count) = (number(n, "start_pfn", a)?, number(n, "count", b)?);
        let class = match c.as_bytes() {
            [l] => PageClass::from_letter(*l),
            _ => None,
        }
        .ok_or_else(|| fail(n, "a class letter of NBROHSTMUF", c))?;
        let end = start.checked_add(count).filter(|&e| e <= MAX_PFN);
        let same = runs.last().is_some_and(|&(_, c)| c == class);
        if start != next || count == 0 || same || end.is_none() {
            let what = format!(
                "run {start} {count} {c}: not the next run (it must start at pfn {next}, \
                 hold at least one pfn, end below 2^40 and differ in class from the one before)"
            );
            return Err(ProcError::inconsistent(ProcFile::Layout, n, what));
        }
        next = end.unwrap_or(next);
        runs.push((start, class));
    }
    Err(ProcError::new(
        ProcFile::Layout,
        super::error::end_line(text),
        ErrorKind::UnexpectedEnd {
            expected: "`end N`: the file is cut short".to_owned(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "# zonealloc pfn layout 1: start_pfn count class; max_order 3\n\
                         0 1 R\n1 14 B\n15 1 F\n# a comment\n16 5 M\n21 3 B\nend 24\n";

    #[test]
    fn a_small_layout_reads_and_splits_its_free_runs_greedily() {
        let l = parse_layout(SMALL).unwrap();
        assert_eq!((l.max_order, l.len(), l.end), (3, 5, 24));
        // 1..15: 1 (order 0), 2..4 (1), 4..8 (2), 8..12 (2: order 3 would need 8..16), ...
        assert_eq!(
            l.free_blocks(0..24, 3),
            vec![
                (1, 0),
                (2, 1),
                (4, 2),
                (8, 2),
                (12, 1),
                (14, 0),
                (21, 0),
                (22, 1)
            ]
        );
        assert_eq!(l.free_per_order(0..24, 3), vec![3, 3, 2, 0]);
        // Clipped to a zone of 4..16: no block crosses its start.
        assert_eq!(
            l.free_blocks(4..16, 3),
            vec![(4, 2), (8, 2), (12, 1), (14, 0)]
        );
        let runs: Vec<_> = l.runs_in(14..17).map(|r| (r.start, r.count)).collect();
        assert_eq!(runs, vec![(14, 1), (15, 1), (16, 1)]);
        assert_eq!(
            l.pages_by_class(0..24),
            vec![
                (PageClass::Reserved, 1),
                (PageClass::Buddy, 17),
                (PageClass::Flagless, 1),
                (PageClass::Mapped, 5)
            ]
        );
    }

    #[test]
    fn an_aligned_free_run_is_capped_at_max_order() {
        let text = "# zonealloc pfn layout 1: x; max_order 2\n0 16 B\nend 16\n";
        let l = parse_layout(text).unwrap();
        assert_eq!(l.free_per_order(0..16, 2), vec![0, 0, 4]);
    }

    #[test]
    fn damaged_layouts_are_refused_with_their_line() {
        let cases: [(&str, usize); 9] = [
            ("", 1),
            ("# zonealloc pfn layout 2: x; max_order 3\nend 0\n", 1),
            ("# zonealloc pfn layout 1: x; max_order 99\nend 0\n", 1),
            ("# zonealloc pfn layout 1: x; max_order 3\n0 2 B\n", 3),
            (
                "# zonealloc pfn layout 1: x; max_order 3\n0 2 B\n2 1 B\nend 3\n",
                3,
            ),
            (
                "# zonealloc pfn layout 1: x; max_order 3\n0 2 B\n3 1 F\nend 4\n",
                3,
            ),
            (
                "# zonealloc pfn layout 1: x; max_order 3\n0 2 Q\nend 2\n",
                2,
            ),
            (
                "# zonealloc pfn layout 1: x; max_order 3\n0 2 B\nend 3\n",
                3,
            ),
            (
                "# zonealloc pfn layout 1: x; max_order 3\n0 1099511627777 B\nend 1\n",
                2,
            ),
        ];
        for (text, line) in cases {
            let e = parse_layout(text).unwrap_err();
            assert_eq!((e.file, e.line), (ProcFile::Layout, line), "{text:?}: {e}");
        }
        // A zero count, a number that is not one, a fourth field.
        for run in ["0 0 B", "0 x B", "0 1 B extra", "-1 1 B"] {
            let text = format!("{HEADER}x; max_order 3\n{run}\nend 1\n");
            assert_eq!(parse_layout(&text).unwrap_err().line, 2, "{run}");
        }
    }
}
