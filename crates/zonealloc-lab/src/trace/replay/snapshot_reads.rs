//! Where the after-snapshot's files were read in the trace: the end state compares each file
//! at its own read, not at the window's end marker ([`super::to_reads`]).
//!
//! `scripts/capture-kmem` writes `KT_SNAPSHOT_AFTER_BEGIN`, then reads, in this order
//! (`SNAP_AFTER`): zoneinfo, buddyinfo, pagetypeinfo, vmstat and meminfo, each with a `cat` of
//! its own, the `nodes/` and extfrag files (more `cat`s), and the pfn layout, `od` of
//! `/proc/kpageflags` piped into `awk`, then the same of `/proc/kpagecount`. Each file is the
//! kernel's state when its reader's `read` ran: after the reader's `exec` (its page tables,
//! stack and buffer: allocations) and before its output's page-cache page and its exit (a
//! run of frees). So a file was read at its reader's last allocation: the replay goes that
//! far. The layout's `od` reads the zones' pfns in order over its whole life (seconds on a
//! big machine); its last allocation is when it read the highest zone's.
//!
//! The reader is the n-th task of its command to appear after the marker (zoneinfo the first
//! `cat`, buddyinfo the second, pagetypeinfo the third, the layout the first `od`). Captures
//! written since also mark each read (`KT_SNAPSHOT_READ <file>`): the reader is then the
//! first task of its command after its file's marker, whatever else ran.
//!
//! The before-snapshot's zoneinfo ([`find_before`]), for `--whole-file`'s start
//! ([`super::whole_start`]), is read by the first `cat` after its `KT_SNAPSHOT_READ zoneinfo`
//! (captures since 2026-11-29 mark the before-snapshot's reads too), else by the last `cat`
//! before `KT_SNAPSHOT_BEFORE_END`.

use crate::trace::parse::lines;
use crate::trace::stats::HashMap;

/// A file of the after-snapshot that the end state compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapFile {
    /// `zoneinfo`: each CPU's `count` and `high`.
    Zoneinfo,
    /// `buddyinfo`: free blocks per order (the end state's headline figure).
    Buddyinfo,
    /// `pagetypeinfo`: free blocks per migratetype and order, pageblocks per migratetype.
    Pagetypeinfo,
    /// `layout`: the free blocks at their pfns (`/proc/kpageflags`).
    Layout,
}

impl SnapFile {
    /// Every file, in `capture-kmem`'s order of reading.
    pub const ALL: [SnapFile; 4] = [
        SnapFile::Zoneinfo,
        SnapFile::Buddyinfo,
        SnapFile::Pagetypeinfo,
        SnapFile::Layout,
    ];

    /// Its name in the snapshot folder (and in `KT_SNAPSHOT_READ`).
    pub fn name(self) -> &'static str {
        match self {
            SnapFile::Zoneinfo => "zoneinfo",
            SnapFile::Buddyinfo => "buddyinfo",
            SnapFile::Pagetypeinfo => "pagetypeinfo",
            SnapFile::Layout => "layout",
        }
    }

    /// Which `cat` from the last before `KT_SNAPSHOT_BEFORE_END` reads it (1: the last):
    /// `SNAP_BEFORE` reads buddyinfo, pagetypeinfo, vmstat, meminfo and zoneinfo last, in
    /// that order, each with a `cat` of its own (`None`: the layout, read by `od`).
    fn before_from_end(self) -> Option<usize> {
        match self {
            SnapFile::Zoneinfo => Some(1),
            SnapFile::Pagetypeinfo => Some(4),
            SnapFile::Buddyinfo => Some(5),
            SnapFile::Layout => None,
        }
    }

    /// Its reader's command, and which of that command's tasks after
    /// `KT_SNAPSHOT_AFTER_BEGIN` it is (1: the first).
    fn reader(self) -> (&'static [u8], usize) {
        match self {
            SnapFile::Zoneinfo => (b"cat", 1),
            SnapFile::Buddyinfo => (b"cat", 2),
            SnapFile::Pagetypeinfo => (b"cat", 3),
            SnapFile::Layout => (b"od", 1),
        }
    }
}

