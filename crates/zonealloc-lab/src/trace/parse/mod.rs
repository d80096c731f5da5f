//! A streaming parser for the kernel's `kmem` page-allocator tracepoints as text.
//!
//! The events and their `TP_printk` formats (`include/trace/events/kmem.h`):
//!
//! ```text
//! mm_page_free               "page=%p pfn=0x%lx order=%d"
//! mm_page_free_batched       "page=%p pfn=0x%lx order=0"
//! mm_page_alloc              "page=%p pfn=0x%lx order=%d migratetype=%d gfp_flags=%s"
//! mm_page_alloc_zone_locked  "page=%p pfn=0x%lx order=%u migratetype=%d percpu_refill=%d"
//! mm_page_pcpu_drain         "page=%p pfn=0x%lx order=%d migratetype=%d"
//! mm_page_alloc_extfrag      "page=%p pfn=0x%lx alloc_order=%d fallback_order=%d
//!                             pageblock_order=%d alloc_migratetype=%d
//!                             fallback_migratetype=%d fragmenting=%d change_ownership=%d"
//! ```
//!
//! The line prefixes the tools put in front of them:
//!
//! ```text
//! ftrace (trace, trace_pipe):  comm-pid [cpu] flags ts: mm_page_alloc: k=v ...
//!                              comm-pid [cpu] ts: mm_page_alloc: k=v ...   (no irqs-off column)
//! perf script:                 comm pid [cpu] ts: kmem:mm_page_alloc: k=v ...
//! trace-cmd report:            comm-pid [cpu] ts: mm_page_alloc:    k=v ...
//! ```
//!
//! The scanner works on bytes, allocates nothing per line and never panics: the CPU is the
//! first `[digits]` token, the timestamp the first `digits.digits:` token after it, the event
//! name the next token ending in `:` (a `kmem:` prefix is dropped), and the tail is split into
//! `key=value` tokens (tokens without `=`, such as libtraceevent's `[FAILED TO PARSE]`, are
//! ignored). `pfn` is hex with `0x` or decimal without (kernels before 5.14 and raw fallbacks);
//! `page` is opaque (hashed, raw, `(____ptrval____)`, `NULL`, `(null)`, `(nil)` or missing).
//! Lines of other events are counted and skipped; `#` lines are comments.
//!
//! # Hostile input
//! Lines end in LF, CRLF or CR. A line longer than [`Parser::max_line_bytes`] (64 KiB unless
//! set) stops the read with [`InputError::LineTooLong`] naming it, so no input (`/dev/zero`, a
//! decompressor's newline-free output) makes the reader hold more than that. After a read,
//! [`Parser::check_trace`] refuses input with no page event or mostly malformed lines (an ELF
//! binary, `/dev/null`, a trace of other events).
//!
//! # Reading a trace
//! ```no_run
//! use zonealloc_lab::trace::parse::{self, Parser};
//! # fn main() -> std::io::Result<()> {
//! // A path (`-` is standard input), or any `Read` through `parse::decode`; gzip, zstd and xz
//! // are decompressed by their magic bytes.
//! let input = parse::open(std::path::Path::new("-"))?;
//! let mut parser = Parser::new();
//! let mut allocs = 0u64;
//! parser.read_all(input, |ev| allocs += u64::from(ev.kind.name() == "mm_page_alloc"))?;
//! parser.check_trace()?;
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::io::{self, BufRead};

pub use super::input::{decode, open};

mod compaction;
mod fast;
mod line;
mod lines;
#[cfg(test)]
mod tests;
mod who;

pub use lines::{lines, Lines};
pub use who::{Ctx, Task, Who};

use line::{parse_line, LineKind};

/// How many malformed line numbers a [`Parser`] keeps.
pub const MALFORMED_KEPT: usize = 5;

/// The longest line a [`Parser`] reads by default. The kernel prints each event into one
/// `trace_seq` page (4 KiB); the tools' prefixes add a few dozen bytes.
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// What the `page=` field said. The frame is always keyed on the pfn; this only tells a NULL
/// page (a failed allocation) from a present one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PagePtr {
    /// A pointer of any shape: raw hex, `0x…`, hashed or `(____ptrval____)`.
    Present,
    /// `NULL`, `(null)`, `(nil)`, `0x0` or all zeros.
    Null,
    /// No `page=` field at all.
    Missing,
}

