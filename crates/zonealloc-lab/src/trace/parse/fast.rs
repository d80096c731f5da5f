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
//! It also finds the line's end: [`parse_at`] reads a line where it lies in the reader's
//! buffer and stops at its LF, so [`super::Parser::read_all`] needs no separate scan for line
//! ends on the lines it takes. To be sure no line end hides inside the line, the walk skips
//! spaces only: any other control byte (a tab, a CR, a NUL) before the last field sends the
//! line the general way, which splits and words it.

use super::line::{event_name, is_sep, page_ptr, LineKind, Name, HIGHS, ONES};
use super::{Ctx, Event, EventKind, PagePtr, Who};

/// Each byte's value as a hex digit, 0xff for bytes that are none.
static HEX: [u8; 256] = {
    let mut t = [0xff; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

const SPACES: u64 = ONES * 0x20;

/// The decimal digits that open the eight bytes of `x` (little-endian, the first byte lowest)
/// and how many there are; the value is left 0 when all eight are digits.
#[inline(always)]
pub(super) fn swar_digits(x: u64) -> (u64, usize) {
    // Digits become 0..=9. A byte is no digit where that is 10 or more: adding 0x76 sets its
    // high bit, or it had one (a carry out of such a byte only reaches bytes above it).
    let t = x ^ (ONES * u64::from(b'0'));
    let m = (t.wrapping_add(ONES * 0x76) | t) & HIGHS;
    let n = (m.trailing_zeros() / 8) as usize;
    if n == 0 || n == 8 {
        return (0, n);
    }
    // The n digits moved to the top, zeros (leading digits) below; then pairs, fours and the
    // eight digits combined by multiplies (simdjson's parse_eight_digits_unrolled).
    let v = t << (8 * (8 - n));
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let lo = (v & 0x0000_00ff_0000_00ff).wrapping_mul(100 + (1_000_000 << 32));
    let hi = ((v >> 16) & 0x0000_00ff_0000_00ff).wrapping_mul(1 + (10_000 << 32));
    (lo.wrapping_add(hi) >> 32, n)
}

/// Our event names, told apart by their length alone, compared as arrays (a few words). The
/// general walk's [`event_name`] for other spellings (`kmem:`, the kswapd events).
#[inline(always)]
fn name_of(t: &[u8]) -> Option<Name> {
    fn is<const N: usize>(t: &[u8], name: &[u8; N]) -> bool {
        <&[u8; N]>::try_from(t).is_ok_and(|t| t == name)
    }
    match t.len() {
        12 if is(t, b"mm_page_free") => Some(Name::Free),
        13 if is(t, b"mm_page_alloc") => Some(Name::Alloc),
        18 if is(t, b"mm_page_pcpu_drain") => Some(Name::PcpuDrain),
        20 if is(t, b"mm_page_free_batched") => Some(Name::FreeBatched),
        25 if is(t, b"mm_page_alloc_zone_locked") => Some(Name::ZoneLocked),
        _ => event_name(t),
    }
}

/// A position in a line, read eight bytes at a time. Past the end of the slice the bytes
/// read as NUL, which is a separator, no digit and no space: every scan stops there.
struct Cur<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// The eight bytes from here (little-endian: the first byte lowest), NULs past the end.
    #[inline(always)]
    fn word(&self) -> u64 {
        word_at(self.s, self.i)
    }

    /// Whether the token ends here (a separator or the end of the line).
    #[inline(always)]
    fn at_token_end(&self) -> bool {
        self.peek().is_none_or(is_sep)
    }

    /// Skips spaces: runs shorter than eight (most of ftrace's column padding) in one word
    /// here, longer ones in [`spaces_from`]. Other separators stay, for the caller to refuse.
    #[inline(always)]
    fn skip_spaces(&mut self) {
        // The first byte that is no space is the first that is not zero here (the NULs past
        // the end stop it).
        let x = self.word() ^ SPACES;
        if x != 0 {
            self.i += (x.trailing_zeros() / 8) as usize;
        } else {
            self.i = spaces_from(self.s, self.i + 8);
        }
    }

    /// The token from here to the next separator (or the end), and the bits of its bytes
    /// OR-ed together (bit 7 of each byte lane: a byte from 0x80 up). A token within the first
    /// eight bytes is found here; a longer one in [`token_from`].
    #[inline(always)]
    fn token_bits(&mut self) -> (&'a [u8], u64) {
        let start = self.i;
        let x = self.word();
        let m = first_sep(x);
        let bits = if m != 0 {
            self.i += (m.trailing_zeros() / 8) as usize;
            x & below(m)
        } else {
            let (end, bits) = token_from(self.s, self.i + 8);
            self.i = end;
            bits | x
        };
        (self.s.get(start..self.i).unwrap_or_default(), bits)
    }

    /// The token from here to the next separator.
    #[inline(always)]
    fn token(&mut self) -> &'a [u8] {
        self.token_bits().0
    }

    /// The token from here as text: ASCII (known from the scan's bits), or checked UTF-8.
    #[inline(always)]
    fn text(&mut self) -> Option<&'a str> {
        let (t, bits) = self.token_bits();
        if bits & HIGHS == 0 {
            // SAFETY: no byte of `t` has its high bit set: it is ASCII, hence UTF-8.
            Some(unsafe { std::str::from_utf8_unchecked(t) })
        } else {
            std::str::from_utf8(t).ok()
        }
    }

    /// `lit` here, exactly, stepped over. (An array, so the compare is a word or two
    /// against a constant.)
    #[inline(always)]
    fn expect<const N: usize>(&mut self, lit: &[u8; N]) -> Option<()> {
        let at: &[u8; N] = self.s.get(self.i..self.i + N)?.try_into().ok()?;
        if at != lit {
            return None;
        }
        self.i += N;
        Some(())
    }

    /// Decimal digits, at most `max` of them, at least one. Up to seven are found and
    /// converted a word at a time.
    #[inline(always)]
    fn digits(&mut self, max: usize) -> Option<(u64, usize)> {
        let (v, n) = swar_digits(self.word());
        match n {
            0 => None,
            1..=7 if n <= max => {
                self.i += n;
                Some((v, n))
            }
            1..=7 => None,
            _ => self.long_digits(max),
        }
    }

    /// [`Cur::digits`] for eight digits or more, a byte at a time.
    #[cold]
    fn long_digits(&mut self, max: usize) -> Option<(u64, usize)> {
        let mut v = 0u64;
        let mut n = 0;
        while let Some(d) = self
            .peek()
            .map(|b| b.wrapping_sub(b'0'))
            .filter(|&d| d < 10)
        {
            n += 1;
            if n > max {
                return None;
            }
            v = v * 10 + u64::from(d);
            self.i += 1;
        }
        Some((v, n))
    }

    /// `[NNN]`, a whole token.
    #[inline(always)]
    fn cpu(&mut self) -> Option<u32> {
        self.expect(b"[")?;
        // Nine digits fit a u32.
        let (v, _) = self.digits(9)?;
        self.expect(b"]")?;
        self.at_token_end().then_some(v as u32)
    }

    /// `SSS.`, the seconds of a timestamp and their point (ten digits cannot overflow a
    /// timestamp in nanoseconds).
    #[inline(always)]
    fn seconds(&mut self) -> Option<u64> {
        let (secs, _) = self.digits(10)?;
        self.expect(b".")?;
        Some(secs)
    }

    /// `FFFFFF:` after [`Cur::seconds`], the rest of the timestamp's token: the timestamp in
    /// nanoseconds.
    #[inline(always)]
    fn fraction(&mut self, secs: u64) -> Option<u64> {
        let (frac, n) = self.digits(9)?;
        self.expect(b":")?;
        if !self.at_token_end() {
            return None;
        }
        // The fraction's digits scaled to nanoseconds (n is 1..=9).
        const SCALE: [u64; 10] = [
            0,
            100_000_000,
            10_000_000,
            1_000_000,
            100_000,
            10_000,
            1_000,
            100,
            10,
            1,
        ];
        Some(secs * 1_000_000_000 + frac * SCALE[n])
    }

    /// ` key=`: the space between two fields and the next key. (Fields apart by more than
    /// one space, or by another separator, go the general way.)
    #[inline(always)]
    fn key<const N: usize>(&mut self, key: &[u8; N]) -> Option<()> {
        self.expect(b" ")?;
        self.expect(key)
    }

    /// Up to 16 hex digits (after the `0x`), a whole value.
    #[inline(always)]
    fn hex(&mut self) -> Option<u64> {
        let (v, end) = hex_from(self.s, self.i);
        let n = end - self.i;
        if n == 0 {
            return None;
        }
        self.i = end;
        (n <= 16 && self.at_token_end()).then_some(v)
    }

    /// A decimal `u8`, a whole value (three digits at most: longer forms go the general way).
    /// One digit, the common case, is read without the word scan.
    #[inline(always)]
    fn small(&mut self) -> Option<u8> {
        let d = self.peek()?.wrapping_sub(b'0');
        if d < 10 && self.s.get(self.i + 1).is_none_or(|&b| is_sep(b)) {
            self.i += 1;
            return Some(d);
        }
        let (v, _) = self.digits(3)?;
        if !self.at_token_end() {
            return None;
        }
        u8::try_from(v).ok()
    }

    /// `0` or `1`, a whole value.
    #[inline(always)]
    fn flag(&mut self) -> Option<bool> {
        let v = match self.peek()? {
            b'0' => false,
            b'1' => true,
            _ => return None,
        };
        self.i += 1;
        self.at_token_end().then_some(v)
    }

    /// The event name token with its `:`: our names matched in place (the byte after
    /// `mm_page_` tells them apart), other spellings (`kmem:`, kswapd's) by [`name_of`].
    /// `None` for another event; a token that is no name (a perf period, digits without `:`)
    /// sends the line the general way.
    #[inline(always)]
    fn name(&mut self) -> Option<Option<Name>> {
        if self.word() == u64::from_le_bytes(*b"mm_page_") {
            let found = match self.s.get(self.i + 8) {
                Some(b'a') => self
                    .name_here(b"mm_page_alloc:", Name::Alloc)
                    .or_else(|| self.name_here(b"mm_page_alloc_zone_locked:", Name::ZoneLocked)),
                Some(b'f') => self
                    .name_here(b"mm_page_free:", Name::Free)
                    .or_else(|| self.name_here(b"mm_page_free_batched:", Name::FreeBatched)),
                Some(b'p') => self.name_here(b"mm_page_pcpu_drain:", Name::PcpuDrain),
                _ => None,
            };
            if found.is_some() {
                return Some(found);
            }
        }
        self.name_token()
    }

    /// `name`'s token `lit` (with its `:`) here, a whole token, stepped over.
    #[inline(always)]
    fn name_here<const N: usize>(&mut self, lit: &[u8; N], name: Name) -> Option<Name> {
        let end = self.i + N;
        let at: &[u8; N] = self.s.get(self.i..end)?.try_into().ok()?;
        if at != lit || !self.s.get(end).is_none_or(|&b| is_sep(b)) {
            return None;
        }
        self.i = end;
        Some(name)
    }

    /// [`Cur::name`] from the token.
    #[inline(never)]
    fn name_token(&mut self) -> Option<Option<Name>> {
        Some(name_of(self.token().strip_suffix(b":")?))
    }

    /// The line's end after its last field: separators other than a line end, then an LF
    /// or the end of the slice; its index.
    #[inline(always)]
    fn line_end(&mut self) -> Option<usize> {
        while let Some(b) = self.peek() {
            match b {
                b'\n' => return Some(self.i),
                b'\r' => return None,
                _ if is_sep(b) => self.i += 1,
                _ => return None,
            }
        }
        Some(self.i)
    }
}