/// Where one file was read.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ReadAt {
    /// The file.
    pub file: &'static str,
    /// Its reader, `comm-pid`; `None` where no task of its command was found (the file is
    /// then compared at the window's end).
    pub reader: Option<String>,
    /// How the reader was found: `marker` (after its `KT_SNAPSHOT_READ`) or `order` (the
    /// n-th task of its command after the window's end marker).
    pub found_by: &'static str,
    /// Events replayed past the window's end before the file was compared.
    pub events_past_window: u64,
    /// Where the replay stops for it: the byte after its reader's last allocation's line in
    /// the text after the window (`find`'s input).
    #[serde(skip)]
    pub offset: usize,
}

/// A line's task (`comm-pid`, the text before ftrace's `[NNN]` CPU column) and its command.
fn task<'l>(line: &'l [u8], column: &memchr::memmem::Finder<'_>) -> Option<(&'l [u8], &'l [u8])> {
    let t = line.trim_ascii_start();
    let col = column.find(t)?;
    let task = t[..col].trim_ascii_end();
    let dash = memchr::memrchr(b'-', task)?;
    let pid = &task[dash + 1..];
    (!pid.is_empty() && pid.iter().all(u8::is_ascii_digit)).then_some((task, &task[..dash]))
}

/// A task of the text: where its lines are.
struct Seen<'t> {
    task: &'t [u8],
    comm: &'t [u8],
    /// How many `KT_SNAPSHOT_READ` markers came before its first line.
    after_marks: usize,
    /// The start of its first line.
    first: usize,
    /// The end of its last `mm_page_alloc` line.
    last_alloc: Option<usize>,
}

/// Where each of [`SnapFile::ALL`] was read in `text`, the trace after the window's end
/// marker (its first line, the marker's, cut): a [`ReadAt`] per file, in that order.
pub fn find(text: &[u8]) -> Vec<ReadAt> {
    let (seen, marks) = scan(text);
    SnapFile::ALL
        .iter()
        .map(|&file| {
            let (comm, nth) = file.reader();
            let mark = marks.iter().position(|m| *m == file.name().as_bytes());
            let (from, nth, found_by) = match mark {
                Some(k) => (k + 1, 1, "marker"),
                None => (0, nth, "order"),
            };
            let reader = seen
                .iter()
                .filter(|s| s.after_marks >= from && s.comm == comm)
                .nth(nth - 1);
            read_at(file, reader, found_by)
        })
        .collect()
}

/// Where the before-snapshot's zoneinfo was read in `text`, the trace from its start up to
/// the line of `KT_SNAPSHOT_BEFORE_END` (the lines after it are not looked at): `None` where
/// no `cat` ran before the marker. Where `capture-kmem` marked the read (`KT_SNAPSHOT_READ
/// zoneinfo`), its reader is the first `cat` to appear after that marker, whatever else ran
/// (`found_by` `marker`). Older captures mark no before-snapshot read: `capture-kmem` reads
/// the before-snapshot's `/proc` files last (`SNAP_BEFORE`: the layout's `od`s, the extfrag
/// and `nodes/` files, then buddyinfo, pagetypeinfo, vmstat, meminfo and zoneinfo, each with a
/// `cat`), so zoneinfo's reader is the last `cat` before the marker; the shipped captures
/// (`shared/kernel`, no layout and no `nodes/`) read zoneinfo first: `first`, its first `cat`
/// (`found_by` `order`). Read at its reader's last allocation, as [`find`]'s files
/// ([`ReadAt::offset`]: the end of that line in `text`).
pub fn find_before(text: &[u8], first: bool) -> Option<ReadAt> {
    find_before_of(text, SnapFile::Zoneinfo, first)
}

/// Where the before-snapshot's `file` was read in `text`, as [`find_before`] finds
/// zoneinfo's: the first `cat` after its `KT_SNAPSHOT_READ` marker, else, by `SNAP_BEFORE`'s
/// order, the `cat` that many from the last before `KT_SNAPSHOT_BEFORE_END`
/// ([`SnapFile::before_from_end`]; `first`: zoneinfo's, the first `cat`). `None` for the
/// layout (read by `od`), or where no such `cat` ran.
pub fn find_before_of(text: &[u8], file: SnapFile, first: bool) -> Option<ReadAt> {
    let [read] = find_before_each(text, [file], first);
    read
}