/// One parsed `kmem` event with the prefix fields of its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event<'a> {
    /// CPU from the `[NNN]` column, if the line has one.
    pub cpu: Option<u32>,
    /// Timestamp in nanoseconds (the printed `seconds.fraction` scaled), if present.
    pub ts_ns: Option<u64>,
    /// The `page=` pointer shape.
    pub page: PagePtr,
    /// The event and its fields.
    pub kind: EventKind<'a>,
    /// Who ran it: the task and the latency column, where the line shows them.
    pub who: Who,
}

/// The six page-allocator events and their fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind<'a> {
    /// `mm_page_alloc`: a page handed out (or a failure: pfn 0, NULL page).
    Alloc {
        /// Page frame number.
        pfn: u64,
        /// Allocation order.
        order: u8,
        /// Requested migratetype.
        migratetype: u8,
        /// `gfp_flags` as printed (symbolic like `GFP_KERNEL|__GFP_ZERO`, or hex).
        gfp_flags: &'a str,
    },
    /// `mm_page_free`: a free reaching the page allocator.
    Free {
        /// Page frame number.
        pfn: u64,
        /// Order of the freed block.
        order: u8,
    },
    /// `mm_page_free_batched`: a folio freed by `free_unref_folios` (also logged as
    /// `mm_page_free` before).
    FreeBatched {
        /// Page frame number.
        pfn: u64,
    },
    /// `mm_page_alloc_zone_locked`: a block taken from the buddy under `zone->lock`.
    ZoneLocked {
        /// Page frame number.
        pfn: u64,
        /// Block order.
        order: u8,
        /// Migratetype.
        migratetype: u8,
        /// `percpu_refill=1`: the order is PCP-eligible (a refill, typically).
        percpu_refill: bool,
    },
    /// `mm_page_pcpu_drain`: a block moved from a PCP list back to the buddy.
    PcpuDrain {
        /// Page frame number.
        pfn: u64,
        /// Block order.
        order: u8,
        /// Pageblock migratetype at drain time.
        migratetype: u8,
    },
    /// `mm_page_alloc_extfrag`: a fallback to another migratetype's free list.
    Extfrag {
        /// Page frame number.
        pfn: u64,
        /// Requested order.
        alloc_order: u8,
        /// Order of the block fallen back to.
        fallback_order: u8,
        /// Requested migratetype.
        alloc_migratetype: u8,
        /// Migratetype fallen back to.
        fallback_migratetype: u8,
        /// `fragmenting=1` (0 when absent).
        fragmenting: bool,
        /// `change_ownership=1` (0 when absent).
        change_ownership: bool,
    },
    /// `vmscan:mm_vmscan_kswapd_wake`: kswapd of node `nid` wakes to reclaim (it then runs
    /// `balance_pgdat`, which sets `ZONE_RECLAIM_ACTIVE` on the node's zones).
    KswapdWake {
        /// The node.
        nid: u32,
        /// The order it reclaims for.
        order: u8,
    },
    /// `vmscan:mm_vmscan_kswapd_sleep`: kswapd of node `nid` goes back to sleep (its
    /// `balance_pgdat` has cleared `ZONE_RECLAIM_ACTIVE`).
    KswapdSleep {
        /// The node.
        nid: u32,
    },
    /// `workqueue:workqueue_execute_start` of `vmstat_update`: the line's CPU's vmstat
    /// worker begins a run (`refresh_cpu_vm_stats(true)`, `mm/vmstat.c`).
    VmstatUpdate,
    /// `workqueue:workqueue_execute_start` of `vmstat_shepherd`: the shepherd begins a run
    /// (it queues the worker of each CPU with counters to fold and none pending).
    VmstatShepherd,
    /// `compaction:mm_compaction_isolate_freepages` (`isolate_freepages_block`,
    /// `mm/compaction.c`): compaction's free scanner took `nr_taken` pages, whole free
    /// blocks whose heads lie in `start_pfn..end_pfn`, off the free lists with no kmem event
    /// (`__isolate_free_page`). With `fast`, `mm_compaction_fast_isolate_freepages`
    /// (`fast_isolate_freepages`, 6.12 and later): at most one `Movable` block of
    /// `nr_taken` pages from the free lists, searched from `start_pfn` (`min_pfn`) up;
    /// `end_pfn` is the scanner's `free_pfn`.
    CompactIsolate {
        /// The scan's first pfn.
        start_pfn: u64,
        /// Where the scan stopped (`blockpfn`), or the fast path's `free_pfn`.
        end_pfn: u64,
        /// Pages taken.
        nr_taken: u32,
        /// `mm_compaction_fast_isolate_freepages`.
        fast: bool,
    },
}