// The long loops of the walk are kept out of line (`spaces_from`, `token_from`): inlined into
// it, their cursor arithmetic ran the walk out of registers (callgrind counted twice the
// instructions). `hex_from`'s short one is inlined: fewer instructions so.

/// The eight bytes of `s` from `i` (little-endian), NULs past the end.
#[inline(always)]
fn word_at(s: &[u8], i: usize) -> u64 {
    match s.get(i..i + 8) {
        Some(w) => u64::from_le_bytes(w.try_into().unwrap_or([0; 8])),
        None => last_word(s, i),
    }
}

/// [`word_at`] within eight bytes of the end.
#[cold]
#[inline(never)]
fn last_word(s: &[u8], i: usize) -> u64 {
    let mut w = [0; 8];
    for (d, &b) in w.iter_mut().zip(s.get(i..).unwrap_or_default()) {
        *d = b;
    }
    u64::from_le_bytes(w)
}

/// The high bit of each byte of `x` below 0x21 (a separator); bytes from 0x80 up never
/// match. The lowest set bit marks the first exactly (a borrow only reaches bytes above a
/// match), as in `line::find_sep`.
#[inline(always)]
fn first_sep(x: u64) -> u64 {
    x.wrapping_sub(ONES * 0x21) & !x & HIGHS
}

