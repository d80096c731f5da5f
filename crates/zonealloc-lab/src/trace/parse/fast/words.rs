//! Word-at-a-time scans of a line's bytes (SWAR: eight bytes in a `u64`, little-endian, the
//! first byte lowest): decimal digits, spaces, separators, and the hex digits a byte at a time.

use super::super::line::{is_sep, HIGHS, ONES};

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

pub(super) const SPACES: u64 = ONES * 0x20;

/// The decimal digits that open the eight bytes of `x` (little-endian, the first byte lowest)
/// and how many there are; the value is left 0 when all eight are digits.
#[inline(always)]
pub(in crate::trace::parse) fn swar_digits(x: u64) -> (u64, usize) {
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

// The long loops of the walk are kept out of line (`spaces_from`, `token_from`): inlined into
// it, their cursor arithmetic ran the walk out of registers (callgrind counted twice the
// instructions). `hex_from`'s short one is inlined: fewer instructions so.

/// The eight bytes of `s` from `i` (little-endian), NULs past the end.
#[inline(always)]
pub(super) fn word_at(s: &[u8], i: usize) -> u64 {
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
pub(super) fn first_sep(x: u64) -> u64 {
    x.wrapping_sub(ONES * 0x21) & !x & HIGHS
}

/// The bits of the bytes below the first byte `m` (from [`first_sep`], not zero) marks.
#[inline(always)]
pub(super) fn below(m: u64) -> u64 {
    (m & m.wrapping_neg()) - 1
}

/// The index of the first byte from `i` on that is no space (or `s.len()`). (The last few
/// bytes a byte at a time: a copy into a word would need a call, and with it saved registers
/// on every call.)
#[inline(never)]
pub(super) fn spaces_from(s: &[u8], mut i: usize) -> usize {
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
pub(super) fn token_from(s: &[u8], mut i: usize) -> (usize, u64) {
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
pub(super) fn hex_from(s: &[u8], i: usize) -> (u64, usize) {
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