impl EventKind<'_> {
    /// The tracepoint name.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::Alloc { .. } => "mm_page_alloc",
            EventKind::Free { .. } => "mm_page_free",
            EventKind::FreeBatched { .. } => "mm_page_free_batched",
            EventKind::ZoneLocked { .. } => "mm_page_alloc_zone_locked",
            EventKind::PcpuDrain { .. } => "mm_page_pcpu_drain",
            EventKind::Extfrag { .. } => "mm_page_alloc_extfrag",
            EventKind::KswapdWake { .. } => "mm_vmscan_kswapd_wake",
            EventKind::KswapdSleep { .. } => "mm_vmscan_kswapd_sleep",
            EventKind::VmstatUpdate | EventKind::VmstatShepherd => "workqueue_execute_start",
            EventKind::CompactIsolate { fast: false, .. } => "mm_compaction_isolate_freepages",
            EventKind::CompactIsolate { fast: true, .. } => "mm_compaction_fast_isolate_freepages",
        }
    }

    /// A vmstat worker's or the shepherd's run (`workqueue_execute_start`): no step of the
    /// page allocator, read only by the replay's vmstat workers; every inference passes it by.
    #[inline(always)]
    pub fn is_work(&self) -> bool {
        matches!(self, EventKind::VmstatUpdate | EventKind::VmstatShepherd)
    }

    /// The event's page frame number (0 for kswapd's and the workqueue's events, which name
    /// no page).
    pub fn pfn(&self) -> u64 {
        match *self {
            EventKind::KswapdWake { .. }
            | EventKind::KswapdSleep { .. }
            | EventKind::VmstatUpdate
            | EventKind::VmstatShepherd
            | EventKind::CompactIsolate { .. } => 0,
            EventKind::Alloc { pfn, .. }
            | EventKind::Free { pfn, .. }
            | EventKind::FreeBatched { pfn }
            | EventKind::ZoneLocked { pfn, .. }
            | EventKind::PcpuDrain { pfn, .. }
            | EventKind::Extfrag { pfn, .. } => pfn,
        }
    }
}

impl Event<'_> {
    /// A failed allocation: `mm_page_alloc` with a NULL page, or pfn 0 and no page field. A
    /// present page at pfn 0 is a real frame (zones of our own traces may start there).
    pub fn is_failed_alloc(&self) -> bool {
        matches!(self.kind, EventKind::Alloc { pfn, .. }
            if self.page == PagePtr::Null || (pfn == 0 && self.page == PagePtr::Missing))
    }
}

/// A malformed line: its 1-based number and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// 1-based line number.
    pub line: u64,
    /// What was wrong.
    pub reason: &'static str,
}

