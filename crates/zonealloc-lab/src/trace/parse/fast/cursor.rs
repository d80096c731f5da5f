//! The cursor's field scanners: [`Cur`] steps over one of the line's fields at a time, each as
//! ftrace prints it (a `[cpu]`, a timestamp, ` key=`, a hex pfn, a small decimal, a flag, an
//! event's name), and gives up where the line is not of the common shape.

use super::super::line::{event_name, is_sep, Name, HIGHS};
use super::words::{
    below, first_sep, hex_from, spaces_from, swar_digits, token_from, word_at, SPACES,
};

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
pub(super) struct Cur<'a> {
    /// The line.
    pub(super) s: &'a [u8],
    /// The index of the next byte to read.
    pub(super) i: usize,
}

impl<'a> Cur<'a> {
    #[inline(always)]
    pub(super) fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// The eight bytes from here (little-endian: the first byte lowest), NULs past the end.
    #[inline(always)]
    pub(super) fn word(&self) -> u64 {
        word_at(self.s, self.i)
    }

    /// Whether the token ends here (a separator or the end of the line).
    #[inline(always)]
    pub(super) fn at_token_end(&self) -> bool {
        self.peek().is_none_or(is_sep)
    }

    /// Skips spaces: runs shorter than eight (most of ftrace's column padding) in one word
    /// here, longer ones in [`spaces_from`]. Other separators stay, for the caller to refuse.
    #[inline(always)]
    pub(super) fn skip_spaces(&mut self) {
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
    pub(super) fn token_bits(&mut self) -> (&'a [u8], u64) {
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
    pub(super) fn token(&mut self) -> &'a [u8] {
        self.token_bits().0
    }

    /// The token from here as text: ASCII (known from the scan's bits), or checked UTF-8.
    #[inline(always)]
    pub(super) fn text(&mut self) -> Option<&'a str> {
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
    pub(super) fn expect<const N: usize>(&mut self, lit: &[u8; N]) -> Option<()> {
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
    pub(super) fn digits(&mut self, max: usize) -> Option<(u64, usize)> {
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
    pub(super) fn long_digits(&mut self, max: usize) -> Option<(u64, usize)> {
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
    pub(super) fn cpu(&mut self) -> Option<u32> {
        self.expect(b"[")?;
        // Nine digits fit a u32.
        let (v, _) = self.digits(9)?;
        self.expect(b"]")?;
        self.at_token_end().then_some(v as u32)
    }

    /// `SSS.`, the seconds of a timestamp and their point (ten digits cannot overflow a
    /// timestamp in nanoseconds).
    #[inline(always)]
    pub(super) fn seconds(&mut self) -> Option<u64> {
        let (secs, _) = self.digits(10)?;
        self.expect(b".")?;
        Some(secs)
    }

    /// `FFFFFF:` after [`Cur::seconds`], the rest of the timestamp's token: the timestamp in
    /// nanoseconds.
    #[inline(always)]
    pub(super) fn fraction(&mut self, secs: u64) -> Option<u64> {
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
    pub(super) fn key<const N: usize>(&mut self, key: &[u8; N]) -> Option<()> {
        self.expect(b" ")?;
        self.expect(key)
    }

    /// Up to 16 hex digits (after the `0x`), a whole value.
    #[inline(always)]
    pub(super) fn hex(&mut self) -> Option<u64> {
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
    pub(super) fn small(&mut self) -> Option<u8> {
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
    pub(super) fn flag(&mut self) -> Option<bool> {
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
    pub(super) fn name(&mut self) -> Option<Option<Name>> {
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
    pub(super) fn name_here<const N: usize>(&mut self, lit: &[u8; N], name: Name) -> Option<Name> {
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
    pub(super) fn name_token(&mut self) -> Option<Option<Name>> {
        Some(name_of(self.token().strip_suffix(b":")?))
    }

    /// The line's end after its last field: separators other than a line end, then an LF
    /// or the end of the slice; its index.
    #[inline(always)]
    pub(super) fn line_end(&mut self) -> Option<usize> {
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