/// [`find_before_of`] for each of `files`, from one scan of `text` (the scan reads every
/// line of the before-snapshot's reads, the layout walk's tens of thousands among them: 31 M
/// instructions on 6.1-4g-loads p_fork).
pub fn find_before_each<const N: usize>(
    text: &[u8],
    files: [SnapFile; N],
    first: bool,
) -> [Option<ReadAt>; N] {
    let end = memchr::memmem::find(text, b"KT_SNAPSHOT_BEFORE_END").map_or(text.len(), |at| {
        memchr::memrchr(b'\n', &text[..at]).map_or(0, |nl| nl + 1)
    });
    let (seen, marks) = scan(&text[..end]);
    files.map(|file| {
        let name = file.name().as_bytes();
        if let Some(k) = marks.iter().position(|m| *m == name) {
            let reader = seen
                .iter()
                .find(|s| s.after_marks > k && s.comm == b"cat")?;
            return Some(read_at(file, Some(reader), "marker"));
        }
        let mut cats = seen.iter().filter(|s| s.comm == b"cat");
        let reader = match first && file == SnapFile::Zoneinfo {
            true => cats.next(),
            false => cats.nth_back(file.before_from_end()? - 1),
        };
        reader.map(|r| read_at(file, Some(r), "order"))
    })
}

/// `file`'s [`ReadAt`], read by `reader`.
fn read_at(file: SnapFile, reader: Option<&Seen<'_>>, found_by: &'static str) -> ReadAt {
    ReadAt {
        file: file.name(),
        reader: reader.map(|s| String::from_utf8_lossy(s.task).into_owned()),
        found_by,
        events_past_window: 0,
        offset: reader.map_or(0, |s| s.last_alloc.unwrap_or(s.first)),
    }
}

/// The tasks of `text` in the order they first appear, and its `KT_SNAPSHOT_READ` markers'
/// files. (Each pattern is searched in the whole text at once, and each line's task is
/// looked up in a map unless it is the line before's: the scan reads every line of the
/// snapshot reads, tens of thousands with a layout walk.)
fn scan(text: &[u8]) -> (Vec<Seen<'_>>, Vec<&[u8]>) {
    const READ_MARK: &[u8] = b"tracing_mark_write: KT_SNAPSHOT_READ ";
    let mut seen: Vec<Seen<'_>> = Vec::new();
    // Per `KT_SNAPSHOT_READ` marker: its file's name.
    let mut marks: Vec<&[u8]> = Vec::new();
    let mut index: HashMap<&[u8], usize> = HashMap::default();
    let mut last: Option<(&[u8], usize)> = None;
    let mut mark_at = memchr::memmem::find_iter(text, READ_MARK).peekable();
    let mut alloc_at = memchr::memmem::find_iter(text, b": mm_page_alloc: ").peekable();
    let column = memchr::memmem::Finder::new(b" [");
    let mut at = 0usize;
    for line in lines(text) {
        let start = at;
        at += line.len();
        if let Some(m) = next_within(&mut mark_at, start, at) {
            let rest = &text[m + READ_MARK.len()..at];
            let name = rest.split(|b| b.is_ascii_whitespace()).next();
            marks.push(name.unwrap_or_default());
            continue;
        }
        let Some((task, comm)) = task(line, &column) else {
            continue;
        };
        let i = match last {
            Some((t, i)) if t == task => i,
            _ => *index.entry(task).or_insert_with(|| {
                seen.push(Seen {
                    task,
                    comm,
                    after_marks: marks.len(),
                    first: start,
                    last_alloc: None,
                });
                seen.len() - 1
            }),
        };
        last = Some((task, i));
        if next_within(&mut alloc_at, start, at).is_some() {
            seen[i].last_alloc = Some(at);
        }
    }
    (seen, marks)
}

