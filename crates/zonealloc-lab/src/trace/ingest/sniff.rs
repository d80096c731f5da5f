//! What the start of a trace says ([`Sniff`]): the CPU count of ftrace's header, the highest
//! CPU and pfn of the prefix's events, and the migratetype numbering's evidence; and how one
//! look at the prefix divides between the stream's parse and the lines a window cut out of
//! the stream ([`Split`]).

use std::io;

use crate::trace::migratetype::Evidence;
use crate::trace::parse::{Event, EventKind, Parser};

/// What the start of a trace says.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sniff {
    /// The CPU count of ftrace's header (`# entries-in-buffer/entries-written: … #P:N`).
    pub header_cpus: Option<u32>,
    /// The highest CPU of an event in the prefix.
    pub max_cpu: Option<u32>,
    /// The highest pfn of an event in the prefix (what the default zone span is sized by).
    pub max_pfn: Option<u64>,
    /// Migratetype-numbering evidence from the prefix's allocations.
    pub evidence: Evidence,
    /// Bytes looked at.
    pub bytes: usize,
}

/// The prefix's complete lines (those [`sniff`] looks at) as two parts: the stream's first
/// `stream_bytes`, which are the prefix's lines before and after the cut, at line
/// boundaries, and the lines of `region` the window cut out of the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// The part of the prefix the stream does not carry.
    pub region: std::ops::Range<usize>,
    /// The stream's bytes that are the rest of the prefix's complete lines.
    pub stream_bytes: u64,
}

impl Split {
    /// The split of `prefix` when `cut` (a window's `from` cut) is taken out of the stream,
    /// or `None` where the parts would not be whole lines: the cut's ends, and the end of
    /// the prefix's last complete line, are all line starts.
    pub(super) fn new(prefix: &[u8], cut: std::ops::Range<usize>) -> Option<Split> {
        let whole = complete_lines(prefix).len();
        let (lo, hi) = (cut.start.min(whole), cut.end.min(whole));
        let line_start = |at: usize| at == 0 || prefix.get(at - 1) == Some(&b'\n');
        (line_start(lo) && line_start(hi)).then(|| Split {
            region: lo..hi,
            stream_bytes: (lo + (whole - hi)) as u64,
        })
    }
}

/// `prefix` up to the end of its last complete line.
fn complete_lines(prefix: &[u8]) -> &[u8] {
    match memchr::memrchr(b'\n', prefix) {
        Some(nl) => &prefix[..=nl],
        None => &[][..],
    }
}

/// Looks at the complete lines of `prefix`.
pub fn sniff(prefix: &[u8]) -> Sniff {
    // Reading from memory cannot fail; a line over the parser's limit ends the look there.
    Sniff::looked(prefix, None).0
}

impl Sniff {
    /// The header's CPU count (the comment lines at the start of `whole`), nothing else yet.
    pub fn of_header(whole: &[u8]) -> Sniff {
        let mut s = Sniff::default();
        for line in whole
            .split(|&b| b == b'\n')
            .take_while(|l| l.starts_with(b"#"))
        {
            if let Some(at) = memchr::memmem::find(line, b"#P:") {
                let digits: Vec<u8> = line[at + 3..]
                    .iter()
                    .copied()
                    .take_while(u8::is_ascii_digit)
                    .collect();
                s.header_cpus = std::str::from_utf8(&digits)
                    .ok()
                    .and_then(|d| d.parse().ok())
                    .filter(|&n| n > 0);
            }
        }
        s
    }

    /// [`Sniff::of_header`] and the events of `split`'s region of `prefix`: what [`sniff`]
    /// gives less the events of the stream's first `split.stream_bytes`, which the caller
    /// adds ([`Sniff::add`]) from the parse. `None` where the region has a line over the
    /// parser's limit (one look at the prefix stops there: [`sniff`] it whole).
    pub fn of_region(prefix: &[u8], split: &Split) -> Option<Sniff> {
        let (s, read) = Sniff::looked(prefix, Some(split.region.clone()));
        read.ok().map(|()| s)
    }

    /// The header of `prefix`'s complete lines and the events of `region` of them (all of
    /// them without one), with the parse's result (an error at a line over the limit, the
    /// events before it counted).
    fn looked(prefix: &[u8], region: Option<std::ops::Range<usize>>) -> (Sniff, io::Result<()>) {
        let whole = complete_lines(prefix);
        let mut s = Sniff::of_header(whole);
        let text = region.map_or(whole, |r| &whole[r]);
        let read = Parser::new().read_all(text, |ev| s.add(ev));
        s.bytes = whole.len();
        (s, read)
    }

    /// Adds one event of the prefix: its CPU, and an allocation's numbering evidence.
    pub fn add(&mut self, ev: &Event<'_>) {
        self.add_with(ev, Evidence::expected);
    }

    /// [`Sniff::add`], with `expected` standing for [`Evidence::expected`] (a cache of it).
    #[inline]
    pub fn add_with(&mut self, ev: &Event<'_>, expected: impl FnOnce(&str) -> Option<u8>) {
        if let Some(c) = ev.cpu {
            self.max_cpu = Some(self.max_cpu.map_or(c, |m| m.max(c)));
        }
        let pfn = ev.kind.pfn();
        self.max_pfn = Some(self.max_pfn.map_or(pfn, |m| m.max(pfn)));
        if let EventKind::Alloc {
            gfp_flags,
            migratetype,
            ..
        } = ev.kind
        {
            self.evidence.add_expected(expected(gfp_flags), migratetype);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_divides_the_prefix_s_lines_at_line_starts_only() {
        let p = b"# h\na\nmark\nb\nc";
        // No cut: the stream carries every complete line (not the unterminated `c`).
        assert_eq!(
            Split::new(p, p.len()..p.len()),
            Some(Split {
                region: 13..13,
                stream_bytes: 13
            })
        );
        // The window cuts `a` and the marker's line: the stream has the header and `b`.
        assert_eq!(
            Split::new(p, 4..11),
            Some(Split {
                region: 4..11,
                stream_bytes: 6
            })
        );
        // A cut through the last, unterminated line: only the header is the stream's.
        assert_eq!(
            Split::new(p, 4..p.len()),
            Some(Split {
                region: 4..13,
                stream_bytes: 4
            })
        );
        // A cut that starts or ends inside a line cannot be split.
        assert_eq!(Split::new(p, 3..11), None);
        assert_eq!(Split::new(p, 4..10), None);
    }
}