/// The bits of the bytes below the first byte `m` (from [`first_sep`], not zero) marks.
#[inline(always)]
fn below(m: u64) -> u64 {
    (m & m.wrapping_neg()) - 1
}

/// The index of the first byte from `i` on that is no space (or `s.len()`). (The last few
/// bytes a byte at a time: a copy into a word would need a call, and with it saved registers
/// on every call.)
#[inline(never)]
fn spaces_from(s: &[u8], mut i: usize) -> usize {
    while let Some(w) = s.get(i..i + 8) {
        // The first byte that is no space is the first that is not zero here.
        let x = u64::from_le_bytes(w.try_into().unwrap_or([0; 8])) ^ SPACES;
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while s.get(i) == Some(&b' ') {
        i += 1;
    }
    i
}

/// The end of the token that goes on at `i` (the first separator from `i` on, or
/// `s.len()`), and the bits of its bytes from `i` OR-ed together. (The last few bytes a byte
/// at a time, as in [`spaces_from`].)
#[inline(never)]
fn token_from(s: &[u8], mut i: usize) -> (usize, u64) {
    let mut bits = 0;
    while let Some(w) = s.get(i..i + 8) {
        let x = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
        let m = first_sep(x);
        if m != 0 {
            return (i + (m.trailing_zeros() / 8) as usize, bits | (x & below(m)));
        }
        bits |= x;
        i += 8;
    }
    while let Some(&b) = s.get(i).filter(|&&b| !is_sep(b)) {
        bits |= u64::from(b);
        i += 1;
    }
    (i, bits)
}

/// The value of the hex digits from `i` on and the index after them (at most 17 are read).
/// A byte at a time: a pfn has four or five digits, and a word-at-a-time form (as the decimal
/// fields are read, [`swar_digits`]) took 12 more instructions a line on a kernel's trace,
/// and no less time.
#[inline(always)]
fn hex_from(s: &[u8], i: usize) -> (u64, usize) {
    let mut v = 0u64;
    let mut end = i;
    for &b in s.get(i..).unwrap_or_default().iter().take(17) {
        let d = HEX[usize::from(b)];
        if d > 15 {
            break;
        }
        v = (v << 4) | u64::from(d);
        end += 1;
    }
    (v, end)
}

/// `line` (without its line end, or with an LF) parsed on the fast path: `None` where the
/// general walk must decide.
#[inline]
pub(super) fn parse_common(line: &[u8]) -> Option<Result<Event<'_>, LineKind>> {
    let (r, end) = parse_at(line)?;
    // Whatever follows an LF inside the line is the general walk's to judge.
    (end + 1 >= line.len()).then_some(r)
}

