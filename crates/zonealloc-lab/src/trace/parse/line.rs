//! The line grammar: the byte scanner (separators, numbers, the CPU, timestamp and event-name
//! tokens, the `key=value` fields) and [`parse_line`], one line into an [`Event`].

use super::{Ctx, Event, EventKind, PagePtr, Task, Who};

/// Why a line gave no event.
#[derive(Clone, Copy)]
pub(super) enum LineKind {
    Comment,
    Other,
    Malformed(&'static str),
}

/// Separator bytes: space, tab, CR, LF and the other control characters. (A byte test this
/// cheap matters: the scanner looks at every byte of multi-gigabyte files.)
#[inline(always)]
pub(super) fn is_sep(b: u8) -> bool {
    b <= b' '
}

/// A word of eight bytes of 1, and of their high bits: the SWAR constants of this walk and
/// the fast path's.
pub(super) const ONES: u64 = 0x0101_0101_0101_0101;
pub(super) const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The index of the first separator in `s` (or of the first `=` too, with `or_eq`), or
/// `s.len()`: eight bytes per step (SWAR). In each mask the lowest set bit marks the first
/// matching byte exactly; false positives from borrows only appear above a true match.
#[inline(always)]
pub(super) fn find_sep(s: &[u8], or_eq: bool) -> usize {
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
pub(super) fn skip_sep(s: &[u8]) -> usize {
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

pub(super) fn parse_dec(s: &[u8]) -> Option<u64> {
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

pub(super) fn parse_hex(s: &[u8]) -> Option<u64> {
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
pub(super) enum Name {
    Alloc,
    Free,
    FreeBatched,
    ZoneLocked,
    PcpuDrain,
    Extfrag,
    KswapdWake,
    KswapdSleep,
    WorkqueueStart,
    /// `mm_compaction_isolate_freepages`.
    CompactIsolate,
    /// `mm_compaction_fast_isolate_freepages`.
    CompactFastIsolate,
}

pub(super) fn event_name(t: &[u8]) -> Option<Name> {
    let t = t.strip_prefix(b"kmem:").unwrap_or(t);
    Some(match t {
        b"mm_page_alloc" => Name::Alloc,
        b"mm_page_free" => Name::Free,
        b"mm_page_free_batched" => Name::FreeBatched,
        b"mm_page_alloc_zone_locked" => Name::ZoneLocked,
        b"mm_page_pcpu_drain" => Name::PcpuDrain,
        b"mm_page_alloc_extfrag" => Name::Extfrag,
        _ => {
            let t = t.strip_prefix(b"vmscan:").unwrap_or(t);
            match t {
                b"mm_vmscan_kswapd_wake" => Name::KswapdWake,
                b"mm_vmscan_kswapd_sleep" => Name::KswapdSleep,
                b"workqueue_execute_start" | b"workqueue:workqueue_execute_start" => {
                    Name::WorkqueueStart
                }
                _ => return compaction_name(t),
            }
        }
    })
}

/// The compaction events read (rare: out of the name walk's line).
#[cold]
#[inline(never)]
fn compaction_name(t: &[u8]) -> Option<Name> {
    match t.strip_prefix(b"compaction:").unwrap_or(t) {
        b"mm_compaction_isolate_freepages" => Some(Name::CompactIsolate),
        b"mm_compaction_fast_isolate_freepages" => Some(Name::CompactFastIsolate),
        _ => None,
    }
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
    nid: Option<&'a [u8]>,
}

impl<'a> Fields<'a> {
    /// The field a key names; `None` for keys of no interest. Dispatches on length and the
    /// first byte before comparing, so most keys cost one or two compares.
    #[inline]
    fn slot(&mut self, key: &[u8]) -> Option<&mut Option<&'a [u8]>> {
        Some(match (key.len(), key.first().copied().unwrap_or(0)) {
            (3, b'p') if key == b"pfn" => &mut self.pfn,
            (3, b'n') if key == b"nid" => &mut self.nid,
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

/// `s` as text, if it is UTF-8. Flags are ASCII: tested a word at a time, that case skips
/// `from_utf8`'s general validation (a third of the cost of parsing an allocation line).
#[inline]
pub(super) fn utf8(s: &[u8]) -> Option<&str> {
    if s.is_ascii() {
        // SAFETY: every ASCII byte sequence is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(s) })
    } else {
        std::str::from_utf8(s).ok()
    }
}

pub(super) fn page_ptr(v: Option<&[u8]>) -> PagePtr {
    match v {
        None => PagePtr::Missing,
        Some(b"NULL" | b"(null)" | b"(nil)" | b"0x0" | b"0") => PagePtr::Null,
        Some(p) if p.iter().all(|&b| b == b'0') => PagePtr::Null,
        Some(_) => PagePtr::Present,
    }
}

/// What a line's columns before its event's fields say (ftrace's, perf's or trace-cmd's
/// prefix): the CPU, the timestamp, the event's name and where its fields begin, and the
/// task and latency tokens [`Who`] is read from.
struct Prefix<'a> {
    cpu: Option<u32>,
    ts_ns: Option<u64>,
    name: &'a [u8],
    /// Where the fields begin: just after the name.
    rest_at: usize,
    /// The tokens before the CPU (the task: `comm-pid`, or perf's `comm pid`; the first two
    /// and how many).
    task: [&'a [u8]; 2],
    tasks: usize,
    /// The first token between the CPU and the timestamp (the latency column).
    flags: Option<&'a [u8]>,
}

/// Parses one line into an event, or says why it is none. (The general walk: the fast path,
/// `fast::parse_after`, takes most lines before it.)
pub(super) fn parse_line(line: &[u8]) -> Result<Event<'_>, LineKind> {
    let line = trim_end(line);
    let start = skip_sep(line);
    if start == line.len() || line[start] == b'#' {
        return Err(LineKind::Comment);
    }
    let p = prefix(line, start)?;
    let Some(name) = event_name(p.name) else {
        return Err(LineKind::Other);
    };
    let f = fields(line, p.rest_at);
    let kind = match name {
        Name::WorkqueueStart => work_function(&line[p.rest_at..])?,
        Name::CompactIsolate | Name::CompactFastIsolate => {
            let fast = matches!(name, Name::CompactFastIsolate);
            super::compaction::isolate(&line[p.rest_at..], fast)?
        }
        _ => kind_of(name, &f)?,
    };
    let ctx = p.flags.map_or(Ctx::NONE, Ctx::parse);
    let who = match (p.tasks, p.task) {
        (1, [t, _]) => Who::of_token(t, p.cpu, ctx),
        (2, [comm, pid]) => Who::of_comm_pid(comm, pid, p.cpu),
        _ => Who::new(Task::Unknown, None, ctx),
    };
    Ok(Event {
        cpu: p.cpu,
        ts_ns: p.ts_ns,
        page: page_ptr(f.page),
        kind,
        who,
    })
}

/// Walks the prefix's tokens from `start` (by offset, so the fields can be sliced off the
/// line afterwards) up to the event's name.
fn prefix(line: &[u8], start: usize) -> Result<Prefix<'_>, LineKind> {
    let mut p = Prefix {
        cpu: None,
        ts_ns: None,
        name: &[],
        rest_at: 0,
        task: [&[], &[]],
        tasks: 0,
        flags: None,
    };
    let mut name_tok = None;
    let mut i = start;
    loop {
        i += skip_sep(&line[i..]);
        if i == line.len() {
            break;
        }
        let s = i;
        i += find_sep(&line[s..], false);
        let tok = &line[s..i];
        if p.ts_ns.is_none() {
            if p.cpu.is_none() {
                if let Some(c) = cpu_token(tok) {
                    p.cpu = Some(c);
                    continue;
                }
            }
            if let Some(t) = ts_token(tok) {
                p.ts_ns = Some(t);
            } else if p.cpu.is_none() {
                if let Some(slot) = p.task.get_mut(p.tasks) {
                    *slot = tok;
                }
                p.tasks += 1;
            } else if p.flags.is_none() {
                p.flags = Some(tok);
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
                p.rest_at = i;
            }
            None => return Err(LineKind::Malformed("no event name after the timestamp")),
        }
        break;
    }
    match name_tok {
        Some(n) => {
            p.name = n;
            Ok(p)
        }
        None if p.ts_ns.is_some() => Err(LineKind::Malformed("truncated after the timestamp")),
        None => Err(LineKind::Malformed("no timestamp")),
    }
}

/// The `key=value` fields of the line from `at` on, in one pass; tokens without `=` are
/// skipped, and a repeated key keeps its last value.
fn fields(line: &[u8], at: usize) -> Fields<'_> {
    let mut f = Fields::default();
    let n = line.len();
    let mut i = at;
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
    f
}

/// The event `name`'s fields read from `f` (the fields its `TP_printk` prints), or which one
/// is bad or missing.
fn kind_of<'a>(name: Name, f: &Fields<'a>) -> Result<EventKind<'a>, LineKind> {
    let bad = |what| LineKind::Malformed(what);
    let pfn = match name {
        // kswapd's events name a node, not a page (`nid=%d order=%d`, `nid=%d`).
        Name::KswapdWake
        | Name::KswapdSleep
        | Name::WorkqueueStart
        | Name::CompactIsolate
        | Name::CompactFastIsolate => 0,
        _ => f.pfn.and_then(parse_pfn).ok_or(bad("bad or missing pfn"))?,
    };
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
    let nid = || {
        f.nid
            .and_then(parse_dec)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or(bad("bad or missing nid"))
    };
    Ok(match name {
        Name::KswapdWake => EventKind::KswapdWake {
            nid: nid()?,
            order: order()?,
        },
        Name::KswapdSleep => EventKind::KswapdSleep { nid: nid()? },
        Name::WorkqueueStart | Name::CompactIsolate | Name::CompactFastIsolate => {
            return Err(LineKind::Other)
        }
        Name::Alloc => {
            let gfp = f
                .gfp_flags
                .and_then(utf8)
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
        Name::Extfrag => extfrag(pfn, f)?,
    })
}

/// `workqueue_execute_start`'s tail, `work struct %p: function %ps`
/// (`include/trace/events/workqueue.h`): the vmstat workers' runs, `vmstat_update` and
/// `vmstat_shepherd` (`mm/vmstat.c`); any other function (or an address `%ps` could not
/// name) is another event, skipped.
fn work_function(tail: &[u8]) -> Result<EventKind<'static>, LineKind> {
    let mut words = tail.split(|&b| is_sep(b)).filter(|w| !w.is_empty());
    while let Some(w) = words.next() {
        if w == b"function" {
            return match words.next() {
                Some(b"vmstat_update") => Ok(EventKind::VmstatUpdate),
                Some(b"vmstat_shepherd") => Ok(EventKind::VmstatShepherd),
                Some(_) => Err(LineKind::Other),
                None => Err(LineKind::Malformed("no function after `function`")),
            };
        }
    }
    Err(LineKind::Malformed(
        "workqueue_execute_start without `function`",
    ))
}

/// `mm_page_alloc_extfrag`'s fields (its flags may be missing: older kernels print neither).
fn extfrag<'a>(pfn: u64, f: &Fields<'a>) -> Result<EventKind<'a>, LineKind> {
    let bad = |what| LineKind::Malformed(what);
    let need = |v: Option<&[u8]>| v.and_then(parse_small).ok_or(bad("bad extfrag field"));
    let opt_flag = |v: Option<&[u8]>| match v {
        None => Ok(false),
        Some(v) => parse_flag(v).ok_or(bad("bad extfrag flag")),
    };
    Ok(EventKind::Extfrag {
        pfn,
        alloc_order: need(f.alloc_order)?,
        fallback_order: need(f.fallback_order)?,
        alloc_migratetype: need(f.alloc_migratetype)?,
        fallback_migratetype: need(f.fallback_migratetype)?,
        fragmenting: opt_flag(f.fragmenting)?,
        change_ownership: opt_flag(f.change_ownership)?,
    })
}
