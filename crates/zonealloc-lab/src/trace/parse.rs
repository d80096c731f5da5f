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
        }
    }

    /// The event's page frame number.
    pub fn pfn(&self) -> u64 {
        match *self {
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
        }
    }
}

impl Parser {
    /// A fresh parser.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses one line (with or without its newline), counting it.
    pub fn feed<'l>(&mut self, line: &'l [u8]) -> Option<Event<'l>> {
        self.lines += 1;
        match parse_line(line) {
            Ok(ev) => {
                self.events += 1;
                Some(ev)
            }
            Err(LineKind::Comment) => {
                self.comments += 1;
                None
            }
            Err(LineKind::Other) => {
                self.other += 1;
                None
            }
            Err(LineKind::Malformed(reason)) => {
                self.malformed += 1;
                if self.first_malformed.len() < MALFORMED_KEPT {
                    self.first_malformed.push(Malformed {
                        line: self.lines,
                        reason,
                    });
                }
                None
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
    /// Lines are parsed where they lie in the reader's buffer (found with SIMD `memchr2`);
    /// only a line split across two buffer fills is copied, into a buffer that never grows
    /// past the line limit.
    pub fn read_all<R: BufRead, F: FnMut(&Event<'_>)>(
        &mut self,
        mut reader: R,
        mut f: F,
    ) -> io::Result<()> {
        let max = self.max_line_bytes;
        let mut carry: Vec<u8> = Vec::new();
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
            for end in memchr::memchr2_iter(b'\n', b'\r', buf) {
                if after_cr && end == at && buf[end] == b'\n' {
                    // The LF of a CRLF.
                    after_cr = false;
                    at = end + 1;
                    continue;
                }
                if carry.len() + (end - at) > max {
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

/// Why a line gave no event.
enum LineKind {
    Comment,
    Other,
    Malformed(&'static str),
}

/// Separator bytes: space, tab, CR, LF and the other control characters. (A byte test this
/// cheap matters: the scanner looks at every byte of multi-gigabyte files.)
#[inline(always)]
fn is_sep(b: u8) -> bool {
    b <= b' '
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The index of the first separator in `s` (or of the first `=` too, with `or_eq`), or
/// `s.len()`: eight bytes per step (SWAR). In each mask the lowest set bit marks the first
/// matching byte exactly; false positives from borrows only appear above a true match.
#[inline]
fn find_sep(s: &[u8], or_eq: bool) -> usize {
    let mut i = 0;
    while let Some(chunk) = s.get(i..i + 8) {
        let x = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        // Bytes below 0x21 (bytes from 0x80 up never match).
        let mut m = x.wrapping_sub(ONES * 0x21) & !x & HIGHS;
        if or_eq {
            let y = x ^ (ONES * u64::from(b'='));
            m |= y.wrapping_sub(ONES) & !y & HIGHS;
        }
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < s.len() && !(is_sep(s[i]) || (or_eq && s[i] == b'=')) {
        i += 1;
    }
    i
}

/// The index of the first byte of `s` that is not a separator, or `s.len()` (SWAR, as
/// [`find_sep`]; the padding of ftrace's columns makes separator runs long).
#[inline]
fn skip_sep(s: &[u8]) -> usize {
    // Most runs are one space: test two bytes before going wide.
    match s {
        [] => return 0,
        [a, ..] if !is_sep(*a) => return 0,
        [_, b, ..] if !is_sep(*b) => return 1,
        _ => {}
    }
    let mut i = 0;
    while let Some(chunk) = s.get(i..i + 8) {
        let x = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        // Bytes above 0x20 (carries from bytes >= 0xa1 only reach bytes above a match).
        let m = (x.wrapping_add(ONES * (127 - 0x20)) | x) & HIGHS;
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < s.len() && is_sep(s[i]) {
        i += 1;
    }
    i
}

fn trim_end(mut s: &[u8]) -> &[u8] {
    while let [rest @ .., last] = s {
        if is_sep(*last) {
            s = rest;
        } else {
            break;
        }
    }
    s
}

fn parse_dec(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(b - b'0');
    }
    Some(v)
}

fn parse_hex(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return None,
        };
        v = (v << 4) | u64::from(d);
    }
    Some(v)
}

/// `pfn`: hex with `0x`, decimal without.
fn parse_pfn(s: &[u8]) -> Option<u64> {
    match s.strip_prefix(b"0x").or_else(|| s.strip_prefix(b"0X")) {
        Some(h) => parse_hex(h),
        None => parse_dec(s),
    }
}

fn parse_small(s: &[u8]) -> Option<u8> {
    parse_dec(s).and_then(|v| u8::try_from(v).ok())
}

fn parse_flag(s: &[u8]) -> Option<bool> {
    match s {
        b"0" => Some(false),
        b"1" => Some(true),
        _ => None,
    }
}

/// `[NNN]` -> NNN.
fn cpu_token(t: &[u8]) -> Option<u32> {
    let inner = t.strip_prefix(b"[")?.strip_suffix(b"]")?;
    parse_dec(inner).and_then(|v| u32::try_from(v).ok())
}

/// `SSS.FFFFFF:` -> nanoseconds.
fn ts_token(t: &[u8]) -> Option<u64> {
    let t = t.strip_suffix(b":")?;
    let dot = t.iter().position(|&b| b == b'.')?;
    let secs = parse_dec(&t[..dot])?;
    let frac = &t[dot + 1..];
    if frac.len() > 9 {
        return None;
    }
    let mut ns = parse_dec(frac)?;
    for _ in frac.len()..9 {
        ns *= 10;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

#[derive(Clone, Copy)]
enum Name {
    Alloc,
    Free,
    FreeBatched,
    ZoneLocked,
    PcpuDrain,
    Extfrag,
}

fn event_name(t: &[u8]) -> Option<Name> {
    let t = t.strip_prefix(b"kmem:").unwrap_or(t);
    Some(match t {
        b"mm_page_alloc" => Name::Alloc,
        b"mm_page_free" => Name::Free,
        b"mm_page_free_batched" => Name::FreeBatched,
        b"mm_page_alloc_zone_locked" => Name::ZoneLocked,
        b"mm_page_pcpu_drain" => Name::PcpuDrain,
        b"mm_page_alloc_extfrag" => Name::Extfrag,
        _ => return None,
    })
}

/// The `key=value` fields of an event's tail, each kept as raw bytes.
#[derive(Default)]
struct Fields<'a> {
    page: Option<&'a [u8]>,
    pfn: Option<&'a [u8]>,
    order: Option<&'a [u8]>,
    migratetype: Option<&'a [u8]>,
    gfp_flags: Option<&'a [u8]>,
    percpu_refill: Option<&'a [u8]>,
    alloc_order: Option<&'a [u8]>,
    fallback_order: Option<&'a [u8]>,
    alloc_migratetype: Option<&'a [u8]>,
    fallback_migratetype: Option<&'a [u8]>,
    fragmenting: Option<&'a [u8]>,
    change_ownership: Option<&'a [u8]>,
}

impl<'a> Fields<'a> {
    /// The field a key names; `None` for keys of no interest. Dispatches on length and the
    /// first byte before comparing, so most keys cost one or two compares.
    #[inline]
    fn slot(&mut self, key: &[u8]) -> Option<&mut Option<&'a [u8]>> {
        Some(match (key.len(), key.first().copied().unwrap_or(0)) {
            (3, b'p') if key == b"pfn" => &mut self.pfn,
            (4, b'p') if key == b"page" => &mut self.page,
            (5, b'o') if key == b"order" => &mut self.order,
            (9, b'g') if key == b"gfp_flags" => &mut self.gfp_flags,
            (11, b'm') if key == b"migratetype" => &mut self.migratetype,
            (11, b'a') if key == b"alloc_order" => &mut self.alloc_order,
            (11, b'f') if key == b"fragmenting" => &mut self.fragmenting,
            (13, b'p') if key == b"percpu_refill" => &mut self.percpu_refill,
            (14, b'f') if key == b"fallback_order" => &mut self.fallback_order,
            (16, b'c') if key == b"change_ownership" => &mut self.change_ownership,
            (17, b'a') if key == b"alloc_migratetype" => &mut self.alloc_migratetype,
            (20, b'f') if key == b"fallback_migratetype" => &mut self.fallback_migratetype,
            _ => return None,
        })
    }
}

fn page_ptr(v: Option<&[u8]>) -> PagePtr {
    match v {
        None => PagePtr::Missing,
        Some(b"NULL" | b"(null)" | b"(nil)" | b"0x0" | b"0") => PagePtr::Null,
        Some(p) if p.iter().all(|&b| b == b'0') => PagePtr::Null,
        Some(_) => PagePtr::Present,
    }
}

/// Parses one line into an event, or says why it is none.
fn parse_line(line: &[u8]) -> Result<Event<'_>, LineKind> {
    let line = trim_end(line);
    let start = skip_sep(line);
    if start == line.len() {
        return Err(LineKind::Comment);
    }
    if line[start] == b'#' {
        return Err(LineKind::Comment);
    }
    let mut cpu = None;
    let mut ts_ns = None;
    let mut name_tok = None;
    let mut rest_at = 0;
    // Walk the prefix tokens by offset, so the tail can be sliced off the line afterwards.
    let mut i = start;
    loop {
        i += skip_sep(&line[i..]);
        if i == line.len() {
            break;
        }
        let s = i;
        i += find_sep(&line[s..], false);
        let tok = &line[s..i];
        if ts_ns.is_none() {
            if cpu.is_none() {
                if let Some(c) = cpu_token(tok) {
                    cpu = Some(c);
                    continue;
                }
            }
            if let Some(t) = ts_token(tok) {
                ts_ns = Some(t);
            }
            continue;
        }
        // After the timestamp: an optional perf period, then the event name.
        if tok.iter().all(u8::is_ascii_digit) {
            continue;
        }
        match tok.strip_suffix(b":") {
            Some(n) => {
                name_tok = Some(n);
                rest_at = i;
            }
            None => return Err(LineKind::Malformed("no event name after the timestamp")),
        }
        break;
    }
    let Some(name_tok) = name_tok else {
        return Err(if ts_ns.is_some() {
            LineKind::Malformed("truncated after the timestamp")
        } else {
            LineKind::Malformed("no timestamp")
        });
    };
    let Some(name) = event_name(name_tok) else {
        return Err(LineKind::Other);
    };
    let mut f = Fields::default();
    // One pass over the tail: `key=value` tokens; tokens without `=` are skipped. Slice
    // iterators, not indices, so the byte loops carry no bounds checks.
    let n = line.len();
    let mut i = rest_at;
    loop {
        i += skip_sep(&line[i..]);
        if i == n {
            break;
        }
        let ks = i;
        i += find_sep(&line[ks..], true);
        if i < n && line[i] == b'=' {
            let key = &line[ks..i];
            let vs = i + 1;
            i = vs + find_sep(&line[vs..], false);
            if let Some(slot) = f.slot(key) {
                *slot = Some(&line[vs..i]);
            }
        }
    }
    let bad = |what| LineKind::Malformed(what);
    let pfn = f.pfn.and_then(parse_pfn).ok_or(bad("bad or missing pfn"))?;
    let order = || {
        f.order
            .and_then(parse_small)
            .ok_or(bad("bad or missing order"))
    };
    let mt = || {
        f.migratetype
            .and_then(parse_small)
            .ok_or(bad("bad or missing migratetype"))
    };
    let kind = match name {
        Name::Alloc => {
            let gfp = f
                .gfp_flags
                .and_then(|g| std::str::from_utf8(g).ok())
                .filter(|g| !g.is_empty())
                .ok_or(bad("bad or missing gfp_flags"))?;
            EventKind::Alloc {
                pfn,
                order: order()?,
                migratetype: mt()?,
                gfp_flags: gfp,
            }
        }
        Name::Free => EventKind::Free {
            pfn,
            order: order()?,
        },
        Name::FreeBatched => EventKind::FreeBatched { pfn },
        Name::ZoneLocked => EventKind::ZoneLocked {
            pfn,
            order: order()?,
            migratetype: mt()?,
            percpu_refill: f
                .percpu_refill
                .and_then(parse_flag)
                .ok_or(bad("bad or missing percpu_refill"))?,
        },
        Name::PcpuDrain => EventKind::PcpuDrain {
            pfn,
            order: order()?,
            migratetype: mt()?,
        },
        Name::Extfrag => {
            let need = |v: Option<&[u8]>| v.and_then(parse_small).ok_or(bad("bad extfrag field"));
            let opt_flag = |v: Option<&[u8]>| match v {
                None => Ok(false),
                Some(v) => parse_flag(v).ok_or(bad("bad extfrag flag")),
            };
            EventKind::Extfrag {
                pfn,
                alloc_order: need(f.alloc_order)?,
                fallback_order: need(f.fallback_order)?,
                alloc_migratetype: need(f.alloc_migratetype)?,
                fallback_migratetype: need(f.fallback_migratetype)?,
                fragmenting: opt_flag(f.fragmenting)?,
                change_ownership: opt_flag(f.change_ownership)?,
            }
        }
    };
    Ok(Event {
        cpu,
        ts_ns,
        page: page_ptr(f.page),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::BufReader;
    use std::path::Path;

    const SAMPLE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/linux-6.1-ftrace-sample.txt"
    );

    fn one(line: &str) -> Event<'_> {
        let mut p = Parser::new();
        let ev = p.feed(line.as_bytes());
        assert_eq!(p.malformed, 0, "{line}: {:?}", p.first_malformed);
        ev.unwrap_or_else(|| panic!("no event in {line}"))
    }

    #[test]
    fn ftrace_with_irqs_off_columns() {
        let ev = one("            init-1       [003] .....     3.812917: mm_page_alloc: page=(____ptrval____) pfn=0x2e64 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO\n");
        assert_eq!(ev.cpu, Some(3));
        assert_eq!(ev.ts_ns, Some(3_812_917_000));
        assert_eq!(ev.page, PagePtr::Present);
        assert_eq!(
            ev.kind,
            EventKind::Alloc {
                pfn: 0x2e64,
                order: 0,
                migratetype: 1,
                gfp_flags: "GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO"
            }
        );
    }

    #[test]
    fn ftrace_without_irqs_off_columns() {
        let ev = one("          <idle>-0     [001]   120.000001: mm_page_free: page=ffffea0004a3c000 pfn=0x128f00 order=2");
        assert_eq!(ev.cpu, Some(1));
        assert_eq!(ev.ts_ns, Some(120_000_001_000));
        assert_eq!(
            ev.kind,
            EventKind::Free {
                pfn: 0x128f00,
                order: 2
            }
        );
    }

    #[test]
    fn perf_script_with_kmem_prefix() {
        let ev = one("              dd  4242 [002]  5123.456789: kmem:mm_page_alloc_zone_locked: page=0xffffea0000b98000 pfn=0x2e600 order=0 migratetype=1 percpu_refill=1");
        assert_eq!(ev.cpu, Some(2));
        assert_eq!(
            ev.kind,
            EventKind::ZoneLocked {
                pfn: 0x2e600,
                order: 0,
                migratetype: 1,
                percpu_refill: true
            }
        );
        // perf with a sample period column before the event name.
        let ev = one("dd 4242 [002] 5123.456789:          1 kmem:mm_page_free_batched: page=0xffffea0000b98000 pfn=0x2e600 order=0");
        assert_eq!(ev.kind, EventKind::FreeBatched { pfn: 0x2e600 });
    }

    #[test]
    fn trace_cmd_report() {
        let ev = one("     kworker/0:1-45    [000]   812.345678: mm_page_pcpu_drain:   page=0xffffea0000123400 pfn=0x48d0 order=3 migratetype=0");
        assert_eq!(ev.cpu, Some(0));
        assert_eq!(
            ev.kind,
            EventKind::PcpuDrain {
                pfn: 0x48d0,
                order: 3,
                migratetype: 0
            }
        );
    }

    #[test]
    fn decimal_pfn_and_hashed_page() {
        let ev = one("           bash-812   [000] d..2  42.123456: mm_page_free: page=00000000c3a5f1e2 pfn=1212416 order=0");
        assert_eq!(
            ev.kind,
            EventKind::Free {
                pfn: 1_212_416,
                order: 0
            }
        );
        assert_eq!(ev.page, PagePtr::Present);
    }

    #[test]
    fn null_page_failed_alloc_and_hex_gfp() {
        let ev = one("  stress-ng-900 [005] ..... 77.000100: mm_page_alloc: page=NULL pfn=0x0 order=9 migratetype=1 gfp_flags=0x140cca");
        assert!(ev.is_failed_alloc());
        assert_eq!(ev.page, PagePtr::Null);
        assert!(matches!(
            ev.kind,
            EventKind::Alloc {
                order: 9,
                gfp_flags: "0x140cca",
                ..
            }
        ));
        let ev = one("x-1 [000] 1.0: mm_page_alloc: page=(null) pfn=0x0 order=0 migratetype=0 gfp_flags=none");
        assert!(ev.is_failed_alloc());
    }

    #[test]
    fn missing_page_and_extfrag() {
        let ev = one("kswapd0-60 [001] .... 9.5: mm_page_alloc_extfrag: pfn=0x3fe00 alloc_order=0 fallback_order=9 pageblock_order=9 alloc_migratetype=0 fallback_migratetype=1 fragmenting=0 change_ownership=1");
        assert_eq!(ev.page, PagePtr::Missing);
        assert_eq!(
            ev.kind,
            EventKind::Extfrag {
                pfn: 0x3fe00,
                alloc_order: 0,
                fallback_order: 9,
                alloc_migratetype: 0,
                fallback_migratetype: 1,
                fragmenting: false,
                change_ownership: true
            }
        );
    }

    #[test]
    fn comments_other_events_and_malformed_lines() {
        let text =
            "# tracer: nop\n\n  init-1 [003] ..... 3.8: tracing_mark_write: mm_page_alloc: pfn=1\n\
                    init-1 [003] ..... 3.8: mm_page_alloc: page=(____ptrval____) pfn=0x2e64 ord\n\
                    garbage\n\
                    init-1 [003] ..... 3.8: mm_page_free: page=x pfn=0xzz order=0\n";
        let mut p = Parser::new();
        let mut n = 0;
        p.read_all(text.as_bytes(), |_| n += 1).unwrap();
        assert_eq!(
            (n, p.lines, p.comments, p.other, p.malformed),
            (0, 6, 2, 1, 3)
        );
        let lines: Vec<u64> = p.first_malformed.iter().map(|m| m.line).collect();
        assert_eq!(lines, [4, 5, 6]);
    }

    const EV: &str = "a-1 [000] 1.0: mm_page_free: page=p pfn=0x10 order=0";

    /// Reads `text` through a buffer of `cap` bytes: (events, lines) or the error.
    fn read_with(text: &[u8], cap: usize) -> io::Result<(u64, u64)> {
        let mut p = Parser::new();
        let mut n = 0;
        p.read_all(BufReader::with_capacity(cap, text), |_| n += 1)?;
        assert_eq!(n, p.events);
        Ok((p.events, p.lines))
    }

    #[test]
    fn lf_crlf_and_cr_line_ends_are_all_read() {
        for end in ["\n", "\r\n", "\r"] {
            let text = format!("# comment{end}{}", format!("{EV}{end}").repeat(10));
            for cap in [1, 2, 3, 7, 64, 1 << 16] {
                assert_eq!(
                    read_with(text.as_bytes(), cap).unwrap(),
                    (10, 11),
                    "{end:?}, buffer {cap}"
                );
            }
        }
        // A blank line stays a line, whatever the line ends; CR CR is two line ends.
        assert_eq!(read_with(b"x\r\n\r\ny\r\rz", 4).unwrap(), (0, 5));
        // A last line without its line end is read.
        assert_eq!(
            read_with(format!("{EV}\r{EV}").as_bytes(), 5).unwrap(),
            (2, 2)
        );
    }

    #[test]
    fn a_line_over_the_limit_is_an_error_naming_it() {
        let check = |r: io::Result<(u64, u64)>, line: u64, max: usize| {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData);
            let inner = e.get_ref().and_then(|e| e.downcast_ref::<InputError>());
            assert_eq!(
                inner,
                Some(&InputError::LineTooLong {
                    line,
                    max_bytes: max
                }),
                "{e}"
            );
            assert!(e.to_string().contains(&format!("line {line} ")), "{e}");
        };
        // Split over many fills, or whole in one.
        let mut text = format!("{EV}\n{EV}\n").into_bytes();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 1));
        text.extend(b"\nmore\n");
        check(read_with(&text, 1 << 12), 3, MAX_LINE_BYTES);
        check(read_with(&text, 1 << 20), 3, MAX_LINE_BYTES);
        // Exactly at the limit is fine.
        let mut text = vec![b'x'; MAX_LINE_BYTES];
        text.push(b'\n');
        assert_eq!(read_with(&text, 1 << 12).unwrap(), (0, 1));
        // A smaller limit; an endless input without line ends stops at it (`/dev/zero`).
        let mut p = Parser::new();
        p.max_line_bytes = 100;
        let e = p
            .read_all(BufReader::new(io::repeat(0)), |_| ())
            .unwrap_err();
        assert!(
            e.to_string().starts_with("line 1 is longer than 100 bytes"),
            "{e}"
        );
    }

    #[test]
    fn input_without_events_or_mostly_malformed_is_not_a_trace() {
        let verdict = |text: &[u8]| {
            let mut p = Parser::new();
            p.read_all(text, |_| ()).unwrap();
            p.check_trace()
        };
        assert_eq!(verdict(b""), Err(InputError::NoEvents { lines: 0 }));
        assert_eq!(
            verdict(b"# tracer: nop\nx-1 [000] 1.0: sched_switch: a=b\n"),
            Err(InputError::NoEvents { lines: 2 })
        );
        // The start of an ELF file: no line is an event.
        let elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0\x01\0\0\0\n\x10\x6a\0\0\n";
        assert!(matches!(verdict(elf), Err(InputError::NoEvents { .. })));
        // One event among three malformed lines.
        let text = format!("{EV}\nbad 1\nbad 2\nbad 3\n");
        let e = verdict(text.as_bytes()).unwrap_err();
        assert!(matches!(
            e,
            InputError::MostlyMalformed {
                lines: 4,
                events: 1,
                malformed: 3,
                ..
            }
        ));
        assert!(e.to_string().contains("line 2: no timestamp"), "{e}");
        // As many events as malformed lines: a damaged trace, still read.
        assert_eq!(verdict(format!("{EV}\nbad\n").as_bytes()), Ok(()));
    }

    /// Counted independently with
    /// `grep -c ' mm_page_alloc: '` (1312), `' mm_page_free: '` (364),
    /// `' mm_page_free_batched: '` (294), `' mm_page_alloc_zone_locked: '` (1015),
    /// `' mm_page_pcpu_drain: '` (0), `' mm_page_alloc_extfrag: '` (0),
    /// `' tracing_mark_write: '` (3) and `-c '^#'` (12): 3000 lines in all.
    #[test]
    fn real_ftrace_sample_counts() {
        let mut p = Parser::new();
        let mut counts = std::collections::BTreeMap::new();
        p.read_all(open(Path::new(SAMPLE)).unwrap(), |ev| {
            *counts.entry(ev.kind.name()).or_insert(0u64) += 1;
        })
        .unwrap();
        assert_eq!(p.malformed, 0, "{:?}", p.first_malformed);
        assert_eq!(
            (p.lines, p.events, p.other, p.comments),
            (3000, 2985, 3, 12)
        );
        let want: std::collections::BTreeMap<_, _> = [
            ("mm_page_alloc", 1312),
            ("mm_page_free", 364),
            ("mm_page_free_batched", 294),
            ("mm_page_alloc_zone_locked", 1015),
        ]
        .into_iter()
        .collect();
        assert_eq!(counts, want);
    }

    #[test]
    fn gzip_is_read_transparently() {
        use std::io::Write as _;
        let raw = std::fs::read(SAMPLE).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.gz");
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::fast(),
        );
        gz.write_all(&raw).unwrap();
        gz.finish().unwrap();
        let mut p = Parser::new();
        p.read_all(open(&path).unwrap(), |_| ()).unwrap();
        assert_eq!((p.lines, p.events, p.malformed), (3000, 2985, 0));
    }

    #[test]
    fn zstd_is_read_transparently() {
        let raw = std::fs::read(SAMPLE).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.zst");
        // Two frames, as `zstd -c a b` writes them.
        let (a, b) = raw.split_at(raw.len() / 2);
        let level = ruzstd::encoding::CompressionLevel::Fastest;
        let mut file = ruzstd::encoding::compress_to_vec(a, level);
        file.extend(ruzstd::encoding::compress_to_vec(b, level));
        std::fs::write(&path, file).unwrap();
        let mut p = Parser::new();
        p.read_all(open(&path).unwrap(), |_| ()).unwrap();
        assert_eq!((p.lines, p.events, p.malformed), (3000, 2985, 0));
    }

    /// Throughput: `cargo test --release -p zonealloc-lab -- --ignored parse_throughput --nocapture`.
    #[test]
    #[ignore = "a benchmark, not a test"]
    fn parse_throughput() {
        let raw = std::fs::read(SAMPLE).unwrap();
        let rounds = 1000;
        let started = std::time::Instant::now();
        let mut events = 0u64;
        let mut p = Parser::new();
        for _ in 0..rounds {
            p.read_all(&raw[..], |_| events += 1).unwrap();
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{} lines, {events} events in {secs:.3} s: {:.2} M lines/s",
            p.lines,
            p.lines as f64 / secs / 1e6
        );
    }

    /// One event in the hand-written canonical form of the golden `.expected` files.
    fn canonical(ev: &Event<'_>) -> String {
        let ts = ev.ts_ns.map_or("-".to_owned(), |t| {
            format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000)
        });
        let cpu = ev.cpu.map_or("-".to_owned(), |c| c.to_string());
        let page = match ev.page {
            PagePtr::Present => "present",
            PagePtr::Null => "null",
            PagePtr::Missing => "missing",
        };
        let fields = match ev.kind {
            EventKind::Alloc {
                pfn,
                order,
                migratetype,
                gfp_flags,
            } => format!(
                "pfn={pfn:#x} order={order} migratetype={migratetype} gfp_flags={gfp_flags}{}",
                if ev.is_failed_alloc() { " failed" } else { "" }
            ),
            EventKind::Free { pfn, order } => format!("pfn={pfn:#x} order={order}"),
            EventKind::FreeBatched { pfn } => format!("pfn={pfn:#x}"),
            EventKind::ZoneLocked {
                pfn,
                order,
                migratetype,
                percpu_refill,
            } => format!(
                "pfn={pfn:#x} order={order} migratetype={migratetype} percpu_refill={}",
                u8::from(percpu_refill)
            ),
            EventKind::PcpuDrain {
                pfn,
                order,
                migratetype,
            } => format!("pfn={pfn:#x} order={order} migratetype={migratetype}"),
            EventKind::Extfrag {
                pfn,
                alloc_order,
                fallback_order,
                alloc_migratetype,
                fallback_migratetype,
                fragmenting,
                change_ownership,
            } => format!(
                "pfn={pfn:#x} alloc_order={alloc_order} fallback_order={fallback_order} \
                 alloc_migratetype={alloc_migratetype} fallback_migratetype={fallback_migratetype} \
                 fragmenting={} change_ownership={}",
                u8::from(fragmenting),
                u8::from(change_ownership)
            ),
        };
        format!("cpu={cpu} ts={ts} page={page} {} {fields}", ev.kind.name())
    }

    /// Golden files, one per tool and kernel era (`tests/data/golden/*.txt`), each with the
    /// events worked out by hand from the format strings in `*.expected`.
    #[test]
    fn golden_files_of_each_tool_and_kernel_era() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "txt") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let mut p = Parser::new();
            let mut got = String::new();
            for line in text.lines() {
                if let Some(ev) = p.feed(line.as_bytes()) {
                    got.push_str(&canonical(&ev));
                    got.push('\n');
                }
            }
            got.push_str(&format!(
                "# lines={} events={} comments={} other={} malformed={}\n",
                p.lines, p.events, p.comments, p.other, p.malformed
            ));
            let want = std::fs::read_to_string(path.with_extension("expected")).unwrap();
            assert_eq!(got, want, "{}", path.display());
            seen += 1;
        }
        assert_eq!(seen, 5, "golden files in {}", dir.display());
    }

    proptest! {
        /// The eight-bytes-at-a-time scans agree with the byte-at-a-time definitions on
        /// every input, separators, `=` and bytes from 0x80 up included.
        #[test]
        fn swar_scans_match_the_byte_loops(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b' '), Just(b'='), Just(b'\t'), Just(0u8), Just(0x21u8), Just(0x7f), Just(0x80), Just(0xa1), Just(0xff), any::<u8>()],
                0..40,
            ),
        ) {
            let naive_sep = |eq: bool| bytes.iter().position(|&b| is_sep(b) || (eq && b == b'=')).unwrap_or(bytes.len());
            prop_assert_eq!(find_sep(&bytes, false), naive_sep(false));
            prop_assert_eq!(find_sep(&bytes, true), naive_sep(true));
            prop_assert_eq!(skip_sep(&bytes), bytes.iter().position(|&b| !is_sep(b)).unwrap_or(bytes.len()));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut p = Parser::new();
            p.read_all(&bytes[..], |_| ()).unwrap();
            prop_assert_eq!(p.lines, p.events + p.comments + p.other + p.malformed);
        }

        /// Lines come out the same whatever the buffer size, and as a plain split on
        /// LF, CRLF and CR says.
        #[test]
        fn lines_do_not_depend_on_the_buffer(
            parts in proptest::collection::vec(
                prop_oneof![Just("\n"), Just("\r"), Just("\r\n"), Just(EV), Just("x")],
                0..30,
            ),
            cap in 1usize..40,
        ) {
            let text = parts.concat();
            let want = {
                let norm = text.replace("\r\n", "\n").replace('\r', "\n");
                let mut lines: Vec<&str> = norm.split('\n').collect();
                if lines.last() == Some(&"") {
                    lines.pop();
                }
                let mut p = Parser::new();
                lines.iter().for_each(|l| { p.feed(l.as_bytes()); });
                (p.events, p.lines)
            };
            prop_assert_eq!(read_with(text.as_bytes(), cap).unwrap(), want);
        }

        #[test]
        fn mangled_event_lines_never_panic(cut in 0usize..200, junk in "[ -~]{0,40}") {
            let line = "  init-1 [003] ..... 3.812917: mm_page_alloc_extfrag: page=(null) pfn=0x2e64 alloc_order=0 fallback_order=9 pageblock_order=9 alloc_migratetype=0 fallback_migratetype=1 fragmenting=0 change_ownership=1";
            let cut = cut.min(line.len());
            let mangled = format!("{}{junk}", &line[..cut]);
            let mut p = Parser::new();
            let _ = p.feed(mangled.as_bytes());
            prop_assert_eq!(p.lines, 1);
        }
    }
}