/// The line that opens `s` parsed on the fast path, and the index of its end: the LF that
/// ends it, or `s.len()` if none does (a last line, or one that goes on past `s`). `None`
/// where the general walk must decide (it also splits lines ending in CR).
pub(super) fn parse_at(s: &[u8]) -> Option<(Result<Event<'_>, LineKind>, usize)> {
    parse_after(s, &mut Seen::default())
}

/// The most bytes a [`Segment`] keeps: ftrace's columns up to a timestamp's point take 36
/// to 45 bytes, an event's name and `page=` field up to its `pfn=0x` 40 to 57.
const SEGMENT_BYTES: usize = 64;

/// A run of a line's bytes the walk has read, kept to be compared with the next line's.
#[derive(Clone, Copy)]
struct Segment {
    bytes: [u8; SEGMENT_BYTES],
    /// How many of `bytes` (0: none yet).
    len: usize,
}

impl Segment {
    const NONE: Segment = Segment {
        bytes: [0; SEGMENT_BYTES],
        len: 0,
    };

    /// Where `s` goes on after the same bytes at `at`, if it has them there.
    #[inline(always)]
    fn after(&self, s: &[u8], at: usize) -> Option<usize> {
        let end = at + self.len;
        (self.len != 0 && s.get(at..end) == self.bytes.get(..self.len)).then_some(end)
    }

