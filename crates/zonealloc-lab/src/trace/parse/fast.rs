//! The fast path for the common line shape: ftrace's `comm-pid [cpu] flags ts: event: k=v ...`
//! with the fields in the order the event's `TP_printk` prints them. It walks the line once,
//! parsing numbers as it scans them and matching each key at the place the format puts it, so
//! it looks up no key and slices no value twice. Consecutive lines mostly share their columns
//! up to the timestamp's point and from its end to the pfn (the same task on the same CPU, the
//! same event): [`parse_after`] compares those runs with the line before's ([`Seen`]) and walks
//! only what differs, a third fewer instructions on a kernel's trace.
//!
//! It gives the general scanner's answer or none: anything it does not expect (a missing flags
//! column is expected; a comment, a perf period, a decimal pfn, a key out of order, a field
//! more or less, a number too long, an extfrag or kswapd event) sends the line to
//! [`super::line::parse_line`]'s general walk, which also words every error.
//!
//! It also finds the line's end: [`parse_after`] reads a line where it lies in the reader's
//! buffer and stops at its LF, so [`super::Parser::read_all`] needs no separate scan for line
//! ends on the lines it takes. To be sure no line end hides inside the line, the walk skips
//! spaces only: any other control byte (a tab, a CR, a NUL) before the last field sends the
//! line the general way, which splits and words it.
//!
//! The walk is here ([`parse_after`]: the opening, the middle, the pfn); the cursor's field
//! scanners in [`cursor`], the word-at-a-time scans under them in [`words`], each event's
//! fields after the pfn in [`mod@fields`], and what the walk keeps of the line before in [`seen`].

use super::line::{page_ptr, LineKind, Name};
use super::{Ctx, Event, PagePtr, Who};

mod cursor;
mod fields;
mod seen;
mod words;

use cursor::Cur;
use fields::fields;
pub(super) use seen::Seen;
#[cfg(test)]
pub(super) use words::swar_digits;

/// [`parse_line_after`] with nothing seen before.
#[cfg(test)]
pub(super) fn parse_common(line: &[u8]) -> Option<Result<Event<'_>, LineKind>> {
    parse_line_after(line, &mut Seen::default())
}

/// `line` (without its line end, or with an LF) parsed on the fast path, given what the
/// line before showed ([`parse_after`]): `None` where the general walk must decide.
#[inline]
pub(super) fn parse_line_after<'a>(
    line: &'a [u8],
    seen: &mut Seen,
) -> Option<Result<Event<'a>, LineKind>> {
    let (r, end) = parse_after(line, seen)?;
    // Whatever follows an LF inside the line is the general walk's to judge.
    (end + 1 >= line.len()).then_some(r)
}

/// [`parse_after`] with nothing seen before.
#[cfg(test)]
pub(super) fn parse_at(s: &[u8]) -> Option<(Result<Event<'_>, LineKind>, usize)> {
    parse_after(s, &mut Seen::default())
}

/// The line that opens `s` parsed on the fast path, and the index of its end: the LF that
/// ends it, or `s.len()` if none does (a last line, or one that goes on past `s`). `None`
/// where the general walk must decide (it also splits lines ending in CR). Given what the
/// line before showed (`seen`, updated from this line where it differs).
///
/// Not inlined: inside `read_all`'s loop the walk's cursor arithmetic runs out of registers
/// (twice the instructions, measured with callgrind).
#[inline(never)]
pub(super) fn parse_after<'a>(
    s: &'a [u8],
    seen: &mut Seen,
) -> Option<(Result<Event<'a>, LineKind>, usize)> {
    let mut c = Cur { s, i: 0 };
    let (cpu, secs, who) = match seen.opening.after(s, 0) {
        Some(end) => {
            c.i = end;
            (seen.cpu, seen.secs, seen.who)
        }
        None => {
            let (cpu, secs, who) = opening(&mut c)?;
            seen.opening.keep(s, 0, c.i);
            (seen.cpu, seen.secs, seen.who) = (cpu, secs, who);
            (cpu, secs, who)
        }
    };
    let ts_ns = c.fraction(secs)?;
    let (name, page) = match seen.middle.after(s, c.i) {
        Some(end) => {
            c.i = end;
            (seen.name, seen.page)
        }
        None => {
            let from = c.i;
            let Some((name, page)) = middle(&mut c)? else {
                return other_event(s);
            };
            seen.middle.keep(s, from, c.i);
            (seen.name, seen.page) = (name, page);
            (name, page)
        }
    };
    let pfn = c.hex()?;
    c.key(b"order=")?;
    let kind = fields(&mut c, name, pfn)?;
    // A field more (a repeated key, which the general walk takes the last of) goes that way.
    let end = c.line_end()?;
    Some((
        Ok(Event {
            cpu: Some(cpu),
            ts_ns: Some(ts_ns),
            page,
            kind,
            who,
        }),
        end,
    ))
}

/// The walk from a timestamp's end to its pfn's digits: the event's name (`None` for
/// another event), then its `page=` field and the `pfn=0x` key.
#[inline(always)]
fn middle(c: &mut Cur<'_>) -> Option<Option<(Name, PagePtr)>> {
    c.skip_spaces();
    let Some(name) = c.name()? else {
        return Some(None);
    };
    // trace-cmd pads the name: any run of spaces before the first field.
    c.skip_spaces();
    // The common form first, in one compare: the pointer as `ptr_to_id` (lib/vsprintf.c)
    // prints it while the hashing key is not ready, and the pfn in hex.
    let page = if c.expect(b"page=(____ptrval____) pfn=0x").is_some() {
        PagePtr::Present
    } else {
        c.expect(b"page=")?;
        let page = page_ptr(Some(c.token()));
        c.key(b"pfn=0x")?;
        page
    };
    Some(Some((name, page)))
}

/// The walk from a line's start to its timestamp's point: the task (neither a `[cpu]`
/// token nor one ending in `:`, a timestamp, so the general walk skips it too; not a
/// comment: `#` lines go the general way), the CPU, the irqs-off/flags column if there is
/// one (a token not ending in `:` the general walk skips), the seconds; and who ran it
/// ([`Who`]: read here only, once per opening that differs from the line before's).
#[inline(always)]
fn opening(c: &mut Cur<'_>) -> Option<(u32, u64, Who)> {
    c.skip_spaces();
    let task = c.token();
    match (task.first(), task.last()) {
        (Some(b'#' | b'['), _) | (None, _) | (_, Some(b':')) => return None,
        _ => {}
    }
    c.skip_spaces();
    let cpu = c.cpu()?;
    c.skip_spaces();
    let (secs, ctx) = match c.peek() {
        Some(b'0'..=b'9') => (c.seconds()?, Ctx::NONE),
        _ => {
            let flags = c.token();
            if flags.last() == Some(&b':') {
                return None;
            }
            c.skip_spaces();
            (c.seconds()?, Ctx::parse(flags))
        }
    };
    Some((cpu, secs, Who::of_token(task, Some(cpu), ctx)))
}

/// A line of an event we do not read: its end, found by the LF (one ending in CR goes the
/// general way, which splits it there).
#[cold]
fn other_event(s: &[u8]) -> Option<(Result<Event<'_>, LineKind>, usize)> {
    match memchr::memchr2(b'\n', b'\r', s) {
        Some(end) if s[end] == b'\r' => None,
        end => Some((Err(LineKind::Other), end.unwrap_or(s.len()))),
    }
}
