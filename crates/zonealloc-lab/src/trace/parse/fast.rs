//! The fast path for the common line shape: ftrace's `comm-pid [cpu] flags ts: event: k=v ...`
//! with the fields in the order the event's `TP_printk` prints them. It walks the line once,
//! parsing numbers as it scans them and matching each key at the place the format puts it, so
//! it looks up no key and slices no value twice.
//!
//! It gives the general scanner's answer or none: anything it does not expect (a missing flags
//! column is expected; a comment, a perf period, a decimal pfn, a key out of order, a field
//! more or less, a number too long, an extfrag or kswapd event) sends the line to
//! [`super::line::parse_line`]'s general walk, which also words every error.

use super::line::{event_name, find_sep, is_sep, page_ptr, skip_sep, utf8, LineKind, Name};
use super::{Event, EventKind};

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

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

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

/// A position in a line.
struct Cur<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// Whether the token ends here (a separator or the end of the line).
    #[inline(always)]
    fn at_token_end(&self) -> bool {
        self.peek().is_none_or(is_sep)
    }

    #[inline(always)]
    fn skip_sep(&mut self) {
        // Most runs are one separator: two bytes looked at before the wide scan.
        for _ in 0..2 {
            if !self.peek().is_some_and(is_sep) {
                return;
            }
            self.i += 1;
        }
        self.i += skip_sep(self.s.get(self.i..).unwrap_or_default());
    }

    /// The token from here to the next separator.
    #[inline(always)]
    fn token(&mut self) -> &'a [u8] {
        let rest = self.s.get(self.i..).unwrap_or_default();
        let n = find_sep(rest, false);
        self.i += n;
        &rest[..n]
    }

    /// Decimal digits, at most `max` of them, at least one. Up to seven are found and
    /// converted a word at a time.
    #[inline(always)]
    fn digits(&mut self, max: usize) -> Option<(u64, usize)> {
        if max > 3 {
            if let Some(w) = self.s.get(self.i..self.i + 8) {
                let x = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
                let (v, n) = swar_digits(x);
                match n {
                    0 => return None,
                    1..=7 if n <= max => {
                        self.i += n;
                        return Some((v, n));
                    }
                    1..=7 => return None,
                    _ => {}
                }
            }
        }
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
        (n > 0).then_some((v, n))
    }

    /// `[NNN]`, a whole token.
    #[inline(always)]
    fn cpu(&mut self) -> Option<u32> {
        if self.peek() != Some(b'[') {
            return None;
        }
        self.i += 1;
        // Nine digits fit a u32.
        let (v, _) = self.digits(9)?;
        if self.peek() != Some(b']') {
            return None;
        }
        self.i += 1;
        self.at_token_end().then_some(v as u32)
    }

    /// `SSS.FFFFFF:`, a whole token, in nanoseconds (ten digits of seconds cannot overflow).
    #[inline(always)]
    fn timestamp(&mut self) -> Option<u64> {
        let (secs, _) = self.digits(10)?;
        if self.peek() != Some(b'.') {
            return None;
        }
        self.i += 1;
        let (frac, n) = self.digits(9)?;
        if self.peek() != Some(b':') {
            return None;
        }
        self.i += 1;
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

    /// The key `key` (with its `=`) after separators, and the value's start. (An array, so
    /// the compare is a word or two against a constant.)
    #[inline(always)]
    fn key<const N: usize>(&mut self, key: &[u8; N]) -> Option<()> {
        self.skip_sep();
        let at: &[u8; N] = self.s.get(self.i..self.i + N)?.try_into().ok()?;
        if at != key {
            return None;
        }
        self.i += N;
        Some(())
    }

    /// `0x` and up to 16 hex digits, a whole value.
    #[inline(always)]
    fn hex(&mut self) -> Option<u64> {
        let rest = self.s.get(self.i..)?;
        if !rest.starts_with(b"0x") {
            return None;
        }
        self.i += 2;
        let mut v = 0u64;
        let mut n = 0;
        loop {
            let d = match self.peek() {
                Some(b) if HEX[usize::from(b)] < 16 => HEX[usize::from(b)],
                _ => break,
            };
            n += 1;
            if n > 16 {
                return None;
            }
            v = (v << 4) | u64::from(d);
            self.i += 1;
        }
        (n > 0 && self.at_token_end()).then_some(v)
    }

    /// A decimal `u8`, a whole value (three digits at most: longer forms go the general way).
    #[inline(always)]
    fn small(&mut self) -> Option<u8> {
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

    /// Only separators are left.
    #[inline(always)]
    fn at_end(&mut self) -> bool {
        self.skip_sep();
        self.i == self.s.len()
    }
}

/// `line` (without its line end) parsed on the fast path: `None` where the general walk must
/// decide.
#[inline]
pub(super) fn parse_common(line: &[u8]) -> Option<Result<Event<'_>, LineKind>> {
    let mut c = Cur { s: line, i: 0 };
    c.skip_sep();
    // The task: neither a `[cpu]` token nor one ending in `:` (a timestamp), so the general
    // walk skips it too. (Not a comment: `#` lines go the general way.)
    let task = c.token();
    match (task.first(), task.last()) {
        (Some(b'#' | b'['), _) | (None, _) | (_, Some(b':')) => return None,
        _ => {}
    }
    c.skip_sep();
    let cpu = c.cpu()?;
    c.skip_sep();
    // The irqs-off/flags column if there is one (a token not ending in `:` the general walk
    // skips), then the timestamp.
    let ts_ns = match c.peek() {
        Some(b'0'..=b'9') => c.timestamp()?,
        _ => {
            if c.token().last() == Some(&b':') {
                return None;
            }
            c.skip_sep();
            c.timestamp()?
        }
    };
    c.skip_sep();
    // (A perf period, digits without `:`, goes the general way here.)
    let name_tok = c.token().strip_suffix(b":")?;
    let Some(name) = name_of(name_tok) else {
        return Some(Err(LineKind::Other));
    };
    let page = {
        c.key(b"page=")?;
        page_ptr(Some(c.token()))
    };
    c.key(b"pfn=")?;
    let pfn = c.hex()?;
    c.key(b"order=")?;
    let kind = match name {
        Name::Alloc => {
            let order = c.small()?;
            c.key(b"migratetype=")?;
            let migratetype = c.small()?;
            c.key(b"gfp_flags=")?;
            let gfp = utf8(c.token()).filter(|g| !g.is_empty())?;
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
    if !c.at_end() {
        return None;
    }
    Some(Ok(Event {
        cpu: Some(cpu),
        ts_ns: Some(ts_ns),
        page,
        kind,
    }))
}