    /// Keeps `s[from..to]` (nothing where it is longer than a segment holds).
    #[inline(always)]
    fn keep(&mut self, s: &[u8], from: usize, to: usize) {
        let n = to.saturating_sub(from);
        match (s.get(from..to), self.bytes.get_mut(..n)) {
            (Some(from), Some(into)) => {
                into.copy_from_slice(from);
                self.len = n;
            }
            _ => self.len = 0,
        }
    }
}

/// Two runs of the last line [`parse_after`] walked, and what the walk read from them: the
/// opening, from the line's start to its timestamp's point (`comm-pid [cpu] flags SSS.`),
/// and the middle, from the timestamp's end to the pfn's digits (` mm_page_free:
/// page=(____ptrval____) pfn=0x`). The walk's steps over each read no byte outside it (each
/// stops at a byte inside: a separator, the `]`, the point, the end of a literal), so a line
/// with the same bytes there has the same CPU, seconds, event and page, and its walk skips
/// them; in a kernel's trace nine lines in ten have the opening and the middle of the line
/// before.
#[derive(Clone, Copy)]
pub(super) struct Seen {
    opening: Segment,
    cpu: u32,
    secs: u64,
    /// The task and latency column the opening shows.
    who: Who,
    middle: Segment,
    name: Name,
    page: PagePtr,
}

impl Default for Seen {
    fn default() -> Seen {
        Seen {
            opening: Segment::NONE,
            cpu: 0,
            secs: 0,
            who: Who::UNKNOWN,
            middle: Segment::NONE,
            name: Name::Free,
            page: PagePtr::Present,
        }
    }
}

/// [`parse_at`], given what the line before showed (updated from this line where it
/// differs).
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
    let kind = match name {
        Name::Alloc => {
            let order = c.small()?;
            c.key(b"migratetype=")?;
            let migratetype = c.small()?;
            c.key(b"gfp_flags=")?;
            let gfp = c.text().filter(|g| !g.is_empty())?;
            EventKind::Alloc {
                pfn,
                order,
                migratetype,
                gfp_flags: gfp,
            }
        }
        Name::Free => EventKind::Free {
            pfn,
            order: c.small()?,
        },
        Name::FreeBatched => {
            // The general walk reads no number from its `order=0`.
            c.token();
            EventKind::FreeBatched { pfn }
        }
        Name::ZoneLocked => {
            let order = c.small()?;
            c.key(b"migratetype=")?;
            let migratetype = c.small()?;
            c.key(b"percpu_refill=")?;
            EventKind::ZoneLocked {
                pfn,
                order,
                migratetype,
                percpu_refill: c.flag()?,
            }
        }
        Name::PcpuDrain => {
            let order = c.small()?;
            c.key(b"migratetype=")?;
            EventKind::PcpuDrain {
                pfn,
                order,
                migratetype: c.small()?,
            }
        }
        Name::Extfrag | Name::KswapdWake | Name::KswapdSleep => return None,
    };
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