/// Why an input cannot be read as a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    /// A line longer than the parser's limit (binary data, or text without line ends).
    LineTooLong {
        /// 1-based line number.
        line: u64,
        /// The limit, [`Parser::max_line_bytes`].
        max_bytes: usize,
    },
    /// Not one `kmem` page event in the whole input.
    NoEvents {
        /// Lines read.
        lines: u64,
    },
    /// More malformed lines than lines of events (page events and others) together.
    MostlyMalformed {
        /// Lines read.
        lines: u64,
        /// Page events among them.
        events: u64,
        /// Malformed lines among them.
        malformed: u64,
        /// The first malformed lines.
        first: Vec<Malformed>,
    },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LineTooLong { line, max_bytes } => write!(
                f,
                "line {line} is longer than {max_bytes} bytes, the limit of a trace line \
                 (binary data, or text without line ends?)"
            ),
            Self::NoEvents { lines: 0 } => {
                f.write_str("empty input: not one kmem page-allocator event")
            }
            Self::NoEvents { lines } => write!(
                f,
                "not one kmem page-allocator event (mm_page_alloc, mm_page_free, ...) in \
                 {lines} line(s): not a kmem trace"
            ),
            Self::MostlyMalformed {
                lines,
                events,
                malformed,
                first,
            } => {
                write!(
                    f,
                    "{malformed} of {lines} lines are malformed and only {events} are page \
                     events: not a kmem trace?"
                )?;
                for m in first {
                    write!(f, "; line {}: {}", m.line, m.reason)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for InputError {}

impl From<InputError> for io::Error {
    fn from(e: InputError) -> Self {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

/// Line-by-line parser state: counts of what was not an event and the first malformed lines.
#[derive(Debug, Clone)]
pub struct Parser {
    /// Lines seen.
    pub lines: u64,
    /// `kmem` page events parsed.
    pub events: u64,
    /// `#` comment lines and blank lines.
    pub comments: u64,
    /// Lines of other events (skipped).
    pub other: u64,
    /// Malformed or truncated lines.
    pub malformed: u64,
    /// The first [`MALFORMED_KEPT`] malformed lines.
    pub first_malformed: Vec<Malformed>,
    /// The longest line [`Parser::read_all`] accepts, in bytes without its line end
    /// ([`MAX_LINE_BYTES`] unless set).
    pub max_line_bytes: usize,
    /// What the last line [`Parser::feed`] walked on the fast path opened with and showed in
    /// its middle, as [`Parser::read_all`] keeps it: a line that repeats them skips their walk.
    seen: fast::Seen,
}

impl Default for Parser {
    fn default() -> Self {
        Self {
            lines: 0,
            events: 0,
            comments: 0,
            other: 0,
            malformed: 0,
            first_malformed: Vec::new(),
            max_line_bytes: MAX_LINE_BYTES,
            seen: fast::Seen::default(),
        }
    }
}

impl Parser {
    /// A fresh parser.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses one line (with or without its newline), counting it.
    ///
    /// The fast path starts from the line before's opening and middle where this line repeats
    /// them (`fast::parse_after`): the walks over the text before and past the window feed
    /// their lines one at a time (6.12-4g p_thp with layout files: about half the parser's
    /// instructions on those lines).
    pub fn feed<'l>(&mut self, line: &'l [u8]) -> Option<Event<'l>> {
        self.lines += 1;
        let fast = fast::parse_line_after(line, &mut self.seen);
        self.count(fast.unwrap_or_else(|| parse_line(line)))
    }

    /// Counts what the line just counted in `lines` gave.
    #[inline(always)]
    fn count<'l>(&mut self, r: Result<Event<'l>, LineKind>) -> Option<Event<'l>> {
        match r {
            Ok(ev) => {
                self.events += 1;
                Some(ev)
            }
            Err(kind) => {
                self.count_other(kind);
                None
            }
        }
    }

    /// Counts a line that gave no event.
    #[inline(never)]
    fn count_other(&mut self, kind: LineKind) {
        match kind {
            LineKind::Comment => self.comments += 1,
            LineKind::Other => self.other += 1,
            LineKind::Malformed(reason) => {
                self.malformed += 1;
                if self.first_malformed.len() < MALFORMED_KEPT {
                    self.first_malformed.push(Malformed {
                        line: self.lines,
                        reason,
                    });
                }
            }
        }
    }

    /// `N malformed line(s) (line L: reason; ...)` with the first few kept, for messages.
    pub fn malformed_summary(&self) -> String {
        let lines: Vec<String> = self
            .first_malformed
            .iter()
            .map(|m| format!("line {}: {}", m.line, m.reason))
            .collect();
        format!(
            "{} malformed line(s) ({})",
            self.malformed,
            lines.join("; ")
        )
    }

    /// Whether what was read is a trace: at least one page event, and no more malformed lines
    /// than lines of events. Call it after [`Parser::read_all`].
    pub fn check_trace(&self) -> Result<(), InputError> {
        if self.events == 0 {
            return Err(InputError::NoEvents { lines: self.lines });
        }
        if self.malformed > self.events + self.other {
            return Err(InputError::MostlyMalformed {
                lines: self.lines,
                events: self.events,
                malformed: self.malformed,
                first: self.first_malformed.clone(),
            });
        }
        Ok(())
    }

    /// Feeds every line of `reader` to the parser, calling `f` for each event. Lines end in
    /// LF, CRLF or CR; a line longer than [`Parser::max_line_bytes`] stops the read with
    /// [`InputError::LineTooLong`] (as an [`io::ErrorKind::InvalidData`] error).
    ///
    /// Lines are parsed where they lie in the reader's buffer. The fast path reads a line of
    /// the common shape there and finds its LF as it goes (`fast::parse_after`, which does not
    /// walk again the columns the line before had); other lines are split with SIMD
    /// `memchr2`. Only a line split across two buffer fills is copied, into a buffer that
    /// never grows past the line limit.
    pub fn read_all<R: BufRead, F: FnMut(&Event<'_>)>(
        &mut self,
        mut reader: R,
        mut f: F,
    ) -> io::Result<()> {
        let max = self.max_line_bytes;
        let mut carry: Vec<u8> = Vec::new();
        // What the last line the fast path walked opened with (task, CPU, flags, seconds)
        // and showed in its middle (event, page).
        let mut seen = fast::Seen::default();
        // The last line ended in CR: an LF opening the next fill completes its CRLF.
        let mut after_cr = false;
        loop {
            let buf = match reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                if !carry.is_empty() {
                    if let Some(ev) = self.feed(&carry) {
                        f(&ev);
                    }
                }
                return Ok(());
            }
            let len = buf.len();
            let mut at = 0;
            while let Some(rest) = buf.get(at..).filter(|r| !r.is_empty()) {
                if carry.is_empty() && !after_cr {
                    // A line whose LF lies in this fill, within the limit, read in place (the
                    // event handed on where the walk left it: no copy).
                    let parsed = fast::parse_after(rest, &mut seen);
                    if let Some((r, end)) = &parsed {
                        let end = *end;
                        if end < rest.len() {
                            if end > max {
                                return Err(self.too_long());
                            }
                            self.lines += 1;
                            match r {
                                Ok(ev) => {
                                    self.events += 1;
                                    f(ev);
                                }
                                Err(kind) => self.count_other(*kind),
                            }
                            at += end + 1;
                            continue;
                        }
                    }
                }
                let Some(n) = memchr::memchr2(b'\n', b'\r', rest) else {
                    break;
                };
                let end = at + n;
                if after_cr && n == 0 && buf[end] == b'\n' {
                    // The LF of a CRLF.
                    after_cr = false;
                    at = end + 1;
                    continue;
                }
                if carry.len() + n > max {
                    return Err(self.too_long());
                }
                if carry.is_empty() {
                    if let Some(ev) = self.feed(&buf[at..end]) {
                        f(&ev);
                    }
                } else {
                    carry.extend_from_slice(&buf[at..end]);
                    if let Some(ev) = self.feed(&carry) {
                        f(&ev);
                    }
                    carry.clear();
                }
                after_cr = buf[end] == b'\r';
                at = end + 1;
            }
            if at < len {
                after_cr = false;
                if carry.len() + (len - at) > max {
                    return Err(self.too_long());
                }
                carry.extend_from_slice(&buf[at..]);
            }
            reader.consume(len);
        }
    }

    /// The error for the line being read (the one after the last counted).
    fn too_long(&self) -> io::Error {
        InputError::LineTooLong {
            line: self.lines + 1,
            max_bytes: self.max_line_bytes,
        }
        .into()
    }
}
