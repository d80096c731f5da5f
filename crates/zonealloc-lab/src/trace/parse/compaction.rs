//! Compaction's free-scanner lines (`include/trace/events/compaction.h`,
//! `mm_compaction_isolate_template`): `range=(0x%lx ~ 0x%lx) nr_scanned=%lu nr_taken=%lu`.

use super::line::{is_sep, parse_dec, parse_hex, LineKind};
use super::EventKind;

/// The tail of `mm_compaction_isolate_freepages` (`fast`: `mm_compaction_fast_isolate_freepages`)
/// after the event's name.
pub(super) fn isolate(tail: &[u8], fast: bool) -> Result<EventKind<'static>, LineKind> {
    let bad = LineKind::Malformed("bad compaction isolate line");
    let rest = find_after(tail, b"range=(").ok_or(bad)?;
    let (start_pfn, rest) = hex_word(rest).ok_or(bad)?;
    let rest = find_after(rest, b"~").ok_or(bad)?;
    let (end_pfn, rest) = hex_word(rest).ok_or(bad)?;
    let rest = find_after(rest, b"nr_taken=").ok_or(bad)?;
    let end = rest.iter().position(|&b| is_sep(b)).unwrap_or(rest.len());
    let nr_taken = parse_dec(&rest[..end])
        .and_then(|v| u32::try_from(v).ok())
        .ok_or(bad)?;
    Ok(EventKind::CompactIsolate {
        start_pfn,
        end_pfn,
        nr_taken,
        fast,
    })
}

/// What follows the first `pat` in `s`.
fn find_after<'a>(s: &'a [u8], pat: &[u8]) -> Option<&'a [u8]> {
    let i = s.windows(pat.len()).position(|w| w == pat)?;
    Some(&s[i + pat.len()..])
}

/// A `0x`-prefixed hex number after separators, ended by a separator or `)`, and the rest.
fn hex_word(s: &[u8]) -> Option<(u64, &[u8])> {
    let s = &s[s.iter().position(|&b| !is_sep(b))?..];
    let s = s.strip_prefix(b"0x")?;
    let end = s
        .iter()
        .position(|&b| is_sep(b) || b == b')')
        .unwrap_or(s.len());
    Some((parse_hex(&s[..end])?, &s[end..]))
}

#[cfg(test)]
mod tests {
    use crate::trace::parse::{EventKind, Parser};

    /// Both isolate lines as 6.1, 6.12 and 7.2 print them (with and without the system's
    /// prefix); a line without its range is malformed, and `mm_compaction_migratepages`
    /// another event.
    #[test]
    fn compaction_isolate_lines_read_their_range_and_pages() {
        let mut p = Parser::new();
        let ev = p
            .feed(b"kmem-phases-318 [001] ..... 55.2: mm_compaction_isolate_freepages: range=(0x13b400 ~ 0x13b600) nr_scanned=256 nr_taken=37")
            .unwrap();
        let want = EventKind::CompactIsolate {
            start_pfn: 0x13b400,
            end_pfn: 0x13b600,
            nr_taken: 37,
            fast: false,
        };
        assert_eq!(ev.kind, want);
        assert_eq!(ev.kind.pfn(), 0);
        let ev = p
            .feed(b"kcompactd0-40 [000] d..1. 9.5: compaction:mm_compaction_fast_isolate_freepages: range=(0x1000 ~ 0x140000) nr_scanned=3 nr_taken=8")
            .unwrap();
        assert_eq!(
            ev.kind,
            EventKind::CompactIsolate {
                start_pfn: 0x1000,
                end_pfn: 0x140000,
                nr_taken: 8,
                fast: true,
            }
        );
        assert_eq!(ev.kind.name(), "mm_compaction_fast_isolate_freepages");
        assert!(p
            .feed(b"k-1 [000] ..... 9.6: mm_compaction_isolate_freepages: nr_scanned=3 nr_taken=8")
            .is_none());
        assert_eq!(p.malformed, 1);
        assert!(p
            .feed(b"k-1 [000] ..... 9.7: mm_compaction_migratepages: nr_migrated=5 nr_failed=0")
            .is_none());
        assert_eq!(p.malformed, 1);
    }
}