/// The first of the ascending positions `at` in `start..end`, those before `start` passed.
fn next_within(
    at: &mut std::iter::Peekable<impl Iterator<Item = usize>>,
    start: usize,
    end: usize,
) -> Option<usize> {
    while at.next_if(|&p| p < start).is_some() {}
    at.peek().copied().filter(|&p| p < end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(task: &str, what: &str) -> String {
        format!("  {task:>16}    [001] .....   10.000001: {what}\n")
    }

    const ALLOC: &str =
        "mm_page_alloc: page=0x1 pfn=0x1000 order=0 migratetype=0 gfp_flags=GFP_KERNEL";
    const FREE: &str = "mm_page_free: page=0x1 pfn=0x1000 order=0";

    #[test]
    fn each_file_is_read_at_its_readers_last_allocation_in_capture_kmems_order() {
        let mut t = String::from(" p_x\n");
        for task in ["cat-10", "cat-11", "cat-12"] {
            t += &line(task, ALLOC);
            t += &line("kworker/1:1-5", FREE);
            t += &line(task, ALLOC);
            t += &line(task, FREE);
        }
        t += &line("dash-7", ALLOC);
        t += &line("od-13", ALLOC);
        t += &line("awk-14", ALLOC);
        t += &line("od-13", ALLOC);
        t += &line("od-13", FREE);
        t += &line("od-15", ALLOC);
        let reads = find(t.as_bytes());
        let names: Vec<_> = reads.iter().map(|r| r.reader.as_deref()).collect();
        assert_eq!(
            names,
            [
                Some("cat-10"),
                Some("cat-11"),
                Some("cat-12"),
                Some("od-13")
            ]
        );
        // Each ends after its reader's second allocation's line: before its exit's free.
        for r in &reads {
            let task = r.reader.as_deref().unwrap();
            let upto = &t[..r.offset];
            assert!(upto.ends_with(&line(task, ALLOC)), "{r:?}");
            assert_eq!(upto.matches(&format!("{task:>16} ")).count(), 2, "{r:?}");
            assert_eq!(r.found_by, "order");
        }
    }

    #[test]
    fn a_read_marker_names_the_reader_whatever_ran_before_and_a_missing_one_is_none() {
        let mut t = String::from(" p_x\n");
        // A cat of another's before the capture's reads: without markers it would be
        // zoneinfo's reader.
        t += &line("cat-9", ALLOC);
        t += &line(
            "dash-7",
            "tracing_mark_write: KT_SNAPSHOT_READ zoneinfo p_x",
        );
        t += &line("cat-10", ALLOC);
        t += &line(
            "dash-7",
            "tracing_mark_write: KT_SNAPSHOT_READ buddyinfo p_x",
        );
        t += &line("cat-11", FREE);
        let reads = find(t.as_bytes());
        assert_eq!(reads[0].reader.as_deref(), Some("cat-10"));
        assert_eq!(reads[0].found_by, "marker");
        // A reader without an allocation: read before its first line.
        assert_eq!(reads[1].reader.as_deref(), Some("cat-11"));
        assert_eq!(&t[reads[1].offset..], line("cat-11", FREE));
        // No marker for pagetypeinfo: the third cat after the window's end; no od at all.
        assert_eq!(reads[2].reader.as_deref(), Some("cat-11"));
        assert_eq!(reads[3].reader, None);
        assert_eq!(reads[3].offset, 0);
    }

    #[test]
    fn the_before_snapshots_zoneinfo_is_its_last_cat_or_the_shipped_captures_first() {
        let mut t = String::from("# tracer: nop\n");
        t += &line("dash-7", "tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN p_x");
        t += &line("od-8", ALLOC);
        t += &line("cat-9", ALLOC);
        t += &line("cat-10", ALLOC);
        t += &line("cat-10", ALLOC);
        t += &line("cat-10", FREE);
        t += &line("dash-7", "tracing_mark_write: KT_SNAPSHOT_BEFORE_END p_x");
        t += &line("cat-11", ALLOC);
        let last = find_before(t.as_bytes(), false).unwrap();
        assert_eq!(last.reader.as_deref(), Some("cat-10"));
        // At its second allocation, before its free; the cat after the marker is not one.
        let upto = &t[..last.offset];
        assert!(upto.ends_with(&line("cat-10", ALLOC)), "{upto}");
        assert_eq!(upto.matches("cat-10 ").count(), 2);
        let first = find_before(t.as_bytes(), true).unwrap();
        assert_eq!(first.reader.as_deref(), Some("cat-9"));
        assert!(find_before(line("od-8", ALLOC).as_bytes(), false).is_none());
    }

    #[test]
    fn a_before_read_marker_names_zoneinfos_reader_over_the_last_cat() {
        let mut t = String::from("# tracer: nop\n");
        t += &line("dash-7", "tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN p_x");
        t += &line("dash-7", "tracing_mark_write: KT_SNAPSHOT_READ layout p_x");
        t += &line("od-8", ALLOC);
        t += &line(
            "dash-7",
            "tracing_mark_write: KT_SNAPSHOT_READ buddyinfo p_x",
        );
        t += &line("cat-9", ALLOC);
        // A cat of another's before zoneinfo's reader, started ahead of the marker.
        t += &line("cat-20", ALLOC);
        t += &line(
            "dash-7",
            "tracing_mark_write: KT_SNAPSHOT_READ zoneinfo p_x",
        );
        t += &line("cat-20", ALLOC);
        t += &line("cat-10", ALLOC);
        t += &line("cat-10", ALLOC);
        t += &line("cat-10", FREE);
        // Another's cat after zoneinfo's reader: the last cat before the end marker.
        t += &line("cat-21", ALLOC);
        t += &line("dash-7", "tracing_mark_write: KT_SNAPSHOT_BEFORE_END p_x");
        let read = find_before(t.as_bytes(), false).unwrap();
        assert_eq!(read.reader.as_deref(), Some("cat-10"));
        assert_eq!(read.found_by, "marker");
        let upto = &t[..read.offset];
        assert!(upto.ends_with(&line("cat-10", ALLOC)), "{upto}");
        assert_eq!(upto.matches("cat-10 ").count(), 2);
        // `first` (the shipped captures' rule) gives way to the marker too.
        let first = find_before(t.as_bytes(), true).unwrap();
        assert_eq!(first.reader.as_deref(), Some("cat-10"));
        // A marker with no cat appearing after it (cat-20 ran before it): no read found, not
        // a cat from before it.
        let mut only_mark = t[..t.find("cat-10").unwrap()].to_owned();
        only_mark += &line("dash-7", "tracing_mark_write: KT_SNAPSHOT_BEFORE_END p_x");
        assert!(find_before(only_mark.as_bytes(), false).is_none());
    }

    #[test]
    fn the_before_snapshots_pagetypeinfo_is_the_cat_after_its_marker_or_the_fourth_from_last() {
        let mut t = String::from("# tracer: nop\n");
        t += &line("dash-7", "tracing_mark_write: KT_SNAPSHOT_BEFORE_BEGIN p_x");
        t += &line("od-8", ALLOC);
        // SNAP_BEFORE: buddyinfo, pagetypeinfo, vmstat, meminfo, zoneinfo, a cat each.
        for cat in ["cat-9", "cat-10", "cat-11", "cat-12", "cat-13"] {
            t += &line(cat, ALLOC);
        }
        t += &line("dash-7", "tracing_mark_write: KT_SNAPSHOT_BEFORE_END p_x");
        let pti = find_before_of(t.as_bytes(), SnapFile::Pagetypeinfo, false).unwrap();
        assert_eq!(
            (pti.reader.as_deref(), pti.found_by),
            (Some("cat-10"), "order")
        );
        assert!(t[..pti.offset].ends_with(&line("cat-10", ALLOC)));
        let buddy = find_before_of(t.as_bytes(), SnapFile::Buddyinfo, true).unwrap();
        assert_eq!(buddy.reader.as_deref(), Some("cat-9"));
        assert!(find_before_of(t.as_bytes(), SnapFile::Layout, false).is_none());
        // Too few cats: not found.
        let short = t
            .replace(&line("cat-9", ALLOC), "")
            .replace(&line("cat-10", ALLOC), "");
        assert!(find_before_of(short.as_bytes(), SnapFile::Pagetypeinfo, false).is_none());
        // A marker names the first cat after it, whatever runs after.
        let marked = t.replace(
            &line("cat-12", ALLOC),
            &(line(
                "dash-7",
                "tracing_mark_write: KT_SNAPSHOT_READ pagetypeinfo p_x",
            ) + &line("cat-12", ALLOC)),
        );
        let pti = find_before_of(marked.as_bytes(), SnapFile::Pagetypeinfo, false).unwrap();
        assert_eq!(
            (pti.reader.as_deref(), pti.found_by),
            (Some("cat-12"), "marker")
        );
    }

    #[test]
    fn tasks_are_read_off_the_lines_prefix() {
        let l = line("kworker/u8:2-77", FREE);
        let column = memchr::memmem::Finder::new(b" [");
        assert_eq!(
            task(l.as_bytes(), &column),
            Some((&b"kworker/u8:2-77"[..], &b"kworker/u8:2"[..]))
        );
        assert_eq!(task(b"no task here\n", &column), None);
        assert_eq!(task(b"  a-b [000] x\n", &column), None);
    }
}
